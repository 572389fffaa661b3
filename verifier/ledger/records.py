"""The ledger's typed records: what one engine's ledger holds (`EngineLedger`, filled by `verify` release by
release), and the evidence a run gathers for the site. Plain values: how they are written and read as JSON is
`codec`'s alone.

`CheckRecord`, `EntryRecord` and `ReleaseRecord` are the only way in and out of
a ledger file: `codec.decode` reads a file's JSON into them, `codec.encode`
writes them. Part of `verifier.ledger`, which re-exports every public name here.

A check record leaves out what it does not have: `reason` and `hint` only when
the check did not hold, `message` only for errors, `lines` only where found.
A check with no form that applies at a release has no record there. An
entry's `status` is `model.entry_status` of its check records and the entry's
`introduced`/`fixed`; `restatus` brings it up to date when those change.

The evidence records (`Window`, `Excerpt`, `ReleaseEvidence`, `Excerpts`,
`EvidenceUpdate`) are what `verify` hands on of the lines each verdict points at;
`codec` turns them into the evidence file's JSON, which they do not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple, cast

from ..model import CHANGED, ERROR, HOLDS, CheckResult, Release, entry_status, parts_verdicts, version_key

#: Hex digits of a file's sha256 kept in the ledger: enough to tell contents apart, short enough to read.
SHA_DIGITS = 16


# --- records ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckRecord:
    """The verdict of one check at one release, as the ledger keeps it."""

    verdict: str  # holds | changed | missing | error
    reason: str | None = None
    form: int | None = None  # the form the verdict is of: 0 the check itself, 1... its `earlier` items
    path: str | None = None
    lines: tuple[int, int] | None = None
    symbol: str | None = None
    hint: str | None = None
    message: str | None = None
    sha256: str | None = None  # the first SHA_DIGITS hex digits of the file's sha256
    check: str | None = None  # the fingerprint of the check as written when it was verified
    #: Where it holds, what each of the check's named values (`values`) bound: (NAME, source text) (format 3).
    values: tuple[tuple[str, str], ...] | None = None

    @property
    def decided(self) -> bool:
        """Whether the verdict says something about the code (an `error` says nothing)."""
        return self.verdict != ERROR


@dataclass(frozen=True)
class EntryRecord:
    """An entry for one engine at one release: its status, and the verdict of each check that applies."""

    status: str  # not-affected | holds | changed | unverified
    checks: Mapping[str, CheckRecord] = field(default_factory=dict)

    @property
    def verified(self) -> tuple[int, int]:
        """(checks that hold, checks with a verdict): "n of m claims verified"."""
        return sum(1 for c in self.checks.values() if c.verdict == HOLDS), len(self.checks)

    @property
    def decided(self) -> bool:
        """Whether the status says something about the code: not when a check failed to be read."""
        return not any(c.verdict == ERROR for c in self.checks.values()) or self.status == CHANGED


@dataclass(frozen=True)
class ReleaseRecord:
    """One release of an engine: what was read, when, by which verifier, and every entry's record."""

    date: str | None = None
    identity: str | None = None
    source: str | None = None
    verified_at: str | None = None
    verifier: str | None = None
    entries: Mapping[str, EntryRecord] = field(default_factory=dict)
    #: the engine's commit that the release holds, for a vendored engine (its code is named by it); else None
    commit: str | None = None

    def same_content(self, other: ReleaseRecord) -> bool:
        """Equal in all but when and by what it was verified."""
        return (self.date, self.identity, self.source, self.entries, self.commit) == (
            other.date, other.identity, other.source, other.entries, other.commit)


def status_of(version: str, checks: Mapping[str, CheckRecord], bounds: tuple) -> str:
    """The status from the check records and `model.entry_rules`: (introduced, fixed[, (check, part) pairs])."""
    verdicts, _ = parts_verdicts({c: r.verdict for c, r in checks.items()}, dict(bounds[2]) if len(bounds) > 2
                                 else {})
    return entry_status(version, verdicts, bounds[0], bounds[1])


