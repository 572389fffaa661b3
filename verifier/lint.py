"""Lint: every rule has a stable code; each rule is one small function.

The loader (`entries`) reports what keeps a file from being read (G1xx) and
the shape of its fields (G201-G203); the rules below judge the typed entry
against the KB's vocabularies and docs/format.md. All of them run offline.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from . import _yaml, prose
from .code import Fragment
from .entries import LoadedEntry
from .kb import KB
from .matchers import MODIFIER_LANGUAGES, NAMES, REGISTRY
from .model import Check, Diagnostic, Entry, Form, before, language_of, languages_words, release_version, within
from .safety import name_problem
from .sources import check_repository_path

#: Every rule code, with what it catches. Codes are stable: never renumber or reuse one.
RULES: dict[str, str] = {
    "G101": "the file does not start with front matter",
    "G102": "the front matter is not closed",
    "G103": "YAML syntax error",
    "G104": "YAML anchors, aliases or tags (refused: they can expand without bound)",
    "G105": "the front matter is not a mapping",
    "G106": "a key is written twice",
    "G107": "the file cannot be read: not a regular file (a symbolic link, a device), too large, binary, not UTF-8",
    "G201": "unknown key",
    "G202": "a required field or key is missing, or a condition's witness names no check of the entry",
    "G203": "a value has the wrong type",
    "G204": "an id is not kebab-case, or longer than 128 characters",
    "G205": "the entry id differs from the file name",
    "G206": "the scheme is not in gotchas/schemes.yaml",
    "G207": "a concept is not in gotchas/concepts.yaml",
    "G208": "an engine (of the entry, or of a condition) is not in gotchas/engines.yaml",
    "G209": "a reference is not an https URL",
    "G210": "a list is empty or repeats a value",
    "G211": "the severity is not in gotchas/severities.yaml",
    "G301": "two checks of one entry share an id",
    "G302": "a check has no matcher or more than one",
    "G303": "a modifier where it is not allowed (after/adjacent only with contains; adjacent needs after; no in with "
            "defines)",
    "G304": "a check's or a condition's engine is missing or not among the entry's engines, or a condition's "
            "witness is a check of another engine",
    "G305": "a path is not a confined repository path, or names a dot-file or dot-folder",
    "G306": "a key or matcher on a file of a language it does not read (CONTRIBUTING.md, 'C and C++ files')",
    "G307": "a regular expression does not compile",
    "G308": "a tree-sitter query does not compile",
    "G309": "a symbol is not a dotted Python name",
    "G310": "a fragment or text is empty, or too costly to match (nested too deeply, too many `$$$`/`$NAME`)",
    "G311": "a form of `earlier` gives modifiers without a matcher",
    "G312": "a release bound (since, until, introduced, fixed; of a check, a form or a condition) is not a PEP 440 "
            "version, or since comes after until",
    "G313": "a form can never apply: its bounds lie outside the engine's tracked releases, or a form before it "
            "decides every release it could",
    "G314": "introduced or fixed names an engine the entry does not have, or introduced does not come before fixed",
    "G315": "a check's values are not read by every form: each form needs `contains` without `after` in a Python, "
            "C or C++ file, its fragment writing $NAME for every named value",
    "G316": "a part is repeated, a check names a part the entry does not declare, or a declared part has no check",
    "G401": "a required section is missing",
    "G402": "sections are out of order or repeated",
    "G403": "unknown section",
    "G404": "a section is empty",
    "G405": "text before the first section",
    "G601": "a bound in the prose ({since V: ...}) is malformed: unknown word, not PEP 440, since after until, "
            "nested, not closed, an engine the entry lacks, or no engine where the entry has several",
    "G602": "a {NAME} in the prose names no value of the entry's checks, or a value is of another engine than "
            "the text it is written in",
    # Needs the ledger and its surface files (committed): `check` runs it unless --offline (verifier.surface.lint).
    "G501": "a flag, environment variable or metric named in the title, Symptom, Root cause or Workaround does "
            "not exist in a release where the entry holds",
    "G502": "a condition's default differs from the default the code gives the setting (the release surface) in a "
            "release where the entry holds",
    "G503": "a condition names a flag or engine variable that the code (the release surface) does not have in a "
            "release where the condition applies and the entry holds",
    "G504": "a number in the title, Symptom, Root cause or Workaround is pinned by no check (nor by the release "
            "surface) in a release where its text applies and the entry holds",
    "G505": "a quoted log or error text in the title, Symptom, Root cause or Workaround is in no check's pattern "
            "holding in a release where its text applies and the entry holds",
}

_SYMBOL = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
_URL = re.compile(r"https://[^\s/$.?#][^\s]*")

Rule = Callable[[Entry, LoadedEntry, KB], Iterator[Diagnostic]]
ENTRY_RULES: list[Rule] = []
#: Rules about a check as a whole: each yields (form index, key to point at, code, message).
CHECK_RULES: list[Callable[[Check, Entry, KB], Iterator[tuple[int, str, str, str]]]] = []
#: Rules about each form of a check (its own, and each item of `earlier`): each yields (key, code, message).
FORM_RULES: list[Callable[[Form, Check, Entry, KB], Iterator[tuple[str, str, str]]]] = []


def entry_rule(fn: Rule) -> Rule:
    ENTRY_RULES.append(fn)
    return fn


def check_rule(fn):
    CHECK_RULES.append(fn)
    return fn


def form_rule(fn):
    FORM_RULES.append(fn)
    return fn


def lint(loaded: LoadedEntry, kb: KB) -> list[Diagnostic]:
    """Every problem of one loaded entry, sorted by line."""
    found = list(loaded.diagnostics)
    entry = loaded.entry
    if entry is not None:
        for rule in ENTRY_RULES:
            found.extend(rule(entry, loaded, kb))
        for check in loaded.linted_checks:
            def line_of(index: int, key: str, check: Check = check) -> int:
                node = loaded.check_nodes.get(check.id) if index == 0 else loaded.form_nodes.get((check.id, index))
                if node is None:
                    return check.line
                return node.key_lines.get(key, node.line)

            def where(index: int, check: Check = check) -> str:
                return f"check {check.id}" + (f", form {index} (item {index} of earlier)" if index else "")

            problems = [p for rule in CHECK_RULES for p in rule(check, entry, kb)]
            own = set()
            for form in check.forms:
                for key, code, message in (p for rule in FORM_RULES for p in rule(form, check, entry, kb)):
                    if form.index == 0:
                        own.add((code, message))
                    elif (code, message) in own:
                        continue  # about what the form inherits: said once, of the check
                    problems.append((form.index, key, code, message))
            for index, key, code, message in problems:
                found.append(Diagnostic(loaded.file, line_of(index, key), code, f"{where(index)}: {message}"))
    return sorted(set(found), key=lambda d: (d.line, d.code, d.message))


# --- entry rules ------------------------------------------------------------------

@entry_rule
def _id(entry: Entry, loaded: LoadedEntry, kb: KB):
    if "id" not in entry.lines:
        return
    line = entry.line_of("id")
    problem = name_problem(entry.id)
    if problem:
        yield Diagnostic(loaded.file, line, "G204", f"id {entry.id!r} {problem}")
    stem = loaded.file.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".md")
    if entry.id != stem:
        yield Diagnostic(loaded.file, line, "G205", f"id {entry.id!r} must equal the file name {stem!r}")


@entry_rule
def _vocabularies(entry: Entry, loaded: LoadedEntry, kb: KB):
    if entry.scheme and entry.scheme not in kb.schemes:
        yield Diagnostic(loaded.file, entry.line_of("scheme"), "G206",
                         f"unknown scheme {entry.scheme!r}; schemes are: {', '.join(kb.schemes)}")
    if entry.severity and entry.severity not in kb.severities:
        yield Diagnostic(loaded.file, entry.line_of("severity"), "G211",
                         f"unknown severity {entry.severity!r}; severities are: {', '.join(kb.severities)}")
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
def _introduced_fixed(entry: Entry, loaded: LoadedEntry, kb: KB):
    for key in ("introduced", "fixed"):
        for engine, version in getattr(entry, key).items():
            line = entry.line_of(f"{key}:{engine}")
            if entry.engines and engine not in entry.engines:
                yield Diagnostic(loaded.file, line, "G314", f"{key} names {engine!r}, which is not among the entry's "
                                                            f"engines ({', '.join(entry.engines)})")
            if release_version(version) is None:
                yield Diagnostic(loaded.file, line, "G312",
                                 f"{key}.{engine} {version!r} is not a release version (PEP 440, like 0.8.2)")
    for engine, introduced in entry.introduced.items():
        fixed = entry.fixed.get(engine)
        if fixed is not None and release_version(introduced) and release_version(fixed) \
                and not before(introduced, fixed):
            yield Diagnostic(loaded.file, entry.line_of(f"fixed:{engine}"), "G314",
                             f"fixed {fixed} for {engine} does not come after introduced {introduced}")


@entry_rule
def _parts(entry: Entry, loaded: LoadedEntry, kb: KB):
    used = {check.part for check in loaded.linted_checks if check.part is not None}
    for check in loaded.linted_checks:
        if check.part is not None and check.part not in entry.parts:
            node = loaded.check_nodes.get(check.id)
            yield Diagnostic(loaded.file, node.key_lines.get("part", check.line) if node else check.line, "G316",
                             f"check {check.id}: part {check.part!r} is not among the entry's parts "
                             f"({', '.join(entry.parts) or 'it declares none'})")
    for part in entry.parts:
        if part not in used:
            yield Diagnostic(loaded.file, entry.line_of(f"part:{part}"), "G316",
                             f"part {part!r} has no check: give the checks that make it `part: {part}`")


@entry_rule
def _prose(entry: Entry, loaded: LoadedEntry, kb: KB):
    names = {name: check for check in loaded.linted_checks for name, _ in check.values}
    for _, text, first in prose.texts(entry):
        parsed = prose.parse(text, kb.engines, entry.engines)
        for offset, code, message in parsed.problems:
            yield Diagnostic(loaded.file, first + parsed.line_of(offset), code, message)
        for offset, name in parsed.values:
            if name.startswith(prose.DEFAULT):
                continue  # `{default --flag}`: the release surface's; G501 says where the setting is missing
            check = names.get(name)
            line = first + parsed.line_of(offset)
            if check is None:
                known = ", ".join(sorted(names)) or "the entry's checks name none"
                yield Diagnostic(loaded.file, line, "G602", f"{{{name}}} names no value of the entry's checks "
                                                            f"({known}); a check names it with `values`")
                continue
            around = next((b for b in parsed.bounds if b.body_start <= offset < b.body_end), None)
            engine = around.engine if around is not None else None
            if len(entry.engines) > 1 and engine != check.engine:
                yield Diagnostic(loaded.file, line, "G602",
                                 f"{{{name}}} is read from {check.engine}'s code (check {check.id}): write it "
                                 f"inside a bound of that engine, {{{check.engine}: ...}}")


@entry_rule
def _check_ids(entry: Entry, loaded: LoadedEntry, kb: KB):
    seen: dict[str, int] = {}
    checks = loaded.front.value.get("checks") if loaded.front else None
    for item in (checks.value if checks is not None and checks.is_sequence else []):
        node = item.value.get("id") if item.is_mapping else None
        if node is None or not isinstance(node.raw, str):
            continue
        check_id = node.raw
        problem = name_problem(check_id)
        if problem:
            yield Diagnostic(loaded.file, node.line, "G204", f"check id {check_id!r} {problem}")
        if check_id in seen:
            yield Diagnostic(loaded.file, node.line, "G301",
                             f"check id {check_id!r} is already used at line {seen[check_id]}")
        else:
            seen[check_id] = node.line


@entry_rule
def _conditions(entry: Entry, loaded: LoadedEntry, kb: KB):
    """`when` (docs/format.md, "Conditions"): the engine is the entry's, the witness is a check of the entry for that
    engine, the bounds are versions in order. The shape of each item is the loader's (G201-G203, G210)."""
    checks = {c.id: c for c in loaded.linted_checks}
    for condition, node in loaded.condition_nodes:
        def line(key: str, node: _yaml.Node = node) -> int:
            return node.key_lines.get(key, node.line)

        what = f"condition on {condition.setting}"
        for member in condition.any:
            if member.engine != condition.engine:
                yield Diagnostic(loaded.file, member.line, "G304",
                                 f"{what}: an alternative of 'any' is of {member.engine}, the others of "
                                 f"{condition.engine}: the alternatives of one 'any' are of one engine")
        if condition.engine and condition.engine not in kb.engines:
            yield Diagnostic(loaded.file, line("engine"), "G208",
                             f"{what}: unknown engine {condition.engine!r}; engines are: {', '.join(kb.engines)}")
        elif entry.engines and condition.engine not in entry.engines:
            yield Diagnostic(loaded.file, line("engine"), "G304", f"{what}: engine {condition.engine!r} is not among "
                                                                  f"the entry's engines ({', '.join(entry.engines)})")
        witness = checks.get(condition.witness or "")
        if condition.witness is None and condition.default is None:
            pass  # the default comes from the release surface of each release (verifier.surface.conditions)
        elif witness is None:
            yield Diagnostic(loaded.file, line("witness"), "G202",
                             f"{what}: witness {condition.witness!r} is not a check of this entry; name the check "
                             f"that pins the default (checks: {', '.join(checks) or 'none'})")
        elif witness.engine != condition.engine:
            yield Diagnostic(loaded.file, line("witness"), "G304",
                             f"{what}: witness {witness.id!r} is a check of {witness.engine or 'no engine'}, the "
                             f"condition is of {condition.engine}: the default must be pinned in that engine's code")
        for key in ("since", "until"):
            value = getattr(condition, key)
            if value is not None and release_version(value) is None:
                yield Diagnostic(loaded.file, line(key), "G312",
                                 f"{what}: {key} {value!r} is not a release version (PEP 440, like 0.11.2)")
        if (condition.since is not None and condition.until is not None and release_version(condition.since)
                and release_version(condition.until) and not within(condition.since, None, condition.until)):
            yield Diagnostic(loaded.file, line("since"), "G312",
                             f"{what}: since {condition.since} comes after until {condition.until}")


