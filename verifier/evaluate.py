"""Checks × snapshots → verdicts.

A check is evaluated form by form (its own, and the items of `earlier` that
apply at the release); `model.check_verdict` makes the check's verdict of
theirs. Each matcher of FORMAT.md is one function in `matchers.REGISTRY`;
`evaluate` does what is common to all of them (reading the file, resolving the
scope), reports a place it cannot find as `missing`, and turns every failure of
the machinery into an `error` verdict, never `changed`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import replace
from typing import NamedTuple

from . import code
from .code import _bounded
from .matchers import REGISTRY, Invalid, symbol_missing
from .model import ERROR, MISSING, Check, Form, Verdict, check_verdict
from .sources import Snapshot, SourceUnavailable


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
    except Invalid as exc:
        verdict = Verdict(ERROR, "invalid", path=form.path, message=str(exc))
    except _bounded.InvalidPattern as exc:
        verdict = Verdict(ERROR, "invalid", path=form.path, message=str(exc))
    except code.BudgetExceeded:
        verdict = Verdict(ERROR, "invalid", path=form.path,
                          message="the fragment is too ambiguous to match in bounded time; use fewer `$$$`")
    except code.PatternTooDeep as exc:
        verdict = Verdict(ERROR, "invalid", path=form.path, message=f"the pattern is too deeply nested: {exc}")
    except _bounded.Unavailable as exc:
        verdict = Verdict(ERROR, "unavailable", path=form.path, message=str(exc))
    except RecursionError:
        verdict = Verdict(ERROR, "unparsable", path=form.path, message="the file nests too deeply to analyse")
    return _with_sha(verdict, source.sha256)


def _with_sha(verdict: Verdict, sha: str) -> Verdict:
    return replace(verdict, file_sha=sha)


def _evaluate(form: Form, source: code.SourceFile) -> Verdict:
    matcher = REGISTRY.get(form.matcher)
    if matcher is None:
        raise Invalid(f"no matcher {form.matcher!r}")
    if (form.scope is not None or matcher.python_only or form.adjacent) and not source.is_python:
        raise Invalid(f"`in`, `adjacent` and {form.matcher!r} need a Python file; {form.path} is not one"
                      if matcher.python_only else
                      f"`in` and `adjacent` need a Python file; {form.path} is not one")
    if not matcher.scoped:
        return matcher.match(form, source, None)
    if form.scope is None:
        scopes = [source.whole()]
    else:
        scopes = source.scopes(form.scope)
        if not scopes:
            return symbol_missing(form, source, form.scope)
    return matcher.match(form, source, scopes)