def parts_holding(checks: Mapping[str, CheckRecord], bounds: tuple) -> list[str]:
    """The parts of the claim that hold at a release (none without parts)."""
    if len(bounds) <= 2:
        return []
    return parts_verdicts({c: r.verdict for c, r in checks.items()}, dict(bounds[2]))[1]


# --- one engine's ledger ----------------------------------------------------------------------------------

@dataclass
class EngineLedger:
    """The ledger of one engine: release version -> release record."""

    engine: str
    releases: dict[str, ReleaseRecord] = field(default_factory=dict)
    _lines: dict = field(default_factory=dict, repr=False, compare=False)  # see _check_record
    _last: tuple | None = field(default=None, repr=False, compare=False)  # see record
    #: Read from an older format: written back even when nothing else changed.
    migrated: bool = field(default=False, compare=False)

    def versions(self) -> list[str]:
        """Release versions in PEP 440 order."""
        return sorted(self.releases, key=version_key)

    def entry(self, version: str, entry: str) -> EntryRecord | None:
        release = self.releases.get(version)
        return release.entries.get(entry) if release is not None else None

    def record(self, release: Release, results: list[CheckResult], source: str, verified_at: str,
               verifier: str, bounds: Mapping[str, tuple] | None = None, commit: str | None = None) -> bool:
        """Put one release's results in; the entries verified replace what was there.

        `bounds` is (introduced, fixed) of every entry verified, by id: an entry
        of which no check applies at this release is recorded with no checks. Returns
        whether anything but timestamps changed. When nothing did, the release
        keeps its old `verified_at`, so that re-running leaves no diff. `commit` is the
        engine's commit the release holds (a vendored engine); a run that could not
        read it keeps the one recorded.
        """
        bounds = bounds or {}
        old = self.releases.get(release.version)
        entries = dict(old.entries) if old else {}
        # The same checks with the same verdict objects as the release recorded last: its entry records
        # are the same, and are shared (never changed in place).
        # Lists compared item by item, identical objects at once: equal when every result is the same.
        # A status depends on the release only through an entry's introduced/fixed.
        versioned = any(b[:2] != (None, None) for b in bounds.values())
        key = ([r.verdict for r in results], [r.check for r in results], [r.entry for r in results],
               [r.form for r in results], sorted(bounds.items()), release.version if versioned else None)
        if self._last is not None and self._last[0] == key:
            recorded = self._last[1]
        else:
            by_entry: dict[str, dict[str, CheckRecord]] = {entry: {} for entry in bounds}
            for result in results:
                by_entry.setdefault(result.entry, {})[result.check.id] = self._check_record(result)
            recorded = {entry: EntryRecord(status_of(release.version, checks, bounds.get(entry, (None, None))),
                                           checks)
                        for entry, checks in by_entry.items()}
            self._last = (key, recorded)
        entries.update(recorded)
        commit = commit or (old.commit if old is not None and old.identity == release.identity else None)
        record = ReleaseRecord(release.date, release.identity, source, verified_at, verifier, entries, commit)
        if old is not None and old.same_content(record):
            return False
        self.releases[release.version] = record
        return True

    def _check_record(self, result: CheckResult) -> CheckRecord:
        """The ledger line of one verdict. A verdict answered from the verdict cache is the same object at
        every release whose file did not change, so its line is made once and shared by those releases
        (ledger lines are never changed in place)."""
        v = result.verdict
        key = (id(v), result.check.fingerprint, result.check.path, result.form)
        found = self._lines.get(key)
        if found is not None and found[0] is v:
            return found[1]
        line = CheckRecord(
            verdict=v.status, reason=v.reason, form=result.form, path=v.path or result.check.path,
            lines=cast("tuple[int, int]", tuple(v.lines)) if v.lines else None, symbol=v.symbol, hint=v.hint,
            message=v.message if v.status == ERROR else None,
            sha256=v.file_sha[:SHA_DIGITS] if v.file_sha else None, check=result.check.fingerprint,
            values=tuple(v.values) if v.values and v.status == HOLDS else None,
        )
        self._lines[key] = (v, line)  # v is kept, so that its id is not reused by another verdict
        return line

    def restatus(self, bounds: Mapping[str, tuple]) -> bool:
        """Recompute the status of the entries of `bounds` (`model.entry_rules` by entry id) in every release,
        from their check records; returns whether any changed. Records are replaced, never changed in place."""
        changed = False
        for version, record in self.releases.items():
            updated = None
            for entry, rules in bounds.items():
                current = record.entries.get(entry)
                if current is None:
                    continue
                status = status_of(version, current.checks, rules)
                if status != current.status:
                    updated = updated if updated is not None else dict(record.entries)
                    updated[entry] = replace(current, status=status)
            if updated is not None:
                self.releases[version] = replace(record, entries=updated)
                changed = True
        return changed

    def drop_entries(self, keep: set[str]) -> bool:
        """Forget entries that no longer exist in the KB (records are replaced, never changed in place); returns
        whether there were any."""
        dropped = False
        for version, record in self.releases.items():
            if any(e not in keep for e in record.entries):
                entries = {e: value for e, value in record.entries.items() if e in keep}
                self.releases[version] = replace(record, entries=entries)
                dropped = True
        return dropped

    def copy(self) -> EngineLedger:
        """The ledger as it is now, untouched by later `record` and `drop_entries` (they replace records)."""
        return EngineLedger(self.engine, dict(self.releases))


