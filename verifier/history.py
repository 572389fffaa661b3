"""Derived facts from the ledger: the version ranges where an entry (or a check) holds, and transitions.

Pure functions over an `EngineLedger`. Releases are taken in PEP 440 order.
A release whose verdict is `error` says nothing about the code: it neither
ends nor starts a range, and no transition is drawn across it from or to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ledger import EngineLedger
from .model import CHANGED, ERROR, HOLDS


@dataclass(frozen=True)
class Range:
    """Consecutive releases in which something holds."""

    first: str
    last: str
    fixed: str | None  # the first later release where it no longer holds (None: holds through `last`)
    latest: bool  # `last` is the newest release in the ledger

    def __str__(self) -> str:
        span = self.first if self.first == self.last else f"{self.first} – {self.last}"
        if self.latest:
            span += " (latest)"
        return span


@dataclass(frozen=True)
class Transition:
    """A check whose status differs between two consecutive verified releases."""

    entry: str
    check: str
    before_version: str
    after_version: str
    before: dict  # the ledger's check verdict record at before_version
    after: dict

    @property
    def summary(self) -> str:
        return (f"{self.check}: {self.before['verdict']} in {self.before_version} → "
                f"{self.after['verdict']}{' (' + self.after['reason'] + ')' if self.after.get('reason') else ''}"
                f" in {self.after_version}")


def entry_statuses(ledger: EngineLedger, entry: str) -> list[tuple[str, str]]:
    """(version, entry verdict) for every release where the entry was verified, in order."""
    out = []
    for version in ledger.versions():
        record = ledger.releases[version]["entries"].get(entry)
        if record is not None:
            out.append((version, record["verdict"]))
    return out


def check_statuses(ledger: EngineLedger, entry: str, check: str) -> list[tuple[str, str]]:
    out = []
    for version in ledger.versions():
        record = ledger.releases[version]["entries"].get(entry)
        if record is not None and check in record["checks"]:
            out.append((version, record["checks"][check]["verdict"]))
    return out


def ranges(statuses: list[tuple[str, str]]) -> list[Range]:
    """Maximal runs of `holds`, bridging `error` releases, each with the release that ended it."""
    found: list[Range] = []
    start = last = None
    decided = [(v, s) for v, s in statuses if s != ERROR]
    newest = decided[-1][0] if decided else None
    for version, status in decided:
        if status == HOLDS:
            if start is None:
                start = version
            last = version
        elif start is not None:
            found.append(Range(start, last, version, False))
            start = last = None
    if start is not None:
        found.append(Range(start, last, None, last == newest))
    return found


def transitions(ledger: EngineLedger, entry: str) -> list[Transition]:
    """Every check that flipped between consecutive releases (skipping `error` verdicts)."""
    found: list[Transition] = []
    previous: dict[str, tuple[str, dict]] = {}  # check -> (version, record) of its last decided verdict
    for version in ledger.versions():
        record = ledger.releases[version]["entries"].get(entry)
        if record is None:
            continue
        for check, verdict in sorted(record["checks"].items()):
            if verdict["verdict"] == ERROR:
                continue
            before = previous.get(check)
            if before is not None and before[1]["verdict"] != verdict["verdict"]:
                found.append(Transition(entry, check, before[0], version, before[1], verdict))
            previous[check] = (version, verdict)
    return found


@dataclass(frozen=True)
class StatusChange:
    """An entry whose verdict differs from the release before: what a scheduled run reports."""

    engine: str
    entry: str
    before_version: str | None  # None: the entry had no decided verdict before
    after_version: str
    before: str | None
    after: str
    checks: tuple[Transition, ...]  # the checks that flipped between the two releases


def status_changes(ledger: EngineLedger, versions) -> list[StatusChange]:
    """Entries whose verdict at one of `versions` differs from their previous decided verdict."""
    wanted = set(versions)
    found = []
    entries = sorted({e for r in ledger.releases.values() for e in r["entries"]})
    for entry in entries:
        flips = transitions(ledger, entry)
        previous: tuple[str, str] | None = None
        for version, status in entry_statuses(ledger, entry):
            if status == ERROR:
                continue
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


def status_at(ledger: EngineLedger, entry: str, version: str) -> str | None:
    record = ledger.releases.get(version, {}).get("entries", {}).get(entry)
    return record["verdict"] if record else None


def describe(engine_name: str, statuses: list[tuple[str, str]]) -> str:
    """One line for people: where an entry holds, and where it stopped."""
    if not statuses:
        return f"not verified against {engine_name}"
    found = ranges(statuses)
    if not found:
        latest = statuses[-1]
        return f"does not hold in any verified {engine_name} release ({latest[1]} in {latest[0]})"
    parts = []
    for r in found:
        text = f"holds in {engine_name} {r}"
        if r.fixed:
            text += f", changed in {r.fixed}"
        parts.append(text)
    return "; ".join(parts)


__all__ = ["Range", "Transition", "StatusChange", "status_changes", "new_status_changes", "entry_statuses", "check_statuses", "ranges", "transitions",
           "status_at", "describe", "HOLDS", "CHANGED", "ERROR"]
