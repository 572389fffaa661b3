"""Adding `earlier` forms to a check in an entry file, leaving every other byte as it was.

YAML libraries that round-trip comments exist (ruamel.yaml), but re-emitting a
document still re-lays what they touch (quoting, flow mappings, blank lines); an
entry is reviewed as a diff, so the new lines are inserted as text instead, at
the place the loader's line numbers give, and the result is read back to check
that the entry now has exactly the forms asked for.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import TYPE_CHECKING, cast

import yaml

from .entries import MAX_ENTRY_BYTES, LoadedEntry, parse_entry
from .errors import EXIT_FINDINGS, GotchasError
from .matchers import NAMES
from .model import Check, Entry
from .safety import PathError, WriteError, read_regular, write_text_atomically

if TYPE_CHECKING:
    from pathlib import Path

    from ._yaml import Node
    from .model import Form


class RewriteError(GotchasError, exit_code=EXIT_FINDINGS):
    """The entry cannot be edited as asked; the message says why. The file is left as it was."""


_KEY_ORDER = ("since", "until", "path", "in", *NAMES, "after", "adjacent")


def scalar(value: object) -> str:
    """A YAML scalar that reads back as `value`: plain where that is safe, quoted where it is not."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text and text == text.strip() and "\n" not in text:
        try:
            if yaml.safe_load(f"k: {text}\n") == {"k": text}:
                return text
        except yaml.YAMLError:
            pass
    if any(ord(c) < 32 for c in text):
        return json.dumps(text)  # a JSON string is a YAML double-quoted scalar
    return "'" + text.replace("'", "''") + "'"


def render_items(items: list[dict], indent: int) -> list[str]:
    """`earlier` items as block YAML lines (without line ends), the dash at column `indent`."""
    lines = []
    for item in items:
        keys = [k for k in _KEY_ORDER if k in item] + [k for k in item if k not in _KEY_ORDER]
        for n, key in enumerate(keys):
            lead = " " * indent + ("- " if n == 0 else "  ")
            lines.append(f"{lead}{key}: {scalar(item[key])}")
    return lines


def add_earlier(text: str, loaded: LoadedEntry, check: Check, items: list[dict]) -> str:
    """`text` (the entry that `loaded` was read from) with `items` appended to `check`'s `earlier` list."""
    if not items:
        return text
    node, lines, newline, end = _check_block(text, loaded, check)  # end: the check's last line, before trimming
    key_indent = node.column - 1
    earlier = node.value.get("earlier")
    if earlier is not None:
        if not earlier.is_sequence or not earlier.value:
            raise RewriteError(f"{loaded.file}:{earlier.line}: 'earlier' of check {check.id} is not a block list")
        later_keys = sorted(line for line in node.key_lines.values() if line > node.key_lines["earlier"])
        if later_keys:
            end = later_keys[0] - 2
        first_item = lines[earlier.value[0].line - 1]
        dash = first_item.find("-")
        if dash < 0 or first_item[:dash].strip():
            raise RewriteError(f"{loaded.file}:{earlier.line}: 'earlier' of check {check.id} is written in flow "
                               "style; write it as a block list to add to it")
        new = render_items(items, dash)
    else:
        new = [" " * key_indent + "earlier:"] + render_items(items, key_indent + 2)
    end = _trim(lines, end, node.line - 1, key_indent, node)
    if not lines[end].endswith(("\n", "\r")):
        lines[end] += newline
    edited = lines[:end + 1] + [line + newline for line in new] + lines[end + 1:]
    return "".join(edited)


def _check_block(text: str, loaded: LoadedEntry, check: Check):
    """Where `check` is written in `text` (the entry `loaded` was read from): its mapping node, the text's lines
    (with their ends), the line end the file uses, and the 0-based index of the check's last line before
    trimming (the line before the next check, or before the front matter's next key, as `severity:` after the
    last check, or before the closing fence). RewriteError when the check cannot be edited as text."""
    node = loaded.check_nodes.get(check.id)
    front = loaded.front
    checks = front.value.get("checks") if front is not None else None
    if node is None or front is None or checks is None or not checks.is_sequence:
        raise RewriteError(f"{loaded.file}: check {check.id} is not where a check can be edited")
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    fence = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n").rstrip() == "---"), None)
    if fence is None:
        raise RewriteError(f"{loaded.file}: the front matter is not closed")
    following = [item.line for item in checks.value if item.line > node.line]
    following += [line for line in front.key_lines.values() if line > node.line]
    end = (min(following) - 1 if following else fence) - 1
    return node, lines, newline, end


