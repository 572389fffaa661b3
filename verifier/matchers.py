"""The matchers of docs/format.md: one registry, read by every part that needs to know one.

Each matcher is declared once, in `REGISTRY`: the function that decides a form's
verdict on a file, whether it needs a Python file, whether it takes a scope
(`in`) and the order modifiers (`after`, `adjacent`), whether its text is code
(compared in the canonical layout) or a dotted symbol, how lint validates its
text, how a relocation hint and `gotchas trace` look for it in a release, how
`gotchas mutate` changes what it matched, and the help text of the JSON Schema.
Evaluation, lint, the schema, locate, trace, mutate and the site read it; none
of them names a matcher.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from . import code
from .code import _bounded, _cpp, _python
from .code._bounded import InvalidPattern, compile_query, compile_regex
from .model import CHANGED, ERROR, HOLDS, MISSING, Form, Verdict, bound_value


class Invalid(Exception):
    """The check cannot be evaluated as written."""


def _holds(form: Form, source: code.SourceFile, span: code.Span, symbol: str | None) -> Verdict:
    inner = source.symbol_at(span.start) if source.structured else None
    return Verdict(HOLDS, path=form.path, lines=source.lines_of(span), symbol=inner or symbol)


def _scope_has_error(source: code.SourceFile, scopes: list[code.Scope]) -> bool:
    return source.structured and any(source.has_error(s) for s in scopes)


def _not_found(form: Form, source: code.SourceFile, scopes: list[code.Scope], what: str,
               reason: str = "not-found", code_text: str | None = None) -> Verdict:
    """`changed` (or `unparsable` when the scope holds syntax errors), with the closest line as hint."""
    if _scope_has_error(source, scopes):
        return Verdict(ERROR, "unparsable", path=form.path,
                       message=f"{what}, and the file has syntax errors where the check looks")
    hint = None
    closest = None
    for scope in scopes:
        found = source.closest_line(code_text if code_text is not None else form.pattern, scope)
        if found and (closest is None or found[0] < closest[0]):
            closest = found
    if closest:
        hint = f"closest line in the scope: {form.path}:{closest[0]}: {closest[1]}"
    symbol = scopes[0].symbol if scopes else None
    return Verdict(CHANGED, reason, path=form.path, symbol=symbol, hint=hint, message=what)


def symbol_missing(form: Form, source: code.SourceFile, symbol: str) -> Verdict:
    if source.has_error():
        return Verdict(ERROR, "unparsable", path=form.path,
                       message=f"{symbol} is not defined, and the file has syntax errors")
    last = symbol.rsplit(".", 1)[-1]
    elsewhere = [(name, scope) for name, scope in source.definitions()
                 if name.rsplit(".", 1)[-1] == last and name != symbol]
    hint = None
    if elsewhere:
        hint = "; ".join(f"{name} is defined at {form.path}:{source.line_of(scope.start)}"
                         for name, scope in elsewhere[:3])
    first = symbol.split(".", 1)[0]
    origin = source.imported_from(first)
    if origin is not None and origin != form.path:
        imported = (f"{first} is imported here, not defined: look in {origin} (or its package's __init__.py); "
                    f"as a form: {{path: {origin}}}")
        hint = f"{imported}; {hint}" if hint else imported
    return Verdict(MISSING, "symbol-missing", path=form.path, symbol=symbol, hint=hint,
                   message=f"{symbol} is not defined in {form.path}")


# --- matchers -----------------------------------------------------------------

def _fragment(text: str, what: str) -> code.Fragment:
    """The fragment of a check; Invalid when it is empty or cannot be matched within bounds (its own fault)."""
    fragment = code.fragment(text)
    if fragment.problem:
        raise Invalid(f"{what} {fragment.problem}")
    if fragment.is_empty:
        raise Invalid(f"{what} is empty")
    return fragment


def _contains(form: Form, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    fragment = _fragment(form.pattern, "the fragment")
    if form.values:
        return _contains_values(form, source, scopes, fragment)
    matches = [(scope, span) for scope in scopes for span in source.find(fragment, scope)]
    if not matches:
        return _not_found(form, source, scopes, "the fragment does not occur in the scope")
    if form.after is None:
        scope, span = matches[0]
        return _holds(form, source, span, scope.symbol)
    anchor = _fragment(form.after, "the `after` fragment")
    anchors = [(scope, span) for scope in scopes for span in source.find(anchor, scope)]
    if not anchors:
        return _not_found(form, source, scopes, "the `after` fragment does not occur in the scope",
                          code_text=form.after)
    ordered = [(a, m, scope) for scope_a, a in anchors for scope, m in matches
               if scope == scope_a and m.start >= a.end]
    if not ordered:
        verdict = _not_found(form, source, scopes, "the fragment occurs only before the `after` fragment",
                             reason="out-of-order")
        return verdict
    if not form.adjacent:
        _, match, scope = ordered[0]
        return _holds(form, source, match, scope.symbol)
    root, language = source.root, _cpp if source.is_cpp else _python
    for a, m, scope in ordered:
        first = language.statement_at(root, source.byte(a.end - 1))
        second = language.statement_at(root, source.byte(m.start))
        if first is not None and second is not None and language.consecutive(first, second):
            return _holds(form, source, m, scope.symbol)
    _, m, scope = ordered[0]
    return Verdict(CHANGED, "not-adjacent", path=form.path, symbol=scope.symbol,
                   message="the fragment follows the `after` fragment, but not in the next statement",
                   hint=f"nearest occurrence after it: {form.path}:{source.line_of(m.start)}")


def _contains_values(form: Form, source: code.SourceFile, scopes: list[code.Scope], fragment) -> Verdict:
    """`contains` with named values (no `after`: lint's G315): the first match whose every `$NAME` of `values`
    bound one of the values the claim allows holds, with what it bound; matches that bound another value make
    the check `changed`, the value found in the hint (the fragment is there, the claim's value is not)."""
    other = None
    for scope in scopes:
        for span, bound in source.find_bound(fragment, scope):
            found = tuple((name, bound.get(name, "")) for name, _ in form.values)
            wrong = [(name, text) for (name, text), (_, allowed) in zip(found, form.values)
                     if bound_value(text) not in {bound_value(str(a)) for a in allowed}]
            if not wrong:
                return replace(_holds(form, source, span, scope.symbol), values=found)
            other = other or (span, wrong)
    if other is None:
        return _not_found(form, source, scopes, "the fragment does not occur in the scope")
    span, wrong = other
    allowed = dict(form.values)
    said = "; ".join(f"{name} is {text} (the claim allows {', '.join(str(v) for v in allowed[name])})"
                     for name, text in wrong)
    return Verdict(CHANGED, "not-found", path=form.path, symbol=source.symbol_at(span.start),
                   hint=f"the fragment is at {form.path}:{source.lines_of(span)[0]} with another value: {said}",
                   message="the fragment occurs in the scope only with values the claim does not allow")


def _absent(form: Form, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    fragment = _fragment(form.pattern, "the fragment")
    for scope in scopes:
        spans = source.find(fragment, scope)
        if spans:
            return Verdict(CHANGED, "present", path=form.path, lines=source.lines_of(spans[0]),
                           symbol=scope.symbol or source.symbol_at(spans[0].start),
                           message="the fragment occurs in the scope")
    scope = scopes[0]
    return Verdict(HOLDS, path=form.path, lines=source.lines_of(code.Span(scope.start, scope.end)),
                   symbol=scope.symbol)


def _string(form: Form, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    wanted = code.fold_whitespace(form.pattern)
    if not wanted:
        raise Invalid("the string to look for is empty")
    for scope in scopes:
        start, end = source.byte(scope.start), source.byte(scope.end)
        found = (_cpp.string_literals(source.root, start, end, source.encoded) if source.is_cpp
                 else _python.string_literals(source.root, start, end))
        for node, value in found:
            if wanted in code.fold_whitespace(value):
                span = code.Span(source.char(node.start_byte), source.char(node.end_byte))
                return _holds(form, source, span, scope.symbol)
    return _not_found(form, source, scopes, "no string literal in the scope contains the text")


def _matches(form: Form, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    for scope in scopes:
        found = _bounded.search_regex(form.pattern, source.text, scope.start, scope.end)
        if found is not None:
            return _holds(form, source, code.Span(found.start(), found.end()), scope.symbol)
    if _scope_has_error(source, scopes):
        return Verdict(ERROR, "unparsable", path=form.path,
                       message="the pattern is not found, and the file has syntax errors where the check looks")
    return Verdict(CHANGED, "not-found", path=form.path, symbol=scopes[0].symbol,
                   message="the regular expression finds no match in the scope")


def _query(form: Form, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    # a C or C++ file as its tree reads it (`_cpp.parse`: the same length, every offset where it was)
    data, language = (_cpp.masked(source.encoded), "cpp") if source.is_cpp else (source.encoded, "python")
    found = _bounded.query_first(form.pattern, data,
                                 [(source.byte(scope.start), source.byte(scope.end)) for scope in scopes], language)
    if found is not None:
        index, start, end = found
        return _holds(form, source, code.Span(source.char(start), source.char(end)), scopes[index].symbol)
    if _scope_has_error(source, scopes):
        return Verdict(ERROR, "unparsable", path=form.path,
                       message="the query has no match, and the file has syntax errors where the check looks")
    return Verdict(CHANGED, "not-found", path=form.path, symbol=scopes[0].symbol,
                   message="the query has no match in the scope")


def _defines(form: Form, source: code.SourceFile, scopes=None) -> Verdict:
    scopes = source.scopes(form.pattern)
    if not scopes:
        return symbol_missing(form, source, form.pattern)
    scope = scopes[0]
    return Verdict(HOLDS, path=form.path, lines=source.lines_of(code.Span(scope.start, scope.end)),
                   symbol=form.pattern)


def _regex_problem(text: str, language: str = "python") -> tuple[str, str] | None:
    try:
        compile_regex(text)
    except InvalidPattern as exc:
        return "G307", str(exc)
    return None


def _query_problem(text: str, language: str = "python") -> tuple[str, str] | None:
    """A query is compiled with the grammar of the file it reads (`language`: python or cpp)."""
    try:
        compile_query(text, "cpp" if language == "cpp" else "python")
    except InvalidPattern as exc:
        return "G308", str(exc)
    return None


@dataclass(frozen=True)
class Matcher:
    """One matcher of docs/format.md and everything the verifier does with it."""

    name: str
    help: str  # the JSON Schema's description
    match: Callable  # (form, source, scopes) -> Verdict; scopes is None for a matcher that is not scoped
    #: the languages of the files it reads (`model.language_of`; lint G306 and `evaluate` refuse another)
    languages: tuple[str, ...] = ("python", "cpp", "text")
    scoped: bool = True  # takes `in` (`defines` names its own symbol)
    modifiers: bool = False  # takes `after` and `adjacent` (G303)
    code: bool = False  # its text is code, compared in the canonical layout (G310 on an empty fragment)
    symbol: bool = False  # its text is a dotted symbol (G309)
    #: (rule code, message) when the text is bad, given the text and the language of the file it reads
    validate: Callable[[str, str], tuple[str, str] | None] | None = None
    search: str = "scope"  # how a hint or a trace finds it in a release: fragment | symbol | text | scope
    mutate: str = "code"  # how `mutate` changes what it matched: code | absent | definition


REGISTRY: dict[str, Matcher] = {m.name: m for m in (
    Matcher("contains", "holds when this code occurs in the scope, compared by structure, not layout; $NAME is "
            "one expression, $$$ a run of items, statements or tokens", _contains, modifiers=True, code=True,
            search="fragment"),
    Matcher("absent", "holds when the scope exists and this code does not occur in it", _absent, code=True,
            mutate="absent"),
    Matcher("string", "holds when a string literal in the scope contains this text (whitespace folded)", _string,
            languages=("python", "cpp"), search="text"),
    Matcher("matches", "holds when this regular expression finds a match in the scope's source text", _matches,
            validate=_regex_problem),
    Matcher("defines", "holds when the file defines this dotted symbol", _defines, languages=("python", "cpp"),
            scoped=False,
            symbol=True, search="symbol", mutate="definition"),
    # a query is written in the grammar of the file it reads: tree-sitter-python's, or tree-sitter-cpp's
    Matcher("query", "holds when this tree-sitter query has a match in the scope", _query,
            languages=("python", "cpp"), validate=_query_problem),
)}
#: The languages of the files each modifier reads (`in` names a definition, `adjacent` compares statements).
MODIFIER_LANGUAGES = {"in": ("python", "cpp"), "adjacent": ("python", "cpp")}
#: The matchers' names, in the order docs/format.md documents them.
NAMES = tuple(REGISTRY)
