"""The report of a `verify` run: per engine the releases verified, the entries whose status changed, the
releases that contradict an entry's bounds; as text, JSON or Markdown."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from .. import md
from ..model import CHANGED, ERROR, HOLDS, MISSING, version_key
from ..urls import entry_url, release_url
from ._check import as_json, summary
from ._formats import choices, writer
from ._terminal import terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..history import BoundsProblem, StatusChange
    from ..kb import KB
    from ..ledger import CheckRecord
    from ..model import CheckResult, Diagnostic
    from ..verify import EngineRun

RUN_FORMATS = choices("verify")


def render_run(fmt: str, kb: KB, runs: Sequence[EngineRun], changes: Sequence[StatusChange],
               diagnostics: Sequence[Diagnostic], notes: Sequence[str], entries: int, site_url: str = "",
               problems: Sequence[BoundsProblem] = ()) -> str:
    """The report of a `verify` run: `changes` (history.StatusChange) are the entries whose status changed in a
    release verified by the run, `problems` (history.BoundsProblem) where the code contradicts an entry's
    `introduced` or `fixed`. `fmt` is one of `choices("verify")`."""
    return writer("verify", fmt)(kb, runs, changes, diagnostics, notes, entries, site_url, problems)


def verify_text(kb: KB, runs: Sequence[EngineRun], changes: Sequence[StatusChange],
                diagnostics: Sequence[Diagnostic], notes: Sequence[str], entries: int, site_url: str = "",
                problems: Sequence[BoundsProblem] = ()) -> str:
    results = [r for run in runs for r in run.results]
    return terminal(_run_text(kb, runs, changes, diagnostics, notes, entries, problems, results))


def verify_json(kb: KB, runs: Sequence[EngineRun], changes: Sequence[StatusChange],
                diagnostics: Sequence[Diagnostic], notes: Sequence[str], entries: int, site_url: str = "",
                problems: Sequence[BoundsProblem] = ()) -> str:
    return as_json(diagnostics, [r for run in runs for r in run.results])


def verify_markdown(kb: KB, runs: Sequence[EngineRun], changes: Sequence[StatusChange],
                    diagnostics: Sequence[Diagnostic], notes: Sequence[str], entries: int, site_url: str = "",
                    problems: Sequence[BoundsProblem] = ()) -> str:
    return run_markdown(kb, runs, changes, diagnostics, notes, site_url, problems)


def _run_text(kb: KB, runs: Sequence[EngineRun], changes: Sequence[StatusChange], diagnostics: Sequence[Diagnostic],
              notes: Sequence[str], entries: int, problems: Sequence[BoundsProblem],
              results: Sequence[CheckResult]) -> str:
    out = [f"  {d}" for d in diagnostics]
    if diagnostics:
        out.insert(0, "Lint:")
    for run in runs:
        name = kb.engines[run.engine].name
        if not run.releases:
            out.append(f"{name}: no release to verify")
            continue
        counts = Counter(r.verdict.status for r in run.results)
        out.append(f"{name}: verified {len(run.releases)} release{'s' if len(run.releases) != 1 else ''} "
                   f"({run.releases[0].version} – {run.releases[-1].version}): "
                   f"{counts[HOLDS]} holds, {counts[CHANGED]} changed, {counts[MISSING]} missing, "
                   f"{counts[ERROR]} error")
    for title, group in _change_groups(changes):
        out.append(f"{title}:")
        for change in group:
            out.append(f"  {change.entry}: {change.before} in {change.engine} {change.before_version} → "
                       f"{change.after} in {change.after_version}")
            for t in change.checks:
                out.append(f"      {t.summary}")
                if t.after.hint:
                    out.append(f"        hint: {t.after.hint}")
    if problems:
        out.append("Releases that contradict `introduced` or `fixed`:")
        out.extend(f"  {p}" for p in problems)
    errors = [r for r in results if r.verdict.status == ERROR]
    for r in errors[:20]:
        out.append(f"  error: {r.release.engine} {r.release.version} {r.entry}/{r.check.id}: "
                   f"{r.verdict.reason}: {r.verdict.message}")
    if len(errors) > 20:
        out.append(f"  ... and {len(errors) - 20} more errors")
    out.extend(notes)
    out.append(summary(diagnostics, results, entries) + f"; {len(changes)} status change"
               + ("" if len(changes) == 1 else "s"))
    return "\n".join(out) + "\n"


#: The headings of status changes, by what they ask of a reader.
_REGRESSIONS = "Claims contradicted (the gotcha may be gone or different: someone should look)"
_MOVED = ("Checks to update (their code is not where they look: it may have moved; not a regression, but "
          "an author should point them at the new place or add an `earlier` form)")
_OTHER = "Other status changes"


def _change_groups(changes: Sequence[StatusChange]):
    groups = [(_REGRESSIONS, [c for c in changes if c.regression]),
              (_MOVED, [c for c in changes if c.moved]),
              (_OTHER, [c for c in changes if not c.regression and not c.moved])]
    return [(title, group) for title, group in groups if group]


def _lines(record: CheckRecord) -> str:
    if record.lines:
        a, b = record.lines
        return md.code(f"{record.path}:{a}") + (f"–{b}" if b != a else "")
    return md.code(record.path)


def run_markdown(kb: KB, runs: Sequence[EngineRun], changes: Sequence[StatusChange],
                 diagnostics: Sequence[Diagnostic], notes: Sequence[str], site_url: str = "",
                 problems: Sequence[BoundsProblem] = ()) -> str:
    from ..history import describe_verdict

    out = ["# Verification report", ""]
    for run in runs:
        name = md.text(kb.engines[run.engine].name)
        if run.releases:
            versions = ", ".join(f"[{md.text(r.version)}]({release_url(run.engine, r.version, site_url)})"
                                 if site_url else md.text(r.version) for r in run.releases)
            out.append(f"- **{name}**: verified {versions}.")
        else:
            out.append(f"- **{name}**: no new release.")
    out.append("")
    for title, group in _change_groups(changes):
        out += [f"## {title}", "", "| engine | entry | before | after | check | verdicts | where |",
                "|---|---|---|---|---|---|---|"]
        for c in group:
            engine = md.text(kb.engines[c.engine].name if c.engine in kb.engines else c.engine)
            for t in c.checks or [None]:
                check = t.check if t else ""
                verdicts = f"{describe_verdict(t.before)} → {describe_verdict(t.after)}" if t else ""
                where = (f"{_lines(t.before)} → {_lines(t.after)}" if t else "")
                if t and t.after.hint:
                    where += f"<br>hint: {md.inline(t.after.hint, links=False)}"
                entry = f"[{md.code(c.entry)}]({entry_url(c.entry, site_url)})" if site_url else md.code(c.entry)
                out.append(f"| {engine} | {entry} | {md.text(f'{c.before} in {c.before_version}')} | "
                           f"{md.text(f'{c.after} in {c.after_version}')} | {md.text(check)} | "
                           f"{md.text(verdicts)} | {where} |")
        out.append("")
    if not changes:
        out += ["No entry changed status.", ""]
    out += _surface_section(kb, runs)
    if problems:
        out += ["## Releases that contradict `introduced` or `fixed`", ""]
        out += [f"- {md.inline(p, start=True, links=False)}" for p in problems] + [""]
    if diagnostics:
        out += ["## Lint problems", ""]
        out += [f"- {md.code(f'{d.path}:{d.line}', table=False)} {md.text(d.code)} {md.inline(d.message, links=False)}"
                for d in diagnostics] + [""]
    if notes:
        out += ["## Notes", ""] + [f"- {md.inline(n, start=True, links=False)}" for n in notes] + [""]
    return "\n".join(out)


#: How many changes of one kind the nightly report lists before it says "and N more".
_SURFACE_ROWS = 40


def _surface_section(kb: KB, runs: Sequence[EngineRun]) -> list[str]:
    """What the newest release read in the run changes in the release surface, against the release recorded
    before it (`gotchas diff ENGINE FROM TO` for the whole)."""
    from ..surface.diff import diff
    from ._surface import _side

    out: list[str] = []
    for run in runs:
        if not run.surfaces or run.ledger is None:
            continue
        for version in sorted(run.surfaces, key=version_key)[-1:]:  # the newest read: a new release, nightly
            older = _previous_surface(run, version)
            if older is None:
                continue
            result = diff(older, run.surfaces[version].surface(run.engine))
            if not result.changes:
                continue
            name = kb.engines[run.engine].name
            counts = ", ".join(f"{n} {what}" for what, n in result.counts().items() if n)
            out += [f"## Release surface: {md.text(name)} {md.text(older.version)} → {md.text(version)}", "",
                    f"{counts} ({md.code(f'gotchas diff {run.engine} {older.version} {version}', table=False)}).",
                    "",
                    "| change | kind | name | before | after |", "|---|---|---|---|---|"]
            shown = [c for c in result.changes if c.what != "added"] + result.of("added")
            for c in shown[:_SURFACE_ROWS]:
                what = c.what + (f" ({', '.join(c.fields)})" if c.fields else "")
                out.append(f"| {md.text(what)} | {c.kind} | {md.code(c.name)} | {md.text(_side(c.before))} | "
                           f"{md.text(_side(c.after))} |")
            if len(shown) > _SURFACE_ROWS:
                out.append(f"| … | | {len(shown) - _SURFACE_ROWS} more | | |")
            out.append("")
    return out


def _previous_surface(run: EngineRun, version: str):
    """The surface of the release recorded just before `version` (read in this run, or on file)."""
    stored = getattr(run, "stored_surfaces", None)
    candidates = dict(stored.releases) if stored is not None else {}
    candidates.update(run.surfaces)
    earlier = [v for v in candidates if version_key(v) < version_key(version)]
    if not earlier:
        return None
    return candidates[max(earlier, key=version_key)].surface(run.engine)
