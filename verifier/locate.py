"""Finding where code lives in a release: for `gotchas locate`, relocation hints, `trace` and `follow`, which all
search through one `Places` (a release's definitions, fragments and string texts, each search answered from the
SearchCache when asked before).

A search goes through the files of a snapshot in the language of the form it is
for (the Python files, or the C and C++ files: `files_of`), cheaply prefiltered
by bytes (a definition's name, or a fragment's rarest literal token), and only
parses the candidates. `locate_in` is the `locate` command's: it owns the source
it is given and closes it, and the snapshot, however it ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from . import code, stats
from .code import _cpp, _python
from .code._tokens import NAME
from .matchers import REGISTRY
from .model import CHANGED, CPP_SUFFIXES, MISSING, language_of
from .reading import FileCache
from .sources import Snapshot, Source, SourceUnavailable

if TYPE_CHECKING:
    from collections.abc import Callable

    from .model import CheckResult, Form, Release
    from .verdicts import SearchCache

_SYMBOL = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
#: Files parsed at most in one search.
MAX_CANDIDATES = 400


@dataclass(frozen=True)
class Place:
    path: str
    lines: tuple[int, int]
    symbol: str | None
    what: str  # "definition" or "fragment"

    def __str__(self) -> str:
        where = f"{self.path}:{self.lines[0]}" + (f"-{self.lines[1]}" if self.lines[1] != self.lines[0] else "")
        return where + (f" in {self.symbol}" if self.symbol else "")


def is_symbol(text: str) -> bool:
    return bool(_SYMBOL.fullmatch(text.strip()))


def python_paths(snapshot: Snapshot) -> list[str]:
    return [p for p in snapshot.paths() if p.endswith((".py", ".pyi"))]


def files_of(language: str) -> str:
    """Which files a search for a form in a file of `language` (`model.language_of`) reads: "cpp" (the C and C++
    files) for a C or C++ form, "python" for any other (a text file's form is looked for in Python files, as
    before there were others)."""
    return "cpp" if language == "cpp" else "python"


def code_paths(snapshot: Snapshot, files: str) -> list[str]:
    """The paths of the release's Python files (`files` "python") or C and C++ files ("cpp")."""
    if files == "cpp":
        return [p for p in snapshot.paths() if p.endswith(CPP_SUFFIXES)]
    return python_paths(snapshot)


def read_python_files(snapshot: Snapshot) -> dict[str, bytes]:
    """Every Python file of the release, by path (one pass over an archive)."""
    stats.count("relocation_passes")
    return _read_all(snapshot, python_paths(snapshot))


def read_files(snapshot: Snapshot, files: str) -> dict[str, bytes]:
    """Every Python file (`files` "python": `read_python_files`) or C and C++ file ("cpp") of the release, by
    path (one pass over an archive)."""
    if files == "python":
        return read_python_files(snapshot)
    stats.count("relocation_passes")
    return _read_all(snapshot, code_paths(snapshot, files))


def search_kind(kind: str, files: str) -> str:
    """The SearchCache's kind of a search (`symbol`, `fragment`, `string`) over those files: a search of the C and
    C++ files is another than the same query's over the Python files (whose kinds stay as they were)."""
    return kind if files == "python" else f"{kind}:{files}"


def _read_all(snapshot: Snapshot, paths: list[str]) -> dict[str, bytes]:
    snapshot.prefetch(paths)
    contents = {}
    for path in paths:
        try:
            data = snapshot.read(path)
        except SourceUnavailable:
            continue
        if data is not None:
            contents[path] = data
    return contents


