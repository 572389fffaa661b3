"""`gotchas follow`: the new form of a check that a release broke, proposed from the code of both releases.

A check that held at release P and is `missing` or `changed` at the next
release R either lost its claim or only its words: the code moved (a file
split, a method extracted) or was re-worded around the claim (a receiver
renamed, an argument added). For such a check, R is searched for the form the
claim takes there, starting from the form that held at P (the template):

- `move`: the template's code, unchanged, at another place: the places of the
  relocation hints (`locate.relocation_places`: the fragment's occurrences, the
  definitions of its scope), and the definitions of the scope's own name;
- `text`: new code at the same place or at one of those, in two ways: the
  template with its local names as metavariables (as `trace` does), and the
  code of R aligned with the code the template matched at P (a line diff of
  the two scopes, then a token diff around the match). The aligned code is
  written as the new fragment, with the template's metavariables kept where
  the code they stood for still is.

A `text` proposal is compared with the template where the claim lives: every
literal (number, string, `True`/`None`), operator, keyword, keyword argument
and name of the template's code must still be in the proposal's, and the
proposal may add no operator, keyword, tuple comma or statement. What differs
is a *concern*: the claim may have changed (a threshold 128 that is now 256, a
condition joined on, `logger.warning` that became `logger.debug`), and the
proposal is shown for a person to decide, never as one that keeps the claim.
A text proposal must also be caught by the meaning mutants that caught the
template (the same mutation, by its description, made at R; at least one):
generalizing with `$$$` across the claim lets one of them through. A `move` is
the template's own code; it keeps its claim unless the template's old place
still holds code much like it, changed (then the claim may have changed there,
and the copy elsewhere is another code path), which is a concern too unless
that code names the new place. A move that keeps its claim is what
`follow --write --kinds move` writes without a person.

The code is never looked for in tests, examples or benchmarks (for C and C++
code, `examples/` and `tools/` are the engine's own: llama.cpp's server lives
there), nor in another kind of definition than the template's (a field's
default is not a function's parameter default).

Where the release says the claim changed in so many words (a named value the
claim does not allow, an `absent` check whose code is now present), nothing is
proposed.
"""

from __future__ import annotations

import ast
import difflib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from . import code, locate
from ._nodes import node_bytes
from .code import _cpp, _python
from .code._cpp_tokens import tokenize as cpp_tokenize
from .code._tokens import ELLIPSIS_META, META, NAME, NUMBER, OP, STRING, Token, tokenize
from .evaluate import evaluate_source
from .matchers import REGISTRY
from .model import CHANGED, ERROR, HOLDS, Check, Entry, Form, Release, Verdict, language_of
from .sources import Snapshot, Source, SourceUnavailable
from .trace import Walker, _distinctive, generalize
from .verdicts import SearchCache, VerdictCache

MOVE, TEXT = "move", "text"
KINDS = (MOVE, TEXT)

#: Tokens of a template's code that carry its claim besides its literals: a proposal must keep every one.
_CLAIM_WORDS = frozenset("""not and or is in if elif else for while try except finally with return break continue
    raise await yield del lambda True False None""".split())
_CLAIM_OPS = frozenset("== != < > <= >= + - * / // % ** @ & | ^ ~ << >> := ,".split())
#: The same of C and C++ code (`>>` is two `>` tokens there).
_CLAIM_WORDS_CPP = frozenset("""if else for while do switch case default return break continue goto throw try catch
    true false nullptr NULL new delete sizeof static const constexpr co_return co_await co_yield""".split())
_CLAIM_OPS_CPP = frozenset("== != < > <= >= <=> + - * / % & | ^ ~ << && || ! ? ,".split())
#: Lines of context around the match that the token alignment looks at, on each side.
_CONTEXT_LINES = 6
#: The least similarity (difflib's ratio of the token texts) of aligned code to the code the template matched.
_MIN_SIMILARITY = 0.4
#: The same, for code found in a definition beside the template's scope (a weaker lead than the scope itself).
_MIN_SIBLING_SIMILARITY = 0.7


@dataclass(frozen=True)
class Proposal:
    """A new form for a check at a release: its kind, the form, and what a reviewer needs to judge it."""

    kind: str  # move | text
    form: Form  # the form, bounded as the check's own form is
    verdict: Verdict  # the form's verdict at the release (a proposal holds there)
    how: str  # how it was found
    old: tuple[str, ...] = ()  # the lines the template matched at the release where it last held
    new: tuple[str, ...] = ()  # the lines the proposal matches
    concerns: tuple[str, ...] = ()  # what of the template's claim is not in the new code
    #: (caught, of): the meaning mutants that caught the template, made again at the release, and how many of
    #: them catch the proposal; None where not run (a move, or `--no-mutants`).
    mutants: tuple[int, int] | None = None

    @property
    def mutants_kept(self) -> bool:
        """Every meaning mutant that caught the template (made again at the release) catches it, and there is at
        least one such mutant: with none, nothing shows the new code says what the old said."""
        return self.kind == MOVE or (self.mutants is not None and self.mutants[1] > 0
                                     and self.mutants[0] == self.mutants[1])

    @property
    def keeps_claim(self) -> bool:
        """A move whose old place did not keep changed code of its own; or a text change with nothing of the
        claim lost or added and every mutant that caught the template catching it too."""
        if self.kind == MOVE:
            return not self.concerns
        return not self.concerns and self.mutants_kept


@dataclass
class Following:
    """What `follow_check` found for one check at one release."""

    entry: str
    check: Check
    release: str  # where the check broke
    held: str | None  # the release before it, where it held
    template: int | None  # the index of the form that held there
    verdict: Verdict | None  # the check's verdict at `release`
    proposals: list[Proposal] = field(default_factory=list)  # the best first
    note: str | None = None  # why there is no proposal, for a reviewer

    @property
    def best(self) -> Proposal | None:
        """The proposal to write: the first that keeps the claim."""
        return next((p for p in self.proposals if p.keeps_claim), None)


