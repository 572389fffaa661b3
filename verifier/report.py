"""Presenting lint diagnostics and check results: text, JSON, GitHub workflow annotations.

Text for a terminal (and for a workflow's log, which renders ANSI sequences) goes through `terminal`, once per
output: data (a title, a ledger's hint, a path) can hold ESC and the rest, and a terminal acts on them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from .ledger import version_key
from .model import CHANGED, ERROR, HOLDS, MISSING, CheckResult, Diagnostic, before, entry_bounds

FORMATS = ("text", "json", "github", "markdown", "junit")

#: What a terminal acts on or cannot print: C0 controls but tab (and newline, where lines are kept), DEL, C1
#: controls (ESC and CSI begin the sequences that move the cursor, clear the screen or retitle the window), lone
#: surrogates (which no encoding prints), and the bidirectional controls that reorder what is shown.
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
#: What XML 1.0 does not allow: C0 controls but tab, newline and return; lone surrogates; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str, lines: bool = True) -> str:
    """`text` safe to print: each control character shown as its escape (`\\x1b`), never acted on. With `lines`,
    newlines are kept (`text` is several lines); without, `text` is one line and a newline in it is shown too."""
    if lines:
        return "\n".join(_NOT_PRINTABLE.sub(_visible, line) for line in text.split("\n"))
    return _NOT_PRINTABLE.sub(_visible, text)


def _terminal_lines(out: Sequence[str]) -> str:
    """Lines built from data, each one line whatever the data holds, as one text ending in a newline."""
    return "\n".join(terminal(line, lines=False) for line in out) + "\n"


def render(fmt: str, diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult],
           notes: Sequence[str] = (), entries: int = 0) -> str:
    """The whole report; `entries` is how many entry files were read."""
    renderers = {"text": text, "json": as_json, "github": github, "markdown": check_markdown, "junit": junit}
    found = renderers[fmt](diagnostics, results, notes, entries)
    return terminal(found) if fmt in ("text", "github") else found


_ICONS = {HOLDS: "✅", CHANGED: "❌", MISSING: "❔", ERROR: "⚠️"}


def _md(value) -> str:
    """Text safe in a Markdown table cell."""
    return str(value or "").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def check_markdown(diagnostics, results, notes=(), entries=0) -> str:
    """A job summary: lint problems, then a table of entry × check × verdict."""
    out = ["## gotchas check", "", summary(diagnostics, results, entries), ""]
    if diagnostics:
        out += ["### Lint problems", "", "| file | line | rule | problem |", "|---|---|---|---|"]
        out += [f"| `{_md(d.path)}` | {d.line} | {d.code} | {_md(d.message)} |" for d in diagnostics]
        out.append("")
    if results:
        out += ["### Checks", "", "| entry | check | engine | release | verdict | where | reason / hint |",
                "|---|---|---|---|---|---|---|"]
        for r in results:
            v = r.verdict
            where = f"`{_md(v.path or r.check.path)}`" + (f":{v.lines[0]}" if v.lines else "")
            detail = " ".join(x for x in (v.reason, v.hint and f"hint: {v.hint}") if x)
            out.append(f"| `{_md(r.entry)}` | {_md(r.check.id)} | {_md(r.release.engine)} | {_md(r.release.version)} | "
                       f"{_ICONS.get(v.status, '')} {v.status} | {where} | {_md(detail)} |")
        out.append("")
    out += [f"- {_md(n)}" for n in notes]
    return "\n".join(out) + "\n"


def junit(diagnostics, results, notes=(), entries=0) -> str:
    """JUnit XML: a suite for lint, and one per entry with a case per check and release."""
    import xml.etree.ElementTree as ET

    suites = ET.Element("testsuites", name="gotchas")
    lint_suite = ET.SubElement(suites, "testsuite", name="lint", tests=str(len(diagnostics)),
                               failures=str(len(diagnostics)), errors="0")
    for d in diagnostics:
        case = ET.SubElement(lint_suite, "testcase", classname="lint", name=f"{d.path}:{d.line} {d.code}", file=d.path,
                             line=str(d.line))
        ET.SubElement(case, "failure", message=d.message, type=d.code).text = str(d)
    by_entry: dict[str, list[CheckResult]] = {}
    for r in results:
        by_entry.setdefault(r.entry, []).append(r)
    for entry, items in by_entry.items():
        failures = sum(1 for r in items if r.verdict.status in (CHANGED, MISSING))
        errors = sum(1 for r in items if r.verdict.status == ERROR)
        suite = ET.SubElement(suites, "testsuite", name=entry, tests=str(len(items)), failures=str(failures),
                              errors=str(errors))
        for r in items:
            v = r.verdict
            case = ET.SubElement(suite, "testcase", classname=entry,
                                 name=f"{r.check.id} [{r.release.engine} {r.release.version}]", file=r.file,
                                 line=str(r.check.line))
            detail = "\n".join(x for x in (v.message, v.hint and f"hint: {v.hint}") if x)
            if v.status in (CHANGED, MISSING):
                ET.SubElement(case, "failure", message=f"{v.status}: {v.reason}", type=v.reason or v.status).text = detail
            elif v.status == ERROR:
                ET.SubElement(case, "error", message=f"error: {v.reason}", type=v.reason or "error").text = detail
    total = len(diagnostics) + len(results)
    suites.set("tests", str(total))
    suites.set("failures", str(len(diagnostics) + sum(1 for r in results if r.verdict.status in (CHANGED, MISSING))))
    suites.set("errors", str(sum(1 for r in results if r.verdict.status == ERROR)))
    written = ET.tostring(suites, encoding="unicode")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + _NOT_XML.sub("\ufffd", written) + "\n"


def summary(diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult], entries: int) -> str:
    counts = Counter(r.verdict.status for r in results)
    return (f"{entries} entr{'y' if entries == 1 else 'ies'}: "
            f"{len(diagnostics)} lint problem{'' if len(diagnostics) == 1 else 's'}; "
            f"{len(results)} check verdict{'' if len(results) == 1 else 's'}: "
            f"{counts[HOLDS]} holds, {counts[CHANGED]} changed, {counts[MISSING]} missing, {counts[ERROR]} error")


def text(diagnostics, results, notes=(), entries=0) -> str:
    out = []
    if diagnostics:
        out.append("Lint:")
        out.extend(f"  {d}" for d in diagnostics)
    current = None
    for r in results:
        if r.entry != current:
            current = r.entry
            out.append(f"{r.entry}  ({r.file})")
        v = r.verdict
        where = v.path or r.check.path
        if v.lines:
            where += f":{v.lines[0]}" + (f"-{v.lines[1]}" if v.lines[1] != v.lines[0] else "")
        if v.symbol:
            where += f" in {v.symbol}"
        status = v.status + (f" [{v.reason}]" if v.reason else "") + (f" (form {r.form})" if r.form else "")
        out.append(f"  {r.release.engine} {r.release.version}  {status:<24} {r.check.id}  {where}")
        if v.status != HOLDS:
            if v.message:
                out.append(f"      {v.message}")
            if v.hint:
                out.append(f"      hint: {v.hint}")
    out.extend(notes)
    out.append(summary(diagnostics, results, entries))
    return "\n".join(out) + "\n"


def as_json(diagnostics, results, notes=(), entries=0) -> str:
    records = [
        {"kind": "lint", "file": d.path, "line": d.line, "column": d.column, "code": d.code, "message": d.message}
        for d in diagnostics
    ]
    records.extend(r.to_json() for r in results)
    return json.dumps(records, indent=2, sort_keys=False) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, file: str, line: int, title: str, message: str, column: int | None = None) -> str:
    props = f"file={_escape_property(file)},line={line}"
    if column:
        props += f",col={column}"
    props += f",title={_escape_property(title)}"
    return f"::{level} {props}::{_escape_data(message)}"


def github(diagnostics, results, notes=(), entries=0) -> str:
    out = [annotation("error", d.path, d.line, d.code, d.message, d.column) for d in diagnostics]
    for r in results:
        v = r.verdict
        if v.status == HOLDS:
            continue
        engine = f"{r.release.engine} {r.release.version}"
        message = f"{r.check.id}: {v.status} ({v.reason}) in {engine}: {v.message or ''}"
        if v.hint:
            message += f"\nhint: {v.hint}"
        if v.status == MISSING:
            message += ("\nThe code may have moved: point the check at its new place, or keep this one as a "
                        "form of `earlier` (`gotchas trace` proposes it).")
        level = "error" if v.status in (CHANGED, MISSING) else "warning"
        out.append(annotation(level, r.file, r.check.line, f"{r.entry} {v.status}", message))
    out.extend(notes)
    out.append(summary(diagnostics, results, entries))
    return "\n".join(out) + "\n"


# --- a verify run -------------------------------------------------------------------

RUN_FORMATS = ("text", "json", "markdown")


def render_run(fmt: str, kb, runs, changes, diagnostics, notes, entries: int, site_url: str = "",
               problems=()) -> str:
    """The report of a `verify` run: `changes` (history.StatusChange) are the entries whose status changed in a
    release verified by the run, `problems` (history.BoundsProblem) where the code contradicts an entry's
    `introduced` or `fixed`."""
    results = [r for run in runs for r in run.results]
    if fmt == "json":
        return as_json(diagnostics, results)
    if fmt == "markdown":
        return run_markdown(kb, runs, changes, diagnostics, notes, site_url, problems)
    return terminal(_run_text(kb, runs, changes, diagnostics, notes, entries, problems, results))


def _run_text(kb, runs, changes, diagnostics, notes, entries, problems, results) -> str:
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
                   f"{counts[HOLDS]} holds, {counts[CHANGED]} changed, {counts[MISSING]} missing, {counts[ERROR]} error")
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


def _change_groups(changes):
    groups = [(_REGRESSIONS, [c for c in changes if c.regression]),
              (_MOVED, [c for c in changes if c.moved]),
              (_OTHER, [c for c in changes if not c.regression and not c.moved])]
    return [(title, group) for title, group in groups if group]


def _lines(record) -> str:
    if record.lines:
        a, b = record.lines
        return f"`{record.path}:{a}`" + (f"–{b}" if b != a else "")
    return f"`{record.path}`"


def run_markdown(kb, runs, changes, diagnostics, notes, site_url: str = "", problems=()) -> str:
    from .history import describe_verdict

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
    if problems:
        out += ["## Releases that contradict `introduced` or `fixed`", ""] + [f"- {_md(p)}" for p in problems] + [""]
    if diagnostics:
        out += ["## Lint problems", ""] + [f"- `{d.path}:{d.line}` {d.code} {d.message}" for d in diagnostics] + [""]
    if notes:
        out += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(out)


# --- show ----------------------------------------------------------------------------

def show_records(kb, entry, ledger, engine_filter=None) -> list[dict]:
    """`gotchas show ID --format json`: one record per engine and release, in release order."""
    records = []
    for engine in entry.engines:
        if engine_filter and engine != engine_filter:
            continue
        engine_ledger = ledger.load(engine)
        engine_ledger.restatus({entry.id: entry_bounds(entry, engine)})
        for version in engine_ledger.versions():
            found = engine_ledger.entry(version, entry.id)
            if found is None:
                continue
            checks = [{"check": check.id, "verdict": record.verdict, "reason": record.reason, "form": record.form}
                      for check in entry.checks if check.engine == engine
                      for record in [found.checks.get(check.id)] if record is not None]
            records.append({"engine": engine, "version": version, "status": found.status, "checks": checks})
    return records


def show_entry(kb, entry, ledger, engine_filter=None) -> str:
    from . import history

    out = [f"{entry.id}: {entry.title}", f"  scheme {entry.scheme}; concepts {', '.join(entry.concepts)}"]
    if entry.withdrawn:
        out.append(f"  withdrawn on {entry.withdrawn}")
    for engine in entry.engines:
        if engine_filter and engine != engine_filter:
            continue
        name = kb.engines[engine].name if engine in kb.engines else engine
        engine_ledger = ledger.load(engine)
        introduced, fixed = entry_bounds(entry, engine)
        engine_ledger.restatus({entry.id: (introduced, fixed)})
        statuses = history.entry_statuses(engine_ledger, entry.id, decided=True)
        out.append("")
        out.append(f"{name}: {history.describe(name, statuses)}")
        if introduced or fixed:
            out.append("  stated: " + ", ".join(f"{k} {v}" for k, v in (("introduced", introduced), ("fixed", fixed))
                                                 if v))
        for condition in (c for c in entry.conditions if c.engine == engine):
            span = ", ".join(f"{k} {v}" for k, v in (("since", condition.since), ("until", condition.until)) if v)
            out.append(f"  bites only if {condition.describe()} (default {condition.default_text}"
                       + (f", pinned by check {condition.witness}" if condition.witness else "")
                       + (f"; {span}" if span else "") + ")")
        if not statuses:
            continue
        latest_version, latest = statuses[-1]
        out.append(f"  latest verified: {latest} in {latest_version}")
        unverified = [(v, engine_ledger.entry(v, entry.id)) for v, s in statuses if s == history.UNVERIFIED]
        if unverified:
            version, record = unverified[-1]
            held, total = record.verified
            out.append(f"  unverified in {len(unverified)} release{'s' if len(unverified) != 1 else ''}: "
                       f"in {version}, {held} of {total} claims verified")
        for check in entry.checks:
            if check.engine != engine:
                continue
            out.append(f"  {check.id}: {_check_history(engine_ledger, entry.id, check.id)}")
        flips = history.transitions(engine_ledger, entry.id)
        if flips:
            out.append("  transitions:")
            for t in flips:
                out.append(f"    {t.summary}")
                out.append(f"      before: {_plain_where(t.before)}")
                out.append(f"      after:  {_plain_where(t.after)}")
        problems = history.bounds_problems(engine_ledger, entry.id, introduced, fixed)
        if problems:
            out.append("  releases that contradict `introduced` or `fixed`:")
            out.extend(f"    {p}" for p in problems)
    return _terminal_lines(out)


def _check_history(ledger, entry: str, check: str) -> str:
    """Where a check holds, in which form: `holds in 0.8.2 – 0.11.2 (form 1), 0.12.0 – 0.33.0 (latest)`."""
    runs: list[list] = []  # [form, first, last] of consecutive releases where it holds in one form
    decided = []
    for version in ledger.versions():
        found = ledger.entry(version, entry)
        record = found.checks.get(check) if found is not None else None
        if record is None or not record.decided:
            continue
        decided.append(version)
        if record.verdict == HOLDS:
            if runs and len(decided) > 1 and runs[-1][2] == decided[-2] and runs[-1][0] == record.form:
                runs[-1][2] = version
            else:
                runs.append([record.form, version, version])
    if not runs:
        return "holds in no verified release"
    newest = ledger.versions()[-1]
    parts = []
    for form, first, last in runs:
        span = first if first == last else f"{first} – {last}"
        if last == newest:
            span += " (latest)"
        parts.append(span + (f" (form {form})" if form else ""))
    return "holds in " + ", ".join(parts)


def _plain_where(record) -> str:
    text = record.verdict
    if record.reason:
        text += f" ({record.reason})"
    if record.form:
        text += f" (form {record.form})"
    text += f" {record.path}"
    if record.lines:
        a, b = record.lines
        text += f":{a}" + (f"-{b}" if b != a else "")
    if record.symbol:
        text += f" in {record.symbol}"
    if record.hint:
        text += f"; hint: {record.hint}"
    return text


# --- trace ---------------------------------------------------------------------------

def trace_text(kb, entry, traces) -> str:
    """What `gotchas trace` found: per check, the proposed forms as YAML with their evidence, and where the walk
    stopped. `traces` are (trace.Trace, the versions walked, oldest first)."""
    from .rewrite import render_items

    out = []
    for found, versions in traces:
        check = found.check
        name = kb.engines[check.engine].name if check.engine in kb.engines else check.engine
        out.append(f"{entry.id} / {check.id} ({name}, {versions[0] if versions else '?'} – "
                   f"{versions[-1] if versions else '?'})")
        if found.note:
            out.append(f"  {found.note}")
            out.append("")
            continue
        for proposal in found.proposals:
            first, last = proposal.releases[0], proposal.releases[-1]
            span = first if first == last else f"{first} – {last}"
            out.append(f"  form {proposal.form.index}: holds in {span}; {proposal.how}")
            out.extend("    " + line for line in render_items([proposal.fields(check)], 0))
            v = proposal.verdict
            if v.lines:
                a, b = v.lines
                out.append(f"    evidence in {last}: {v.path}:{a}" + (f"-{b}" if b != a else "")
                           + (f" in {v.symbol}" if v.symbol else ""))
                out.extend(f"      {a + n}| {line}" for n, line in enumerate(proposal.excerpt[:12]))
        holds_from = found.holds_from(versions)
        if found.proposals or holds_from:
            out.append(f"  with {'these forms' if found.proposals else 'its forms'}: holds from {holds_from} on"
                       if holds_from else "  holds in no release")
        if found.stop is not None:
            version, verdict = found.stop
            out.append(f"  stops holding in {version}: {verdict.status}"
                       + (f" ({verdict.reason})" if verdict.reason else "") + "; no other place found there")
            if verdict.hint:
                out.append(f"    hint: {verdict.hint}")
            out.append("    if the behaviour is really different there, the gotcha begins later (`introduced`); "
                       f"if only this claim arrived later, give the check `since: {holds_from}`")
        elif not found.proposals:
            out.append("  nothing to add")
        out.append("")
    for engine in dict.fromkeys(t.check.engine for t, _ in traces):
        ours = [(t.check, t.holds_from(v)) for t, v in traces if t.check.engine == engine]
        versions = next(v for t, v in traces if t.check.engine == engine)
        if not versions or any(start is None for _, start in ours):
            continue
        earliest = min((start for _, start in ours), key=version_key)
        # A check that starts later cuts the gotcha's range, unless its own `since` says it starts there.
        later = [(check.id, start) for check, start in ours
                 if start != earliest and (check.since is None or before(check.since, start))]
        stated = entry.introduced.get(engine)
        if earliest == versions[0]:
            out.append(f"{engine}: checks hold from {earliest}, the oldest release walked: the gotcha may be older "
                       "than the releases tracked" + (f" (the entry says introduced {stated})" if stated else ""))
        else:
            out.append(f"{engine}: the earliest check holds from {earliest}: `introduced: {{{engine}: {earliest}}}` if "
                       "that is where the gotcha begins" + (f" (the entry says {stated})" if stated else ""))
        if later:
            out.append(f"  later: {', '.join(f'{check} from {start}' for check, start in later)}. The entry holds only "
                       "where all its checks do: a claim that arrived after the gotcha needs an earlier form, or its "
                       "own `since`, so that it does not cut the gotcha's range")
    return terminal("\n".join(out)) + "\n"


# --- mutate ---------------------------------------------------------------------------------------------

def mutate_report(fmt: str, kb, reports) -> str:
    """What `gotchas mutate` found: per check, the meaning mutants caught and those that survived (with their
    diff), and any reformat that changed a verdict."""
    if fmt == "json":
        records = [o.to_json(r.entry.id, r.engine, r.release.version) for r in reports for o in r.outcomes]
        return json.dumps(records, indent=2) + "\n"
    if fmt == "github":
        return mutate_github(reports)
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
            out.append(annotation("warning", r.entry.file, lines.get(o.check, 1), f"{r.entry.id} {o.check} does not pin",
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
