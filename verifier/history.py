"""Derived facts from the ledger: the version ranges of each status of an entry (or a check), and transitions.

Pure functions over an `EngineLedger`. Releases are taken in PEP 440 order.
A release where a verdict is `error` says nothing about the code: it neither
ends nor starts a range, and no transition is drawn across it from or to it.
The same goes for an entry that is `unverified` only because some of its
checks could not be read (it is not `decided`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .ledger import CheckRecord, EngineLedger
from .model import CHANGED, ERROR, HOLDS, MISSING, NOT_AFFECTED, UNVERIFIED, before

#: How people read each status, in sentences.
STATUS_PHRASES = {
    NOT_AFFECTED: "not affected",
    HOLDS: "holds",
    CHANGED: "changed",
    UNVERIFIED: "unverified",
}


@dataclass(frozen=True)
class Range:
    """Consecutive releases with one status."""

    status: str
    first: str
    last: str
    latest: bool  # `last` is the newest decided release in the ledger
    next: tuple[str, str] | None = None  # (version, status) of the first later release with another status

    def __str__(self) -> str:
        span = self.first if self.first == self.last else f"{self.first} – {self.last}"
        if self.latest:
            span += " (latest)"
        return span


@dataclass(frozen=True)
class Transition:
    """A check whose verdict differs between two consecutive releases where it has a decided verdict."""

    entry: str
    check: str
    before_version: str
    after_version: str
    before: CheckRecord
    after: CheckRecord

    @property
    def summary(self) -> str:
        return f"{self.check}: {describe_verdict(self.before)} in {self.before_version} → " \
               f"{describe_verdict(self.after)} in {self.after_version}"


def describe_verdict(record: CheckRecord) -> str:
    """`holds`, `holds (form 1)`, `holds (CAP=48)`, `missing (file-missing)`..."""
    text = record.verdict
    if record.verdict == HOLDS and (record.form or record.values):
        said = ([f"form {record.form}"] if record.form else []) + [f"{k}={v}" for k, v in record.values or ()]
        text += f" ({', '.join(said)})"
    elif record.reason:
        text += f" ({record.reason})"
    return text


def entry_statuses(ledger: EngineLedger, entry: str, decided: bool = False) -> list[tuple[str, str]]:
    """(version, status) for every release where the entry was verified, in order; with `decided`, only the
    releases whose status says something about the code."""
    out = []
    for version in ledger.versions():
        record = ledger.releases[version].entries.get(entry)
        if record is not None and (not decided or record.decided):
            out.append((version, record.status))
    return out


def check_statuses(ledger: EngineLedger, entry: str, check: str) -> list[tuple[str, str]]:
    """(version, verdict) for every release where the check has a verdict, in order."""
    out = []
    for version in ledger.versions():
        record = ledger.releases[version].entries.get(entry)
        if record is not None and check in record.checks:
            out.append((version, record.checks[check].verdict))
    return out


def segments(statuses: list[tuple[str, str]]) -> list[Range]:
    """Maximal runs of one status, `error` verdicts bridged (they neither end nor start a run)."""
    decided = [(v, s) for v, s in statuses if s != ERROR]
    found: list[Range] = []
    start = 0
    for i in range(1, len(decided) + 1):
        if i == len(decided) or decided[i][1] != decided[start][1]:
            following = decided[i] if i < len(decided) else None
            found.append(Range(decided[start][1], decided[start][0], decided[i - 1][0], following is None, following))
            start = i
    return found


def ranges(statuses: list[tuple[str, str]], status: str = HOLDS) -> list[Range]:
    """The runs of one status (by default: where it holds), each with the release that ended it."""
    return [r for r in segments(statuses) if r.status == status]


def transitions(ledger: EngineLedger, entry: str) -> list[Transition]:
    """Every check whose verdict differs between consecutive releases where it has one (`error` skipped), or that
    holds in both with another value (`CAP` 32 -> 48: the prose reads differently)."""
    found: list[Transition] = []
    previous: dict[str, tuple[str, CheckRecord]] = {}  # check -> (version, record) of its last decided verdict
    for version in ledger.versions():
        record = ledger.releases[version].entries.get(entry)
        if record is None:
            continue
        for check, verdict in sorted(record.checks.items()):
            if not verdict.decided:
                continue
            before = previous.get(check)
            if before is not None and (before[1].verdict != verdict.verdict or (
                    verdict.verdict == HOLDS and before[1].values and verdict.values
                    and before[1].values != verdict.values)):
                found.append(Transition(entry, check, before[0], version, before[1], verdict))
            previous[check] = (version, verdict)
    return found


@dataclass(frozen=True)
class StatusChange:
    """An entry whose status differs from the release before: what a scheduled run reports."""

    engine: str
    entry: str
    before_version: str | None  # None: the entry had no decided status before
    after_version: str
    before: str | None
    after: str
    checks: tuple[Transition, ...]  # the checks that flipped between the two releases

    @property
    def regression(self) -> bool:
        """A claim was contradicted: the gotcha may be gone or different."""
        return self.after == CHANGED

    @property
    def moved(self) -> bool:
        """A check lost its place (`missing`) and none was contradicted: an author has to point it at the
        code's new place (an `earlier` form, or a new path). Says nothing about the behaviour."""
        return self.after == UNVERIFIED and any(t.after.verdict == MISSING for t in self.checks)


