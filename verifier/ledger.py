"""The ledger: what held where, per engine and release. Machine-written, never hand-edited.

One JSON file per engine (`ledger/<engine>.json`), in a deterministic form:
keys sorted, one line per check verdict, so that a scheduled run's diff reads
as "these verdicts changed". (Beside it, `ledger/evidence/<engine>.json` keeps
the lines each check points at in the newest release, for the site.) A file is
replaced atomically (temp file, fsync, rename), so a killed run leaves each
engine's file exactly as before or exactly as after. A lock file keeps two
runs from writing at once.

The typed records below (`CheckRecord`, `EntryRecord`, `ReleaseRecord`) are
the only way in and out: `decode` reads a file's JSON into them (and migrates
an older format, or refuses it with a message), `EngineLedger.to_text`
writes them. Nothing else looks at the JSON.

Layout of `ledger/<engine>.json` (format 2):

    {"engine": "vllm", "format": 2,
     "releases": {"0.30.0": {
        "date": "2026-09-22", "identity": "sha256:...", "source": "pypi",
        "verified_at": "2026-11-29T07:00:00Z", "verifier": "0.4.0",
        "entries": {"<entry id>": {"status": "holds", "checks": {
            "<check id>": {"verdict": "holds", "form": 0, "path": "...", "lines": [1, 2], "symbol": "...",
                           "sha256": "<16 hex digits>", "check": "<fingerprint>"}}}}}}}

A check record leaves out what it does not have: `reason` and `hint` only when
the check did not hold, `message` only for errors, `lines` only where found.
A check with no form that applies at a release has no record there. An
entry's `status` is `model.entry_status` of its check records and the entry's
`introduced`/`fixed`; `restatus` brings it up to date when those change.

Format 1 (before `missing` and forms) is read and migrated: `changed` with
`file-missing` or `symbol-missing` becomes `missing`, every verdict is of
form 0, an entry's `verdict` becomes its `status` (`error` becoming
`unverified`). It is written back as format 2.

The ledger is data a pull request can change, and its keys later name files on
the site, so reading it trusts nothing: a file is read only when it is a regular
file (never through a symbolic link) of at most MAX_LEDGER_BYTES, and every value
must be of its type and every key one the format has, release versions and entry
and check ids names by `safety.name_problem`; else the file is refused, naming it
and the first bad location (`releases/0.10.0/entries/foo/checks/bar/verdict`),
before anything is written. Files are found with `safety.inside`: an engine key is
a name, and the ledger folder, its evidence folder and its lock are never links.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import fcntl  # POSIX only, like O_NOFOLLOW and the bounded query child: README, "Platforms"
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from .model import (CHANGED, ERROR, HOLDS, MISSING, MISSING_REASONS, STATUSES, VERDICTS, CheckResult,
                    Release, entry_status)
from .safety import PathError, inside, name_problem, open_regular, read_regular

FORMAT_VERSION = 2
#: Formats this verifier reads (older ones are migrated on reading).
READABLE_FORMATS = (1, 2)
#: Hex digits of a file's sha256 kept in the ledger: enough to tell contents apart, short enough to read.
SHA_DIGITS = 16
DEFAULT_DIR = "ledger"
EVIDENCE_DIR = "evidence"
LOCK_FILE = ".lock"
#: The largest ledger file read (the committed ones are about 2.4 MB); a larger one is refused, read no further.
MAX_LEDGER_BYTES = 64 << 20
#: The largest evidence file read (the committed ones are about 0.2 MB).
MAX_EVIDENCE_BYTES = 16 << 20
#: How much of the lock file (who holds it) is read.
_LOCK_TEXT = 200


class LedgerError(Exception):
    """The ledger cannot be read, written or locked; the message says which file and why."""


@functools.lru_cache(maxsize=4096)  # asked again and again for the same few hundred versions
def version_key(version: str):
    try:
        return (0, Version(version), version)
    except InvalidVersion:
        return (1, Version("0"), version)


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

    @property
    def decided(self) -> bool:
        """Whether the verdict says something about the code (an `error` says nothing)."""
        return self.verdict != ERROR

    def to_json(self) -> dict:
        data = {"verdict": self.verdict, "reason": self.reason, "form": self.form, "path": self.path,
                "lines": list(self.lines) if self.lines else None, "symbol": self.symbol, "hint": self.hint,
                "message": self.message, "sha256": self.sha256, "check": self.check}
        return {k: v for k, v in data.items() if v is not None}


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

    def same_content(self, other: ReleaseRecord) -> bool:
        """Equal in all but when and by what it was verified."""
        return (self.date, self.identity, self.source, self.entries) == (
            other.date, other.identity, other.source, other.entries)


def status_of(version: str, checks: Mapping[str, CheckRecord], bounds: tuple[str | None, str | None]) -> str:
    return entry_status(version, (c.verdict for c in checks.values()), *bounds)


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
               verifier: str, bounds: Mapping[str, tuple[str | None, str | None]] | None = None) -> bool:
        """Put one release's results in; the entries verified replace what was there.

        `bounds` is (introduced, fixed) of every entry verified, by id: an entry
        of which no check applies at this release is recorded with no checks. Returns
        whether anything but timestamps changed. When nothing did, the release
        keeps its old `verified_at`, so that re-running leaves no diff.
        """
        bounds = bounds or {}
        old = self.releases.get(release.version)
        entries = dict(old.entries) if old else {}
        # The same checks with the same verdict objects as the release recorded last: its entry records
        # are the same, and are shared (never changed in place).
        # Lists compared item by item, identical objects at once: equal when every result is the same.
        # A status depends on the release only through an entry's introduced/fixed.
        versioned = any(b != (None, None) for b in bounds.values())
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
        record = ReleaseRecord(release.date, release.identity, source, verified_at, verifier, entries)
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
            lines=tuple(v.lines) if v.lines else None, symbol=v.symbol, hint=v.hint,
            message=v.message if v.status == ERROR else None,
            sha256=v.file_sha[:SHA_DIGITS] if v.file_sha else None, check=result.check.fingerprint,
        )
        self._lines[key] = (v, line)  # v is kept, so that its id is not reused by another verdict
        return line

    def restatus(self, bounds: Mapping[str, tuple[str | None, str | None]]) -> bool:
        """Recompute the status of the entries of `bounds` ((introduced, fixed) by entry id) in every release,
        from their check records; returns whether any changed. Records are replaced, never changed in place."""
        changed = False
        for version, record in self.releases.items():
            updated = None
            for entry, (introduced, fixed) in bounds.items():
                current = record.entries.get(entry)
                if current is None:
                    continue
                status = status_of(version, current.checks, (introduced, fixed))
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

    def to_text(self) -> str:
        return _dump(self.engine, [(v, self.releases[v]) for v in self.versions()])


# --- the codec: JSON text <-> records ------------------------------------------------------------------------

#: json.dumps(value, sort_keys=True), without making a new encoder for each of the many verdict lines.
_sorted_json = json.JSONEncoder(sort_keys=True).encode
_RELEASE_META = ("date", "identity", "source", "verified_at", "verifier")


def _entry_block(value: EntryRecord, verdict_text: dict[int, tuple[CheckRecord, str]]) -> str:
    """The lines of one entry's record inside its braces: its status, then a check verdict per line."""
    checks = sorted(value.checks.items())
    lines = [f'          "status": {json.dumps(value.status)},', '          "checks": {']
    for ci, (check, verdict) in enumerate(checks):
        comma = "," if ci < len(checks) - 1 else ""
        encoded = verdict_text.get(id(verdict))  # lines shared by releases are encoded once
        if encoded is None or encoded[0] is not verdict:
            encoded = verdict_text[id(verdict)] = (verdict, _sorted_json(verdict.to_json()))
        lines.append(f"            {json.dumps(check)}: {encoded[1]}{comma}")
    lines.append("          }")
    return "\n".join(lines)


