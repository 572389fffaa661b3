"""Checks × snapshots → verdicts.

A check is evaluated form by form (its own, and the items of `earlier` that
apply at the release); `model.check_verdict` makes the check's verdict of
theirs. Each matcher of FORMAT.md is one small function in `MATCHERS`;
`evaluate` does what is common to all of them (reading the file, resolving the
scope), reports a place it cannot find as `missing`, and turns every failure of
the machinery into an `error` verdict, never `changed`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

from . import code
from .code import _bounded, _python
from .model import CHANGED, ERROR, HOLDS, MISSING, Check, Form, Verdict, check_verdict
from .sources import Snapshot, SourceUnavailable


class _Invalid(Exception):
    """The check cannot be evaluated as written."""


class FileCache:
    """Parsed files by path and content, so the checks on one file share one parse."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._files: OrderedDict[tuple[str, str], code.SourceFile] = OrderedDict()

    def peek(self, path: str, sha256: str) -> code.SourceFile | None:
        """The parsed file, if this content of `path` is here already (nothing is read or parsed)."""
        found = self._files.get((path, sha256))
        if found is not None:
            self._files.move_to_end((path, sha256))
        return found

    def get(self, path: str, data: bytes, sha256: str | None = None) -> code.SourceFile:
        """The parsed file; `sha256` (hex) spares hashing the data again when the caller has it."""
        sha256 = sha256 or hashlib.sha256(data).hexdigest()
        key = (path, sha256)
        found = self._files.get(key)
        if found is None:
            found = self._files[key] = code.SourceFile(path, data, sha256)
            if len(self._files) > self.size:
                self._files.popitem(last=False)
        else:
            self._files.move_to_end(key)
        return found


_DEFAULT_CACHE = FileCache()


class Unknown(NamedTuple):
    """A check whose verdict on this content is not known: it has to be evaluated (`evaluate_source`)."""

    path: str
    data: bytes
    sha256: str


def evaluate_check(check: Check, snapshot: Snapshot, version: str | None = None, cache: FileCache | None = None,
                   verdicts=None) -> tuple[int, Verdict] | None:
    """(form index, verdict) of a check at one release: its forms that apply at `version` (by default the
    snapshot's release) evaluated, and combined as FORMAT.md says. None when no form applies there."""
    version = version if version is not None else snapshot.release.version
    return check_verdict((form.index, evaluate(form, snapshot, cache, verdicts)) for form in check.forms_at(version))


def evaluate(form: Form | Check, snapshot: Snapshot, cache: FileCache | None = None, verdicts=None) -> Verdict:
    """The verdict of one form (or of a check's own form) against one snapshot.

    `verdicts` (a VerdictCache) answers for file contents this form has seen before.
    A snapshot that can name a file's content without reading it (`digest(path)`:
    "sha256:<hex>", or an identity of its own such as a git blob id) is not read
    at all when the verdict is known.
    """
    if isinstance(form, Check):
        form = form.own
    files = cache or _DEFAULT_CACHE
    found = lookup(form, snapshot, files, verdicts)
    if isinstance(found, Unknown):
        found = evaluate_source(form, files.get(found.path, found.data, found.sha256))
        if verdicts is not None:
            verdicts.put(form, found)
    return found


def lookup(form: Form, snapshot: Snapshot, files: FileCache, verdicts=None) -> Verdict | Unknown:
    """`evaluate` up to the matching: the verdict when it is known or cheap (the file is parsed already),
    else the content to evaluate the form on. A verdict found by matching here is in `verdicts` already."""
    identity = None
    digest = getattr(snapshot, "digest", None)
    if verdicts is not None and digest is not None:
        try:
            identity = digest(form.path)
        except SourceUnavailable as exc:
            return Verdict(ERROR, "unavailable", path=form.path, message=str(exc))
        if identity is not None:
            known_sha = identity[7:] if identity.startswith("sha256:") else verdicts.content_of(identity)
            known = verdicts.get(form, known_sha) if known_sha else None
            if known is not None:
                return known
            parsed = files.peek(form.path, known_sha) if known_sha else None
            if parsed is not None:  # another form on this file read it already
                verdict = evaluate_source(form, parsed)
                verdicts.put(form, verdict)
                return verdict
    try:
        data = snapshot.read(form.path)
    except SourceUnavailable as exc:
        return Verdict(ERROR, "unavailable", path=form.path, message=str(exc))
    if data is None:
        return Verdict(MISSING, "file-missing", path=form.path, message=f"{form.path} is not in this release")
    sha256 = hashlib.sha256(data).hexdigest()
    if verdicts is not None:
        if identity is not None and not identity.startswith("sha256:"):
            verdicts.learn(identity, sha256)
        known = verdicts.get(form, sha256)
        if known is not None:
            return known
    return Unknown(form.path, data, sha256)