def find_symbol(snapshot: Snapshot, symbol: str, files: dict[str, bytes] | None = None,
                cache: FileCache | None = None, language: str = "python") -> list[Place]:
    """Every definition of `symbol`, or else of a symbol ending in its last part, across the release: in `files`
    (Python, C or C++ files by path, each read as its own language), or else in the release's files of
    `language`'s kind (`files_of`). A C++ symbol may be written with `::`."""
    symbol = _cpp.normalize(symbol) if "::" in symbol else symbol
    last = symbol.rsplit(".", 1)[-1]
    name = re.escape(last.encode())
    patterns = {"python": re.compile(rb"(?:def|class)\s+" + name + rb"\b|^\s*" + name + rb"\s*[:=]", re.MULTILINE),
                "cpp": re.compile(rb"(?<![\w~])" + name + rb"\b")}  # a C++ definition's name: anywhere in it
    files = files if files is not None else _read_all(snapshot, code_paths(snapshot, files_of(language)))
    cache = cache or FileCache()
    exact, similar = [], []
    for path, data in _candidates(files, patterns):
        source = cache.get(path, data)
        for defined, scope in source.definitions():
            if defined == symbol or defined.endswith("." + symbol):
                exact.append(_place(source, scope, defined, "definition"))
            elif defined.rsplit(".", 1)[-1] == last:
                similar.append(_place(source, scope, defined, "definition"))
    return exact or similar


def find_fragment(snapshot: Snapshot, fragment_code: str, files: dict[str, bytes] | None = None,
                  cache: FileCache | None = None) -> list[Place]:
    """Every occurrence of a `contains` fragment across the release's Python files."""
    fragment = code.fragment(fragment_code)
    if fragment.is_empty:
        return []
    # The longest name is the rarest, usually: files without it cannot match. Only a name stands in the file
    # as it stands in the fragment (a Python string or number is compared by value, whatever its spelling).
    patterns = {}
    for language, tokens in (("python", fragment.tokens), ("cpp", fragment.cpp_tokens)):
        names = [t.text for t in tokens if t.kind == NAME and t.text.isidentifier()]
        patterns[language] = re.compile(re.escape(max(names, key=len).encode()) if names else b"")
    files = files if files is not None else _read_all(snapshot, python_paths(snapshot))
    cache = cache or FileCache()
    places = []
    for path, data in _candidates(files, patterns):
        source = cache.get(path, data)
        for span in source.find(fragment, source.whole()):
            places.append(Place(path, source.lines_of(span), source.symbol_at(span.start), "fragment"))
    return places


def find_text(snapshot: Snapshot, text: str, files: dict[str, bytes] | None = None,
              cache: FileCache | None = None) -> list[Place]:
    """Every string literal containing `text` (whitespace folded) across the release's files (`files`: Python, C
    or C++ files by path; by default its Python files)."""
    wanted = code.fold_whitespace(text)
    words = [w for w in re.split(r"\W+", wanted) if w]
    if not words:
        return []
    pattern = re.compile(re.escape(max(words, key=len).encode()))
    files = files if files is not None else _read_all(snapshot, python_paths(snapshot))
    cache = cache or FileCache()
    places = []
    for path, data in _candidates(files, {"python": pattern, "cpp": pattern}):
        source = cache.get(path, data)
        end = source.byte(len(source.text))
        literals = _cpp.string_literals(source.root, 0, end, source.encoded) if source.is_cpp else \
            _python.string_literals(source.root, 0, end)
        for node, value in literals:
            if wanted in code.fold_whitespace(value):
                span = code.Span(source.char(node.start_byte), source.char(node.end_byte))
                places.append(Place(path, source.lines_of(span), source.symbol_at(span.start), "string"))
    return places


def _candidates(files: dict[str, bytes], patterns: dict[str, re.Pattern]):
    """The files, in path order, whose bytes the pattern of their language ("python" or "cpp") finds; at most
    MAX_CANDIDATES. A file of neither language is none."""
    count = 0
    for path in sorted(files):
        data = files[path]
        language = language_of(path)
        pattern = patterns.get(language if language == "cpp" else "python")
        if pattern is not None and pattern.search(data):
            yield path, data
            count += 1
            if count >= MAX_CANDIDATES:
                return


def _place(source: code.SourceFile, scope: code.Scope, name: str, what: str) -> Place:
    return Place(source.path, source.lines_of(code.Span(scope.start, scope.end)), name, what)


def cached(searches: SearchCache | None, snapshot: Snapshot, kind: str, query: str, compute) -> list[Place]:
    """`compute()` (a search of the whole release), answered from `searches` (a SearchCache) when it was asked
    before about the same release."""
    identity = snapshot.release.identity
    if searches is not None:
        stored = searches.get(identity, kind, query)
        if stored is not None:
            try:
                return [Place(p, (int(a), int(b)), s, w) for p, (a, b), s, w in stored]
            except (TypeError, ValueError):
                pass  # a damaged row: searched again
    places = compute()
    if searches is not None:
        searches.put(identity, kind, query, [[p.path, list(p.lines), p.symbol, p.what] for p in places])
    return places


