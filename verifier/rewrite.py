"""Adding `earlier` forms to a check in an entry file, leaving every other byte as it was.

YAML libraries that round-trip comments exist (ruamel.yaml), but re-emitting a
document still re-lays what they touch (quoting, flow mappings, blank lines); an
entry is reviewed as a diff, so the new lines are inserted as text instead, at
the place the loader's line numbers give, and the result is read back to check
that the entry now has exactly the forms asked for.
"""

from __future__ import annotations

import json

import yaml

from .entries import LoadedEntry, parse_entry
from .matchers import NAMES
from .model import Check


class RewriteError(Exception):
    """The entry cannot be edited as asked; the message says why. The file is left as it was."""


_KEY_ORDER = ("since", "until", "path", "in", *NAMES, "after", "adjacent")


def scalar(value) -> str:
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
    node = loaded.check_nodes.get(check.id)
    checks = loaded.front.value.get("checks") if loaded.front is not None else None
    if node is None or checks is None or not checks.is_sequence:
        raise RewriteError(f"{loaded.file}: check {check.id} is not where a check can be edited")
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    fence = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n").rstrip() == "---"), None)
    if fence is None:
        raise RewriteError(f"{loaded.file}: the front matter is not closed")
    following = sorted(item.line for item in checks.value if item.line > node.line)
    end = (following[0] - 1 if following else fence) - 1  # index of the check's last line, before trimming
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
    while end > node.line - 1 and _trailing(lines[end], key_indent):
        end -= 1
    if not lines[end].endswith(("\n", "\r")):
        lines[end] += newline
    edited = lines[:end + 1] + [line + newline for line in new] + lines[end + 1:]
    return "".join(edited)


def _trailing(line: str, indent: int) -> bool:
    """A blank line, or a comment no deeper than the check's keys (it belongs to what follows)."""
    stripped = line.strip()
    if not stripped:
        return True
    return stripped.startswith("#") and len(line) - len(line.lstrip()) <= indent


def write_forms(path, loaded: LoadedEntry, check: Check, items: list[dict]) -> str:
    """Add `items` to the check's `earlier` list in the entry file at `path`; the new text, once it reads back
    with exactly those forms added (else RewriteError, and the file is untouched)."""
    from pathlib import Path

    path = Path(path)
    data = path.read_bytes()
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
    path.write_bytes(edited.encode("utf-8"))
    return edited

