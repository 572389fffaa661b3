"""What `gotchas surface` and `gotchas diff` print: a release's surface, and what changes between two releases
(the surface's items, and the entries that start or stop biting), as text, Markdown or JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

from .. import md
from ..ledger import check_json
from ..model import HOLDS
from ..surface.model import KINDS, Item
from ._formats import choices
from ._terminal import _terminal_lines

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..history import StatusChange, Transition
    from ..ledger import CheckRecord
    from ..surface.diff import SurfaceDiff
    from ..surface.model import Surface

SURFACE_FORMATS = choices("surface")
_KIND_TITLES = {"flag": "Flags", "env": "Environment variables", "metric": "Metrics", "request": "Request fields"}


def _where(item: Item) -> str:
    return f"{item.path}:{item.line}" if item.path else ""


def _default(item: Item) -> str:
    return item.describe_default() or "-"


def surface_text(engine_name: str, surface: Surface, kinds: tuple[str, ...]) -> str:
    out = []
    counts = surface.counts()
    out.append(f"{engine_name} {surface.version}: " + ", ".join(f"{counts[k]} {_KIND_TITLES[k].lower()}"
                                                               for k in kinds))
    for kind in kinds:
        items = surface.of_kind(kind)
        if not items:
            continue
        out += ["", f"{_KIND_TITLES[kind]} ({len(items)})"]
        for item in items:
            spelt = ", ".join(item.spellings())
            extra = f"  [choices: {', '.join(item.choices)}]" if item.choices else ""
            flags = "  (deprecated)" if item.deprecated else ""
            default = f"  default {_default(item)}" if item.kind != "metric" else f"  {item.detail}"
            if item.default_path:
                default += f" ({item.default_place})"
            out.append(f"  {spelt}{default}{extra}{flags}  {_where(item)}")
    return _terminal_lines(out)


def surface_markdown(engine_name: str, surface: Surface, kinds: tuple[str, ...]) -> str:
    out = [f"# {md.text(engine_name)} {md.text(surface.version)}: release surface", ""]
    for kind in kinds:
        items = surface.of_kind(kind)
        if not items:
            continue
        out += [f"## {_KIND_TITLES[kind]} ({len(items)})", "", "| name | default | choices | where |",
                "|---|---|---|---|"]
        for item in items:
            name = ", ".join(md.code(s) for s in item.spellings())
            default = md.text(item.detail) if item.kind == "metric" else md.code(_default(item))
            out.append(f"| {name}{' (deprecated)' if item.deprecated else ''} | {default} | "
                       f"{md.text(', '.join(item.choices))} | {md.text(_where(item))} |")
        out.append("")
    return "\n".join(out)


def surface_json(engine: str, surface: Surface, kinds: tuple[str, ...]) -> dict:
    return {"engine": engine, "version": surface.version, "identity": surface.identity,
            "items": [i.to_json() for kind in kinds for i in surface.of_kind(kind)]}


# --- diff ------------------------------------------------------------------------------------------------------

def _biting(changes: Sequence[StatusChange]) -> tuple[list, list, list]:
    """(start biting, stop biting, other status changes) of history.between's changes."""
    start = [c for c in changes if c.after == HOLDS]
    stop = [c for c in changes if c.before == HOLDS]
    other = [c for c in changes if c not in start and c not in stop]
    return start, stop, other


def _side(item: Item | None) -> str:
    if item is None:
        return ""
    if item.default_path:
        return f"{_default(item)} ({item.default_place}; flag at {_where(item)})"
    return f"{_default(item)} ({_where(item)})"


