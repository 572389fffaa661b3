"""Reading a check and the forms of its `earlier` list into `Check` and `Form`, with what a form inherits
filled in, and whether each is well-formed enough to evaluate."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from .. import _yaml
from ..matchers import NAMES as MATCHERS
from ..model import Check, Entry, Form, language_of, languages_words
from ._values import BOUNDS, _text

#: The languages whose fragments bind named values (`$NAME`: docs/format.md, "Values read from the code").
VALUE_LANGUAGES = ("python", "cpp")

if TYPE_CHECKING:
    from . import LoadedEntry
    from ._values import Problem

MODIFIERS = ("after", "adjacent")
CHECK_FIELDS = ("id", "claim", "engine", "path", "in", *MODIFIERS) + MATCHERS + (*BOUNDS, "values", "part",
                                                                                 "earlier")
CHECK_REQUIRED = ("id", "claim", "path")
#: The keys of an item of a check's `earlier` list.
FORM_FIELDS = (*BOUNDS, "path", "in") + MATCHERS + MODIFIERS


def _check(node: _yaml.Node, entry: Entry, problem: Problem, result: LoadedEntry | None = None
           ) -> tuple[Check | None, bool]:
    """The check written at `node`, and whether it is well-formed enough to evaluate."""
    if not node.is_mapping:
        problem(node.line, "G203", "a check must be a mapping of keys (id, claim, path, a matcher, ...)")
        return None, False
    fields = node.value
    ok = True
    for key in fields:
        if key not in CHECK_FIELDS:
            problem(node.key_lines[key], "G201", f"unknown check key {key!r}; keys are: {', '.join(CHECK_FIELDS)}")
            ok = False
    for key in CHECK_REQUIRED:
        if key not in fields:
            problem(node.line, "G202", f"check is missing {key!r}")
            ok = False
    shown = fields["id"].value if "id" in fields else "check"
    matchers = [m for m in MATCHERS if m in fields]
    if len(matchers) != 1:
        if matchers:
            problem(max(node.key_lines[m] for m in matchers), "G302",
                    f"{shown}: one matcher per check, found {', '.join(matchers)}")
        else:
            problem(node.line, "G302", f"{shown}: a check needs one matcher: {', '.join(MATCHERS)}")
        ok = False
    values: dict[str, str | None] = {}
    for key in ("id", "claim", "engine", "path", "in", "after", *BOUNDS, *matchers):
        if key in fields:
            values[key] = _text(fields[key], key, problem)
            if values[key] is None:
                ok = False
    adjacent, adjacent_ok = _adjacent(fields, problem)
    ok = ok and adjacent_ok
    engine = values.get("engine") or (entry.engines[0] if len(entry.engines) == 1 else "")
    matcher = matchers[0] if matchers else ""
    named, named_ok = _named_values(fields["values"], problem) if "values" in fields else ((), True)
    part = _text(fields["part"], "part", problem) if "part" in fields else None
    ok = ok and named_ok and ("part" not in fields or part is not None)
    check = Check(
        id=values.get("id") or "", claim=values.get("claim") or "", engine=engine,
        path=values.get("path") or "", matcher=matcher, pattern=values.get(matcher) or "",
        scope=values.get("in"), after=values.get("after"), adjacent=adjacent is True, line=node.line,
        since=values.get("since"), until=values.get("until"), values=named, part=part,
    )
    if "earlier" in fields:
        earlier, earlier_ok = _earlier(fields["earlier"], check, problem, result)
        check = replace(check, earlier=tuple(earlier))
        ok = ok and earlier_ok
    if named:
        ok = _values_problems(check, node.key_lines.get("values", node.line), problem) and ok
    return check, ok


_VALUE_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,39}")
#: A check names at most this many values, each with at most this many allowed.
MAX_VALUES, MAX_ALLOWED = 8, 32


def _named_values(node: _yaml.Node, problem: Problem) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], bool]:
    """`values`: a mapping of a metavariable's NAME (of `$NAME`) to the list of values the claim allows."""
    if not node.is_mapping or not node.value:
        problem(node.line, "G203", "'values' must be a mapping of a metavariable's name (CAP for $CAP) to the list "
                                   "of values the claim allows, like {CAP: [32, 48]}")
        return (), False
    found, ok = [], True
    if len(node.value) > MAX_VALUES:
        problem(node.line, "G203", f"'values' names {len(node.value)} values; at most {MAX_VALUES}")
        return (), False
    for name, item in node.value.items():
        line = node.key_lines.get(name, node.line)
        if not isinstance(name, str) or not _VALUE_NAME.fullmatch(name):
            problem(line, "G203", f"value name {name!r} must be a metavariable's name in capitals (CAP for $CAP)")
            ok = False
            continue
        if not item.is_sequence or not item.value or len(item.value) > MAX_ALLOWED:
            problem(item.line, "G203", f"values.{name} must be a list of 1 to {MAX_ALLOWED} values the claim "
                                       "allows, like [32, 48]")
            ok = False
            continue
        allowed = []
        for value in item.value:
            text = _text(value, f"an item of values.{name}", problem)
            if text is None:
                ok = False
            elif text in allowed:
                problem(value.line, "G210", f"values.{name} repeats {text!r}")
                ok = False
            else:
                allowed.append(text)
        found.append((name, tuple(allowed)))
    return tuple(found), ok


