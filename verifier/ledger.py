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
"""

from __future__ import annotations

import contextlib
import errno
import functools
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from .model import (CHANGED, ERROR, HOLDS, MISSING, MISSING_REASONS, STATUSES, VERDICTS, CheckResult,
                    Release, entry_status)

FORMAT_VERSION = 2
#: Formats this verifier reads (older ones are migrated on reading).
READABLE_FORMATS = (1, 2)
#: Hex digits of a file's sha256 kept in the ledger: enough to tell contents apart, short enough to read.
SHA_DIGITS = 16
DEFAULT_DIR = "ledger"
EVIDENCE_DIR = "evidence"
LOCK_FILE = ".lock"


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


class _Malformed(Exception):
    """A ledger file whose content is not what a ledger holds; the message says what (the caller, where)."""


class _Decoder:
    """Records from one ledger file's JSON. A check record that recurs from release to release (the same file
    content, the same verdict) is decoded once and shared, and so is an entry record all of whose checks are
    shared: reading is cheaper, and writing encodes each shared record once."""

    def __init__(self, fmt: int) -> None:
        self.fmt = fmt
        self.verdicts = VERDICTS if fmt >= 2 else (HOLDS, CHANGED, ERROR)
        self._checks: dict[tuple, CheckRecord] = {}
        self._entries: dict[tuple, EntryRecord] = {}

    def check(self, data) -> CheckRecord:
        if not isinstance(data, dict):
            raise _Malformed("not a check verdict")
        lines = data.get("lines")
        get = data.get
        key = (get("verdict"), get("reason"), get("form"), get("path"), tuple(lines) if type(lines) is list else lines,
               get("symbol"), get("hint"), get("message"), get("sha256"), get("check"))
        try:
            found = self._checks.get(key)
        except TypeError:  # a value that cannot be hashed is no value of a check record
            raise _Malformed("a value of a check verdict is not text, a number or two line numbers") from None
        if found is None:
            found = self._checks[key] = self._new_check(data, lines)
        return found

    def _new_check(self, data: dict, lines) -> CheckRecord:
        verdict, reason, form = data.get("verdict"), data.get("reason"), data.get("form")
        if verdict not in self.verdicts:
            raise _Malformed("not a check verdict")
        if self.fmt == 1:  # before `missing` and forms: a place not found was `changed`, and every check had one form
            if verdict == CHANGED and reason in MISSING_REASONS:
                verdict = MISSING
            form = 0 if verdict != ERROR else None
        if lines is not None and not (isinstance(lines, list) and len(lines) == 2
                                      and all(isinstance(n, int) and not isinstance(n, bool) for n in lines)):
            raise _Malformed("'lines' must be two line numbers")
        if form is not None and (not isinstance(form, int) or isinstance(form, bool) or form < 0):
            raise _Malformed("'form' must be a form number")
        for key in ("reason", "path", "symbol", "hint", "message", "sha256", "check"):
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise _Malformed(f"{key!r} must be text")
        return CheckRecord(verdict, reason, form, data.get("path"), tuple(lines) if lines else None,
                           data.get("symbol"), data.get("hint"), data.get("message"), data.get("sha256"),
                           data.get("check"))

    def entry(self, data, version: str) -> EntryRecord:
        if not isinstance(data, dict) or not isinstance(data.get("checks"), dict):
            raise _Malformed("not an entry record")
        checks = {}
        for check, value in data["checks"].items():
            try:
                checks[check] = self.check(value)
            except _Malformed as exc:
                raise _Malformed(f"check {check!r}: {exc}") from None
        if self.fmt == 1:  # the entry's `verdict`, recomputed by today's rules (an old `error` is `unverified`)
            status = entry_status(version, (c.verdict for c in checks.values()))
        else:
            status = data.get("status")
            if status not in STATUSES:
                raise _Malformed(f"'status' must be one of {', '.join(STATUSES)}")
        key = (status, tuple((name, id(record)) for name, record in checks.items()))
        found = self._entries.get(key)
        if found is None:
            found = self._entries[key] = EntryRecord(status, checks)
        return found


def decode(data, engine: str, where: str) -> EngineLedger:
    """The ledger of `engine` from a file's parsed JSON; LedgerError (naming `where`) when it is not one."""
    if not isinstance(data, dict) or data.get("engine") != engine or not isinstance(data.get("releases"), dict):
        raise LedgerError(f"{where}: not a ledger of {engine}")
    fmt = data.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise LedgerError(f"{where}: no ledger format number; restore it from git, or delete it and re-run "
                          "`gotchas verify`")
    if fmt > FORMAT_VERSION:
        raise LedgerError(f"{where}: written by a newer verifier (format {fmt}); upgrade gotchas")
    if fmt not in READABLE_FORMATS:
        raise LedgerError(f"{where}: ledger format {fmt} is not one this verifier reads "
                          f"({', '.join(map(str, READABLE_FORMATS))}); delete it and re-run `gotchas verify`")
    releases = {}
    decoder = _Decoder(fmt)
    try:
        for version, record in data["releases"].items():
            at = f"{where}: release {version}"
            if not isinstance(record, dict) or not isinstance(record.get("entries"), dict):
                raise _Malformed(f"{at}: not a release record")
            meta = {}
            for key in _RELEASE_META:
                value = record.get(key)
                if value is not None and not isinstance(value, str):
                    raise _Malformed(f"{at}: {key!r} must be text")
                meta[key] = value
            entries = {}
            for entry, value in record["entries"].items():
                try:
                    entries[entry] = decoder.entry(value, version)
                except _Malformed as exc:
                    raise _Malformed(f"{at}, entry {entry!r}, {exc}") from None
            releases[version] = ReleaseRecord(**meta, entries=entries)
    except _Malformed as exc:
        raise LedgerError(f"{exc}; restore it from git, or delete it and re-run `gotchas verify`") from None
    return EngineLedger(engine, releases, migrated=fmt < FORMAT_VERSION)


