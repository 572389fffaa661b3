"""The matching core: a check's form and a file's content → a verdict.

`evaluate_source` reads nothing and remembers nothing: the same form on the same
content gives the same verdict wherever it runs (here or in a worker process,
`helper`). Reading files and the verdict cache are `reading`'s. Each matcher of
docs/format.md is one function in `matchers.REGISTRY`; `evaluate_source` does what is
common to all of them (resolving the scope), reports a place it cannot find as
`missing`, and turns every failure of the machinery into an `error` verdict,
never `changed`. A check's verdict is its forms' (its own, and the items of
`earlier` that apply at the release), combined by `model.check_verdict`.

Each form's matching is bounded on its own (`code._bounded`, the fragment
matcher's steps); a `Budget` bounds their sum, for each entry and for a run, so
that an entry whose every check runs to its bound cannot make a run last for
hours: once spent, the remaining checks are `error unavailable` (not kept in the
verdict cache: the next run tries them again).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace

from . import code
from .code import _bounded
from .matchers import MODIFIER_LANGUAGES, REGISTRY, Invalid, symbol_missing
from .model import ERROR, Form, Verdict, language_of, languages_words

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
    except RecursionError as exc:  # a file nested past the interpreter's stack, or past code._limits' bounds
        verdict = Verdict(ERROR, "unparsable", path=form.path, message=code.unparsable_message(exc))
    if budget is not None:
        budget.charge(form, time.perf_counter() - started)
    return _with_sha(verdict, source.sha256)


def _with_sha(verdict: Verdict, sha: str) -> Verdict:
    return replace(verdict, file_sha=sha)


def _evaluate(form: Form, source: code.SourceFile) -> Verdict:
    matcher = REGISTRY.get(form.matcher)
    if matcher is None:
        raise Invalid(f"no matcher {form.matcher!r}")
    language = language_of(form.path)
    if form.scope is not None and language not in MODIFIER_LANGUAGES["in"]:
        raise Invalid(f"`in` needs a Python, C or C++ file; {form.path} is none of them")
    if language not in matcher.languages:
        raise Invalid(f"{form.matcher!r} needs {languages_words(matcher.languages)}; {form.path} is not one")
    if form.adjacent and language not in MODIFIER_LANGUAGES["adjacent"]:
        raise Invalid(f"`adjacent` needs {languages_words(MODIFIER_LANGUAGES['adjacent'])}; {form.path} is not one")
    if not matcher.scoped:
        return matcher.match(form, source, None)
    if form.scope is None:
        scopes = [source.whole()]
    else:
        scopes = source.scopes(form.scope)
        if not scopes:
            return symbol_missing(form, source, form.scope)
    return matcher.match(form, source, scopes)