def _values_problems(check: Check, line: int, problem: Problem) -> bool:
    """G315: named values need `contains` without `after` in a Python, C or C++ file (where code is compared by
    structure and `$NAME` binds an expression), in every form, each form's fragment writing `$NAME` for every name
    (a form that did not would say nothing of the value where it applies)."""
    ok = True
    for form in check.forms:
        where = "the check" if form.index == 0 else f"form {form.index} of earlier"
        if form.matcher != "contains" or form.after is not None or language_of(form.path) not in VALUE_LANGUAGES:
            problem(form.line if form.index else line, "G315",
                    f"{check.id}: values need `contains` without `after`, in {languages_words(VALUE_LANGUAGES)}; "
                    f"{where} is not")
            ok = False
            continue
        written = set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", form.pattern))
        lacking = [name for name, _ in check.values if name not in written]
        if lacking:
            problem(form.line if form.index else line, "G315",
                    f"{check.id}: the fragment of {where} does not write "
                    f"{', '.join('$' + n for n in lacking)}: every form binds every named value")
            ok = False
    return ok


def _adjacent(fields: dict[str, _yaml.Node], problem: Problem) -> tuple[bool, bool]:
    """The `adjacent` flag of a check or form, and whether it was written well."""
    if "adjacent" not in fields:
        return False, True
    value = fields["adjacent"].value
    if not isinstance(value, bool):
        problem(fields["adjacent"].line, "G203", "'adjacent' must be true or false")
        return False, False
    return value, True


def _earlier(node: _yaml.Node, check: Check, problem: Problem, result: LoadedEntry | None) -> tuple[list[Form], bool]:
    """The items of a check's `earlier` list as forms, with what they inherit from the check filled in.

    `path` and `in` are inherited when left out (`in: null` drops the scope); a
    matcher replaces the check's matcher and modifiers whole; with no matcher,
    they are inherited whole, and modifiers alone are an error (G311).
    """
    if not node.is_sequence or not node.value:
        problem(node.line, "G203", "'earlier' must be a list of forms, each a mapping (since, until, path, in, "
                                   "a matcher and its modifiers)")
        return [], False
    forms: list[Form] = []
    ok = True
    for index, item in enumerate(node.value, 1):
        if not item.is_mapping:
            problem(item.line, "G203",
                    "an item of 'earlier' must be a mapping (since, until, path, in, a matcher, ...)")
            ok = False
            continue
        fields = item.value
        good = True
        for key in fields:
            if key not in FORM_FIELDS:
                hint = " (id, claim and engine belong to the check, not to a form)" if key in CHECK_FIELDS else ""
                problem(item.key_lines[key], "G201",
                        f"unknown key {key!r} in a form of 'earlier'{hint}; keys are: {', '.join(FORM_FIELDS)}")
                good = False
        matchers = [m for m in MATCHERS if m in fields]
        if len(matchers) > 1:
            problem(max(item.key_lines[m] for m in matchers), "G302",
                    f"one matcher per form, found {', '.join(matchers)}")
            good = False
        modifiers = [m for m in MODIFIERS if m in fields]
        if modifiers and not matchers:
            problem(item.key_lines[modifiers[0]], "G311",
                    f"this form gives {' and '.join(repr(m) for m in modifiers)} without a matcher: a form inherits "
                    "the check's matcher and modifiers whole, or gives its own matcher with its own modifiers")
            good = False
        values: dict[str, str | None] = {}
        for key in ("path", "after", *BOUNDS, *matchers):
            if key in fields:
                values[key] = _text(fields[key], key, problem)
                good = good and values[key] is not None
        scope = check.scope
        if "in" in fields:
            scope = None if fields["in"].value is None else _text(fields["in"], "in", problem)
            good = good and (fields["in"].value is None or scope is not None)
        adjacent, adjacent_ok = _adjacent(fields, problem)
        good = good and adjacent_ok
        if matchers:
            matcher, pattern = matchers[0], values.get(matchers[0]) or ""
            after, adjacent = values.get("after"), adjacent
        else:
            matcher, pattern, after, adjacent = check.matcher, check.pattern, check.after, check.adjacent
        form = Form(check.engine, values.get("path") or check.path, matcher, pattern, scope, after, adjacent,
                    values.get("since"), values.get("until"), index, item.line, check.values)
        forms.append(form)
        if result is not None:
            result.form_nodes[(check.id, index)] = item
        ok = ok and good
    return forms, ok