class Ledger:
    """The ledger folder: one file per engine."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)

    def path(self, engine: str) -> Path:
        return self.folder / f"{engine}.json"

    def engines(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json")) if self.folder.is_dir() else []

    def load(self, engine: str) -> EngineLedger:
        path = self.path(engine)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return EngineLedger(engine)
        except (OSError, UnicodeDecodeError) as exc:
            raise LedgerError(f"{path}: cannot read: {exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LedgerError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); "
                              "restore it from git, or delete it and re-run `gotchas verify`") from None
        return decode(data, engine, str(path))

    def save(self, ledger: EngineLedger) -> None:
        """Replace the engine's file atomically."""
        _write_atomically(self.path(ledger.engine), ledger.to_text())

    # Evidence: the lines each check points at in the newest release, for the site.

    def evidence_path(self, engine: str) -> Path:
        return self.folder / EVIDENCE_DIR / f"{engine}.json"

    def load_evidence(self, engine: str) -> dict:
        try:
            data = json.loads(self.evidence_path(engine).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"engine": engine, "version": None, "checks": {}}
        return data if isinstance(data, dict) and isinstance(data.get("checks"), dict) else {
            "engine": engine, "version": None, "checks": {}}

    def save_evidence(self, evidence: dict, merge: bool = False) -> None:
        """Replace an engine's evidence file; with `merge`, keep other entries' excerpts of the same release."""
        if merge:
            old = self.load_evidence(evidence["engine"])
            if old.get("version") == evidence["version"]:
                evidence = {**evidence, "checks": {**old["checks"], **evidence["checks"]}}
        text = json.dumps(evidence, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        _write_atomically(self.evidence_path(evidence["engine"]), text)

    @contextlib.contextmanager
    def lock(self, wait: float = 0.0):
        """Hold the ledger's lock; wait up to `wait` seconds for another run to finish, else refuse."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / LOCK_FILE
        handle = open(path, "a+", encoding="utf-8")
        try:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise LedgerError(f"{path}: cannot lock: {exc}") from None
                    if time.monotonic() >= deadline:
                        handle.seek(0)
                        holder = handle.read().strip() or "another process"
                        raise LedgerError(f"the ledger in {self.folder} is locked by {holder}; "
                                          "wait for that run to finish (or pass --wait SECONDS)") from None
                    time.sleep(0.1)
            handle.seek(0)
            handle.truncate()
            handle.write(f"gotchas run pid {os.getpid()}\n")
            handle.flush()
            yield self
        finally:
            handle.close()


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
