"""Loading entries: front matter and body into typed values, with the line of every field.

`load_entry` never raises on bad input: what it cannot read becomes a
diagnostic with a rule code and a line, and what it can read becomes an
`Entry` (checks that are malformed are left out of it, so they are never
evaluated).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from markdown_it import MarkdownIt

from . import _yaml
from .matchers import NAMES as MATCHERS
from .model import COMPUTED, Check, Condition, Diagnostic, Entry, Form, HistoryEvent
from .safety import PathError, read_regular

MAX_ENTRY_BYTES = 1024 * 1024

ENTRY_FIELDS = ("id", "title", "scheme", "concepts", "engines", "references", "history", "withdrawn",
                "introduced", "fixed", "when", "checks")
ENTRY_REQUIRED = ("id", "title", "scheme", "concepts", "engines", "checks")
MODIFIERS = ("after", "adjacent")
BOUNDS = ("since", "until")
CHECK_FIELDS = ("id", "claim", "engine", "path", "in", *MODIFIERS) + MATCHERS + (*BOUNDS, "earlier")
CHECK_REQUIRED = ("id", "claim", "path")
#: The keys of an item of a check's `earlier` list.
FORM_FIELDS = (*BOUNDS, "path", "in") + MATCHERS + MODIFIERS
HISTORY_FIELDS = ("date", "note")
#: The keys of a condition, an item of `when` (FORMAT.md, "Conditions").
CONDITION_FIELDS = ("engine", "flag", "env", "is", "is-not", "default", "witness", *BOUNDS)
SECTIONS = ("Symptom", "Root cause", "Workaround", "Notes")
REQUIRED_SECTIONS = ("Symptom", "Root cause", "Workaround")

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

def _fill_entry(entry: Entry, front: _yaml.Node, problem, result: LoadedEntry) -> None:
    fields = front.value
    for key, node in fields.items():
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


def _text(node: _yaml.Node, key: str, problem) -> str | None:
    """A scalar as text, exactly as written (so `0.10` stays `0.10`)."""
    if node.is_mapping or node.is_sequence:
        problem(node.line, "G203", f"{key!r} must be text, not a {'mapping' if node.is_mapping else 'list'}")
        return None
    if node.value is None:
        problem(node.line, "G203", f"{key!r} is empty")
        return None
    return node.raw if isinstance(node.raw, str) else str(node.value)


def _text_list(node: _yaml.Node, key: str, problem) -> list[tuple[str, int]]:
    if not node.is_sequence:
        problem(node.line, "G203", f"{key!r} must be a list")
        return []
    values = []
    for item in node.value:
        value = _text(item, f"an item of {key}", problem)
        if value is not None:
            values.append((value, item.line))
    return values


def _date(node: _yaml.Node, key: str, problem) -> dt.date | None:
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


def _per_engine(node: _yaml.Node, key: str, problem, entry: Entry) -> dict[str, str]:
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


def _history(node: _yaml.Node, problem) -> list[HistoryEvent]:
    if not node.is_sequence:
        problem(node.line, "G203", "'history' must be a list of {date, note}")
        return []
    events = []
    for item in node.value:
        if not item.is_mapping:
            problem(item.line, "G203", "a history item must be a mapping {date, note}")
            continue
        for key in item.value:
            if key not in HISTORY_FIELDS:
                problem(item.key_lines[key], "G201", f"unknown history field {key!r}; fields are: date, note")
        missing = [k for k in HISTORY_FIELDS if k not in item.value]
        for key in missing:
            problem(item.line, "G202", f"history item is missing {key!r}")
        if missing:
            continue
        date = _date(item.value["date"], "date", problem)
        note = _text(item.value["note"], "note", problem)
        if date is not None and note is not None:
            events.append(HistoryEvent(date, note))
    return events


def _conditions(node: _yaml.Node, entry: Entry, problem, result: LoadedEntry) -> list[Condition]:
    """The items of `when`. The shape is judged here (G201-G203, G210); what needs the checks and the registry
    (the witness, the engine, the bounds) is lint's. A malformed item is left out of the entry, so that `audit`
    never reads a condition half-understood."""
    if not node.is_sequence or not node.value:
        problem(node.line, "G210" if node.is_sequence else "G203",
                "'when' must be a list of conditions, each a mapping (engine, flag or env, is or is-not, "
                "default, witness)")
        return []
    found = []
    for item in node.value:
        condition = _condition(item, entry, problem)
        if condition is not None:
            found.append(condition)
            result.condition_nodes.append((condition, item))
    return found


def _condition(node: _yaml.Node, entry: Entry, problem) -> Condition | None:
    if not node.is_mapping:
        problem(node.line, "G203", "a condition must be a mapping (engine, flag or env, is or is-not, default, "
                                   "witness)")
        return None
    fields = node.value
    ok = True
    for key in fields:
        if key not in CONDITION_FIELDS:
            problem(node.key_lines[key], "G201",
                    f"unknown condition key {key!r}; keys are: {', '.join(CONDITION_FIELDS)}")
            ok = False
    line = node.key_lines.get
    if ("flag" in fields) == ("env" in fields):
        problem(line("env", node.line) if "flag" in fields else node.line, "G203" if "flag" in fields else "G202",
                "a condition names one setting: 'flag' (with its aliases) or 'env', not both"
                if "flag" in fields else "a condition needs 'flag' or 'env'")
        ok = False
    if ("is" in fields) == ("is-not" in fields):
        problem(line("is-not", node.line) if "is" in fields else node.line, "G203" if "is" in fields else "G202",
                "a condition gives the values that make the gotcha bite ('is') or those that spare it ('is-not'), "
                "not both" if "is" in fields else "a condition needs 'is' or 'is-not'")
        ok = False
    for key in ("default", "witness"):
        if key not in fields:
            problem(node.line, "G202", f"a condition needs {key!r}" + (
                ": the check of this entry that pins the default" if key == "witness" else
                ": what a deployment that does not set it gets (or 'computed')"))
            ok = False
    flags: list[str] = []
    if "flag" in fields:
        flag_node = fields["flag"]
        items = flag_node.value if flag_node.is_sequence else [flag_node]
        for item in items:
            text = _text(item, "flag", problem)
            if text is None:
                ok = False
            elif not _FLAG.fullmatch(text):
                problem(item.line, "G203", f"flag {text!r} must be written as on the command line: '--name' or '-n'")
                ok = False
            elif text.startswith("--no-"):
                problem(item.line, "G203", f"flag {text!r}: name the flag itself and give false "
                                           f"('{'--' + text[5:]}' is false)")
                ok = False
            elif text in flags:
                problem(item.line, "G210", f"flag {text!r} is listed twice")
                ok = False
            else:
                flags.append(text)
        if flag_node.is_sequence and not items:
            problem(flag_node.line, "G210", "'flag' needs at least one flag")
            ok = False
    env = None
    if "env" in fields:
        env = _text(fields["env"], "env", problem)
        if env is not None and not _ENV.fullmatch(env):
            problem(fields["env"].line, "G203", f"env {env!r} must be a variable name like VLLM_USE_V1")
            env = None
        ok = ok and env is not None
    key = "is" if "is" in fields else "is-not"
    values: list[object] = []
    if key in fields:
        values_node = fields[key]
        if not values_node.is_sequence:
            problem(values_node.line, "G203", f"{key!r} must be a list of values, like [fcfs] or [true]")
            ok = False
        elif not values_node.value:
            problem(values_node.line, "G210", f"{key!r} needs at least one value")
            ok = False
        else:
            for item in values_node.value:
                value = _setting(item, key, problem)
                if value is None:
                    ok = False
                elif value in values:
                    problem(item.line, "G210", f"{key!r} lists {value!r} twice")
                    ok = False
                else:
                    values.append(value)
    kinds = {isinstance(v, bool) for v in values}
    if len(kinds) > 1:
        problem(fields[key].line, "G203", f"{key!r} mixes true/false with other values: a boolean flag takes "
                                          "true or false only")
        ok = False
    default: object = None
    if "default" in fields:
        default = _setting(fields["default"], "default", problem)
        if default is None:
            ok = False
        elif default != COMPUTED and values and isinstance(default, bool) != isinstance(values[0], bool):
            problem(fields["default"].line, "G203",
                    f"default {default!r} and the values of {key!r} must both be true/false, or both be values "
                    "(or the default 'computed')")
            ok = False
    bounds: dict[str, str | None] = {}
    for bound in BOUNDS:
        if bound in fields:
            bounds[bound] = _text(fields[bound], bound, problem)
            ok = ok and bounds[bound] is not None
    witness = _text(fields["witness"], "witness", problem) if "witness" in fields else None
    engine_value = _text(fields["engine"], "engine", problem) if "engine" in fields else None
    if "engine" not in fields and len(entry.engines) != 1 and entry.engines:
        problem(node.line, "G202", f"the entry names several engines ({', '.join(entry.engines)}); say which with "
                                   "'engine:'")
        ok = False
    if "engine" in fields and engine_value is None or "witness" in fields and witness is None:
        ok = False
    if not ok:
        return None
    engine = engine_value or (entry.engines[0] if len(entry.engines) == 1 else "")
    return Condition(engine, tuple(flags), env, tuple(values), key == "is-not", default, witness,
                     bounds.get("since"), bounds.get("until"), node.line)


_FLAG = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _setting(node: _yaml.Node, key: str, problem) -> object | None:
    """A value of a setting: true/false as bools, anything else as the text written (`0.10` stays `0.10`)."""
    if isinstance(node.value, bool) and isinstance(node.raw, str) and node.raw.lower() not in ("true", "false"):
        problem(node.line, "G203", f"{key!r}: write true or false, not {node.raw!r} (YAML reads it both ways)")
        return None
    if isinstance(node.value, bool):
        return node.value
    return _text(node, key, problem)


def _check(node: _yaml.Node, entry: Entry, problem, result: LoadedEntry | None = None
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
    check = Check(
        id=values.get("id") or "", claim=values.get("claim") or "", engine=engine,
        path=values.get("path") or "", matcher=matcher, pattern=values.get(matcher) or "",
        scope=values.get("in"), after=values.get("after"), adjacent=adjacent is True, line=node.line,
        since=values.get("since"), until=values.get("until"),
    )
    if "earlier" in fields:
        earlier, earlier_ok = _earlier(fields["earlier"], check, problem, result)
        check = replace(check, earlier=tuple(earlier))
        ok = ok and earlier_ok
    return check, ok


def _adjacent(fields: dict[str, _yaml.Node], problem) -> tuple[bool, bool]:
    """The `adjacent` flag of a check or form, and whether it was written well."""
    if "adjacent" not in fields:
        return False, True
    value = fields["adjacent"].value
    if not isinstance(value, bool):
        problem(fields["adjacent"].line, "G203", "'adjacent' must be true or false")
        return False, False
    return value, True


def _earlier(node: _yaml.Node, check: Check, problem, result: LoadedEntry | None) -> tuple[list[Form], bool]:
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
            problem(item.line, "G203", "an item of 'earlier' must be a mapping (since, until, path, in, a matcher, ...)")
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
                    values.get("since"), values.get("until"), index, item.line)
        forms.append(form)
        if result is not None:
            result.form_nodes[(check.id, index)] = item
        ok = ok and good
    return forms, ok


# --- body -----------------------------------------------------------------------

_MD = MarkdownIt("commonmark")
# Only the block structure is read (h2 headings and their lines): inline parsing would be wasted.
_MD.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)


def _read_body(entry: Entry, body: str, first_line: int, problem) -> None:
    tokens = _MD.parse(body)
    headings = []  # (title, body line index of the heading, token index)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h2" and token.map:
            headings.append((tokens[i + 1].content.strip(), token.map[0]))
    body_lines = body.split("\n")
    if headings:
        before = "\n".join(body_lines[: headings[0][1]]).strip()
        if before:
            problem(first_line, "G405", "text before the first section; start the body with '## Symptom'")
    seen: list[str] = []
    for index, (title, start) in enumerate(headings):
        line = first_line + start
        end = headings[index + 1][1] if index + 1 < len(headings) else len(body_lines)
        content = "\n".join(body_lines[start + 1:end]).strip()
        if title not in SECTIONS:
            problem(line, "G403", f"unknown section {title!r}; sections are: {', '.join(SECTIONS)}")
            continue
        if title in seen:
            problem(line, "G402", f"section {title!r} appears twice")
            continue
        if seen and SECTIONS.index(title) < SECTIONS.index(seen[-1]):
            problem(line, "G402", f"section {title!r} must come before {seen[-1]!r}")
        if not content:
            problem(line, "G404", f"section {title!r} is empty")
        seen.append(title)
        entry.sections[title] = content
        entry.lines[f"section:{title}"] = line
    for title in REQUIRED_SECTIONS:
        if title not in seen:
            problem(first_line if not headings else first_line + headings[-1][1], "G401",
                    f"missing section '## {title}'")