class Places:
    """The one place search: where in a release a definition, a fragment or a string's text occurs, for
    `gotchas locate`, relocation hints (`relocation_places`), `trace` and `follow`.

    It searches the release's files of one kind (`kind`, `files_of` a form's language: "python" or "cpp"),
    given as `files` (path -> bytes, or a function that reads them, called only when a search is not answered
    by `searches`) or read from the snapshot when first needed; each search is answered from `searches` (the
    SearchCache, by release, kind and query) when it was asked before. `cache` holds the parsed candidates, so
    that the searches of one release parse a file once. With `kind` None, `files` are searched as given (the
    Python and the C and C++ files of `gotchas locate` together) and nothing is cached.
    """

    def __init__(self, snapshot: Snapshot, kind: str | None = "python",
                 files: dict[str, bytes] | Callable[[], dict[str, bytes]] | None = None,
                 cache: FileCache | None = None, searches: SearchCache | None = None) -> None:
        self.snapshot, self.kind, self.cache = snapshot, kind, cache or FileCache()
        self.searches = searches if kind is not None else None
        self._files = files

    def files(self) -> dict[str, bytes]:
        """The files searched, by path (read once)."""
        if callable(self._files):
            self._files = self._files()
        elif self._files is None:
            self._files = read_files(self.snapshot, self.kind or "python")
        return self._files

    def _search(self, what: str, query: str, compute: Callable[[], list[Place]]) -> list[Place]:
        if self.kind is None:
            return compute()
        return cached(self.searches, self.snapshot, search_kind(what, self.kind), query, compute)

    def symbol(self, name: str) -> list[Place]:
        """Every definition of `name` (`find_symbol`)."""
        return self._search("symbol", name, lambda: find_symbol(self.snapshot, name, self.files(), self.cache))

    def fragment(self, fragment_code: str) -> list[Place]:
        """Every occurrence of a `contains` fragment (`find_fragment`)."""
        return self._search("fragment", fragment_code,
                            lambda: find_fragment(self.snapshot, fragment_code, self.files(), self.cache))

    def text(self, value: str) -> list[Place]:
        """Every string literal holding `value` (`find_text`)."""
        return self._search("string", value, lambda: find_text(self.snapshot, value, self.files(), self.cache))


@dataclass(frozen=True)
class Located:
    """What `gotchas locate` found in a release: the number of its Python and of its C and C++ files, the
    definitions of the code (None when it is not a dotted name) and its occurrences as a fragment."""

    release: Release
    python_files: int
    cpp_files: int
    definitions: list[Place] | None
    occurrences: list[Place]


def locate_in(source: Source, choose: Callable[[Source], Release], code_text: str,
              status: Callable[[str], None] | None = None) -> Located:
    """`gotchas locate`: where `code_text` is defined and occurs in the release `choose(source)` picks, across
    its Python, C and C++ files (each read as its own language). The source is this function's: it and the
    snapshot are closed however it ends (no such release, SourceUnavailable)."""
    with source:
        release = choose(source)
        with source.open(release) as snapshot:
            if status is not None:
                status(f"{release.engine} {release.version}: reading the Python, C and C++ files")
            python, cpp = read_files(snapshot, "python"), read_files(snapshot, "cpp")
            search = Places(snapshot, None, {**python, **cpp})
            definitions = search.symbol(code_text) if is_symbol(code_text) else None
            return Located(release, len(python), len(cpp), definitions, search.fragment(code_text))