#: A block scalar's header with the keep indicator (`|+`, `>+`, `|2+`, `|+2`), as written after its key.
_KEEP = re.compile(r"[|>](?:[1-9]?\+|\+[1-9])[ \t]*(?:#.*)?$")


def _trim(lines: list[str], end: int, lowest: int, indent: int, node: Node) -> int:
    """`end` (0-based) moved up past the blank lines and the comments that belong to what follows, never above
    `lowest`, nor into the last value of `node` when that is a keep-chomped block scalar (`|+`): its trailing
    blank lines are part of its value, and text inserted before them would take them from it."""
    floor = max(lowest, _kept_until(lines, end, node))
    while end > floor and _trailing(lines[end], indent):
        end -= 1
    return end


def _kept_until(lines: list[str], end: int, node: Node) -> int:
    """The 0-based last line of the keep-chomped block scalar that ends `node` at or above line `end`, with its
    trailing blank lines; -1 when `node` does not end with one."""
    parent = node
    while True:
        if node.is_mapping:
            keys = [(line, key) for key, line in node.key_lines.items() if line - 1 <= end]
            if not keys:
                return -1
            parent, node = node, node.value[max(keys)[1]]
            continue
        if node.is_sequence:
            items = [item for item in node.value if item.line - 1 <= end]
            if not items:
                return -1
            parent, node = node, items[-1]
            continue
        break
    if not isinstance(node.value, str) or node.line < 1 or node.line > len(lines):
        return -1
    if not _KEEP.match(lines[node.line - 1][node.column - 1:].rstrip("\r\n")):
        return -1
    indent, last = parent.column - 1, node.line - 1
    for n in range(node.line, min(end, len(lines) - 1) + 1):
        line = lines[n].rstrip("\r\n")
        if line.strip() and len(line) - len(line.lstrip(" ")) <= indent:
            break  # a line no deeper than the key ends the scalar
        last = n
    return last


def _trailing(line: str, indent: int) -> bool:
    """A blank line, or a comment no deeper than the check's keys (it belongs to what follows)."""
    stripped = line.strip()
    if not stripped:
        return True
    return stripped.startswith("#") and len(line) - len(line.lstrip()) <= indent


def write_forms(path: str | Path, loaded: LoadedEntry, check: Check, items: list[dict]) -> str:
    """Add `items` to the check's `earlier` list in the entry file at `path`; the new text, once it reads back
    with exactly those forms added (else RewriteError, and the file is untouched). The file is replaced
    atomically (`safety.write_text_atomically`): a failed write is a WriteError and leaves it as it was."""
    from pathlib import Path

    path = Path(path)
    data = _read_as_loaded(path, loaded, "trace")
    text = data.decode("utf-8")
    edited = add_earlier(text, loaded, check, items)
    again = parse_entry(edited.encode("utf-8"), loaded.file, path.stem)
    after = next((c for c in again.entry.checks if c.id == check.id), None) if again.entry else None
    if after is None or len(after.earlier) != len(check.earlier) + len(items) or [
            d for d in again.diagnostics if d not in loaded.diagnostics]:
        problems = "; ".join(str(d) for d in again.diagnostics) or "the check did not read back"
        raise RewriteError(f"{loaded.file}: adding the forms would break the entry ({problems}); it is unchanged")
    for form, item in zip(after.earlier[len(check.earlier):], items):
        for key, value in item.items():
            attribute = {"in": "scope"}.get(key, key)
            if key in NAMES:
                attribute = "pattern"
                if form.matcher != key:
                    raise RewriteError(f"{loaded.file}: a written form did not read back as written; it is unchanged")
            if getattr(form, attribute) != value:
                raise RewriteError(f"{loaded.file}: a written form did not read back as written ({key}); "
                                   "it is unchanged")
    _replace_entry(path, data, edited, loaded.file, "trace")
    return edited


