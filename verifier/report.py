"""Presenting lint diagnostics and check results: text, JSON, GitHub workflow annotations."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from .model import CHANGED, ERROR, HOLDS, CheckResult, Diagnostic

FORMATS = ("text", "json", "github")


def render(fmt: str, diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult],
           notes: Sequence[str] = (), entries: int = 0) -> str:
    """The whole report; `entries` is how many entry files were read."""
    return {"text": text, "json": as_json, "github": github}[fmt](diagnostics, results, notes, entries)


def summary(diagnostics: Sequence[Diagnostic], results: Sequence[CheckResult], entries: int) -> str:
    counts = Counter(r.verdict.status for r in results)
    return (f"{entries} entr{'y' if entries == 1 else 'ies'}: "
            f"{len(diagnostics)} lint problem{'' if len(diagnostics) == 1 else 's'}; "
            f"{len(results)} check verdict{'' if len(results) == 1 else 's'}: "
            f"{counts[HOLDS]} holds, {counts[CHANGED]} changed, {counts[ERROR]} error")


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
        status = v.status + (f" [{v.reason}]" if v.reason else "")
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
        level = "error" if v.status == CHANGED else "warning"
        out.append(annotation(level, r.file, r.check.line, f"{r.entry} {v.status}", message))
    out.extend(notes)
    out.append(summary(diagnostics, results, entries))
    return "\n".join(out) + "\n"
