"""What `gotchas mutate` prints: per check the meaning mutants caught and those that survived, and any
reformat that changed a verdict; as text, JSON or GitHub annotations."""

from __future__ import annotations

import json

from ._check import annotation
from ._formats import writer
from ._terminal import terminal


def mutate_report(fmt: str, kb, reports) -> str:
    """What `gotchas mutate` found, in `fmt` (one of `choices("mutate")`): per check, the meaning mutants caught
    and those that survived (with their diff), and any reformat that changed a verdict."""
    return writer("mutate", fmt)(kb, reports)


def mutate_json(kb, reports) -> str:
    records = [o.to_json(r.entry.id, r.engine, r.release.version) for r in reports for o in r.outcomes]
    return json.dumps(records, indent=2) + "\n"


def mutate_annotations(kb, reports) -> str:
    return mutate_github(reports)


def mutate_text(kb, reports) -> str:
    out = []
    caught = total = flips = bound = 0
    for r in reports:
        name = kb.engines[r.engine].name if r.engine in kb.engines else r.engine
        out.append(f"{r.entry.id} ({name} {r.release.version})")
        for check in r.entry.checks:
            if check.engine != r.engine:
                continue
            if check.id in r.not_holding:
                out.append(f"  {check.id}: {r.not_holding[check.id]} here: not mutated")
                continue
            if check.id not in r.holding:
                continue
            mine = r.meaning(check.id)
            hit = sum(1 for o in mine if o.caught)
            caught, total = caught + hit, total + len(mine)
            out.append(f"  {check.id}: {hit} of {len(mine)} meaning mutants caught" if mine
                       else f"  {check.id}: no mutant could be made of its code")
            for o in mine:
                if not o.caught:
                    out.append(f"    survived: {o.mutant.description} ({o.mutant.path}:{o.mutant.line})")
                    out.extend(f"      {line}" for line in o.diff(r.originals.get(o.mutant.path, "")).splitlines())
        neutral = [o for o in r.outcomes if o.mutant.kind == "neutral"]
        flips += len(r.neutral_flips)
        bound += len(r.layout_bound)
        out.append(f"  neutral: {len(neutral)} rewrites of the files read, "
                   + (f"{len(r.neutral_flips)} changed a verdict (a matcher bug):" if r.neutral_flips
                      else "no verdict changed" if not r.layout_bound else "no check compared by structure changed"))
        for o in r.neutral_flips:
            out.append(f"    {o.mutant.description} in {o.mutant.path} changed {', '.join(o.changed)}")
        for o in r.layout_bound:
            out.append(f"    {o.mutant.description} in {o.mutant.path} changed {', '.join(o.changed)}, which "
                       "compare code as written (a regex, or a fragment that is not Python): write them as code")
        out.extend(f"  note: {n}" for n in r.notes)
        out.append("")
    share = f" ({100 * caught / total:.0f}%)" if total else ""
    out.append(f"{len(reports)} entr{'y' if len(reports) == 1 else 'ies'} x engine: meaning mutants caught "
               f"{caught} of {total}{share}; reformats that changed a verdict: {flips}"
               + (f" (and {bound} of checks that compare code as written)" if bound else ""))
    return terminal("\n".join(out)) + "\n"


def mutate_github(reports) -> str:
    """Annotations at each check's line: a surviving mutant is a warning, a reformat that flips a verdict an error."""
    out = []
    for r in reports:
        lines = {c.id: c.line for c in r.entry.checks}
        for o in r.survivors:
            out.append(annotation("warning", r.entry.file, lines.get(o.check, 1),
                                  f"{r.entry.id} {o.check} does not pin",
                                  f"{o.check}: this change of the code it matched goes unnoticed by every check of "
                                  f"the entry: {o.mutant.description} ({o.mutant.path}:{o.mutant.line})"))
        for o in r.neutral_flips + r.layout_bound:
            for check in o.changed:
                bound = check in r.as_written
                out.append(annotation("warning" if bound else "error", r.entry.file, lines.get(check, 1),
                                      f"{r.entry.id} {check} reformat",
                                      f"{check}: {o.mutant.description} changed its verdict to {o.after.get(check)}: "
                                      + ("it compares code as written (a regex, or a fragment that is not Python); "
                                         "write it as code, which a reformat cannot break" if bound else
                                         "a reformat must never change a verdict (a bug of the verifier)")))
    return terminal("\n".join(out)) + ("\n" if out else "")