def _change_line(change) -> str:
    a, b = change.before, change.after
    if change.what == "added":
        return f"+ {b.name}  default {_default(b)}  {_where(b)}" if b.kind != "metric" else \
            f"+ {b.name}  {b.detail}  {_where(b)}"
    if change.what == "removed":
        return f"- {a.name}  (was default {_default(a)}, {_where(a)})" if a.kind != "metric" else \
            f"- {a.name}  (was {_where(a)})"
    if change.what == "renamed":
        more = f"; {', '.join(change.fields)} changed" if change.fields else ""
        return f"~ {a.name} -> {b.name}  {_where(a)} -> {_where(b)}{more}"
    parts = []
    for name in change.fields:
        if name == "default":
            if a.default_path or b.default_path:  # the lines that give each default
                parts.append(f"default {_default(a)} ({a.default_place}) -> {_default(b)} ({b.default_place})")
            else:
                parts.append(f"default {_default(a)} -> {_default(b)}")
        elif name == "choices":
            added, removed = set(b.choices) - set(a.choices), set(a.choices) - set(b.choices)
            parts.append("choices" + (f" +{', +'.join(sorted(added))}" if added else "")
                         + (f" -{', -'.join(sorted(removed))}" if removed else ""))
        elif name == "aliases":
            parts.append(f"spellings {', '.join(a.spellings())} -> {', '.join(b.spellings())}")
        elif name == "deprecated":
            parts.append("deprecated" if b.deprecated else "no longer deprecated")
    return f"* {b.name}: {'; '.join(parts)}  {_where(a)} -> {_where(b)}"


def _check_line(transition: Transition) -> str:
    def where(record: CheckRecord) -> str:
        if not record.path:
            return ""
        lines = f":{record.lines[0]}-{record.lines[1]}" if record.lines else ""
        return f" at {record.path}{lines}"

    return (f"{transition.check}: {transition.before.verdict}{where(transition.before)} -> "
            f"{transition.after.verdict}{where(transition.after)}")


def named_lines(result: SurfaceDiff, named: Sequence[tuple[str, Item | None, Item | None]],
                about: Sequence[tuple[str, str, str, str]] = ()) -> list[str]:
    """The items asked for by name (`--name`), at both releases, changed or not, each with the entries that name
    it and their status at both."""
    out = []
    for name, a, b in named:
        if a is None and b is None:
            out.append(f"  {name}: in neither release")
            continue
        same = a is not None and b is not None and _default(a) == _default(b)
        left = f"{result.older}: {_side(a) if a else 'absent'}"
        right = f"{result.newer}: {_side(b) if b else 'absent'}"
        shown = cast(Item, b or a)  # not both None (above)
        out.append(f"  {shown.name}: {'unchanged; ' if same else ''}{left}; {right}")
        out += [f"    in {entry}: {x} in {result.older}, {y} in {result.newer}"
                for n, entry, x, y in about if n == shown.name]
    return out


def diff_text(engine_name: str, result: SurfaceDiff, changes: Sequence[StatusChange], titles: dict[str, str],
              named: Sequence[tuple[str, Item | None, Item | None]] = (),
              about: Sequence[tuple[str, str, str, str]] = ()) -> str:
    out = [f"{engine_name} {result.older} -> {result.newer}"]
    if named:
        out += ["", "Asked for"] + named_lines(result, named, about)
    counts = result.counts()
    out.append(", ".join(f"{n} {what}" for what, n in counts.items()) + " (flags, variables, metrics, request fields)")
    for kind in KINDS:
        found = result.of(kind=kind)
        if found:
            out += ["", f"{_KIND_TITLES[kind]} ({len(found)})"]
            out += [f"  {_change_line(c)}" for c in found]
    start, stop, other = _biting(changes)
    for title, group in (("Entries that start biting", start), ("Entries that stop biting", stop),
                         ("Other status changes", other)):
        if group:
            out += ["", f"{title} ({len(group)})"]
            for change in group:
                out.append(f"  {change.entry}: {change.before or 'no status'} -> {change.after}"
                           f"  {titles.get(change.entry, '')}")
                out += [f"    {_check_line(t)}" for t in change.checks]
    if not result.changes and not changes:
        out += ["", "no difference"]
    return _terminal_lines(out)