# --- check rules: each yields (key to point at, code, message) ---------------------

@check_rule
def _engine(check: Check, entry: Entry, kb: KB):
    if not entry.engines:
        return
    if not check.engine:
        yield 0, "id", "G304", f"the entry names several engines ({', '.join(entry.engines)}); say which with 'engine:'"
    elif entry.engines and check.engine not in entry.engines:
        yield 0, "engine", "G304", \
            f"engine {check.engine!r} is not among the entry's engines ({', '.join(entry.engines)})"


@check_rule
def _bounds(check: Check, entry: Entry, kb: KB):
    """Bounds are PEP 440 versions, `since` no later than `until`; a form can apply somewhere and is not shadowed."""
    usable: list[Form] = []
    for form in check.forms:
        bad = False
        for key in ("since", "until"):
            value = getattr(form, key)
            if value is not None and release_version(value) is None:
                yield form.index, key, "G312", f"{key} {value!r} is not a release version (PEP 440, like 0.11.2)"
                bad = True
        if bad:
            continue
        if form.since is not None and form.until is not None and not within(form.since, None, form.until):
            yield form.index, "since", "G312", f"since {form.since} comes after until {form.until}"
            continue
        engine = kb.engines.get(check.engine)
        oldest = engine.oldest if engine is not None and engine.oldest else None
        if oldest and form.until is not None and before(form.until, oldest) and not within(oldest, None, form.until):
            yield (form.index, "until", "G313",
                   f"until {form.until} is before {check.engine}'s oldest tracked release {oldest}: "
                   "this form is never tried")
            continue
        shadow = next((other for other in usable if other.fingerprint == form.fingerprint
                       and _covers(other, form)), None)
        if shadow is not None:
            what = "the check itself" if shadow.index == 0 else f"form {shadow.index}"
            yield (form.index, "since" if form.since else "until" if form.until else "path", "G313",
                   f"this form looks for the same code in the same place as {what}, in releases {what} covers: "
                   "it can never decide a verdict; change what it looks for, or drop it")
        usable.append(form)


