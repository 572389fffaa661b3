"""Checks × snapshots → verdicts.

Each matcher of FORMAT.md is one small function in `MATCHERS`; `evaluate` does
what is common to all of them (reading the file, resolving the scope) and turns
every failure of the machinery into an `error` verdict, never `changed`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

from . import code
from .code import _bounded, _python
from .model import CHANGED, ERROR, HOLDS, Check, Verdict
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


def evaluate(check: Check, snapshot: Snapshot, cache: FileCache | None = None, verdicts=None) -> Verdict:
    """The verdict of one check against one snapshot.

    `verdicts` (a VerdictCache) answers for file contents this check has seen before.
    A snapshot that can name a file's content without reading it (`digest(path)`:
    "sha256:<hex>", or an identity of its own such as a git blob id) is not read
    at all when the verdict is known.
    """
    files = cache or _DEFAULT_CACHE
    found = lookup(check, snapshot, files, verdicts)
    if isinstance(found, Unknown):
        found = evaluate_source(check, files.get(found.path, found.data, found.sha256))
        if verdicts is not None:
            verdicts.put(check, found)
    return found


def lookup(check: Check, snapshot: Snapshot, files: FileCache, verdicts=None) -> Verdict | Unknown:
    """`evaluate` up to the matching: the verdict when it is known or cheap (the file is parsed already),
    else the content to evaluate the check on. A verdict found by matching here is in `verdicts` already."""
    identity = None
    digest = getattr(snapshot, "digest", None)
    if verdicts is not None and digest is not None:
        try:
            identity = digest(check.path)
        except SourceUnavailable as exc:
            return Verdict(ERROR, "unavailable", path=check.path, message=str(exc))
        if identity is not None:
            known_sha = identity[7:] if identity.startswith("sha256:") else verdicts.content_of(identity)
            known = verdicts.get(check, known_sha) if known_sha else None
            if known is not None:
                return known
            parsed = files.peek(check.path, known_sha) if known_sha else None
            if parsed is not None:  # another check on this file read it already
                verdict = evaluate_source(check, parsed)
                verdicts.put(check, verdict)
                return verdict
    try:
        data = snapshot.read(check.path)
    except SourceUnavailable as exc:
        return Verdict(ERROR, "unavailable", path=check.path, message=str(exc))
    if data is None:
        return Verdict(CHANGED, "file-missing", path=check.path, message=f"{check.path} is not in this release")
    sha256 = hashlib.sha256(data).hexdigest()
    if verdicts is not None:
        if identity is not None and not identity.startswith("sha256:"):
            verdicts.learn(identity, sha256)
        known = verdicts.get(check, sha256)
        if known is not None:
            return known
    return Unknown(check.path, data, sha256)


def evaluate_source(check: Check, source: code.SourceFile) -> Verdict:
    """The verdict of one check against the content of the file it names."""
    try:
        verdict = _evaluate(check, source)
    except _Invalid as exc:
        verdict = Verdict(ERROR, "invalid", path=check.path, message=str(exc))
    except _bounded.InvalidPattern as exc:
        verdict = Verdict(ERROR, "invalid", path=check.path, message=str(exc))
    except code.BudgetExceeded:
        verdict = Verdict(ERROR, "invalid", path=check.path,
                          message="the fragment is too ambiguous to match in bounded time; use fewer `$$$`")
    except RecursionError:
        verdict = Verdict(ERROR, "unparsable", path=check.path, message="the file nests too deeply to analyse")
    return _with_sha(verdict, source.sha256)


def _with_sha(verdict: Verdict, sha: str) -> Verdict:
    return replace(verdict, file_sha=sha)


def _evaluate(check: Check, source: code.SourceFile) -> Verdict:
    needs_python = check.scope is not None or check.matcher in ("string", "defines", "query") or check.adjacent
    if needs_python and not source.is_python:
        raise _Invalid(f"`in`, `string`, `defines`, `query` and `adjacent` need a Python file; {check.path} is not one")
    if check.matcher == "defines":
        return _defines(check, source)
    if check.scope is None:
        scopes = [source.whole()]
    else:
        scopes = source.scopes(check.scope)
        if not scopes:
            return _symbol_missing(check, source, check.scope)
    return MATCHERS[check.matcher](check, source, scopes)


def _holds(check: Check, source: code.SourceFile, span: code.Span, symbol: str | None) -> Verdict:
    inner = source.symbol_at(span.start) if source.is_python else None
    return Verdict(HOLDS, path=check.path, lines=source.lines_of(span), symbol=inner or symbol)


def _scope_has_error(source: code.SourceFile, scopes: list[code.Scope]) -> bool:
    return source.is_python and any(source.has_error(s) for s in scopes)


def _not_found(check: Check, source: code.SourceFile, scopes: list[code.Scope], what: str,
               reason: str = "not-found", code_text: str | None = None) -> Verdict:
    """`changed` (or `unparsable` when the scope holds syntax errors), with the closest line as hint."""
    if _scope_has_error(source, scopes):
        return Verdict(ERROR, "unparsable", path=check.path,
                       message=f"{what}, and the file has syntax errors where the check looks")
    hint = None
    closest = None
    for scope in scopes:
        found = source.closest_line(code_text if code_text is not None else check.pattern, scope)
        if found and (closest is None or found[0] < closest[0]):
            closest = found
    if closest:
        hint = f"closest line in the scope: {check.path}:{closest[0]}: {closest[1]}"
    symbol = scopes[0].symbol if scopes else None
    return Verdict(CHANGED, reason, path=check.path, symbol=symbol, hint=hint, message=what)


def _symbol_missing(check: Check, source: code.SourceFile, symbol: str) -> Verdict:
    if source.has_error():
        return Verdict(ERROR, "unparsable", path=check.path,
                       message=f"{symbol} is not defined, and the file has syntax errors")
    last = symbol.rsplit(".", 1)[-1]
    elsewhere = [(name, scope) for name, scope in source.definitions()
                 if name.rsplit(".", 1)[-1] == last and name != symbol]
    hint = None
    if elsewhere:
        hint = "; ".join(f"{name} is defined at {check.path}:{source.line_of(scope.start)}"
                         for name, scope in elsewhere[:3])
    return Verdict(CHANGED, "symbol-missing", path=check.path, symbol=symbol, hint=hint,
                   message=f"{symbol} is not defined in {check.path}")


# --- matchers -----------------------------------------------------------------

def _contains(check: Check, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    fragment = code.fragment(check.pattern)
    if fragment.is_empty:
        raise _Invalid("the fragment is empty")
    matches = [(scope, span) for scope in scopes for span in source.find(fragment, scope)]
    if not matches:
        return _not_found(check, source, scopes, "the fragment does not occur in the scope")
    if check.after is None:
        scope, span = matches[0]
        return _holds(check, source, span, scope.symbol)
    anchor = code.fragment(check.after)
    if anchor.is_empty:
        raise _Invalid("the `after` fragment is empty")
    anchors = [(scope, span) for scope in scopes for span in source.find(anchor, scope)]
    if not anchors:
        return _not_found(check, source, scopes, "the `after` fragment does not occur in the scope",
                          code_text=check.after)
    ordered = [(a, m, scope) for scope_a, a in anchors for scope, m in matches
               if scope == scope_a and m.start >= a.end]
    if not ordered:
        verdict = _not_found(check, source, scopes, "the fragment occurs only before the `after` fragment",
                             reason="out-of-order")
        return verdict
    if not check.adjacent:
        _, match, scope = ordered[0]
        return _holds(check, source, match, scope.symbol)
    root = source.root
    for a, m, scope in ordered:
        first = _python.statement_at(root, source.byte(a.end - 1))
        second = _python.statement_at(root, source.byte(m.start))
        if first is not None and second is not None and _python.consecutive(first, second):
            return _holds(check, source, m, scope.symbol)
    _, m, scope = ordered[0]
    return Verdict(CHANGED, "not-adjacent", path=check.path, symbol=scope.symbol,
                   message="the fragment follows the `after` fragment, but not in the next statement",
                   hint=f"nearest occurrence after it: {check.path}:{source.line_of(m.start)}")


def _absent(check: Check, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    fragment = code.fragment(check.pattern)
    if fragment.is_empty:
        raise _Invalid("the fragment is empty")
    for scope in scopes:
        spans = source.find(fragment, scope)
        if spans:
            return Verdict(CHANGED, "present", path=check.path, lines=source.lines_of(spans[0]),
                           symbol=scope.symbol or source.symbol_at(spans[0].start),
                           message="the fragment occurs in the scope")
    scope = scopes[0]
    return Verdict(HOLDS, path=check.path, lines=source.lines_of(code.Span(scope.start, scope.end)),
                   symbol=scope.symbol)


def _string(check: Check, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    wanted = code.fold_whitespace(check.pattern)
    if not wanted:
        raise _Invalid("the string to look for is empty")
    for scope in scopes:
        for node, value in _python.string_literals(source.root, source.byte(scope.start), source.byte(scope.end)):
            if wanted in code.fold_whitespace(value):
                span = code.Span(source.char(node.start_byte), source.char(node.end_byte))
                return _holds(check, source, span, scope.symbol)
    return _not_found(check, source, scopes, "no string literal in the scope contains the text")


def _matches(check: Check, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    for scope in scopes:
        found = _bounded.search_regex(check.pattern, source.text, scope.start, scope.end)
        if found is not None:
            return _holds(check, source, code.Span(found.start(), found.end()), scope.symbol)
    if _scope_has_error(source, scopes):
        return Verdict(ERROR, "unparsable", path=check.path,
                       message="the pattern is not found, and the file has syntax errors where the check looks")
    return Verdict(CHANGED, "not-found", path=check.path, symbol=scopes[0].symbol,
                   message="the regular expression finds no match in the scope")


def _query(check: Check, source: code.SourceFile, scopes: list[code.Scope]) -> Verdict:
    for scope in scopes:
        found = _bounded.query_matches(check.pattern, source.root, source.byte(scope.start), source.byte(scope.end))
        if found:
            start, end = found[0]
            return _holds(check, source, code.Span(source.char(start), source.char(end)), scope.symbol)
    if _scope_has_error(source, scopes):
        return Verdict(ERROR, "unparsable", path=check.path,
                       message="the query has no match, and the file has syntax errors where the check looks")
    return Verdict(CHANGED, "not-found", path=check.path, symbol=scopes[0].symbol,
                   message="the query has no match in the scope")


def _defines(check: Check, source: code.SourceFile) -> Verdict:
    scopes = source.scopes(check.pattern)
    if not scopes:
        return _symbol_missing(check, source, check.pattern)
    scope = scopes[0]
    return Verdict(HOLDS, path=check.path, lines=source.lines_of(code.Span(scope.start, scope.end)),
                   symbol=check.pattern)


MATCHERS: dict[str, Callable[[Check, code.SourceFile, list[code.Scope]], Verdict]] = {
    "contains": _contains,
    "absent": _absent,
    "string": _string,
    "matches": _matches,
    "query": _query,
}
