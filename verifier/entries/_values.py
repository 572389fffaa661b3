"""Reading the plain values of the front matter: text as written, lists of text, dates, per-engine releases and
history, each with a diagnostic at its line where it is not what the format asks."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from .. import _yaml
from ..model import Entry, HistoryEvent


class Problem(Protocol):
    """How the reader of an entry reports a problem: at a line (and column), with its lint code."""

    def __call__(self, line: int, code: str, message: str, column: int = 1) -> None: ...


BOUNDS = ("since", "until")
HISTORY_FIELDS = ("date", "note")


def _text(node: _yaml.Node, key: str, problem: Problem) -> str | None:
    """A scalar as text, exactly as written (so `0.10` stays `0.10`)."""
    if node.is_mapping or node.is_sequence:
        problem(node.line, "G203", f"{key!r} must be text, not a {'mapping' if node.is_mapping else 'list'}")
        return None
    if node.value is None:
        problem(node.line, "G203", f"{key!r} is empty")
        return None
    return node.raw if isinstance(node.raw, str) else str(node.value)


def _text_list(node: _yaml.Node, key: str, problem: Problem) -> list[tuple[str, int]]:
    if not node.is_sequence:
        problem(node.line, "G203", f"{key!r} must be a list")
        return []
    values = []
    for item in node.value:
        value = _text(item, f"an item of {key}", problem)
        if value is not None:
            values.append((value, item.line))
    return values


def _date(node: _yaml.Node, key: str, problem: Problem) -> dt.date | None:
    value = node.value
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    problem(node.line, "G203", f"{key!r} must be a date written YYYY-MM-DD")
    return None


def _per_engine(node: _yaml.Node, key: str, problem: Problem, entry: Entry) -> dict[str, str]:
    """`introduced`/`fixed`: a mapping of engine -> release, each release as written."""
    if not node.is_mapping:
        problem(node.line, "G203", f"{key!r} must be a mapping of engine to release, like {{vllm: 0.8.2}}")
        return {}
    found = {}
    for engine, value in node.value.items():
        text = _text(value, f"{key}.{engine}", problem)
        if text is not None:
            found[engine] = text
            entry.lines[f"{key}:{engine}"] = node.key_lines.get(engine, node.line)
    return found


def _records(items: list[_yaml.Node], fields: tuple[str, ...], what: str, problem: Problem):
    """The items of a list of mappings with fixed fields (history, parts) that have all of them; the others, and
    unknown fields, are said."""
    for item in items:
        if not item.is_mapping:
            problem(item.line, "G203", f"a {what} must be a mapping {{{', '.join(fields)}}}")
            continue
        for key in item.value:
            if key not in fields:
                problem(item.key_lines[key], "G201", f"unknown {what} field {key!r}; fields are: {', '.join(fields)}")
        missing = [k for k in fields if k not in item.value]
        for key in missing:
            problem(item.line, "G202", f"{what} is missing {key!r}")
        if not missing:
            yield item


def _history(node: _yaml.Node, problem: Problem) -> list[HistoryEvent]:
    if not node.is_sequence:
        problem(node.line, "G203", "'history' must be a list of {date, note}")
        return []
    events = []
    for item in _records(node.value, HISTORY_FIELDS, "history item", problem):
        date = _date(item.value["date"], "date", problem)
        note = _text(item.value["note"], "note", problem)
        if date is not None and note is not None:
            events.append(HistoryEvent(date, note))
    return events


PART_FIELDS = ("id", "says")


def _parts(node: _yaml.Node, entry: Entry, problem: Problem) -> dict[str, str]:
    """`parts`: a list of {id, says}, two or more, each the part of the claim its checks (`part: ID`) make."""
    if not node.is_sequence or len(node.value) < 2:
        problem(node.line, "G203", "'parts' must be a list of two or more {id, says}: a claim of one part needs none")
        return {}
    found: dict[str, str] = {}
    for item in _records(node.value, PART_FIELDS, "part", problem):
        part = _text(item.value["id"], "id", problem)
        says = _text(item.value["says"], "says", problem)
        if part is None or says is None:
            continue
        if part in found:
            problem(item.line, "G316", f"part {part!r} appears twice")
            continue
        found[part] = says
        entry.lines[f"part:{part}"] = item.line
    return found
