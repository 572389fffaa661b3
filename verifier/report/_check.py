"""The report of a `check` (and of lint): diagnostics and check results as text, JSON, GitHub workflow
annotations, a Markdown job summary or JUnit XML."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from .. import md
from ..model import CHANGED, ERROR, HOLDS, MISSING, CheckResult, Diagnostic
from ._formats import choices, writer
from ._terminal import terminal

FORMATS = choices("check")

#: What XML 1.0 does not allow: C0 controls but tab, newline and return; lone surrogates; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render(fmt: str, diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult],
           notes: Sequence[str] = (), entries: int = 0) -> str:
    """The whole report in `fmt` (one of `choices("check")`); `entries` is how many entry files were read."""
    found = writer("check", fmt)(diagnostics, results, notes, entries)
    return terminal(found) if fmt in ("text", "github") else found


_ICONS = {HOLDS: "✅", CHANGED: "❌", MISSING: "❔", ERROR: "⚠️"}


def check_markdown(diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult], notes: Sequence[str] = (),
                   entries: int = 0) -> str:
    """A job summary: lint problems, then a table of entry × check × verdict."""
    out = ["## gotchas check", "", summary(diagnostics, results, entries), ""]
    if diagnostics:
        out += ["### Lint problems", "", "| file | line | rule | problem |", "|---|---|---|---|"]
        out += [f"| {md.code(d.path)} | {d.line} | {md.text(d.code)} | {md.inline(d.message, links=False)} |"
                for d in diagnostics]
        out.append("")
    if results:
        out += ["### Checks", "", "| entry | check | engine | release | verdict | where | reason / hint |",
                "|---|---|---|---|---|---|---|"]
        for r in results:
            v = r.verdict
            where = md.code(v.path or r.check.path) + (f":{v.lines[0]}" if v.lines else "")
            detail = " ".join(x for x in (v.reason, v.hint and f"hint: {v.hint}") if x)
            out.append(f"| {md.code(r.entry)} | {md.text(r.check.id)} | {md.text(r.release.engine)} | "
                       f"{md.text(r.release.version)} | {_ICONS.get(v.status, '')} {md.text(v.status)} | {where} | "
                       f"{md.inline(detail, links=False)} |")
        out.append("")
    out += [f"- {md.inline(n, start=True, links=False)}" for n in notes]
    return "\n".join(out) + "\n"


def junit(diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult], notes: Sequence[str] = (),
          entries: int = 0) -> str:
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
                ET.SubElement(case, "failure", message=f"{v.status}: {v.reason}",
                              type=v.reason or v.status).text = detail
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


def text(diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult], notes: Sequence[str] = (),
         entries: int = 0) -> str:
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


def as_json(diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult], notes: Sequence[str] = (),
            entries: int = 0) -> str:
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


def github(diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult], notes: Sequence[str] = (),
           entries: int = 0) -> str:
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