def diff_markdown(engine_name: str, result: SurfaceDiff, changes: Sequence[StatusChange], titles: dict[str, str],
                  named: Sequence[tuple[str, Item | None, Item | None]] = (),
                  about: Sequence[tuple[str, str, str, str]] = ()) -> str:
    out = [f"# {md.text(engine_name)} {md.text(result.older)} → {md.text(result.newer)}", ""]
    if named:
        out += [f"| asked for | {md.text(result.older)} | {md.text(result.newer)} |", "|---|---|---|"]
        out += [f"| {md.code(name)} | {md.text(_side(a)) if a else 'absent'} | "
                f"{md.text(_side(b)) if b else 'absent'} |" for name, a, b in named] + [""]
        out += [f"- {md.code(name, table=False)} in {md.code(entry, table=False)}: {md.text(a)} in "
                f"{md.text(result.older)}, {md.text(b)} in {md.text(result.newer)}"
                for name, entry, a, b in about] + ([""] if about else [])
    counts = result.counts()
    out.append(", ".join(f"{n} {what}" for what, n in counts.items()) + ".")
    for kind in KINDS:
        found = result.of(kind=kind)
        if not found:
            continue
        out += ["", f"## {_KIND_TITLES[kind]} ({len(found)})", "", f"| change | name | {md.text(result.older)} | "
                f"{md.text(result.newer)} |", "|---|---|---|---|"]
        for c in found:
            detail = f" ({', '.join(c.fields)})" if c.fields else ""
            name = c.name if c.what != "renamed" else f"{cast(Item, c.before).name} → {c.name}"  # renamed: from one
            out.append(f"| {md.text(c.what + detail)} | {md.code(name)} | {md.text(_side(c.before))} | "
                       f"{md.text(_side(c.after))} |")
    start, stop, other = _biting(changes)
    for title, group in (("Entries that start biting", start), ("Entries that stop biting", stop),
                         ("Other status changes", other)):
        if group:
            out += ["", f"## {title} ({len(group)})", ""]
            for change in group:
                out.append(f"- {md.code(change.entry, table=False)}: {md.text(change.before or 'no status')} → "
                           f"{md.text(change.after)} ({md.inline(titles.get(change.entry, ''))})")
                out += [f"  - {md.text(_check_line(t), start=True)}" for t in change.checks]
    return "\n".join(out) + "\n"


def diff_json(engine: str, result: SurfaceDiff, changes: Sequence[StatusChange],
              named: Sequence[tuple[str, Item | None, Item | None]] = (),
              about: Sequence[tuple[str, str, str, str]] = ()) -> dict:
    start, stop, other = _biting(changes)

    def entry(change: StatusChange) -> dict:
        return {"entry": change.entry, "before": change.before, "after": change.after,
                "checks": [{"check": t.check, "before": check_json(t.before), "after": check_json(t.after)}
                           for t in change.checks]}

    return {"engine": engine, "from": result.older, "to": result.newer, "counts": result.counts(),
            "changes": [c.to_json() for c in result.changes],
            "entries": {"start": [entry(c) for c in start], "stop": [entry(c) for c in stop],
                        "other": [entry(c) for c in other]},
            "named": [{"name": name, "before": a.to_json() if a else None, "after": b.to_json() if b else None,
                       "entries": [{"entry": e, "before": x, "after": y} for n, e, x, y in about
                                   if n == cast(Item, b or a).name]} for name, a, b in named if a or b]}


# --- the writers of `surface --format` and `diff --format` (report.OUTPUT_FORMATS) -------------------------------

def surface_as_text(engine: str, name: str, surface: Surface, kinds: tuple[str, ...]) -> str:
    return surface_text(name, surface, kinds)


def surface_as_json(engine: str, name: str, surface: Surface, kinds: tuple[str, ...]) -> str:
    return json.dumps(surface_json(engine, surface, kinds), indent=1, ensure_ascii=False) + "\n"


def surface_as_markdown(engine: str, name: str, surface: Surface, kinds: tuple[str, ...]) -> str:
    return surface_markdown(name, surface, kinds)


def diff_as_text(engine: str, name: str, result: SurfaceDiff, changes: Sequence[StatusChange],
                 titles: dict[str, str], named: Sequence[tuple[str, Item | None, Item | None]] = (),
                 about: Sequence[tuple[str, str, str, str]] = ()) -> str:
    return diff_text(name, result, changes, titles, named, about)


def diff_as_json(engine: str, name: str, result: SurfaceDiff, changes: Sequence[StatusChange],
                 titles: dict[str, str], named: Sequence[tuple[str, Item | None, Item | None]] = (),
                 about: Sequence[tuple[str, str, str, str]] = ()) -> str:
    return json.dumps(diff_json(engine, result, changes, named, about), indent=1, ensure_ascii=False) + "\n"


def diff_as_markdown(engine: str, name: str, result: SurfaceDiff, changes: Sequence[StatusChange],
                     titles: dict[str, str], named: Sequence[tuple[str, Item | None, Item | None]] = (),
                     about: Sequence[tuple[str, str, str, str]] = ()) -> str:
    return diff_markdown(name, result, changes, titles, named, about)