# --- evidence: the lines each verdict points at, for the site ---------------------------------------------

#: What the evidence file keeps of a verdict at every release, the excerpt the site shows of it: WINDOW_CONTEXT
#: lines either side of the first WINDOW_MATCH lines of the match, each cut at WINDOW_LINE characters.
WINDOW_CONTEXT, WINDOW_MATCH, WINDOW_LINE = 2, 8, 240


class Window(NamedTuple):
    """What the site shows of a verdict at one release: the number of its first line, and its lines."""

    start: int
    lines: list[str]


def window(lines: list[str], match) -> Window:
    """What the site shows of the verdict at `match` (first, last) in a file of `lines`."""
    first, last = sorted(match)
    start = max(1, first - WINDOW_CONTEXT)
    end = min(len(lines), min(last, first + WINDOW_MATCH - 1) + WINDOW_CONTEXT)
    return Window(start, [line if len(line) <= WINDOW_LINE else line[:WINDOW_LINE] + " …"
                          for line in lines[start - 1:end]])


@dataclass(frozen=True)
class Excerpt:
    """The lines a verdict points at in the newest release, with a few around them (`verify.CONTEXT_LINES`)."""

    path: str
    start: int  # the number of the first line of `lines`
    lines: tuple[str, ...]
    match: tuple[int, int]  # the first and the last line the verdict points at
    verdict: str


@dataclass
class ReleaseEvidence:
    """What `verify.verify_release` gathers of one release for the evidence file: the window of each verdict
    (by "entry/check"), the whole excerpts when asked for (`excerpts` not None: the newest release), and the
    engine's commit the release holds, when its snapshot names one (a vendored engine)."""

    windows: dict[str, Window] = field(default_factory=dict)
    excerpts: dict[str, Excerpt] | None = None
    commit: str | None = None


@dataclass(frozen=True)
class Excerpts:
    """The whole excerpts of one release (the newest), by "entry/check"."""

    version: str
    checks: Mapping[str, Excerpt]


@dataclass(frozen=True)
class EvidenceUpdate:
    """What a run writes into an engine's evidence file (`Ledger.write_evidence`).

    `newest`: the newest release's excerpts, when it was verified (else the file's are kept); with `merge`,
    other entries' excerpts of the same release stay. `windows` (version -> entry/check -> Window) are the
    windows of every release verified, of the checks of `entries`: at those releases they replace what the file
    had of those entries; what it had of other releases and entries stays, except entries not in `keep` when
    it is given (a run of the whole KB)."""

    engine: str
    newest: Excerpts | None
    windows: Mapping[str, Mapping[str, Window]]
    entries: frozenset[str]
    keep: frozenset[str] | None
    merge: bool