def _dump(engine: str, releases: list[tuple[str, ReleaseRecord]]) -> str:
    """Deterministic JSON: nested objects indented, each check verdict on one line."""
    lines = ["{", f'  "engine": {json.dumps(engine)},', f'  "format": {FORMAT_VERSION},', '  "releases": {']
    verdict_text: dict[int, tuple[CheckRecord, str]] = {}
    entry_text: dict[int, tuple[EntryRecord, str]] = {}
    for ri, (version, record) in enumerate(releases):
        lines.append(f"    {json.dumps(version)}: {{")
        for key in _RELEASE_META:
            lines.append(f"      {json.dumps(key)}: {json.dumps(getattr(record, key))},")
        lines.append('      "entries": {')
        entries = sorted(record.entries.items())
        for ei, (entry, value) in enumerate(entries):
            lines.append(f"        {json.dumps(entry)}: {{")
            block = entry_text.get(id(value))  # entry records shared by releases are encoded once
            if block is None or block[0] is not value:
                block = entry_text[id(value)] = (value, _entry_block(value, verdict_text))
            lines.append(block[1])
            lines.append("        }" + ("," if ei < len(entries) - 1 else ""))
        lines.append("      }")
        lines.append("    }" + ("," if ri < len(releases) - 1 else ""))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


