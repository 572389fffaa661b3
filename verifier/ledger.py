"""The ledger: what held where, per engine and release. Machine-written, never hand-edited.

One JSON file per engine (`ledger/<engine>.json`), in a deterministic form:
(beside it, `ledger/evidence/<engine>.json` keeps the lines each check points
at in the newest release, for the site)
keys sorted, one line per check verdict, so that a scheduled run's diff reads
as "these verdicts changed". A file is replaced atomically (temp file, fsync,
rename), so a killed run leaves each engine's file exactly as before or
exactly as after. A lock file keeps two runs from writing at once.

Layout of `ledger/<engine>.json`:

    {"engine": "vllm", "format": 1,
     "releases": {"0.30.0": {
        "date": "2026-09-22", "identity": "sha256:...", "source": "pypi",
        "verified_at": "2026-11-29T07:00:00Z", "verifier": "0.1.0",
        "entries": {"<entry id>": {"verdict": "holds", "checks": {
            "<check id>": {"verdict": "holds", "path": "...", "lines": [1, 2], "symbol": "...",
                           "sha256": "<16 hex digits>", "check": "<fingerprint>"}}}}}}}

A check record leaves out what it does not have: `reason` and `hint` only when
the check did not hold, `message` only for errors, `lines` only where found.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import fcntl
import json
import operator
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from .model import CheckResult, Release, combine

FORMAT_VERSION = 1
#: Hex digits of a file's sha256 kept in the ledger: enough to tell contents apart, short enough to read.
SHA_DIGITS = 16
DEFAULT_DIR = "ledger"
EVIDENCE_DIR = "evidence"
LOCK_FILE = ".lock"


class LedgerError(Exception):
    """The ledger cannot be read, written or locked; the message says which file and why."""


_VERDICT, _CHECK, _ENTRY = (operator.attrgetter(name) for name in ("verdict", "check", "entry"))


@functools.lru_cache(maxsize=4096)  # asked again and again for the same few hundred versions
def version_key(version: str):
    try:
        return (0, Version(version), version)
    except InvalidVersion:
        return (1, Version("0"), version)


@dataclass
class EngineLedger:
    """The ledger of one engine: release version -> release record."""

    engine: str
    releases: dict[str, dict] = field(default_factory=dict)
    _lines: dict = field(default_factory=dict, repr=False, compare=False)  # see _check_record
    _last: tuple | None = field(default=None, repr=False, compare=False)  # see record

    def versions(self) -> list[str]:
        """Release versions in PEP 440 order."""
        return sorted(self.releases, key=version_key)

    def record(self, release: Release, results: list[CheckResult], source: str, verified_at: str,
               verifier: str) -> bool:
        """Put one release's results in; the entries verified replace what was there.

        Returns whether anything but timestamps changed. When nothing did, the
        release keeps its old `verified_at`, so that re-running leaves no diff.
        """
        old = self.releases.get(release.version)
        entries = dict(old["entries"]) if old else {}
        # The same checks with the same verdict objects as the release recorded last: its entry records
        # are the same, and are shared (never changed in place).
        # Lists compared item by item, identical objects at once: equal when every result is the same.
        key = (list(map(_VERDICT, results)), list(map(_CHECK, results)), list(map(_ENTRY, results)))
        if self._last is not None and self._last[0] == key:
            recorded = self._last[1]
        else:
            by_entry: dict[str, dict[str, dict]] = {}
            for result in results:
                by_entry.setdefault(result.entry, {})[result.check.id] = self._check_record(result)
            recorded = {entry: {"verdict": combine(c["verdict"] for c in checks.values()), "checks": checks}
                        for entry, checks in by_entry.items()}
            self._last = (key, recorded)
        entries.update(recorded)
        record = {"date": release.date, "identity": release.identity, "source": source, "entries": entries}
        if old is not None and all(old.get(k) == record[k] for k in record):
            return False
        record.update(verified_at=verified_at, verifier=verifier)
        self.releases[release.version] = record
        return True

    def _check_record(self, result: CheckResult) -> dict:
        """The ledger line of one verdict. A verdict answered from the verdict cache is the same object at
        every release whose file did not change, so its line is made once and shared by those releases
        (ledger lines are never changed in place)."""
        v = result.verdict
        key = (id(v), result.check.fingerprint, result.check.path)
        found = self._lines.get(key)
        if found is not None and found[0] is v:
            return found[1]
        record = {
            "verdict": v.status, "reason": v.reason, "path": v.path or result.check.path,
            "lines": list(v.lines) if v.lines else None, "symbol": v.symbol, "hint": v.hint,
            "message": v.message if v.status == "error" else None,
            "sha256": v.file_sha[:SHA_DIGITS] if v.file_sha else None, "check": result.check.fingerprint,
        }
        line = {k: x for k, x in record.items() if x is not None}
        self._lines[key] = (v, line)  # v is kept, so that its id is not reused by another verdict
        return line

    def drop_entries(self, keep: set[str]) -> None:
        """Forget entries that no longer exist in the KB (records are replaced, never changed in place)."""
        for version, record in self.releases.items():
            if any(e not in keep for e in record["entries"]):
                entries = {e: value for e, value in record["entries"].items() if e in keep}
                self.releases[version] = {**record, "entries": entries}

    def copy(self) -> EngineLedger:
        """The ledger as it is now, untouched by later `record` and `drop_entries` (they replace records)."""
        return EngineLedger(self.engine, dict(self.releases))

    def to_text(self) -> str:
        return _dump({"engine": self.engine, "format": FORMAT_VERSION,
                      "releases": {v: self.releases[v] for v in self.versions()}})


#: json.dumps(value, sort_keys=True), without making a new encoder for each of the many verdict lines.
_sorted_json = json.JSONEncoder(sort_keys=True).encode


def _entry_block(value: dict, verdict_text: dict[int, tuple[dict, str]]) -> str:
    """The lines of one entry's record inside its braces: its verdict, then a check verdict per line."""
    lines = [f'          "verdict": {json.dumps(value["verdict"])},', '          "checks": {']
    checks = sorted(value["checks"].items())
    for ci, (check, verdict) in enumerate(checks):
        comma = "," if ci < len(checks) - 1 else ""
        encoded = verdict_text.get(id(verdict))  # lines shared by releases are encoded once
        if encoded is None or encoded[0] is not verdict:
            encoded = verdict_text[id(verdict)] = (verdict, _sorted_json(verdict))
        lines.append(f"            {json.dumps(check)}: {encoded[1]}{comma}")
    lines.append("          }")
    return "\n".join(lines)


def _dump(data: dict) -> str:
    """Deterministic JSON: nested objects indented, each check verdict on one line."""
    lines = ["{"]
    verdict_text: dict[int, tuple[dict, str]] = {}
    entry_text: dict[int, tuple[dict, str]] = {}
    lines.append(f'  "engine": {json.dumps(data["engine"])},')
    lines.append(f'  "format": {data["format"]},')
    lines.append('  "releases": {')
    releases = list(data["releases"].items())
    for ri, (version, record) in enumerate(releases):
        lines.append(f"    {json.dumps(version)}: {{")
        meta = [k for k in sorted(record) if k != "entries"]
        for key in meta:
            lines.append(f"      {json.dumps(key)}: {json.dumps(record[key])},")
        lines.append('      "entries": {')
        entries = sorted(record["entries"].items())
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
        if not isinstance(data, dict) or data.get("engine") != engine or not isinstance(data.get("releases"), dict):
            raise LedgerError(f"{path}: not a ledger of {engine}")
        if data.get("format", 0) > FORMAT_VERSION:
            raise LedgerError(f"{path}: written by a newer verifier (format {data['format']}); upgrade gotchas")
        return EngineLedger(engine, data["releases"])

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