class Reader(Walker):
    """`trace`'s Walker for the two releases of a boundary: both kept open at a time (the template is read at the
    release before, the proposals at the release), each form's verdict asked once, and the release's Python
    files read once for every search."""

    def __init__(self, source: Source, verdicts: VerdictCache | None = None, searches: SearchCache | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        super().__init__(source, [], verdicts, searches, progress)
        self._open: dict[str, Snapshot] = {}
        self._order: list[str] = []
        self._files: dict[tuple[str, str], dict[str, bytes]] = {}  # (release, "python" or "cpp") -> path -> bytes
        #: (template fingerprint, release) -> mutant description -> [mutant, whether it caught the template]
        self.template_mutants: dict[tuple[str, str], dict[str, list]] = {}

    def snapshot(self, release: Release) -> Snapshot:
        found = self._open.get(release.version)
        if found is None:
            if len(self._order) >= 2:
                old = self._order.pop(0)
                self._open.pop(old).close()
                for key in [k for k in self._files if k[0] == old]:
                    del self._files[key]
            if self.progress:
                self.progress(f"{release.engine} {release.version}")
            found = self._open[release.version] = self.source.open(release)
            self._order.append(release.version)
        return found

    def source_file(self, release: Release, path: str) -> code.SourceFile | None:
        try:
            data = self.snapshot(release).read(path)
        except SourceUnavailable:
            return None
        return None if data is None else self.parsed.get(path, data)

    def python_files(self, release: Release) -> dict[str, bytes]:
        return self.code_files(release, "python")

    def code_files(self, release: Release, kind: str) -> dict[str, bytes]:
        """The release's files a search reads (`locate.files_of`: "python" or "cpp"), read once."""
        found = self._files.get((release.version, kind))
        if found is None:
            found = self._files[(release.version, kind)] = locate.read_files(self.snapshot(release), kind)
        return found

    def close(self) -> None:
        for snapshot in self._open.values():
            snapshot.close()
        self._open.clear()
        self._order.clear()
        self._files.clear()


def follow_check(entry: Entry, check: Check, held: Release, release: Release, reader: Reader,
                 kinds=KINDS, mutants: bool = True) -> Following | None:
    """The proposals for `check` at `release`, from the form that held at `held` (the release before it).
    None when the check holds at `release` or has no form there (nothing to follow)."""
    now = reader.check(check, release)
    if now is None or now[1].status == HOLDS:
        return None
    found = Following(entry.id, check, release.version, held.version, None, now[1])
    if now[1].status == ERROR:
        found.note = (f"the check is error {now[1].reason} at {release.version} ({now[1].message or 'no message'}): "
                      "a failure of the machinery says nothing of the code; nothing is proposed")
        return found
    before = reader.check(check, held)
    if before is not None and before[1].status == ERROR:
        found.note = (f"the check is error {before[1].reason} at {held.version} ({before[1].message or 'no message'})"
                      ": there is no form known to follow from")
        return found
    if before is None or before[1].status != HOLDS:
        found.note = f"the check did not hold at {held.version} either: there is no form to follow from"
        return found
    found.template = before[0]
    template = check.forms[before[0]]
    verdict = now[1]
    if verdict.status == CHANGED and (verdict.reason == "present" or "with another value" in (verdict.hint or "")):
        found.note = ("the release says the claim changed (" + (verdict.hint or verdict.reason or "") +
                      "): nothing is proposed; if the gotcha still bites, write the new form by hand")
        return found
    old_lines = _lines(reader, held, before[1])
    matcher = REGISTRY[template.matcher]
    try:
        places = _places(template, release, reader)
        proposals: list[tuple[tuple, Proposal]] = []
        tried: set[tuple] = set()
        there: dict[str, list[str]] = {}  # "aligned": the code at the template's own place that is like it

        def still_there(form: Form) -> bool:
            """Whether the template's own place at `release` holds code much like what it matched (a claim
            changed in place, while a copy of the old code lives elsewhere), and that code does not name the
            form's place (`max_loras: int = LoRAConfig.max_loras` hands the default on to where it moved)."""
            if "aligned" not in there:
                there["aligned"] = [pattern for ratio, pattern, _ in (
                    _aligned(template, before[1], held, template.path, template.scope, release, reader)
                    if template.matcher in ("contains", "string") else ()) if ratio >= 0.6]
            container = (form.scope or "").rsplit(".", 1)[0] if form.scope and "." in form.scope else form.scope
            module = form.path.rsplit("/", 1)[-1].removesuffix(".py")
            return any(not ((container and container in text) or module in text) for text in there["aligned"])

        def consider(kind: str, form: Form, how: str, rank: tuple) -> None:
            key = (form.path, form.scope, form.pattern, form.after)
            if key in tried:
                return
            tried.add(key)
            form = replace(form, since=check.since, until=check.until, index=0)
            result = reader.form(form, release)
            if result.status != HOLDS:
                return
            if _aside(form.path) and not _aside(template.path):
                return  # the engine's behaviour is not in its tests, examples or benchmarks
            # A class field's default found as a function's parameter is not the same claim; a string's text is its
            # claim wherever it is (a help text that moved from add_cli_args into a field).
            if template.scope and form.scope and template.matcher != "string" and \
                    not _same_kind_of_scope(reader, held, before[1], template, release, form):
                return
            alike = _alike(reader, held, before[1], template, release, result, form)
            rank = (rank[0], _rank(template, form.path, form.scope, rank[1], alike), *rank[2:])
            proposal = Proposal(kind, form, result, how, old_lines, _lines(reader, release, result))
            if kind == TEXT:
                proposal = _judged(proposal, template, before[1], held, release, reader, mutants,
                                   generalized=how.endswith(")") and "local names as metavariables" in how)
            elif kind == MOVE and verdict.status == CHANGED and still_there(form):
                proposal = replace(proposal, concerns=(f"the code at {template.path}"
                                                       f"{' in ' + template.scope if template.scope else ''} is "
                                                       "still there, changed: the claim may have changed there",))
            proposals.append((rank, proposal))

        if MOVE in kinds:
            for order, (path, scope, how) in enumerate(places):
                form = _placed(template, path, scope, how)
                if (form.path, form.scope) != (template.path, template.scope):
                    consider(MOVE, form, how, (0, order))
        if TEXT in kinds and matcher.code and template.matcher != "absent":
            names: dict[str, str] = {}
            language = language_of(template.path)
            pattern = generalize(template.pattern, names, targets=False, language=language)
            after = generalize(template.after, names, targets=False, language=language)
            if (pattern, after) != (template.pattern, template.after):
                how = f"local names as metavariables ({', '.join(names)})"
                for order, (path, scope, where) in enumerate([(template.path, template.scope, "")] + places):
                    form = replace(_placed(template, path, scope, where), pattern=pattern, after=after)
                    consider(TEXT, form, "; ".join(x for x in (where, how) if x), (1, order))
        if TEXT in kinds and template.matcher in ("contains", "string"):
            scopes = [(template.path, template.scope, "the same place")] + [p for p in places if p[1] is not None
                                                                           or template.scope is None]
            seen_scopes = set()
            for order, (path, scope, where) in enumerate(scopes):
                if (path, scope) in seen_scopes:
                    continue
                seen_scopes.add((path, scope))
                for ratio, pattern, after in _aligned(template, before[1], held, path, scope, release, reader):
                    form = replace(template, path=path, scope=scope, pattern=pattern, after=after)
                    consider(TEXT, form, f"{where}: the code there most like what held at {held.version} "
                             f"({ratio:.0%} alike)", (2, order, -ratio))
            if not proposals and template.scope:
                for order, (path, scope) in enumerate(_siblings(template, release, reader)):
                    for ratio, pattern, after in _aligned(template, before[1], held, path, scope, release, reader):
                        if ratio < _MIN_SIBLING_SIMILARITY:
                            continue
                        form = replace(template, path=path, scope=scope, pattern=pattern, after=after)
                        consider(TEXT, form, f"{scope}, beside {template.scope}: the code there most like what held"
                                 f" at {held.version} ({ratio:.0%} alike)", (3, order, -ratio))
    except SourceUnavailable as exc:
        found.note = f"the release could not be read: {exc}"
        return found
    proposals.sort(key=lambda rp: (not rp[1].keeps_claim, rp[0]))
    found.proposals = [p for _, p in proposals]
    if not found.proposals:
        found.note = ("nothing like the code that held at " + held.version + " was found" +
                      (" (the search was for moves only)" if kinds == (MOVE,) else "") +
                      ": the claim may have changed, or moved further than a search finds")
    return found


def _rank(template: Form, path: str, scope: str | None, order: int, alike: float = 0.0) -> tuple:
    """Likeliest first: the engine's own code (not its tests, examples or benchmarks), a scope as deep as the
    template's (a class for a class), the same scope, the same file, a scope of the same name, the place whose
    code is most like the template's old scope (`alike`, to a tenth), then a path most like the template's."""
    last = (template.scope or template.pattern).rsplit(".", 1)[-1]
    aside = _aside(path)
    depth = (template.scope or "").count(".") != (scope or "").count(".") if template.scope else False
    same_name = (scope or "").rsplit(".", 1)[-1] == last if template.scope else True
    path_alike = difflib.SequenceMatcher(None, template.path, path, autojunk=False).ratio()
    return (aside, depth, scope != template.scope or path != template.path, scope != template.scope,
            path != template.path, not same_name, -round(alike, 1), -round(path_alike, 2), order)


#: Folders whose code is not the engine's behaviour: a definition there is the least likely new home.
_ASIDE = frozenset({"tests", "test", "examples", "benchmarks", "docs", "scripts", "tools"})
#: The same for C and C++ code: llama.cpp's server is its own code, under `tools/` (under `examples/` until 0.3.8).
_ASIDE_CPP = _ASIDE - {"examples", "tools"}


def _aside(path: str) -> bool:
    aside = _ASIDE_CPP if language_of(path) == "cpp" else _ASIDE
    return any(part in aside for part in path.split("/")[:-1])


def _placed(template: Form, path: str, scope: str | None, how: str) -> Form:
    """The template at another place; for `defines`, the place's symbol is the new text."""
    if REGISTRY[template.matcher].symbol:
        return replace(template, path=path, scope=None, pattern=scope or template.pattern)
    return replace(template, path=path, scope=scope)


def _places(template: Form, release: Release, reader: Reader) -> list[tuple[str, str | None, str]]:
    """Where at `release` the template's code may have gone: (path, in, how), likeliest first."""
    snapshot = reader.snapshot(release)
    matcher = REGISTRY[template.matcher]
    places: list[tuple[str, str | None, str]] = []
    language = language_of(template.path)
    kind = locate.files_of(language)  # the release's Python files, or its C and C++ files
    distinctive = _distinctive(template.pattern, language) if matcher.code else True
    last = (template.scope or "").rsplit(".", 1)[-1]

    def files():
        return reader.code_files(release, kind)

    def unrelated(symbol: str | None) -> bool:
        # `CacheConfig.__init__` gone: every other class's `__init__` has its last name and nothing else of it
        last_name = (symbol or "").rsplit(".", 1)[-1]
        return bool(template.scope) and symbol != template.scope and last_name.startswith("__") and \
            (symbol or "").rsplit(".", 1)[0] != (template.scope or "").rsplit(".", 1)[0]

    for place in locate.relocation_places(template, snapshot, files, reader.parsed, reader.searches):
        if place.what == "definition" and unrelated(place.symbol):
            continue
        if place.what == "definition":
            scope = place.symbol
        else:
            if not (distinctive or place.path == template.path or (place.symbol or "").rsplit(".", 1)[-1] == last):
                continue
            scope = place.symbol if template.scope else None
            if scope and template.scope:
                depth = template.scope.count(".") + 1
                if scope.count(".") + 1 > depth:  # as deep as the template's scope: the class for a class
                    places.append((place.path, ".".join(scope.split(".")[:depth]), f"the code is at {place}"))
        what = "the code" if place.what != "definition" else template.scope or template.pattern
        places.append((place.path, scope, f"{what} is at {place}"))
    if template.scope and matcher.search != "symbol":
        for place in locate.Places(snapshot, kind, files, reader.parsed, reader.searches).symbol(template.scope):
            if not unrelated(place.symbol):
                places.append((place.path, place.symbol, f"{template.scope} is defined at {place}"))
    return places


def _scope_kind(source: code.SourceFile, symbol: str | None) -> str | None:
    """`function`, `class` or `field` (an assignment target; in C and C++ a field, a variable, an enumerator, a
    type alias) for the first definition of `symbol`."""

    if symbol is None:
        return None
    if source.is_cpp:
        return _cpp_scope_kind(source, symbol)
    for _, _, node in _members_for(source, symbol):
        kind = node.type
        if kind == "decorated_definition":
            inner = node.child_by_field_name("definition")
            kind = inner.type if inner is not None else kind
        return {"function_definition": "function", "class_definition": "class"}.get(kind, "field")
    return None


#: What a C or C++ definition is, by the node that `_cpp.definitions` gives its range.
_CPP_KINDS = {"function_definition": "function", "class_specifier": "class", "struct_specifier": "class",
              "union_specifier": "class", "enum_specifier": "class", "namespace_definition": "class"}


def _cpp_scope_kind(source: code.SourceFile, symbol: str) -> str | None:
    for start, end in _cpp.resolve(source.root, symbol, source._cpp_definitions):
        node = source.root.descendant_for_byte_range(start, end)
        while node is not None and node.parent is not None and (node.parent.start_byte, node.parent.end_byte) \
                == (start, end):
            node = node.parent  # the outermost node of that range: the definition itself
        if node is None:
            return None
        return _CPP_KINDS.get(node.type, "field")
    return None


def _members_for(source: code.SourceFile, symbol: str):
    containers = [source.root]
    parts = symbol.split(".")
    for depth, part in enumerate(parts):
        found = [(name, rng, node) for c in containers for name, rng, node in source._members(c) if name == part]
        if depth == len(parts) - 1:
            return found
        containers = [node for _, _, node in found if node.type in _python.DEFINITIONS]
    return []


def _same_kind_of_scope(reader: Reader, held: Release, held_verdict: Verdict, template: Form, release: Release,
                        form: Form) -> bool:
    """Whether the form's scope is the same kind of definition as the template's (a function for a function);
    a field only for a field of the same name."""
    old = reader.source_file(held, held_verdict.path or template.path)
    new = reader.source_file(release, form.path)
    if old is None or new is None or not _comparable(old, new):
        return True
    a, b = _scope_kind(old, template.scope), _scope_kind(new, form.scope)
    if a is None or b is None:
        return True
    if a == "field" or b == "field":
        # a kind at all: both scopes are named
        return a == b and (template.scope or "").rsplit(".", 1)[-1] == (form.scope or "").rsplit(".", 1)[-1]
    return a == b


def _comparable(old: code.SourceFile, new: code.SourceFile) -> bool:
    """Whether two files are read the same structured way: both Python, or both C or C++."""
    return old.structured and new.structured and old.is_cpp == new.is_cpp


def _alike(reader: Reader, held: Release, held_verdict: Verdict, template: Form, release: Release,
           verdict: Verdict, form: Form) -> float:
    """How alike the scope a form holds in is to the scope the template held in (the share of their distinct
    lines they have in common): where a fragment occurs in several places, the one with the old surroundings."""
    old = reader.source_file(held, held_verdict.path or template.path)
    new = reader.source_file(release, verdict.path or form.path)
    if old is None or new is None:
        return 0.0
    old_scope = _scope_of(old, held_verdict.symbol if template.scope and held_verdict.symbol else template.scope)
    new_scope = _scope_of(new, verdict.symbol if form.scope and verdict.symbol else form.scope)
    if old_scope is None or new_scope is None:
        return 0.0

    def lines(source: code.SourceFile, scope: code.Scope):
        first, last = source.line_of(scope.start), source.line_of(max(scope.start, scope.end - 1))
        return {source.line_text(n).strip() for n in range(first, last + 1)} - {""}

    a, b = lines(old, old_scope), lines(new, new_scope)
    return len(a & b) / len(a | b) if a | b else 0.0


#: Definitions beside a scope that the text search looks in, at most, when nothing is found in the scope itself.
_SIBLINGS = 40


def _siblings(template: Form, release: Release, reader: Reader) -> list[tuple[str, str]]:
    """The other definitions of the template's file at `release` that share its scope's container (the methods
    of its class, or the file's functions): code moves between neighbours (a method split in two)."""
    source = reader.source_file(release, template.path)
    if source is None or not source.structured or not template.scope:
        return []
    parent = template.scope.rsplit(".", 1)[0] if "." in template.scope else ""
    depth = template.scope.count(".")
    found = []
    for name, _ in source.definitions():
        if name != template.scope and name.count(".") == depth and (not parent or name.startswith(parent + ".")):
            found.append((template.path, name))
            if len(found) >= _SIBLINGS:
                break
    return found


def _lines(reader: Reader, release: Release, verdict: Verdict) -> tuple[str, ...]:
    if not verdict.lines or not verdict.path:
        return ()
    source = reader.source_file(release, verdict.path)
    if source is None:
        return ()
    return tuple(source.line_text(n) for n in range(verdict.lines[0], verdict.lines[1] + 1))


# --- text: the code of the new release aligned with what the template matched ------------------------------

def _scope_of(source: code.SourceFile, symbol: str | None) -> code.Scope | None:
    if symbol is None:
        return source.whole()
    found = source.scopes(symbol)
    return found[0] if found else None


def _old_match(template: Form, verdict: Verdict, source: code.SourceFile) -> tuple[code.Scope, code.Span] | None:
    """The scope and the exact span the template matched in the file where it held."""
    scope = _scope_of(source, verdict.symbol if template.scope and verdict.symbol else template.scope)
    if scope is None:
        return None
    if template.matcher == "string":
        wanted = code.fold_whitespace(template.pattern)
        for node, value in _literals(source, scope.start, scope.end):
            if wanted in code.fold_whitespace(value):
                return scope, code.Span(source.char(node.start_byte), source.char(node.end_byte))
        return None
    try:
        spans = source.find(code.fragment(template.pattern), scope)
    except (code.BudgetExceeded, code.PatternTooDeep):
        return None
    if not spans:
        return None
    if verdict.lines:
        for span in spans:
            if source.lines_of(span)[1] == verdict.lines[1] or source.lines_of(span)[0] == verdict.lines[0]:
                return scope, span
    return scope, spans[0]


def _aligned(template: Form, verdict: Verdict, held: Release, path: str, symbol: str | None, release: Release,
             reader: Reader) -> list[tuple[float, str, str | None]]:
    """Forms of the code at (path, symbol) in `release` that correspond to what the template matched at `held`:
    (how alike, fragment, `after`), best first. With `after`, each of the two is aligned on its own, and the
    template's own is tried beside the new one."""
    old_source = reader.source_file(held, verdict.path or template.path)
    new_source = reader.source_file(release, path)
    if old_source is None or new_source is None or not _comparable(old_source, new_source):
        return []
    found = _old_match(template, verdict, old_source)
    new_scope = _scope_of(new_source, symbol)
    if found is None or new_scope is None:
        return []
    old_scope, span = found
    if template.matcher == "string":
        return [(r, t, None) for r, t in _aligned_string(template, old_source, span, new_source, new_scope)]
    keep = {"$" + name for name, _ in template.values}
    patterns = _aligned_code(template.pattern, old_source, old_scope, span, new_source, new_scope, keep)
    if template.after is None:
        return [(r, t, None) for r, t in patterns if t != template.pattern]
    afters = []
    after_span = _after_span(template.after, old_source, old_scope, span)
    if after_span is not None:
        afters = _aligned_code(template.after, old_source, old_scope, after_span, new_source, new_scope, keep)
    results: list[tuple[float, str, str | None]] = []
    for ratio, pattern in [(1.0, template.pattern)] + patterns[:2]:
        for after_ratio, after in [(1.0, template.after)] + afters[:2]:
            if (pattern, after) != (template.pattern, template.after):
                results.append((min(ratio, after_ratio), pattern, after))
    results.sort(key=lambda r: -r[0])
    return results


def _after_span(after: str, source: code.SourceFile, scope: code.Scope, span: code.Span) -> code.Span | None:
    """The occurrence of `after` that a match at `span` came after: the last one before it."""
    try:
        spans = source.find(code.fragment(after), scope)
    except (code.BudgetExceeded, code.PatternTooDeep):
        return None
    before = [s for s in spans if s.end <= span.start]
    return before[-1] if before else None


def _aligned_code(pattern: str, old_source: code.SourceFile, old_scope: code.Scope, span: code.Span,
                  new_source: code.SourceFile, new_scope: code.Scope,
                  keep: set[str]) -> list[tuple[float, str]]:
    """The code of the new scope that corresponds to what `pattern` matched at `span` of the old, as fragments
    (how alike, text), best first; `keep` are the metavariables that must stay (named values)."""
    old_window, new_window = _windows(old_source, old_scope, span, new_source, new_scope)
    # tokenized from the scope's start (a window may begin inside a docstring or a comment), then cut to the windows
    scan = cpp_tokenize if old_source.is_cpp else tokenize
    old_tokens = [t for t in scan(old_source.text, start=old_scope.start, end=old_window[1])
                  if t.start >= old_window[0]]
    new_tokens = [t for t in scan(new_source.text, start=new_scope.start, end=new_window[1])
                  if t.start >= new_window[0]]
    first = next((i for i, t in enumerate(old_tokens) if t.start >= span.start), None)
    last = next((i for i in range(len(old_tokens) - 1, -1, -1) if old_tokens[i].end <= span.end), None)
    if first is None or last is None or last < first or not new_tokens:
        return []
    metas = _pattern_metas(pattern, old_tokens[first:last + 1], scan)
    matcher = difflib.SequenceMatcher(None, [t.text for t in old_tokens], [t.text for t in new_tokens], autojunk=False)
    opcodes = matcher.get_opcodes()
    results: list[tuple[float, str]] = []
    for extend in (False, True):
        region = _new_region(opcodes, first, last, extend)
        if region is None:
            continue
        region = _balanced(new_tokens, region)
        if region is None:
            continue
        text = _written(new_source.text, new_tokens, opcodes, first, last, region, metas, keep)
        if text is None:
            continue
        if pattern.endswith("\n") and not text.endswith("\n"):
            text += "\n"
        ratio = difflib.SequenceMatcher(None, [t.text for t in old_tokens[first:last + 1]],
                                        [t.text for t in new_tokens[region[0]:region[1] + 1]], autojunk=False).ratio()
        if ratio >= _MIN_SIMILARITY and text.strip() and all(text != t for _, t in results):
            results.append((ratio, text))
    results.sort(key=lambda r: -r[0])
    return results


def _aligned_string(template: Form, old_source: code.SourceFile, span: code.Span, new_source: code.SourceFile,
                    new_scope: code.Scope) -> list[tuple[float, str]]:
    """For `string`: the string literal of the new scope most like the one the template's text was in; the new
    text is that literal's text where the template's was in the old one (the whole value when it was)."""
    old_value = next((value for node, value in _literals(old_source, span.start, span.end)), None)
    if old_value is None:
        return []
    best = None
    for _node, value in _literals(new_source, new_scope.start, new_scope.end):
        ratio = difflib.SequenceMatcher(None, old_value, value, autojunk=False).ratio()
        if best is None or ratio > best[0]:
            best = (ratio, value)
    if best is None or best[0] < 0.6:
        return []
    wanted = code.fold_whitespace(template.pattern)
    old_folded, new_folded = code.fold_whitespace(old_value), code.fold_whitespace(best[1])
    if old_folded == wanted:
        return [(best[0], new_folded)]
    # the template quotes part of the literal: take the part of the new one that lines up with it
    at = old_folded.find(wanted)
    if at < 0:
        return []
    blocks = difflib.SequenceMatcher(None, old_folded, new_folded, autojunk=False).get_opcodes()
    start, end = _map_chars(blocks, at), _map_chars(blocks, at + len(wanted))
    piece = new_folded[start:end].strip()
    return [(best[0], piece)] if piece else []


def _literals(source: code.SourceFile, start: int, end: int):
    """(node, value) of each string literal between two character offsets, as `string` reads the file's language."""
    a, b = source.byte(start), source.byte(end)
    if source.is_cpp:
        return _cpp.string_literals(source.root, a, b, source.encoded)
    return _python.string_literals(source.root, a, b)


def _map_chars(opcodes: Sequence[tuple[str, int, int, int, int]], i: int) -> int:
    for tag, a1, a2, b1, b2 in opcodes:
        if a1 <= i < a2 or (i == a2 and tag != "equal" and a1 < a2):
            return b1 + (i - a1) if tag == "equal" else (b1 if i == a1 else b2)
    return opcodes[-1][4] if opcodes else i


def _literal_value(text: str) -> str | None:
    try:
        value = ast.literal_eval(text) if len(text) < 10000 else None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text.strip("'\"") if text[:1] in "'\"fF" else None
    return value if isinstance(value, str) else None


def _windows(old_source: code.SourceFile, old_scope: code.Scope, span: code.Span, new_source: code.SourceFile,
             new_scope: code.Scope) -> tuple[tuple[int, int], tuple[int, int]]:
    """The character ranges around the match (old) and around where the line diff of the two scopes puts it
    (new) that the token alignment compares."""
    old_first, old_last = old_source.line_of(old_scope.start), old_source.line_of(max(old_scope.start,
                                                                                      old_scope.end - 1))
    new_first, new_last = new_source.line_of(new_scope.start), new_source.line_of(max(new_scope.start,
                                                                                      new_scope.end - 1))
    old_lines = [old_source.line_text(n).strip() for n in range(old_first, old_last + 1)]
    new_lines = [new_source.line_text(n).strip() for n in range(new_first, new_last + 1)]
    a, b = old_source.line_of(span.start) - old_first, old_source.line_of(max(span.start, span.end - 1)) - old_first
    opcodes = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()
    lo, hi = _map_lines(opcodes, a, low=True), _map_lines(opcodes, b, low=False)
    lo, hi = min(lo, hi), max(lo, hi)
    old_range = (max(old_first, old_first + a - _CONTEXT_LINES), min(old_last, old_first + b + _CONTEXT_LINES))
    new_range = (max(new_first, new_first + lo - _CONTEXT_LINES), min(new_last, new_first + hi + _CONTEXT_LINES))

    def chars(source: code.SourceFile, scope: code.Scope, lines: tuple[int, int]):
        start = max(scope.start, source._line_starts[lines[0] - 1])
        end = source._line_starts[lines[1]] if lines[1] < len(source._line_starts) else len(source.text)
        return start, min(scope.end, end)

    return chars(old_source, old_scope, old_range), chars(new_source, new_scope, new_range)


def _map_lines(opcodes: Sequence[tuple[str, int, int, int, int]], i: int, low: bool) -> int:
    for tag, a1, a2, b1, b2 in opcodes:
        if a1 <= i < a2:
            if tag == "equal":
                return b1 + (i - a1)
            return b1 if low else max(b1, b2 - 1)
    return opcodes[-1][4] if opcodes else 0


def _pattern_metas(pattern: str, matched: list[Token], scan=tokenize) -> dict:
    """Which of the matched tokens each metavariable of the pattern stood for: {"cover": {token index: meta},
    "gaps": {token index: [metas that matched nothing just before it]}}; `scan` is the language's tokenizer."""
    fragment_tokens = scan(pattern, fragment=True)
    texts = [t.text if t.kind not in (META, ELLIPSIS_META) else "\x00" + t.text for t in fragment_tokens]
    if not any(t.startswith("\x00") for t in texts):
        return {"cover": {}, "gaps": {}}
    cover: dict[int, str] = {}
    gaps: dict[int, list[str]] = {}
    opcodes = difflib.SequenceMatcher(None, texts, [t.text for t in matched], autojunk=False).get_opcodes()
    for tag, a1, a2, b1, b2 in opcodes:
        if tag == "equal":
            continue
        metas = [texts[k][1:] for k in range(a1, a2) if texts[k].startswith("\x00")]
        if not metas:
            continue  # a difference of layout (parentheses, a trailing comma) that the canonical layout drops
        if b2 > b1:
            for k in range(b1, b2):
                cover[k] = metas[0] if len(metas) == 1 else "$$$"
        else:
            gaps.setdefault(b1, []).extend(metas)
    return {"cover": cover, "gaps": gaps}


def _new_region(opcodes: Sequence[tuple[str, int, int, int, int]], first: int, last: int,
                extend: bool) -> tuple[int, int] | None:
    """The new tokens (first, last index) that correspond to old tokens first..last; with `extend`, taking in
    what the new code inserted right after the last (a condition joined on, an argument added at the end)."""
    start = end = None
    for tag, a1, a2, b1, b2 in opcodes:
        if start is None and a2 > first:
            if tag == "equal":
                start = b1 + (first - a1)
            elif tag in ("replace", "insert"):
                start = b1
            else:
                start = b1  # the first token was deleted: start where its place is
        if a1 <= last < a2 or (tag == "insert" and a1 == last + 1 and extend):
            if tag == "equal":
                end = b1 + (last - a1)
            elif tag == "delete":
                end = b1 - 1
            else:
                end = b2 - 1
        if a1 > last and not (tag == "insert" and a1 == last + 1):
            break
    if start is None or end is None or end < start:
        return None
    return start, end


_OPENS, _CLOSES = {"(": ")", "[": "]", "{": "}"}, {")": "(", "]": "[", "}": "{"}


def _balanced(tokens: list[Token], region: tuple[int, int]) -> tuple[int, int] | None:
    """The region widened until its brackets pair up (a parenthesized expression whose closing bracket came
    after the last aligned token); None when they cannot within the window."""
    start, end = region
    for _ in range(64):
        depth, lowest = 0, 0
        for token in tokens[start:end + 1]:
            if token.kind == OP and token.text in _OPENS:
                depth += 1
            elif token.kind == OP and token.text in _CLOSES:
                depth -= 1
                lowest = min(lowest, depth)
        if lowest < 0:
            if start == 0:
                return None
            start -= 1
        elif depth > 0:
            if end + 1 >= len(tokens):
                return None
            end += 1
        else:
            return start, end
    return None


def _written(text: str, new_tokens: list[Token], opcodes: Sequence[tuple[str, int, int, int, int]], first: int,
             last: int, region: tuple[int, int], metas: dict, keep: set[str]) -> str | None:
    """The new code of `region` as a fragment: its text as the release writes it, each run of it that stands
    where a metavariable of the template stood written as that metavariable, dedented."""
    old_to_new: dict[int, int] = {}
    new_meta: dict[int, str] = {}
    for tag, a1, a2, b1, _b2 in opcodes:
        if tag == "equal":
            for k in range(a2 - a1):
                old_to_new[a1 + k] = b1 + k
    cover = {first + k: m for k, m in metas["cover"].items()}
    for old, meta in cover.items():
        if old in old_to_new:
            new_meta[old_to_new[old]] = meta
    # a changed run between two tokens of one metavariable is that metavariable's too
    for tag, a1, a2, b1, b2 in opcodes:
        if tag in ("replace", "insert") and b2 > b1:
            left, right = cover.get(a1 - 1), cover.get(a2) if tag == "insert" else cover.get(a1)
            meta = cover.get(a1) if tag == "replace" else None
            if tag == "replace" and all(cover.get(k) == meta for k in range(a1, a2)) and meta is not None:
                for k in range(b1, b2):
                    new_meta[k] = meta
            elif left is not None and left == right:
                for k in range(b1, b2):
                    new_meta[k] = left
    gaps = {}
    for k, names in metas["gaps"].items():
        old = first + k
        if old in old_to_new:
            gaps[old_to_new[old]] = names
        elif old == last + 1 and last in old_to_new:
            gaps[old_to_new[last] + 1] = names
    wanted = keep & (set(metas["cover"].values()) | {m for names in metas["gaps"].values() for m in names})
    start_token, end_token = new_tokens[region[0]], new_tokens[region[1]]
    out, pos, written = [], start_token.start, set()
    k = region[0]
    while k <= region[1]:
        for name in gaps.get(k, ()):
            out.append(text[pos:new_tokens[k].start] + name + " ")
            pos = new_tokens[k].start
            written.add(name)
        meta = new_meta.get(k)
        if meta is None:
            k += 1
            continue
        j = k
        while j + 1 <= region[1] and new_meta.get(j + 1) == meta and (meta == "$$$" or not gaps.get(j + 1)):
            j += 1
        out.append(text[pos:new_tokens[k].start] + meta)
        pos = new_tokens[j].end
        written.add(meta)
        k = j + 1
    for name in gaps.get(region[1] + 1, ()):
        out.append(text[pos:end_token.end] + " " + name)
        pos = end_token.end
        written.add(name)
    out.append(text[pos:end_token.end])
    if not wanted <= written:
        return None  # a named value lost its code: it would not be read any more
    return _dedent("".join(out), text, start_token.start)


def _dedent(fragment: str, text: str, start: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    indent = len(text[line_start:start]) - len(text[line_start:start].lstrip())
    lines = fragment.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        strip = min(indent, len(line) - len(line.lstrip()))
        out.append(line[strip:])
    return "\n".join(out).rstrip()


# --- judging a text proposal ------------------------------------------------------------------------------

def claim_tokens(pattern: str | None, names: bool = True, language: str = "python") -> Counter:
    """The literals, operators, keywords, keyword arguments' names and (with `names`) the other names of a
    fragment, its metavariables left out: what a new form must keep to say the same. A name is kept too
    (`logger.warning` that becomes `logger.debug`, `token_id` that becomes `token`): a rename is for a person,
    unless it is a local that the template's own metavariables, or a generalization, stand for. `language` is
    that of the fragment's file ("cpp": C and C++ tokens, keywords and operators; no keyword arguments)."""
    found: Counter = Counter()
    if not pattern:
        return found
    cpp = language == "cpp"
    words, ops = (_CLAIM_WORDS_CPP, _CLAIM_OPS_CPP) if cpp else (_CLAIM_WORDS, _CLAIM_OPS)
    tokens = cpp_tokenize(pattern, fragment=True) if cpp else tokenize(pattern, fragment=True)
    annotation = range(0)
    if not cpp and len(tokens) > 2 and tokens[0].kind == NAME and tokens[1].text == ":":
        # `block_size: int = 16`: the annotation says nothing of the claim (`int` that becomes `BlockSize`)
        end = next((k for k, t in enumerate(tokens) if t.text == "=" and k > 1), len(tokens))
        annotation = range(2, end)
    depth = 0
    for i, token in enumerate(tokens):
        if token.kind == OP and token.text in _OPENS:
            depth += 1
        elif token.kind == OP and token.text in _CLOSES:
            depth = max(0, depth - 1)
        elif token.kind == OP and token.text == "," and depth == 0:
            found[","] += 1  # outside brackets a comma makes a tuple: `a, b = f()` is a new shape of result
        if i in annotation:
            continue
        if not cpp and token.kind == NAME and i + 1 < len(tokens) and tokens[i + 1].text == "=" and i and \
                tokens[i - 1].text in ("(", ","):
            found[token.text + "="] += 1  # a keyword argument's name says which parameter gets the value
        elif token.kind == NUMBER:
            found[_number(token.text)] += 1
        elif token.kind == STRING:
            value = _literal_value(token.text)
            found[repr(value) if value is not None else token.text] += 1
        elif token.kind == NAME and token.text in words:
            found[token.text] += 1
        elif token.kind == NAME and names:
            found[token.text] += 1  # a name the code reads: an attribute, a call, a variable
        elif token.kind == OP and token.text in ops and token.text != ",":
            found[token.text] += 1
    return found


def _number(text: str) -> str:
    try:
        return repr(ast.literal_eval(text.replace("_", "")))
    except (ValueError, SyntaxError):
        return text


def concerns(template: Form, form: Form, generalized: bool = False) -> tuple[str, ...]:
    """What of the template's claim the form no longer says: each literal, operator, keyword or keyword argument
    it lost, and the operators and keywords it adds."""
    language = language_of(template.path)
    words, ops = (_CLAIM_WORDS_CPP, _CLAIM_OPS_CPP) if language == "cpp" else (_CLAIM_WORDS, _CLAIM_OPS)
    if generalized:  # the template's locals made metavariables: compare what is left
        names: dict[str, str] = {}
        template = replace(template, pattern=generalize(template.pattern, names, targets=False, language=language),
                           after=generalize(template.after, names, targets=False, language=language))
    old = claim_tokens(template.pattern, language=language) + claim_tokens(template.after, language=language)
    new = claim_tokens(form.pattern, language=language) + claim_tokens(form.after, language=language)
    lost = old - new
    gained = new - old
    out = []
    for token, n in sorted(lost.items()):
        now = [t for t in gained if _same_kind(t, token, words, ops)]
        out.append(f"`{token}` is gone" + (f" (the new code has `{'`, `'.join(sorted(now)[:3])}`)" if now else "")
                   + (f" ({n} of them)" if n > 1 else ""))
    # An operator or keyword the old code did not have joins a condition or a term to the claim (`and not
    # cache_config.enable_extensible_kv_cache`): the gotcha may have narrowed. An argument or a literal added
    # beside it (a keyword argument, a dict entry) does not.
    added = sorted(t for t in gained if t in words or t in ops)
    unmatched = [t for t in added if not any(_same_kind(t, gone, words, ops) for gone in lost)]
    if unmatched:
        out.append("the new code adds `" + "`, `".join(unmatched[:4]) +
                   "`: a condition, a term or a result joined the claim")
    statements = _cpp_statements if language == "cpp" else _statements
    more = statements(form.pattern) - statements(template.pattern)
    if sum(more.values()) > 0 and statements(template.pattern):
        first = next(iter(more))
        out.append(f"the new code adds a statement (`{first}`): the claim's code does more now")
    return tuple(out)


def _statements(pattern: str | None) -> Counter:
    """The statements of a fragment, each by its first line with whitespace folded (a fragment that is not whole
    statements has none)."""
    found: Counter = Counter()
    if not pattern or "\n" not in pattern.strip():
        return found
    text = pattern.replace("$$$", "...")
    tree = _python.parse(text.encode("utf-8"))
    if tree.root_node.has_error:
        return found
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        for child in node.named_children:
            if child.type == "block":
                stack.append(child)
            elif child.type.endswith("statement") or child.type in ("function_definition", "class_definition",
                                                                      "decorated_definition"):
                line = code.fold_whitespace(node_bytes(child).decode("utf-8", "replace").split("\n")[0])
                if line != "...":
                    found[line] += 1
                stack.append(child)
    return found


def _cpp_statements(pattern: str | None) -> Counter:
    """`_statements` of a C or C++ fragment: each statement (`_cpp.is_statement`) of its parse as a function's
    body, by its first line with whitespace folded (none where it does not parse so)."""
    found: Counter = Counter()
    if not pattern or "\n" not in pattern.strip():
        return found
    text = "void __gotchas_fragment__() {\n" + pattern.replace("$$$", "___;").replace("$", "_") + "\n}"
    root = _cpp.parse(text.encode("utf-8")).root_node
    if root.has_error or not root.named_children:
        return found
    stack = [root.named_children[0]]
    while stack:
        node = stack.pop()
        for child in node.named_children:
            if _cpp.is_statement(child) and child.type != "compound_statement":
                line = code.fold_whitespace(node_bytes(child).decode("utf-8", "replace").split("\n")[0])
                if line != "___;":
                    found[line] += 1
            stack.append(child)
    return found


def _same_kind(a: str, b: str, words=_CLAIM_WORDS, ops=_CLAIM_OPS) -> bool:
    def kind(t):
        if t.isidentifier() and t not in words:
            return "name"
        if t in words:
            return "word"
        if t in ops:
            return "op"
        if t.endswith("="):
            return "keyword"
        return "string" if t[:1] in "'\"" else "number"
    return kind(a) == kind(b)


def _judged(proposal: Proposal, template: Form, held_verdict: Verdict, held: Release, release: Release,
            reader: Reader, run_mutants: bool, generalized: bool = False) -> Proposal:
    lost = concerns(template, proposal.form, generalized)
    if not run_mutants:
        return replace(proposal, concerns=lost)
    return replace(proposal, concerns=lost, mutants=mutants_kept(template, held_verdict, held, proposal.form,
                                                                 proposal.verdict, release, reader))


def mutants_kept(template: Form, held_verdict: Verdict, held: Release, form: Form, verdict: Verdict,
                 release: Release, reader: Reader) -> tuple[int, int]:
    """(caught, of): the meaning mutants of the proposal's code at `release` that are the same mutation (by
    description) as one that caught the template at `held`, and how many of them the proposal catches."""
    from .mutants import Mutant, meaning_mutants

    new_text = _text(reader, release, verdict.path or form.path)
    if new_text is None or language_of(form.path) not in ("python", "cpp"):
        return (0, 0)
    new: dict[str, Mutant] = {}
    for mutant in meaning_mutants(form, verdict, new_text):
        new.setdefault(mutant.description, mutant)
    caught = of = 0
    for description, mutant in new.items():
        if not _caught_template(template, held_verdict, held, description, reader):
            continue  # it did not catch the template (or was not made there): it constrains nothing
        of += 1
        if not _holds(form, mutant.path, mutant.text):
            caught += 1
    return caught, of


def _caught_template(template: Form, held_verdict: Verdict, held: Release, description: str, reader: Reader) -> bool:
    """Whether the template's meaning mutant with this description, at `held`, caught it: made and run once per
    template and release, whatever the number of proposals judged against it."""
    from .mutants import meaning_mutants

    key = (template.fingerprint, held.version)
    made = reader.template_mutants.get(key)
    if made is None:
        old_text = _text(reader, held, held_verdict.path or template.path)
        made = {}
        if old_text is not None and language_of(template.path) in ("python", "cpp"):
            for mutant in meaning_mutants(template, held_verdict, old_text):
                made.setdefault(mutant.description, [mutant, None])
        reader.template_mutants[key] = made
    found = made.get(description)
    if found is None:
        return False
    if found[1] is None:
        found[1] = not _holds(template, found[0].path, found[0].text)
    return found[1]


def _holds(form: Form, path: str, text: str) -> bool:
    return evaluate_source(replace(form, since=None, until=None), code.SourceFile(path, text.encode("utf-8"))
                           ).status == HOLDS


def _text(reader: Reader, release: Release, path: str) -> str | None:
    source = reader.source_file(release, path)
    return None if source is None else source.text


# --- over entries and releases ------------------------------------------------------------------------------

def followed(check: Check, proposal: Proposal, held: str) -> Check:
    """The check as `follow --write` leaves it: the proposal as its own form, the old own form first in
    `earlier` bounded `until` the release where it held."""
    old = replace(check.own, since=check.since, until=held)
    check = replace(check, path=proposal.form.path, scope=proposal.form.scope, matcher=proposal.form.matcher,
                    pattern=proposal.form.pattern, after=proposal.form.after, adjacent=proposal.form.adjacent,
                    earlier=tuple(replace(f, index=i + 1) for i, f in enumerate((old, *check.earlier))))
    for cached in ("own", "forms", "fingerprint", "_forms_at"):
        check.__dict__.pop(cached, None)
    return check


def follow_engine(entries: list[Entry], engine: str, source: Source, releases: list[Release], targets: list[Release],
                  reader: Reader, kinds=KINDS, mutants: bool = True,
                  progress: Callable[[str], None] | None = None) -> list[Following]:
    """Every check of `engine` that holds at the release before each of `targets` (in order) and not at it,
    followed. Where a proposal keeps the claim, the next target is followed from the check with it applied
    (as `--write` would leave it), so that several new releases are followed in one run."""
    order = {r.version: i for i, r in enumerate(releases)}
    found: list[Following] = []
    current = {(e.id, c.id): c for e in entries for c in e.checks if c.engine == engine}
    for target in sorted(targets, key=lambda r: order.get(r.version, -1)):
        i = order.get(target.version)
        if i is None or i == 0:
            continue
        held = releases[i - 1]
        for entry in entries:
            for original in entry.checks:
                if original.engine != engine:
                    continue
                check = current[(entry.id, original.id)]
                if progress:
                    progress(f"{engine} {target.version}: {entry.id} / {check.id}")
                result = follow_check(entry, check, held, target, reader, kinds, mutants)
                if result is None:
                    continue
                found.append(result)
                if result.best is not None:
                    current[(entry.id, original.id)] = followed(check, result.best, held.version)
    return found