#: The sha256 of what this process last wrote to each entry file (by absolute path): `reread` tells the run's
#: own writes from someone else's edit by it.
_WRITTEN: dict[str, str] = {}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _changed(file: str, command: str) -> RewriteError:
    return RewriteError(f"{file} changed while {command} ran; not written")


def _read_entry(path: Path, file: str, command: str) -> bytes:
    try:
        return read_regular(path, MAX_ENTRY_BYTES)
    except (PathError, OSError):
        raise _changed(file, command) from None  # it was read when the command started


def _same(fresh: LoadedEntry, loaded: LoadedEntry) -> bool:
    """Whether two readings of an entry say the same, every field and line of it."""
    return fresh.entry == loaded.entry and fresh.diagnostics == loaded.diagnostics


def _read_as_loaded(path: Path, loaded: LoadedEntry, command: str) -> bytes:
    """The bytes of the entry file, refused (RewriteError) unless they read as `loaded` does: the lines an edit
    is placed by are those of the text it is made to."""
    data = _read_entry(path, loaded.file, command)
    if not _same(parse_entry(data, loaded.file, path.stem), loaded):
        raise _changed(loaded.file, command)
    return data


def _replace_entry(path: Path, data: bytes, edited: str, file: str, command: str) -> None:
    """Replace the entry file at `path`, read as `data`, with `edited`: refused (RewriteError) when the file no
    longer holds `data` (someone edited it meanwhile), and written atomically, never through a link (PathError,
    or WriteError when the write fails; either way the file is as it was)."""
    if _digest(_read_entry(path, file, command)) != _digest(data):
        raise _changed(file, command)
    new = edited.encode("utf-8")
    write_text_atomically(path, new, path.parent, display=file)
    _WRITTEN[os.path.abspath(path)] = _digest(new)


def reread(path: str | Path, loaded: LoadedEntry, display: str | None = None, command: str = "trace"
           ) -> LoadedEntry:
    """The entry at `path` read again before a command writes to it (an earlier write moved its lines), refused
    (RewriteError: "ENTRY changed while trace ran; not written") when it changed since `loaded` was read other
    than by this process's own writes."""
    from pathlib import Path

    path = Path(path)
    file = display or loaded.file
    data = _read_entry(path, file, command)
    fresh = parse_entry(data, file, path.stem)
    if fresh.entry is None or (_WRITTEN.get(os.path.abspath(path)) != _digest(data) and not _same(fresh, loaded)):
        raise _changed(file, command)
    return fresh


# --- `follow --write`: a new own form, the old one kept in `earlier` --------------------------------------

_FORM_KEYS = ("path", "in", "after", "adjacent")


def block(key: str, value: object, indent: int) -> list[str]:
    """`key: value` at `indent`, a multi-line text as a literal block scalar (how entries write code)."""
    text = value if isinstance(value, str) else None
    if text is not None and "\n" in text.rstrip("\n") and _literal_safe(text):
        chomp = "" if text.endswith("\n") else "-"
        body = text[:-1] if text.endswith("\n") else text
        return [" " * indent + f"{key}: |{chomp}"] + [(" " * (indent + 2) + line) if line else ""
                                                     for line in body.split("\n")]
    return [" " * indent + f"{key}: {scalar(value)}"]


def _literal_safe(text: str) -> bool:
    """Whether a literal block scalar reads back as `text`: no leading space on its first line (YAML would take
    it for the indentation), no trailing spaces or tabs, at most one line end at the end, no control character."""
    body = text[:-1] if text.endswith("\n") else text
    return (not body.startswith((" ", "\t")) and not body.endswith("\n") and
            all(line == line.rstrip(" \t") for line in body.split("\n")) and
            not any(ord(c) < 32 and c != "\n" for c in body))