def status_changes(ledger: EngineLedger, versions) -> list[StatusChange]:
    """Entries whose status at one of `versions` differs from their previous decided status."""
    wanted = set(versions)
    found = []
    entries = sorted({e for r in ledger.releases.values() for e in r.entries})
    for entry in entries:
        flips = transitions(ledger, entry)
        previous: tuple[str, str] | None = None
        for version, status in entry_statuses(ledger, entry, decided=True):
            if version in wanted and previous is not None and previous[1] != status:
                checks = tuple(t for t in flips if t.after_version == version)
                found.append(StatusChange(ledger.engine, entry, previous[0], version, previous[1], status, checks))
            previous = (version, status)
    return found


def new_status_changes(before: EngineLedger, after: EngineLedger, versions) -> list[StatusChange]:
    """Status changes at `versions` in `after` that `before` did not already show (what a run taught)."""
    def key(c: StatusChange):
        return (c.entry, c.before_version, c.after_version, c.before, c.after)

    known = {key(c) for c in status_changes(before, versions)}
    return [c for c in status_changes(after, versions) if key(c) not in known]


@dataclass(frozen=True)
class BoundsProblem:
    """A release where the code contradicts an entry's `introduced` or `fixed` (docs/format.md, "A claim across
    releases"): something for the entry's author to look at."""

    engine: str
    entry: str
    version: str
    kind: str  # "older": holds before `introduced`; "reverted": holds at or after `fixed`; "contradicted"
    bound: str  # the `introduced` or `fixed` release it is about
    checks: tuple[str, ...]  # the checks that hold ("older", "reverted") or are `changed` ("contradicted")

    def __str__(self) -> str:
        names = ", ".join(self.checks)
        if self.kind == "older":
            return (f"{self.entry}: every {self.engine} check holds in {self.version} ({names}), before "
                    f"`introduced: {self.bound}`: the gotcha looks older than stated")
        if self.kind == "reverted":
            return (f"{self.entry}: every {self.engine} check holds in {self.version} ({names}), at or after "
                    f"`fixed: {self.bound}`: the fix looks reverted, or `fixed` is wrong")
        return (f"{self.entry}: {names} {'is' if len(self.checks) == 1 else 'are'} changed in {self.engine} "
                f"{self.version}, where the gotcha is stated to bite (`introduced`/`fixed`)")


def bounds_problems(ledger: EngineLedger, entry: str, introduced: str | None, fixed: str | None,
                    versions=None) -> list[BoundsProblem]:
    """The releases (of `versions`, by default all) where the code contradicts `introduced`/`fixed`."""
    if introduced is None and fixed is None:
        return []
    wanted = set(versions) if versions is not None else None
    found = []
    for version in ledger.versions():
        record = ledger.releases[version].entries.get(entry)
        if record is None or (wanted is not None and version not in wanted):
            continue
        holding = tuple(sorted(c for c, v in record.checks.items() if v.verdict == HOLDS))
        outside = None
        if introduced is not None and before(version, introduced):
            outside = ("older", introduced)
        elif fixed is not None and not before(version, fixed):
            outside = ("reverted", fixed)
        if outside is not None:
            if holding and len(holding) == len(record.checks):
                found.append(BoundsProblem(ledger.engine, entry, version, outside[0], outside[1], holding))
            continue
        contradicted = tuple(sorted(c for c, v in record.checks.items() if v.verdict == CHANGED))
        if contradicted:
            found.append(BoundsProblem(ledger.engine, entry, version, "contradicted", introduced or fixed or "",
                                       contradicted))
    return found


def status_at(ledger: EngineLedger, entry: str, version: str) -> str | None:
    record = ledger.entry(version, entry)
    return record.status if record else None


def between(ledger: EngineLedger, older: str, newer: str) -> list[StatusChange]:
    """Entries whose status at `newer` differs from their status at `older` (any two releases, not only
    consecutive ones: an upgrade), with the checks whose verdict differs between the two."""
    found = []
    for entry in sorted({e for v in (older, newer) if v in ledger.releases for e in ledger.releases[v].entries}):
        a, b = ledger.entry(older, entry), ledger.entry(newer, entry)
        status_a, status_b = (a.status if a else None), (b.status if b else None)
        if status_a == status_b or status_b is None or b is None:
            continue
        checks = []
        for check in sorted(set(a.checks if a else ()) | set(b.checks)):
            before = a.checks.get(check) if a else None
            after = b.checks.get(check)
            if before is not None and after is not None \
                    and (before.verdict, before.form) != (after.verdict, after.form):
                checks.append(Transition(entry, check, older, newer, before, after))
        found.append(StatusChange(ledger.engine, entry, older if a else None, newer, status_a, status_b, tuple(checks)))
    return found


def describe(engine_name: str, statuses: list[tuple[str, str]]) -> str:
    """One line for people: each run of releases with one status, oldest first."""
    if not statuses:
        return f"not verified against {engine_name}"
    return "; ".join(f"{STATUS_PHRASES.get(r.status, r.status)} in {engine_name} {r}" for r in segments(statuses))


__all__ = ["Range", "Transition", "StatusChange", "BoundsProblem", "between", "bounds_problems", "status_changes",
           "new_status_changes", "entry_statuses", "check_statuses", "segments", "ranges", "transitions", "status_at",
           "describe", "describe_verdict", "STATUS_PHRASES"]
