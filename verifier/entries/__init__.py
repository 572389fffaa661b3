"""Loading entries: front matter and body into typed values, with the line of every field.

`load_entry` never raises on bad input: what it cannot read becomes a
diagnostic with a rule code and a line, and what it can read becomes an
`Entry` (checks that are malformed are left out of it, so they are never
evaluated).

This module reads the file and the front matter's top level; the parts have
modules of their own: plain values (`_values`), checks and their forms
(`_checks`), conditions (`_conditions`) and the Markdown body (`_body`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import _yaml
from ..model import Check, Condition, Diagnostic, Entry
from ..safety import PathError, read_regular
from ._body import REQUIRED_SECTIONS, SECTIONS, _read_body
from ._checks import CHECK_FIELDS, CHECK_REQUIRED, FORM_FIELDS, MODIFIERS, _check
from ._conditions import CONDITION_FIELDS, _conditions
from ._values import BOUNDS, HISTORY_FIELDS, _date, _history, _parts, _per_engine, _text, _text_list

if TYPE_CHECKING:
    from ._values import Problem

__all__ = ["BOUNDS", "CHECK_FIELDS", "CHECK_REQUIRED", "CONDITION_FIELDS", "ENTRY_FIELDS", "ENTRY_REQUIRED",
           "FORM_FIELDS", "HISTORY_FIELDS", "MAX_ENTRY_BYTES", "MODIFIERS", "REQUIRED_SECTIONS", "SECTIONS",
           "LoadedEntry", "load_entry", "parse_entry"]

MAX_ENTRY_BYTES = 1024 * 1024

ENTRY_FIELDS = ("id", "title", "scheme", "severity", "concepts", "engines", "references", "history", "withdrawn",
                "introduced", "fixed", "when", "parts", "checks")
ENTRY_REQUIRED = ("id", "title", "scheme", "severity", "concepts", "engines", "checks")

_FENCE = "---"


@dataclass
class LoadedEntry:
    """An entry as read from one file: the typed entry (when the front matter was readable)."""

    file: str
    entry: Entry | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    front: _yaml.Node | None = None  # the front matter with positions, for rules that need raw keys
    check_nodes: dict[str, _yaml.Node] = field(default_factory=dict)  # check id -> its mapping
    #: (check id, form index) -> the mapping of that item of `earlier` (index 1 is the first item).
    form_nodes: dict[tuple[str, int], _yaml.Node] = field(default_factory=dict)
    #: Every check that could be read at all, for lint; `entry.checks` holds only the well-formed ones.
    linted_checks: list[Check] = field(default_factory=list)
    #: Every condition that could be read, with the mapping it was read from (for lint's lines).
    condition_nodes: list[tuple[Condition, _yaml.Node]] = field(default_factory=list)


def load_entry(path: str | os.PathLike, display: str | None = None) -> LoadedEntry:
    """Read and parse one entry file; `display` is the path used in diagnostics."""
    path = Path(path)
    shown = display or str(path)
    try:
        data = read_regular(path, MAX_ENTRY_BYTES)  # a link to /dev/zero is refused, never read whole
    except PathError as exc:
        return LoadedEntry(shown, None, [Diagnostic(shown, 1, "G107", f"the file {exc.reason}")])
    except OSError as exc:
        return LoadedEntry(shown, None, [Diagnostic(shown, 1, "G107", f"cannot read the file: {exc.strerror or exc}")])
    return parse_entry(data, shown, path.stem)


def parse_entry(data: bytes, file: str, stem: str) -> LoadedEntry:
    result = LoadedEntry(file, None)
    problems = result.diagnostics

    def problem(line: int, code: str, message: str, column: int = 1) -> None:
        problems.append(Diagnostic(file, line, code, message, column))

    if len(data) > MAX_ENTRY_BYTES:
        problem(1, "G107", f"the file is over {MAX_ENTRY_BYTES} bytes; entries are at most {MAX_ENTRY_BYTES}")
        return result
    if b"\x00" in data:
        problem(1, "G107", "the file is binary (it contains NUL bytes)")
        return result
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problem(line, "G107", f"the file is not UTF-8 (byte {exc.start})")
        return result
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != _FENCE:
        problem(1, "G101", "the file must start with front matter: a line '---', YAML, and a closing '---'")
        return result
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == _FENCE), None)
    if close is None:
        problem(1, "G102", "the front matter is not closed: add a line '---' after the YAML")
        return result
    entry = Entry(id=stem, file=file)
    entry.lines["front"] = 1
    _read_body(entry, "\n".join(lines[close + 1:]), close + 2, problem)
    try:
        front = _yaml.load("\n".join(lines[1:close]), first_line=2)
    except _yaml.YAMLProblem as exc:
        problem(exc.line, exc.code, exc.message, exc.column)
        return result
    if front is None or not front.is_mapping:
        problem(front.line if front else 2, "G105", "the front matter must be a YAML mapping of fields")
        return result
    result.front = front
    _fill_entry(entry, front, problem, result)
    result.entry = entry
    return result


# --- front matter ---------------------------------------------------------------

def _fill_entry(entry: Entry, front: _yaml.Node, problem: Problem, result: LoadedEntry) -> None:
    fields = front.value
    for key in fields:
        entry.lines[key] = front.key_lines[key]
        if key not in ENTRY_FIELDS:
            problem(front.key_lines[key], "G201", f"unknown field {key!r}; fields are: {', '.join(ENTRY_FIELDS)}")
    for key in ENTRY_REQUIRED:
        if key not in fields:
            problem(1, "G202", f"missing required field {key!r}")

    if "id" in fields:
        value = _text(fields["id"], "id", problem)
        if value is not None:
            entry.id = value
    if "title" in fields:
        entry.title = _text(fields["title"], "title", problem) or ""
    if "scheme" in fields:
        entry.scheme = _text(fields["scheme"], "scheme", problem) or ""
    if "severity" in fields:
        entry.severity = _text(fields["severity"], "severity", problem) or ""
    for key in ("concepts", "engines", "references"):
        if key in fields:
            values = _text_list(fields[key], key, problem)
            setattr(entry, key, tuple(v for v, _ in values))
            for value, line in values:
                entry.lines[f"{key}:{value}"] = line
    if "history" in fields:
        entry.history = tuple(_history(fields["history"], problem))
    if "withdrawn" in fields:
        entry.withdrawn = _date(fields["withdrawn"], "withdrawn", problem)
    for key in ("introduced", "fixed"):
        if key in fields:
            setattr(entry, key, _per_engine(fields[key], key, problem, entry))
    if "when" in fields:
        entry.conditions = tuple(_conditions(fields["when"], entry, problem, result))
    if "parts" in fields:
        entry.parts = _parts(fields["parts"], entry, problem)
    if "checks" in fields:
        node = fields["checks"]
        if not node.is_sequence:
            problem(node.line, "G203", "'checks' must be a list of checks")
        else:
            checks = []
            for item in node.value:
                check, well_formed = _check(item, entry, problem, result)
                if check is None:
                    continue
                result.linted_checks.append(check)
                result.check_nodes.setdefault(check.id, item)
                if well_formed:
                    checks.append(check)
            entry.checks = tuple(checks)