def form_fields(form: Form, relative_to: Form | None = None) -> dict[str, object]:
    """The keys that write `form`: all of them, or, `relative_to` a form it inherits from, those that differ
    (the matcher with its modifiers whole)."""
    fields: dict[str, object] = {}
    if relative_to is None or form.path != relative_to.path:
        fields["path"] = form.path
    if relative_to is None:
        if form.scope is not None:
            fields["in"] = form.scope
    elif form.scope != relative_to.scope:
        fields["in"] = form.scope
    code = (form.matcher, form.pattern, form.after, form.adjacent)
    if relative_to is None or code != (relative_to.matcher, relative_to.pattern, relative_to.after,
                                       relative_to.adjacent):
        fields[form.matcher] = form.pattern
        if form.after is not None:
            fields["after"] = form.after
        if form.adjacent:
            fields["adjacent"] = True
    return fields


def _lines_of(fields: dict, indent: int, dash: bool = False) -> list[str]:
    out: list[str] = []
    keys = [k for k in _KEY_ORDER if k in fields] + [k for k in fields if k not in _KEY_ORDER]
    for n, key in enumerate(keys):
        rendered = block(key, fields[key], indent + 2 if dash else indent)
        if dash and n == 0:
            rendered[0] = " " * indent + "- " + rendered[0].lstrip(" ")
        out.extend(rendered)
    return out


def replace_form(text: str, loaded: LoadedEntry, check: Check, form: Form, until: str | None,
                 drop: int | None = None) -> str:
    """`text` with `check`'s own form replaced by `form` (its place and code; the check's bounds, values and
    claim stay) and the old own form first in `earlier`, bounded `until` the last release where it held. An
    `earlier` item that inherited what changed is given it explicitly, so that it means what it meant.

    With `until` None the old own form is not kept; `drop` (a form's number, 1 for the first item of `earlier`)
    removes that item (the replay benchmark undoes a boundary so: the form of the release before it becomes
    the check's own again)."""
    node, lines, newline, end = _check_block(text, loaded, check)
    key_indent = node.column - 1
    end = _trim(lines, end, node.line - 1, key_indent, node)
    key_lines = sorted(node.key_lines.items(), key=lambda kv: kv[1])

    def extent(key: str) -> tuple[int, int]:
        """0-based first and last line of a key of the check with its value."""
        line = node.key_lines[key]
        later = [n for _, n in key_lines if n > line]
        last = (later[0] - 2) if later else end
        return line - 1, _trim(lines, last, line - 1, key_indent, node)

    old = check.own
    edits: list[tuple[int, int, list[str]]] = []  # (first line, last line: first - 1 to insert, new lines)
    wanted = {"path": form.path, "in": form.scope, "after": form.after, "adjacent": form.adjacent or None,
              form.matcher: form.pattern}
    if form.matcher != old.matcher:
        wanted[old.matcher] = None
    insert_at = extent(old.matcher)[1] if old.matcher in node.key_lines else end
    for key, value in wanted.items():
        current = {"path": old.path, "in": old.scope, "after": old.after, "adjacent": old.adjacent or None,
                   old.matcher: old.pattern}.get(key)
        if key in node.key_lines:
            if value == current:
                continue
            first, last = extent(key)
            edits.append((first, last, [] if value is None else block(key, value, key_indent)))
        elif value is not None:
            edits.append((insert_at + 1, insert_at, block(key, value, key_indent)))
    moved: dict[str, object] = {"until": until}
    if check.since is not None:
        moved = {"since": check.since, "until": until}
    moved.update(form_fields(old, form))
    earlier = node.value.get("earlier")
    if earlier is not None:
        if not earlier.is_sequence or not earlier.value:
            raise RewriteError(f"{loaded.file}:{earlier.line}: 'earlier' of check {check.id} is not a block list")
        first_item = lines[earlier.value[0].line - 1]
        dash = first_item.find("-")
        if dash < 0 or first_item[:dash].strip():
            raise RewriteError(f"{loaded.file}:{earlier.line}: 'earlier' of check {check.id} is written in flow "
                               "style; write it as a block list to add to it")
        first_line = earlier.value[0].line - 1
        if until is not None:
            edits.append((first_line, first_line - 1, _lines_of(moved, dash, dash=True)))
        item_lines = [item.line for item in earlier.value]
        earlier_end = extent("earlier")[1]
        for n, (item, was) in enumerate(zip(earlier.value, check.earlier)):
            item_end = (item_lines[n + 1] - 2) if n + 1 < len(item_lines) else earlier_end
            item_end = _trim(lines, item_end, item.line - 1, dash, item)
            if drop == n + 1:
                if len(earlier.value) == 1:
                    first, _ = extent("earlier")
                    edits.append((first, item_end, []))
                else:
                    edits.append((item.line - 1, item_end, []))
                continue
            explicit = _inherited(item, was, old, form)
            if explicit:
                edits.append((item_end + 1, item_end, _lines_of(explicit, dash + 2)))
    elif until is not None:
        edits.append((end + 1, end, [" " * key_indent + "earlier:"] + _lines_of(moved, key_indent + 2, dash=True)))
    if not lines[end].endswith(("\n", "\r")):
        lines[end] += newline
    # applied from the bottom up, so that each edit's line numbers are still those of the text as read; at one
    # place, inserts after the replacement of the key before them
    for first, last, new in sorted(edits, key=lambda e: (e[0], e[1] >= e[0]), reverse=True):
        lines[first:last + 1] = [line + newline for line in new]
    return "".join(lines)