_RESTORE = "restore it from git, or delete it and re-run `gotchas verify`"


class _Malformed(Exception):
    """A value of a ledger or evidence file that is not what the format has there. The message says what; `at`
    is where (keys from the top, put in front as the error passes up through the records that hold it);
    `advice` what to do about it."""

    def __init__(self, message: str, *at, advice: str = _RESTORE) -> None:
        super().__init__(message)
        self.at = list(at)
        self.advice = advice

    def within(self, *at) -> _Malformed:
        self.at[:0] = at
        return self

    def refusal(self, where: str) -> LedgerError:
        location = f"{_location(self.at)}: " if self.at else ""
        return LedgerError(f"{where}: {location}{self}; {self.advice}")


def _location(at) -> str:
    """Keys as a JSON Pointer without its leading slash (`releases/0.10.0/entries/e/checks/c/verdict`), each
    escaped (`~0` for `~`, `~1` for `/`, an empty key as `""`), so that no control character and no long key
    reaches the terminal."""
    parts = []
    for key in at:
        text = json.dumps(str(key))[1:-1].replace("~", "~0").replace("/", "~1") or '""'
        parts.append(text if len(text) <= 80 else text[:77] + "...")
    return "/".join(parts)


def _kind(value) -> str:
    """What a JSON value is, for a message (a hostile value itself is never shown whole)."""
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 40 else value[:37] + "...")
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"


def _wrong(data: dict, key: str, must: str) -> _Malformed:
    """The error of `data[key]`, which is not what it must be (or missing)."""
    return _Malformed(f"{must}, not {_kind(data[key])}" if key in data else f"missing; {must}", key)


def _unknown(known) -> str:
    return f"not a key this format has ({', '.join(sorted(known))})"


def _exact_keys(data: dict, keys) -> None:
    """`data` has each of `keys` and no other."""
    for key in data:
        if key not in keys:
            raise _Malformed(_unknown(keys), key)
    for key in keys:
        if key not in data:
            raise _Malformed("missing", key)


def _text(value, key: str) -> None:
    if type(value) is not str:
        raise _Malformed(f"must be text, not {_kind(value)}", key)


def _line_numbers(value, key: str) -> None:
    """The first and the last line of a place: two line numbers, in order."""
    if type(value) is not list or len(value) != 2:
        raise _Malformed(f"must be two line numbers, not {_kind(value)}", key)
    for i, number in enumerate(value):
        if type(number) is not int or number < 1:
            raise _Malformed(f"must be a line number (1 or more), not {_kind(number)}", key, i)
    if value[0] > value[1]:
        raise _Malformed(f"must be two line numbers in order, not {value[0]} then {value[1]}", key)


def _name(value: str, kind: str, what: str, *at) -> None:
    problem = name_problem(value, kind)
    if problem is not None:
        raise _Malformed(f"not {what}: it {problem}", *at)


_CHECK_TEXT = ("reason", "path", "symbol", "hint", "message", "check")
_CHECK_KEYS = frozenset(("verdict", "form", "lines", "sha256", *_CHECK_TEXT))
_ENTRY_KEYS = {1: frozenset(("verdict", "checks")), 2: frozenset(("status", "checks"))}
_RELEASE_KEYS = frozenset((*_RELEASE_META, "entries"))
_TOP_KEYS = frozenset(("engine", "format", "releases"))
_SHA = re.compile(r"[0-9a-f]{1,64}")
#: The verdicts of format 1, before `missing`.
_FORMAT_1_VERDICTS = (HOLDS, CHANGED, ERROR)


