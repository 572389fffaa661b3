"""Checks × snapshots → verdicts.

A check is evaluated form by form (its own, and the items of `earlier` that
apply at the release); `model.check_verdict` makes the check's verdict of
theirs. Each matcher of FORMAT.md is one function in `matchers.REGISTRY`;
`evaluate` does what is common to all of them (reading the file, resolving the
scope), reports a place it cannot find as `missing`, and turns every failure of
the machinery into an `error` verdict, never `changed`.

Each form's matching is bounded on its own (`code._bounded`, the fragment
matcher's steps); a `Budget` bounds their sum, for each entry and for a run, so
that an entry whose every check runs to its bound cannot make a run last for
hours: once spent, the remaining checks are `error unavailable` (not kept in the
verdict cache: the next run tries them again).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import NamedTuple

from . import code
from .code import _bounded
from .matchers import REGISTRY, Invalid, symbol_missing
from .model import ERROR, MISSING, Check, Form, Verdict, check_verdict
from .sources import Snapshot, SourceUnavailable

#: Seconds of matching one entry may spend in a run, over all its checks and releases (an entry of the KB
#: takes a few seconds over every release with no verdict cached).
ENTRY_SECONDS = 120.0
#: Seconds of matching a run may spend in all (the whole KB takes about half a minute with no verdict cached);
#: the run's helper process has as much again, at the same time.
RUN_SECONDS = 1800.0
#: How a refusal for time begins (an `error unavailable` message): such a verdict is tried again by the next run.
BUDGET_SPENT = "time budget"


class Budget:
    """Seconds of matching each entry, and the whole run, may spend; `evaluate_source` charges it.

    Made from the run's (entry, check) pairs, to know the entry of each form (the form objects themselves:
    two entries may hold equal forms). While `active()`, every evaluation in this process is charged to it,
    and refused once the entry's or the run's is spent. Wall-clock seconds: a query's process counts too.
    """

    def __init__(self, pairs: Iterable = (), entry_seconds: float | None = None,
                 run_seconds: float | None = None) -> None:
        self.entry_seconds = ENTRY_SECONDS if entry_seconds is None else entry_seconds
        self.run_seconds = RUN_SECONDS if run_seconds is None else run_seconds
        self.run_spent = 0.0
        self.spent: dict[str, float] = {}  # entry id -> seconds
        self._entry_of: dict[int, str] = {}  # id() of a form -> its entry's id
        self._held: list[Form] = []  # those forms, kept alive so that their ids stay theirs
        self._shared: list[str | None] = []  # in a share: the entry of each form handed over
        for entry, check in pairs:
            self.assign(check.forms, [entry.id] * len(check.forms))

    def assign(self, forms: Iterable[Form], entries: Iterable[str | None]) -> None:
        """Charge each form to its entry."""
        for form, entry in zip(forms, entries):
            if entry is not None:
                self._entry_of[id(form)] = entry
                self._held.append(form)

    def refusal(self, form: Form) -> str | None:
        """Why `form` is not evaluated any more in this run, or None."""
        if self.run_spent >= self.run_seconds:
            return f"{BUDGET_SPENT} of the run spent ({self.run_seconds:g} s of matching); not evaluated in this run"
        entry = self._entry_of.get(id(form))
        if entry is not None and self.spent.get(entry, 0.0) >= self.entry_seconds:
            return (f"{BUDGET_SPENT} of the entry spent ({self.entry_seconds:g} s of matching for {entry}); "
                    "not evaluated in this run")
        return None

    def charge(self, form: Form, seconds: float) -> None:
        self.run_spent += seconds
        entry = self._entry_of.get(id(form))
        if entry is not None:
            self.spent[entry] = self.spent.get(entry, 0.0) + seconds

    def share(self, forms: list[Form]) -> Budget:
        """What is left of this budget for `forms`, for another process to spend on its copies of them
        (`adopt`): the helper's share of a file."""
        shared = Budget((), self.entry_seconds, self.run_seconds)
        shared.run_spent = self.run_spent
        shared._shared = [self._entry_of.get(id(form)) for form in forms]
        shared.spent = {entry: self.spent.get(entry, 0.0) for entry in shared._shared if entry is not None}
        return shared

    def adopt(self, forms: list[Form]) -> Budget:
        """A share, charging `forms` (the copies of the forms it was made for, in order) to their entries."""
        self.assign(forms, self._shared)
        return self

    @contextlib.contextmanager
    def active(self) -> Iterator[Budget]:
        """Charge every evaluation of this process to this budget, for the time of a `with`."""
        global _ACTIVE
        before, _ACTIVE = _ACTIVE, self
        try:
            yield self
        finally:
            _ACTIVE = before


_ACTIVE: Budget | None = None


def active_budget() -> Budget | None:
    """The budget evaluations in this process are charged to (`Budget.active`), if any."""
    return _ACTIVE


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
    if verdicts is not None:
        try:
            identity = snapshot.digest(form.path)
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


def evaluate_source(form: Form, source: code.SourceFile, budget: Budget | None = None) -> Verdict:
    """The verdict of one form against the content of the file it names, charged to `budget` (by default
    the active one, if any): `error unavailable`, without matching, once that is spent.

    `error invalid` is the form's own fault (its pattern cannot be matched, or not within its bounds), the
    same on the same content every time; the verdict cache keeps it. Other errors are not kept.
    """
    budget = budget if budget is not None else _ACTIVE
    if budget is not None:
        refused = budget.refusal(form)
        if refused is not None:
            return _with_sha(Verdict(ERROR, "unavailable", path=form.path, message=refused), source.sha256)
        started = time.perf_counter()
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
    if budget is not None:
        budget.charge(form, time.perf_counter() - started)
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