def _inherited(item: Node, was: Form, old: Form, new: Form) -> dict[str, object]:
    """The keys an `earlier` item must now write itself: those it inherited from the old own form that the new
    one changes."""
    keys = item.value if item.is_mapping else {}
    explicit: dict[str, object] = {}
    if "path" not in keys and new.path != old.path:
        explicit["path"] = was.path
    if "in" not in keys and new.scope != old.scope:
        explicit["in"] = was.scope
    if not any(name in keys for name in NAMES) and (new.matcher, new.pattern, new.after, new.adjacent) != (
            old.matcher, old.pattern, old.after, old.adjacent):
        explicit[was.matcher] = was.pattern
        if was.after is not None:
            explicit["after"] = was.after
        if was.adjacent:
            explicit["adjacent"] = True
    return explicit


def write_followed(path: str | Path, loaded: LoadedEntry, check: Check, form: Form, until: str) -> str:
    """`replace_form` written to the entry file at `path`, once the edited entry reads back with exactly the
    forms asked for (else RewriteError, and the file is untouched). The new text is returned."""
    from dataclasses import replace as _replace
    from pathlib import Path

    path = Path(path)
    data = _read_as_loaded(path, loaded, "follow")
    text = data.decode("utf-8")
    edited = replace_form(text, loaded, check, form, until)
    again = parse_entry(edited.encode("utf-8"), loaded.file, path.stem)
    after = next((c for c in again.entry.checks if c.id == check.id), None) if again.entry else None
    old = check.own
    expected = [_replace(form, since=check.since, until=check.until),
                _replace(old, since=check.since, until=until), *check.earlier]
    if after is None or again.entry is None or [d for d in again.diagnostics if d not in loaded.diagnostics]:
        problems = "; ".join(str(d) for d in again.diagnostics) or "the check did not read back"
        raise RewriteError(f"{loaded.file}: writing the new form would break the entry ({problems}); it is unchanged")
    got = [_essence(f) for f in after.forms]
    if got != [_essence(f) for f in expected]:
        raise RewriteError(f"{loaded.file}: check {check.id}: the written forms did not read back as meant; "
                           "the entry is unchanged")
    others = [c for c in again.entry.checks if c.id != check.id]
    entry = cast(Entry, loaded.entry)  # the entry `check` was loaded from
    if [c.fingerprint for c in others] != [c.fingerprint for c in entry.checks if c.id != check.id]:
        raise RewriteError(f"{loaded.file}: writing check {check.id} would change another check; it is unchanged")
    try:
        _replace_entry(path, data, edited, loaded.file, "follow")  # a kill or a full disk leaves the old entry
    except (PathError, WriteError) as exc:
        raise RewriteError(str(exc)) from None
    return edited


def _essence(form: Form) -> tuple:
    return (form.path, form.scope, form.matcher, form.pattern, form.after, form.adjacent, form.since, form.until,
            form.values)