class _Decoder:
    """Records from one ledger file's JSON, every value checked for its type. A check record that recurs from
    release to release (the same file content, the same verdict) is decoded once and shared, and so is an entry
    record all of whose checks are shared: reading is cheaper, and writing encodes each shared record once."""

    def __init__(self, fmt: int) -> None:
        self.fmt = fmt
        self.verdicts = VERDICTS if fmt >= 2 else _FORMAT_1_VERDICTS
        self.entry_keys = _ENTRY_KEYS[min(fmt, 2)]
        self._checks: dict[tuple, CheckRecord] = {}
        self._entries: dict[tuple, EntryRecord] = {}
        self._names: set[str] = set()  # entry and check ids found to be names

    def check(self, data) -> CheckRecord:
        if type(data) is not dict:
            raise _Malformed(f"must be a check verdict (an object), not {_kind(data)}")
        get = data.get
        lines, form = get("lines"), get("form")
        # Only a record whose numbers are ints (not True, not 1.0, which equal them) is looked up: a record
        # found has the same length and equal fields, and so no other key (the one stored had none) and no
        # value of another type (text equals only text).
        if (form is None or type(form) is int) and (lines is None or type(lines) is list and len(lines) == 2
                                                     and type(lines[0]) is int and type(lines[1]) is int):
            key = (len(data), get("verdict"), get("reason"), form, get("path"),
                   None if lines is None else (lines[0], lines[1]), get("symbol"), get("hint"), get("message"),
                   get("sha256"), get("check"))
            try:
                found = self._checks.get(key)
            except TypeError:  # a list or an object where text belongs: found by _new_check below
                found = key = None
            if found is not None:
                return found
        else:
            key = None
        found = self._new_check(data)
        if key is not None:
            self._checks[key] = found
        return found

    def _new_check(self, data: dict) -> CheckRecord:
        for key, value in data.items():  # in the file's order: the first bad key is the one reported
            if key == "verdict":
                if type(value) is not str or value not in self.verdicts:
                    raise _Malformed(f"must be one of {', '.join(self.verdicts)}, not {_kind(value)}", key)
            elif key in _CHECK_TEXT:
                _text(value, key)
            elif key == "sha256":
                if type(value) is not str or not _SHA.fullmatch(value):
                    raise _Malformed(f"must be hex digits of a sha256, not {_kind(value)}", key)
            elif key == "form":
                if type(value) is not int or value < 0:
                    raise _Malformed(f"must be a form number (0 or more), not {_kind(value)}", key)
            elif key == "lines":
                _line_numbers(value, key)
            else:
                raise _Malformed(_unknown(_CHECK_KEYS), key)
        if "verdict" not in data:
            raise _wrong(data, "verdict", f"must be one of {', '.join(self.verdicts)}")
        verdict, reason, form, lines = data["verdict"], data.get("reason"), data.get("form"), data.get("lines")
        if self.fmt == 1:  # before `missing` and forms: a place not found was `changed`, and every check had one form
            if verdict == CHANGED and reason in MISSING_REASONS:
                verdict = MISSING
            form = 0 if verdict != ERROR else None
        return CheckRecord(verdict, reason, form, data.get("path"), tuple(lines) if lines else None,
                           data.get("symbol"), data.get("hint"), data.get("message"), data.get("sha256"),
                           data.get("check"))

    def name(self, value: str, what: str, *at) -> None:
        if value not in self._names:
            _name(value, "id", what, *at)
            self._names.add(value)

    def entry(self, data, version: str) -> EntryRecord:
        if type(data) is not dict:
            raise _Malformed(f"must be an entry record (an object), not {_kind(data)}")
        for key in data:
            if key not in self.entry_keys:
                raise _Malformed(_unknown(self.entry_keys), key)
        found = data.get("checks")
        if type(found) is not dict:
            raise _wrong(data, "checks", "must be an object (check id -> verdict)")
        checks = {}
        names = self._names
        for check, value in found.items():
            if check not in names:
                self.name(check, "a check id", "checks", check)
            try:
                checks[check] = self.check(value)
            except _Malformed as exc:
                raise exc.within("checks", check) from None
        if self.fmt == 1:  # the entry's `verdict`, recomputed by today's rules (an old `error` is `unverified`)
            old = data.get("verdict")
            if type(old) is not str or old not in _FORMAT_1_VERDICTS:
                raise _wrong(data, "verdict", f"must be one of {', '.join(_FORMAT_1_VERDICTS)}")
            status = entry_status(version, (c.verdict for c in checks.values()))
        else:
            status = data.get("status")
            if type(status) is not str or status not in STATUSES:
                raise _wrong(data, "status", f"must be one of {', '.join(STATUSES)}")
        key = (status, tuple((name, id(record)) for name, record in checks.items()))
        found = self._entries.get(key)
        if found is None:
            found = self._entries[key] = EntryRecord(status, checks)
        return found

    def release(self, record, version: str) -> ReleaseRecord:
        if type(record) is not dict:
            raise _Malformed(f"must be a release record (an object), not {_kind(record)}")
        meta = dict.fromkeys(_RELEASE_META)
        for key, value in record.items():
            if key in meta:
                if value is not None and type(value) is not str:
                    raise _Malformed(f"must be text or null, not {_kind(value)}", key)
                meta[key] = value
            elif key != "entries":
                raise _Malformed(_unknown(_RELEASE_KEYS), key)
        found = record.get("entries")
        if type(found) is not dict:
            raise _wrong(record, "entries", "must be an object (entry id -> entry record)")
        entries = {}
        for entry, value in found.items():
            self.name(entry, "an entry id", "entries", entry)
            try:
                entries[entry] = self.entry(value, version)
            except _Malformed as exc:
                raise exc.within("entries", entry) from None
        return ReleaseRecord(**meta, entries=entries)