def evaluate_source(form: Form, source: code.SourceFile) -> Verdict:
    """The verdict of one form against the content of the file it names."""
    try:
        verdict = _evaluate(form, source)
    except _Invalid as exc:
        verdict = Verdict(ERROR, "invalid", path=form.path, message=str(exc))
    except _bounded.InvalidPattern as exc:
        verdict = Verdict(ERROR, "invalid", path=form.path, message=str(exc))
    except code.BudgetExceeded:
        verdict = Verdict(ERROR, "invalid", path=form.path,
                          message="the fragment is too ambiguous to match in bounded time; use fewer `$$$`")
    except RecursionError:
        verdict = Verdict(ERROR, "unparsable", path=form.path, message="the file nests too deeply to analyse")
    return _with_sha(verdict, source.sha256)


def _with_sha(verdict: Verdict, sha: str) -> Verdict:
    return replace(verdict, file_sha=sha)


def _evaluate(form: Form, source: code.SourceFile) -> Verdict:
    needs_python = form.scope is not None or form.matcher in ("string", "defines", "query") or form.adjacent
    if needs_python and not source.is_python:
        raise _Invalid(f"`in`, `string`, `defines`, `query` and `adjacent` need a Python file; {form.path} is not one")
    if form.matcher == "defines":
        return _defines(form, source)
    if form.scope is None:
        scopes = [source.whole()]
    else:
        scopes = source.scopes(form.scope)
        if not scopes:
            return _symbol_missing(form, source, form.scope)
    return MATCHERS[form.matcher](form, source, scopes)


def _holds(form: Form, source: code.SourceFile, span: code.Span, symbol: str | None) -> Verdict:
    inner = source.symbol_at(span.start) if source.is_python else None
    return Verdict(HOLDS, path=form.path, lines=source.lines_of(span), symbol=inner or symbol)


def _scope_has_error(source: code.SourceFile, scopes: list[code.Scope]) -> bool:
    return source.is_python and any(source.has_error(s) for s in scopes)


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


def _symbol_missing(form: Form, source: code.SourceFile, symbol: str) -> Verdict:
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

def _contains(form: Form, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    fragment = code.fragment(form.pattern)
    if fragment.is_empty:
        raise _Invalid("the fragment is empty")
    matches = [(scope, span) for scope in scopes for span in source.find(fragment, scope)]
    if not matches:
        return _not_found(form, source, scopes, "the fragment does not occur in the scope")
    if form.after is None:
        scope, span = matches[0]
        return _holds(form, source, span, scope.symbol)
    anchor = code.fragment(form.after)
    if anchor.is_empty:
        raise _Invalid("the `after` fragment is empty")
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
    root = source.root
    for a, m, scope in ordered:
        first = _python.statement_at(root, source.byte(a.end - 1))
        second = _python.statement_at(root, source.byte(m.start))
        if first is not None and second is not None and _python.consecutive(first, second):
            return _holds(form, source, m, scope.symbol)
    _, m, scope = ordered[0]
    return Verdict(CHANGED, "not-adjacent", path=form.path, symbol=scope.symbol,
                   message="the fragment follows the `after` fragment, but not in the next statement",
                   hint=f"nearest occurrence after it: {form.path}:{source.line_of(m.start)}")


def _absent(form: Form, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    fragment = code.fragment(form.pattern)
    if fragment.is_empty:
        raise _Invalid("the fragment is empty")
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
        raise _Invalid("the string to look for is empty")
    for scope in scopes:
        for node, value in _python.string_literals(source.root, source.byte(scope.start), source.byte(scope.end)):
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
    for scope in scopes:
        found = _bounded.query_matches(form.pattern, source.root, source.byte(scope.start), source.byte(scope.end))
        if found:
            start, end = found[0]
            return _holds(form, source, code.Span(source.char(start), source.char(end)), scope.symbol)
    if _scope_has_error(source, scopes):
        return Verdict(ERROR, "unparsable", path=form.path,
                       message="the query has no match, and the file has syntax errors where the check looks")
    return Verdict(CHANGED, "not-found", path=form.path, symbol=scopes[0].symbol,
                   message="the query has no match in the scope")


def _defines(form: Form, source: code.SourceFile) -> Verdict:
    scopes = source.scopes(form.pattern)
    if not scopes:
        return _symbol_missing(form, source, form.pattern)
    scope = scopes[0]
    return Verdict(HOLDS, path=form.path, lines=source.lines_of(code.Span(scope.start, scope.end)),
                   symbol=form.pattern)


MATCHERS: dict[str, Callable[[Form, code.SourceFile, list[code.Scope]], Verdict]] = {
    "contains": _contains,
    "absent": _absent,
    "string": _string,
    "matches": _matches,
    "query": _query,
}