def relocation_places(form: Form, snapshot: Snapshot,
                      files: dict[str, bytes] | Callable[[], dict[str, bytes]] | None = None,
                      cache: FileCache | None = None, searches: SearchCache | None = None) -> list[Place]:
    """Where, in this release, what a form looks for lives, likeliest first, the form's own place left out.

    `files` is every file of the release that a search for the form reads (`files_of` its language: the Python
    files, or the C and C++ files) by path, or a function that reads them (called only when a search is not
    answered by `searches`).
    """
    places_of = Places(snapshot, files_of(language_of(form.path)), files, cache, searches)
    search = REGISTRY[form.matcher].search if form.matcher in REGISTRY else "scope"
    try:
        places: list[Place] = []
        if search == "symbol":
            places = places_of.symbol(form.pattern)
        elif search == "fragment":
            places = places_of.fragment(form.pattern)
        elif search == "text":
            places = places_of.text(form.pattern)
        if not places and form.scope and search != "symbol":
            places = places_of.symbol(form.scope)  # the code is not found: where is its scope?
    except code.BudgetExceeded:
        return []
    places = [p for p in places if not (p.path == form.path and p.symbol == form.scope)]
    wanted_name = (form.scope or form.pattern).rsplit(".", 1)[-1]

    def likeness(place: Place):
        # The same name in the same file is the likeliest new home; tests are the least likely.
        return ((place.symbol or "").rsplit(".", 1)[-1] != wanted_name, place.path != form.path,
                place.path.startswith("tests/") or "/tests/" in place.path, place.path, place.lines)

    return sorted(places, key=likeness)


def relocation_hint(form: Form, snapshot: Snapshot,
                    files: dict[str, bytes] | Callable[[], dict[str, bytes]] | None = None,
                    cache: FileCache | None = None, searches: SearchCache | None = None) -> str | None:
    """Where, in this release, what a changed or missing form looks for now lives, written as a form that
    could be added to `earlier`; None when nowhere else. Raises SourceUnavailable when the release cannot
    be read.

    `cache`, shared by the hints of one release, spares parsing a candidate file again for each.
    """
    stats.count("relocation_hints")
    places = relocation_places(form, snapshot, files, cache, searches)
    if not places:
        return None
    shown = "; ".join(str(p) for p in places[:3])
    more = f" (and {len(places) - 3} more)" if len(places) > 3 else ""
    return f"now at {shown}{more}; as a form: {as_form(form, places[0])}"


def as_form(form: Form, place: Place) -> str:
    """The place as a form of `earlier` in flow YAML: what differs from `form` (path, scope)."""
    parts = []
    if place.path != form.path:
        parts.append(f"path: {place.path}")
    scope = _scope_for(form, place)
    if scope != form.scope:
        parts.append(f"in: {scope if scope else 'null'}")
    if _names_symbol(form) and place.symbol and place.symbol != form.pattern:
        parts.append(f"{form.matcher}: {place.symbol}")
    return "{" + ", ".join(parts) + "}"


def _names_symbol(form: Form) -> bool:
    """A matcher whose text is a symbol (`defines`): it takes no scope, and a place is a new value of its text."""
    return form.matcher in REGISTRY and REGISTRY[form.matcher].symbol


def _scope_for(form: Form, place: Place) -> str | None:
    """The `in` of a form at `place`: the definition found, or the one holding the fragment found."""
    if _names_symbol(form):
        return None
    if place.what == "definition":
        return place.symbol
    if form.scope is None:
        return None
    return place.symbol


def with_relocations(results: list, snapshot: Snapshot, relocate: Callable[[CheckResult], bool], parsed: FileCache,
                     searches: SearchCache | None = None) -> list:
    """`results` (CheckResults of one release) with the relocation hint of each `changed` or `missing` verdict
    that `relocate(result)` picks added to its hint: where in this release its code now lives."""
    wanted = [i for i, r in enumerate(results)
              if r.verdict.status in (CHANGED, MISSING) and r.verdict.reason != "present" and relocate(r)]
    if not wanted:
        return results
    results = list(results)
    files: dict[str, dict[str, bytes]] = {}

    def reader(kind: str):
        def read() -> dict[str, bytes]:  # the release's files of that kind, read only when a search is not cached
            if kind not in files:
                files[kind] = read_files(snapshot, kind)
            return files[kind]
        return read

    for i in wanted:
        result = results[i]
        form = result.check.forms[result.form or 0]
        try:
            hint = relocation_hint(form, snapshot, reader(files_of(language_of(form.path))), parsed, searches)
        except SourceUnavailable:
            return results
        if hint:
            verdict = result.verdict
            combined = f"{hint}; {verdict.hint}" if verdict.hint else hint
            results[i] = replace(result, verdict=replace(verdict, hint=combined))
    return results