def decode(data, engine: str, where: str) -> EngineLedger:
    """The ledger of `engine` from a file's parsed JSON; LedgerError, naming `where` and the first bad location
    in it, when it is not one."""
    try:
        return _decode(data, engine)
    except _Malformed as exc:
        raise exc.refusal(where) from None


def _decode(data, engine: str) -> EngineLedger:
    if type(data) is not dict:
        raise _Malformed(f"not a ledger of {engine}: not an object but {_kind(data)}")
    for key in data:
        if key not in _TOP_KEYS:
            raise _Malformed(_unknown(_TOP_KEYS), key)
    if data.get("engine") != engine:
        raise _wrong(data, "engine", f"not a ledger of {engine}")
    fmt = data.get("format")
    if type(fmt) is not int:
        raise _Malformed("no ledger format number", "format")
    shown = fmt if abs(fmt) < 10 ** 9 else "..."
    if fmt > FORMAT_VERSION:
        raise _Malformed(f"written by a newer verifier (format {shown})", "format", advice="upgrade gotchas")
    if fmt not in READABLE_FORMATS:
        raise _Malformed(f"ledger format {shown} is not one this verifier reads "
                         f"({', '.join(map(str, READABLE_FORMATS))})", "format",
                         advice="delete it and re-run `gotchas verify`")
    found = data.get("releases")
    if type(found) is not dict:
        raise _wrong(data, "releases", "must be an object (release version -> release record)")
    releases = {}
    decoder = _Decoder(fmt)
    for version, record in found.items():
        _name(version, "version", "a release version", "releases", version)
        try:
            releases[version] = decoder.release(record, version)
        except _Malformed as exc:
            raise exc.within("releases", version) from None
    return EngineLedger(engine, releases, migrated=fmt < FORMAT_VERSION)


_EVIDENCE_KEYS = ("engine", "version", "checks")
_EXCERPT_KEYS = ("lines", "match", "path", "start", "verdict")


def decode_evidence(data, engine: str, where: str) -> dict:
    """An evidence file's parsed JSON, checked to be what `verify` writes (so that nothing else reaches the
    site); LedgerError, naming `where` and the first bad location in it, when it is not."""
    try:
        _check_evidence(data, engine)
    except _Malformed as exc:
        raise exc.refusal(where) from None
    return data


