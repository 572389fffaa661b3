"""The report of a `verify` run: per engine the releases verified, the entries whose status changed, the
releases that contradict an entry's bounds; as text, JSON or Markdown."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ..model import CHANGED, ERROR, HOLDS, MISSING
from ._check import _md, as_json, summary
from ._terminal import terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..history import BoundsProblem, StatusChange
    from ..kb import KB
    from ..ledger import CheckRecord
    from ..model import CheckResult, Diagnostic
    from ..verify import EngineRun

RUN_FORMATS = ("text", "json", "markdown")


def render_run(fmt: str, kb: KB, runs: Sequence[EngineRun], changes: Sequence[StatusChange],
               diagnostics: Sequence[Diagnostic], notes: Sequence[str], entries: int, site_url: str = "",
               problems: Sequence[BoundsProblem] = ()) -> str:
    """The report of a `verify` run: `changes` (history.StatusChange) are the entries whose status changed in a
    release verified by the run, `problems` (history.BoundsProblem) where the code contradicts an entry's
    `introduced` or `fixed`."""
    results = [r for run in runs for r in run.results]
    if fmt == "json":
        return as_json(diagnostics, results)
    if fmt == "markdown":
        return run_markdown(kb, runs, changes, diagnostics, notes, site_url, problems)
    return terminal(_run_text(kb, runs, changes, diagnostics, notes, entries, problems, results))


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
        return f"`{record.path}:{a}`" + (f"–{b}" if b != a else "")
    return f"`{record.path}`"


def run_markdown(kb: KB, runs: Sequence[EngineRun], changes: Sequence[StatusChange],
                 diagnostics: Sequence[Diagnostic], notes: Sequence[str], site_url: str = "",
                 problems: Sequence[BoundsProblem] = ()) -> str:
    from ..history import describe_verdict

    site = site_url.rstrip("/") + "/" if site_url else ""
    out = ["# Verification report", ""]
    for run in runs:
        name = kb.engines[run.engine].name
        if run.releases:
            versions = ", ".join(f"[{r.version}]({site}engines/{run.engine}/{r.version}/)" if site else r.version
                                 for r in run.releases)
            out.append(f"- **{name}**: verified {versions}.")
        else:
            out.append(f"- **{name}**: no new release.")
    out.append("")
    for title, group in _change_groups(changes):
        out += [f"## {title}", "", "| engine | entry | before | after | check | verdicts | where |",
                "|---|---|---|---|---|---|---|"]
        for c in group:
            engine = kb.engines[c.engine].name if c.engine in kb.engines else c.engine
            for t in c.checks or [None]:
                check = t.check if t else ""
                verdicts = f"{describe_verdict(t.before)} → {describe_verdict(t.after)}" if t else ""
                where = (f"{_lines(t.before)} → {_lines(t.after)}" if t else "")
                if t and t.after.hint:
                    where += f"<br>hint: {t.after.hint}"
                entry = f"[`{c.entry}`]({site}entries/{c.entry}/)" if site else f"`{c.entry}`"
                out.append(f"| {engine} | {entry} | {c.before} in {c.before_version} | "
                           f"{c.after} in {c.after_version} | {_md(check)} | {_md(verdicts)} | "
                           f"{where.replace('|', '&#124;')} |")
        out.append("")
    if not changes:
        out += ["No entry changed status.", ""]
    out += _surface_section(kb, runs)
    if problems:
        out += ["## Releases that contradict `introduced` or `fixed`", ""] + [f"- {_md(p)}" for p in problems] + [""]
    if diagnostics:
        out += ["## Lint problems", ""] + [f"- `{d.path}:{d.line}` {d.code} {d.message}" for d in diagnostics] + [""]
    if notes:
        out += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(out)


#: How many changes of one kind the nightly report lists before it says "and N more".
_SURFACE_ROWS = 40


def _surface_section(kb: KB, runs: Sequence[EngineRun]) -> list[str]:
    """What the newest release read in the run changes in the release surface, against the release recorded
    before it (`gotchas diff ENGINE FROM TO` for the whole)."""
    from ..ledger import version_key
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
            out += [f"## Release surface: {_md(name)} {_md(older.version)} → {_md(version)}", "",
                    f"{counts} (`gotchas diff {run.engine} {older.version} {version}`).", "",
                    "| change | kind | name | before | after |", "|---|---|---|---|---|"]
            shown = [c for c in result.changes if c.what != "added"] + result.of("added")
            for c in shown[:_SURFACE_ROWS]:
                what = c.what + (f" ({', '.join(c.fields)})" if c.fields else "")
                out.append(f"| {what} | {c.kind} | `{_md(c.name)}` | {_md(_side(c.before))} | {_md(_side(c.after))} |")
            if len(shown) > _SURFACE_ROWS:
                out.append(f"| … | | {len(shown) - _SURFACE_ROWS} more | | |")
            out.append("")
    return out


def _previous_surface(run: EngineRun, version: str):
    """The surface of the release recorded just before `version` (read in this run, or on file)."""
    from ..ledger import version_key

    stored = getattr(run, "stored_surfaces", None)
    candidates = dict(stored.releases) if stored is not None else {}
    candidates.update(run.surfaces)
    earlier = [v for v in candidates if version_key(v) < version_key(version)]
    if not earlier:
        return None
    return candidates[max(earlier, key=version_key)].surface(run.engine)
