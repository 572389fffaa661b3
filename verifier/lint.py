"""Lint: every rule has a stable code; each rule is one small function.

The loader (`entries.py`) reports what keeps a file from being read (G1xx) and
the shape of its fields (G201-G203); the rules below judge the typed entry
against the KB's vocabularies and FORMAT.md. All of them run offline.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from .code import Fragment
from .code._bounded import InvalidPattern, compile_query, compile_regex
from .entries import LoadedEntry
from .kb import KB
from .model import Check, Diagnostic, Entry
from .sources import check_repository_path

#: Every rule code, with what it catches. Codes are stable: never renumber or reuse one.
RULES: dict[str, str] = {
    "G101": "the file does not start with front matter",
    "G102": "the front matter is not closed",
    "G103": "YAML syntax error",
    "G104": "YAML anchors, aliases or tags (refused: they can expand without bound)",
    "G105": "the front matter is not a mapping",
    "G106": "a key is written twice",
    "G107": "the file cannot be read: too large, binary, not UTF-8",
    "G201": "unknown key",
    "G202": "a required field or key is missing",
    "G203": "a value has the wrong type",
    "G204": "an id is not kebab-case",
    "G205": "the entry id differs from the file name",
    "G206": "the scheme is not in gotchas/schemes.yaml",
    "G207": "a concept is not in gotchas/concepts.yaml",
    "G208": "an engine is not in gotchas/engines.yaml",
    "G209": "a reference is not an https URL",
    "G210": "a list is empty or repeats a value",
    "G301": "two checks of one entry share an id",
    "G302": "a check has no matcher or more than one",
    "G303": "a modifier where it is not allowed (after/adjacent only with contains; adjacent needs after; no in with defines)",
    "G304": "a check's engine is missing or not among the entry's engines",
    "G305": "a path is not a confined repository path",
    "G306": "in, string, defines, query and adjacent need a Python file",
    "G307": "a regular expression does not compile",
    "G308": "a tree-sitter query does not compile",
    "G309": "a symbol is not a dotted Python name",
    "G310": "a fragment or text is empty",
    "G401": "a required section is missing",
    "G402": "sections are out of order or repeated",
    "G403": "unknown section",
    "G404": "a section is empty",
    "G405": "text before the first section",
}

_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_SYMBOL = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
_URL = re.compile(r"https://[^\s/$.?#][^\s]*")

Rule = Callable[[Entry, LoadedEntry, KB], Iterator[Diagnostic]]
ENTRY_RULES: list[Rule] = []
CHECK_RULES: list[Callable[[Check, Entry, KB], Iterator[tuple[int, str, str]]]] = []


def entry_rule(fn: Rule) -> Rule:
    ENTRY_RULES.append(fn)
    return fn


def check_rule(fn):
    CHECK_RULES.append(fn)
    return fn


def lint(loaded: LoadedEntry, kb: KB) -> list[Diagnostic]:
    """Every problem of one loaded entry, sorted by line."""
    found = list(loaded.diagnostics)
    entry = loaded.entry
    if entry is not None:
        for rule in ENTRY_RULES:
            found.extend(rule(entry, loaded, kb))
        for check in loaded.linted_checks:
            node = loaded.check_nodes.get(check.id)
            for key, code, message in (p for rule in CHECK_RULES for p in rule(check, entry, kb)):
                line = node.key_lines.get(key, node.line) if node is not None else check.line
                found.append(Diagnostic(loaded.file, line, code, f"check {check.id}: {message}"))
    return sorted(set(found), key=lambda d: (d.line, d.code, d.message))


# --- entry rules ------------------------------------------------------------------

@entry_rule
def _id(entry: Entry, loaded: LoadedEntry, kb: KB):
    if "id" not in entry.lines:
        return
    line = entry.line_of("id")
    if not _KEBAB.fullmatch(entry.id):
        yield Diagnostic(loaded.file, line, "G204", f"id {entry.id!r} must be kebab-case (a-z, 0-9, '-')")
    stem = loaded.file.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".md")
    if entry.id != stem:
        yield Diagnostic(loaded.file, line, "G205", f"id {entry.id!r} must equal the file name {stem!r}")


@entry_rule
def _vocabularies(entry: Entry, loaded: LoadedEntry, kb: KB):
    if entry.scheme and entry.scheme not in kb.schemes:
        yield Diagnostic(loaded.file, entry.line_of("scheme"), "G206",
                         f"unknown scheme {entry.scheme!r}; schemes are: {', '.join(kb.schemes)}")
    for concept in entry.concepts:
        if concept not in kb.concepts:
            yield Diagnostic(loaded.file, entry.line_of(f"concepts:{concept}"), "G207",
                             f"unknown concept {concept!r}; add it to gotchas/concepts.yaml with a description, "
                             "or use one that is there")
    for engine in entry.engines:
        if engine not in kb.engines:
            yield Diagnostic(loaded.file, entry.line_of(f"engines:{engine}"), "G208",
                             f"unknown engine {engine!r}; engines are: {', '.join(kb.engines)}")


@entry_rule
def _lists(entry: Entry, loaded: LoadedEntry, kb: KB):
    for key in ("concepts", "engines", "checks"):
        if key in entry.lines and not getattr(entry, key) and _declared_empty(loaded, key):
            yield Diagnostic(loaded.file, entry.line_of(key), "G210", f"{key!r} needs at least one item")
    for key in ("concepts", "engines", "references"):
        values = getattr(entry, key)
        for value in {v for v in values if values.count(v) > 1}:
            yield Diagnostic(loaded.file, entry.line_of(f"{key}:{value}"), "G210", f"{key!r} lists {value!r} twice")


def _declared_empty(loaded: LoadedEntry, key: str) -> bool:
    node = loaded.front.value.get(key) if loaded.front else None
    return node is not None and node.is_sequence and not node.value


@entry_rule
def _references(entry: Entry, loaded: LoadedEntry, kb: KB):
    for url in entry.references:
        if not _URL.fullmatch(url):
            yield Diagnostic(loaded.file, entry.line_of(f"references:{url}"), "G209",
                             f"reference {url!r} must be an https URL")


@entry_rule
def _check_ids(entry: Entry, loaded: LoadedEntry, kb: KB):
    seen: dict[str, int] = {}
    checks = loaded.front.value.get("checks") if loaded.front else None
    for item in (checks.value if checks is not None and checks.is_sequence else []):
        node = item.value.get("id") if item.is_mapping else None
        if node is None or not isinstance(node.raw, str):
            continue
        check_id = node.raw
        if not _KEBAB.fullmatch(check_id):
            yield Diagnostic(loaded.file, node.line, "G204", f"check id {check_id!r} must be kebab-case")
        if check_id in seen:
            yield Diagnostic(loaded.file, node.line, "G301",
                             f"check id {check_id!r} is already used at line {seen[check_id]}")
        else:
            seen[check_id] = node.line


# --- check rules: each yields (key to point at, code, message) ---------------------

@check_rule
def _engine(check: Check, entry: Entry, kb: KB):
    if not entry.engines:
        return
    if not check.engine:
        yield "id", "G304", f"the entry names several engines ({', '.join(entry.engines)}); say which with 'engine:'"
    elif entry.engines and check.engine not in entry.engines:
        yield "engine", "G304", f"engine {check.engine!r} is not among the entry's engines ({', '.join(entry.engines)})"


@check_rule
def _modifiers(check: Check, entry: Entry, kb: KB):
    if check.matcher != "contains":
        if check.after is not None:
            yield "after", "G303", f"'after' works only with 'contains', not with {check.matcher!r}"
        if check.adjacent:
            yield "adjacent", "G303", f"'adjacent' works only with 'contains', not with {check.matcher!r}"
    elif check.adjacent and check.after is None:
        yield "adjacent", "G303", "'adjacent' needs 'after': adjacent to what?"
    if check.matcher == "defines" and check.scope is not None:
        yield "in", "G303", "'defines' names its symbol itself; drop 'in'"


@check_rule
def _path(check: Check, entry: Entry, kb: KB):
    problem = check_repository_path(check.path) if check.path else None
    if problem:
        yield "path", "G305", problem


@check_rule
def _python_only(check: Check, entry: Entry, kb: KB):
    if check.is_python or not check.path:
        return
    if check.scope is not None:
        yield "in", "G306", f"'in' needs a Python file; {check.path} is not one"
    if check.matcher in ("string", "defines", "query"):
        yield check.matcher, "G306", f"{check.matcher!r} needs a Python file; {check.path} is not one"
    if check.adjacent:
        yield "adjacent", "G306", f"'adjacent' needs a Python file; {check.path} is not one"


@check_rule
def _symbols(check: Check, entry: Entry, kb: KB):
    for key, symbol in (("in", check.scope), ("defines", check.pattern if check.matcher == "defines" else None)):
        if symbol is not None and not _SYMBOL.fullmatch(symbol):
            yield key, "G309", f"{symbol!r} is not a dotted Python name like Class.method"


@check_rule
def _patterns(check: Check, entry: Entry, kb: KB):
    if check.matcher == "matches":
        try:
            compile_regex(check.pattern)
        except InvalidPattern as exc:
            yield "matches", "G307", str(exc)
    elif check.matcher == "query":
        try:
            compile_query(check.pattern)
        except InvalidPattern as exc:
            yield "query", "G308", str(exc)


@check_rule
def _fragments(check: Check, entry: Entry, kb: KB):
    for key, code in ((check.matcher, check.pattern), ("after", check.after)):
        if code is None or key not in ("contains", "absent", "string", "after"):
            continue
        if not code.strip() or (key != "string" and Fragment(code).is_empty):
            yield key, "G310", f"{key!r} has nothing to look for"