def _check_evidence(data, engine: str) -> None:
    if type(data) is not dict:
        raise _Malformed(f"not evidence of {engine}: not an object but {_kind(data)}")
    _exact_keys(data, _EVIDENCE_KEYS)
    if data["engine"] != engine:
        raise _Malformed(f"not evidence of {engine} (it says {_kind(data['engine'])})", "engine")
    if data["version"] is not None:
        _name(data["version"], "version", "a release version", "version")
    checks = data["checks"]
    if type(checks) is not dict:
        raise _Malformed(f"must be an object (entry id/check id -> excerpt), not {_kind(checks)}", "checks")
    for name, excerpt in checks.items():
        entry, slash, check = name.partition("/")
        if not slash:
            raise _Malformed("not an entry id/check id", "checks", name)
        _name(entry, "id", "an entry id/check id", "checks", name)
        _name(check, "id", "an entry id/check id", "checks", name)
        try:
            _check_excerpt(excerpt)
        except _Malformed as exc:
            raise exc.within("checks", name) from None


def _check_excerpt(excerpt) -> None:
    if type(excerpt) is not dict:
        raise _Malformed(f"must be an excerpt (an object), not {_kind(excerpt)}")
    _exact_keys(excerpt, _EXCERPT_KEYS)
    _text(excerpt["path"], "path")
    if type(excerpt["verdict"]) is not str or excerpt["verdict"] not in VERDICTS:
        raise _Malformed(f"must be one of {', '.join(VERDICTS)}, not {_kind(excerpt['verdict'])}", "verdict")
    if type(excerpt["start"]) is not int or excerpt["start"] < 1:
        raise _Malformed(f"must be a line number (1 or more), not {_kind(excerpt['start'])}", "start")
    _line_numbers(excerpt["match"], "match")
    lines = excerpt["lines"]
    if type(lines) is not list:
        raise _Malformed(f"must be a list of lines of text, not {_kind(lines)}", "lines")
    for i, line in enumerate(lines):
        if type(line) is not str:
            raise _Malformed(f"must be a line of text, not {_kind(line)}", "lines", i)


def _read(path: Path, limit: int) -> str | None:
    """The text of a regular file of at most `limit` bytes, read without following a link; None when there is no
    file; LedgerError for anything else."""
    try:
        data = read_regular(path, limit)
    except FileNotFoundError:
        return None
    except PathError as exc:
        raise LedgerError(f"{exc}; {_RESTORE}") from None
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise LedgerError(f"{path}: larger than {limit >> 20} MiB, which no file `verify` writes is; read no further; "
                          f"{_RESTORE}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LedgerError(f"{path}: not UTF-8 text (at byte {exc.start}); {_RESTORE}") from None


def _parse(text: str, path: Path):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LedgerError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); {_RESTORE}") from None
    except (ValueError, RecursionError):  # a number of thousands of digits; arrays nested thousands deep
        raise LedgerError(f"{path}: not valid JSON as this verifier reads it (a number too long, or values nested "
                          f"too deep); {_RESTORE}") from None