def _covers(outer: Form, inner: Form) -> bool:
    """Whether every release within `inner`'s bounds is within `outer`'s."""
    if outer.since is not None and (inner.since is None or before(inner.since, outer.since)):
        return False
    if outer.until is not None and (inner.until is None or not within(inner.until, None, outer.until)):
        return False
    return True


@form_rule
def _modifiers(form: Form, check: Check, entry: Entry, kb: KB):
    matcher = REGISTRY.get(form.matcher)
    if matcher is None:
        return
    takes = [m for m in NAMES if REGISTRY[m].modifiers]
    if not matcher.modifiers:
        for key in ("after", "adjacent"):
            if (form.after if key == "after" else form.adjacent):
                yield key, "G303", \
                    f"{key!r} works only with {' or '.join(repr(m) for m in takes)}, not with {form.matcher!r}"
    elif form.adjacent and form.after is None:
        yield "adjacent", "G303", "'adjacent' needs 'after': adjacent to what?"
    if not matcher.scoped and form.scope is not None:
        yield "in", "G303", f"{form.matcher!r} names its symbol itself; drop 'in'"


@form_rule
def _path(form: Form, check: Check, entry: Entry, kb: KB):
    problem = check_repository_path(form.path) if form.path else None
    if problem is None and form.path and any(part.startswith(".") for part in form.path.split("/")):
        # Engines keep no code there (CI scripts, tool settings), and a checkout keeps secrets there
        # (.git/config, .env): a `dir:` source refuses such paths, so lint does too.
        problem = "path names a dot-file or a dot-folder; checks read engine code, never those"
    if problem:
        yield "path", "G305", problem