class Ledger:
    """The ledger folder: one file per engine, and the evidence folder beside them."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)

    def _inside(self, relative: str, engine: str | None = None) -> Path:
        """`folder/relative`, or LedgerError: the engine is not a name, the folder or a folder on the way is a link."""
        if engine is not None:
            problem = name_problem(engine, "id")
            if problem is not None:
                raise LedgerError(f"engine {engine!r} {problem}; no ledger file is named after it")
        if self.folder.is_symlink():
            raise LedgerError(f"{self.folder} is a symbolic link; the ledger is read and written only in a folder "
                              "of its own")
        try:
            return inside(self.folder, relative)
        except PathError as exc:
            raise LedgerError(str(exc)) from None

    def path(self, engine: str) -> Path:
        return self._inside(f"{engine}.json", engine)

    def engines(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json")
                      if name_problem(p.stem, "id") is None) if self.folder.is_dir() else []

    def load(self, engine: str) -> EngineLedger:
        path = self.path(engine)
        text = _read(path, MAX_LEDGER_BYTES)
        if text is None:
            return EngineLedger(engine)
        return decode(_parse(text, path), engine, str(path))

    def save(self, ledger: EngineLedger) -> None:
        """Replace the engine's file atomically; refused (the file unchanged) when a release version or an id
        could not be read back."""
        path = self.path(ledger.engine)
        checked: set[str] = set()
        try:
            for version, record in ledger.releases.items():
                _name(version, "version", "a release version", "releases", version)
                for entry, value in record.entries.items():
                    if entry not in checked:
                        _name(entry, "id", "an entry id", "releases", version, "entries", entry)
                        checked.add(entry)
                    for check in value.checks:
                        if check not in checked:
                            _name(check, "id", "a check id", "releases", version, "entries", entry, "checks", check)
                            checked.add(check)
        except _Malformed as exc:
            raise LedgerError(f"{path}: not written: {_location(exc.at)}: {exc}") from None
        _write_atomically(path, ledger.to_text())

    # Evidence: the lines each check points at in the newest release, for the site.

    def evidence_path(self, engine: str) -> Path:
        return self._inside(f"{EVIDENCE_DIR}/{engine}.json", engine)

    def load_evidence(self, engine: str) -> dict:
        """The engine's evidence, checked (LedgerError when it is not what `verify` writes); when there is none, an
        empty one."""
        path = self.evidence_path(engine)
        text = _read(path, MAX_EVIDENCE_BYTES)
        if text is None:
            return {"engine": engine, "version": None, "checks": {}}
        return decode_evidence(_parse(text, path), engine, str(path))

    def save_evidence(self, evidence: dict, merge: bool = False, old: dict | None = None) -> None:
        """Replace an engine's evidence file; with `merge`, keep other entries' excerpts of the same release
        (from `old`, the evidence as read before, else as read now)."""
        path = self.evidence_path(evidence["engine"])
        if merge:
            old = old if old is not None else self.load_evidence(evidence["engine"])
            if old.get("version") == evidence["version"]:
                evidence = {**evidence, "checks": {**old["checks"], **evidence["checks"]}}
        try:
            _check_evidence(evidence, evidence["engine"])
        except _Malformed as exc:
            raise LedgerError(f"{path}: not written: {_location(exc.at)}: {exc}") from None
        text = json.dumps(evidence, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        _write_atomically(path, text)

    @contextlib.contextmanager
    def lock(self, wait: float = 0.0):
        """Hold the ledger's lock; wait up to `wait` seconds for another run to finish, else refuse. The lock is a
        regular file in the folder, opened without following a link (a link committed there is refused)."""
        self._inside(LOCK_FILE)  # the folder is no link
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{self.folder}: cannot make the ledger folder: {exc.strerror or exc}") from None
        path = self._inside(LOCK_FILE)
        try:
            fd = open_regular(path, os.O_RDWR | os.O_CREAT)
        except PathError as exc:
            raise LedgerError(f"{exc}; the lock must be a regular file: delete it and re-run") from None
        except OSError as exc:
            what = "is not a regular file (a folder)" if exc.errno == errno.EISDIR else \
                f"cannot be opened: {exc.strerror or exc}"
            raise LedgerError(f"{path} {what}; the lock must be a regular file: delete it and re-run") from None
        try:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise LedgerError(f"{path}: cannot lock: {exc}") from None
                    if time.monotonic() >= deadline:
                        said = os.pread(fd, _LOCK_TEXT, 0).decode("utf-8", "replace")
                        holder = "".join(c if c.isprintable() else "?" for c in said.strip()) or "another process"
                        raise LedgerError(f"the ledger in {self.folder} is locked by {holder}; "
                                          "wait for that run to finish (or pass --wait SECONDS)") from None
                    time.sleep(0.1)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"gotchas run pid {os.getpid()}\n".encode(), 0)
            yield self
        finally:
            os.close(fd)


def _write_atomically(target: Path, text: str) -> None:
    """Replace `target` with `text` so that a reader or a crash sees the old file or the new one, never half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{target.stem}.*.tmp"):  # left by a run that was killed mid-write
        with contextlib.suppress(OSError):
            stale.unlink()
    fd, temp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would surprise a repository file
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
        _fsync_dir(target.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise LedgerError(f"{target}: cannot write: {exc.strerror or exc}; it is unchanged") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