@form_rule
def _python_only(form: Form, check: Check, entry: Entry, kb: KB):
    """G306: a matcher or modifier on a file of a language it does not read (`Matcher.languages`,
    `MODIFIER_LANGUAGES`: the facts evaluation refuses by too)."""
    if form.is_python or not form.path:
        return
    language = language_of(form.path)
    if form.scope is not None and language not in MODIFIER_LANGUAGES["in"]:
        yield "in", "G306", f"'in' needs a Python, C or C++ file; {form.path} is none of them"
    matcher = REGISTRY.get(form.matcher)
    if matcher is not None and language not in matcher.languages:
        yield form.matcher, "G306", \
            f"{form.matcher!r} needs {languages_words(matcher.languages)}; {form.path} is not one"
    if form.adjacent and language not in MODIFIER_LANGUAGES["adjacent"]:
        yield "adjacent", "G306", (f"'adjacent' needs {languages_words(MODIFIER_LANGUAGES['adjacent'])}; "
                                   f"{form.path} is not one")


@form_rule
def _symbols(form: Form, check: Check, entry: Entry, kb: KB):
    matcher = REGISTRY.get(form.matcher)
    for key, symbol in (("in", form.scope), (form.matcher, form.pattern if matcher and matcher.symbol else None)):
        if symbol is not None and not _SYMBOL.fullmatch(symbol):
            yield key, "G309", f"{symbol!r} is not a dotted Python name like Class.method"


@form_rule
def _patterns(form: Form, check: Check, entry: Entry, kb: KB):
    matcher = REGISTRY.get(form.matcher)
    problem = None
    if matcher is not None and matcher.validate:  # a query is compiled with its file's grammar (G308)
        problem = matcher.validate(form.pattern, language_of(form.path or ""))
    if problem:
        yield form.matcher, problem[0], problem[1]


@form_rule
def _fragments(form: Form, check: Check, entry: Entry, kb: KB):
    matcher = REGISTRY.get(form.matcher)
    for key, code, is_code in ((form.matcher, form.pattern, matcher is not None and matcher.code),
                               ("after", form.after, True)):
        if code is None or (key != "after" and (matcher is None or matcher.validate or matcher.symbol)):
            continue  # a regex, a query or a symbol: judged by its own rule
        piece = Fragment(code) if is_code and code.strip() else None
        if piece is not None and piece.problem:  # too costly to match: evaluation would say `error invalid`
            yield key, "G310", f"{key!r} {piece.problem}"
        elif not code.strip() or (piece is not None and piece.is_empty):
            yield key, "G310", f"{key!r} has nothing to look for"
