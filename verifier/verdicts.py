"""Verdicts cached by (form, file content): a file that did not change between releases is not matched again.

Kept in SQLite under the cache directory. The key holds the verifier's version
and a digest of its matching code (`SEMANTICS`: matching may change between
versions, and during development within one), the form's fingerprint (what it looks
for) and the sha256 of the file's content. `holds`, `changed` and `missing` are
cached, and so is `error invalid`: the form's own fault (a pattern that does not
compile, or runs past its bounds on this content), the same on the same content,
so that a check that runs to its bound pays it once, not in every run. Other
errors are the machinery's (a download, an archive, a process, a time budget
spent, a file too deeply nested to analyse) and are always recomputed.

A run asks the same questions many times (every check, at every release), so
the cache answers from memory: the first question about a check loads every
verdict stored for it in one query, and new verdicts are written in batches
(`flush`, called once per release and on `close`), one transaction each.
Losing unflushed verdicts (a crash) costs only their re-evaluation.

It also remembers, for the run, which content a source's own identity of a
file stands for (a git blob id), so that a snapshot that knows the identity of
a file without reading it (`digest`) can be answered without reading it.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import TypeGuard

from . import __version__
from .cache import ADVICE, CacheFolderError, cache_dir
from .model import CHANGED, ERROR, HOLDS, MISSING, Form, Verdict

#: What the cache keeps, as a number: 2 since `error invalid` verdicts are kept too.
FORMAT = 2


def _semantics() -> str:
    """The verifier's version, the cache's FORMAT and a digest of the code that decides verdicts and searches
    (matching, evaluation, and which verdicts are kept): a cached answer is reused only by the same code, so
    that a change to the matcher, released or not, never meets the answers of the one before."""
    import hashlib

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([here / "evaluate.py", here / "locate.py", here / "matchers.py", here / "reading.py",
                        here / "verdicts.py",
                        *(here / "code").glob("*.py")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{__version__}+{FORMAT}+{digest.hexdigest()[:12]}"


#: The key under which this verifier's cached verdicts and searches are kept.
SEMANTICS = _semantics()

#: Verdicts kept unwritten at most before they are written in one transaction.
BATCH = 1000

#: The files SQLite keeps beside the database (write-ahead log, its shared memory, a rollback journal).
_BESIDE = ("-wal", "-shm", "-journal")


def _refusal(path: Path, reason: str) -> CacheFolderError:
    return CacheFolderError(f"cache file {path}: {reason}; {ADVICE}")


def _regular_or_absent(path: Path) -> os.stat_result | None:
    """`path`'s lstat when it is a regular file, None when there is none; CacheFolderError for a link (dangling
    too), a FIFO, a folder or a device in its place."""
    try:
        info = os.lstat(path)
    except OSError:
        return None  # no file there (or no folder to hold one): SQLite says whether it can make one
    if stat.S_ISLNK(info.st_mode):
        raise _refusal(path, "a symbolic link, which the cache never writes through (remove it)")
    if not stat.S_ISREG(info.st_mode):
        raise _refusal(path, "not a regular file (remove it)")
    return info


def connect(path: Path, *setup: str) -> sqlite3.Connection | None:
    """The SQLite database at `path`, with the statements `setup` run on it, opened only as a regular file of
    its own: a link planted there (or at the journal files beside it), a FIFO or a folder is CacheFolderError,
    never followed (SQLite resolves a link to the database and writes its journal beside the target). The file
    is made with O_NOFOLLOW first, and checked again once SQLite has it open. None when SQLite cannot use the
    file or run `setup` (a cache that cannot open is no cache)."""
    for suffix in _BESIDE:
        _regular_or_absent(Path(f"{path}{suffix}"))
    _regular_or_absent(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                     0o600)
    except OSError as exc:
        if exc.errno in (errno.EISDIR, errno.ELOOP):  # a folder, or a link swapped in since the lstat
            raise _refusal(path, "not a regular file (remove it)") from None
        return None  # a cache that cannot open is no cache (a read-only folder is the cache folder's own error)
    try:
        opened = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(opened.st_mode):
        raise _refusal(path, "not a regular file (remove it)")
    try:
        db = sqlite3.connect(path, timeout=30)
    except sqlite3.Error:
        return None
    now = _regular_or_absent(path)  # the file SQLite opened is still the one checked (no link swapped in)
    if now is None or (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
        db.close()
        raise _refusal(path, "replaced while it was opened")
    try:
        for statement in setup:
            db.execute(statement)
    except sqlite3.Error:
        db.close()
        return None
    return db


class VerdictCache:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "verdicts.sqlite3"
        self.hits = self.misses = 0
        self._known: dict[str, dict[str, Verdict | str]] = {}  # fingerprint -> sha256 -> verdict (or its JSON)
        self._pending: list[tuple[str, str, str, str]] = []
        self._contents: dict[str, str] = {}  # a source's identity of a file -> sha256 of its content
        self._db: sqlite3.Connection | None = connect(  # None: a cache that cannot open is no cache, not a failure
            self.path, "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",  # a cache: durability of the last batch is not needed
            "CREATE TABLE IF NOT EXISTS verdicts (verifier TEXT, check_fp TEXT, sha256 TEXT, verdict TEXT,"
            " PRIMARY KEY (verifier, check_fp, sha256))")

    def _verdicts_of(self, fingerprint: str) -> dict[str, Verdict | str]:
        known = self._known.get(fingerprint)
        if known is None:
            known = self._known[fingerprint] = {}
            if self._db is not None:
                try:
                    rows = self._db.execute("SELECT sha256, verdict FROM verdicts WHERE verifier=? AND check_fp=?",
                                            (SEMANTICS, fingerprint)).fetchall()
                except sqlite3.Error:
                    rows = []
                known.update(rows)
        return known

    def get(self, check: Form, sha256: str) -> Verdict | None:
        known = self._verdicts_of(check.fingerprint)
        found = known.get(sha256)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        if isinstance(found, str):  # as stored: decoded once, on first use
            try:
                found = known[sha256] = _decode(found, sha256)
            except (ValueError, KeyError, TypeError, AttributeError):  # a damaged row is a miss
                del known[sha256]
                self.hits -= 1
                self.misses += 1
                return None
        return found

    def put(self, check: Form, verdict: Verdict) -> None:
        if not kept(verdict) or not verdict.file_sha:
            return
        self._verdicts_of(check.fingerprint)[verdict.file_sha] = verdict
        if self._db is None:
            return
        self._pending.append((SEMANTICS, check.fingerprint, verdict.file_sha, _encode(verdict)))
        if len(self._pending) >= BATCH:
            self.flush()

    def content_of(self, identity: str) -> str | None:
        """The sha256 of the content a source's identity of a file (a git blob id) stands for, if seen."""
        return self._contents.get(identity)

    def learn(self, identity: str, sha256: str) -> None:
        self._contents[identity] = sha256

    def flush(self) -> None:
        """Write the verdicts not written yet, in one transaction."""
        if self._db is None or not self._pending:
            return
        pending, self._pending = self._pending, []
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)", pending)
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._db is not None:
            self.flush()
            self._db.close()
            self._db = None


def kept(verdict: Verdict) -> bool:
    """Whether a verdict is a fact about the form and the content alone, kept for the next run: not an error
    of the machinery (see the module's docstring)."""
    return verdict.status in (HOLDS, CHANGED, MISSING) or (verdict.status == ERROR and verdict.reason == "invalid")


def _encode(verdict: Verdict) -> str:
    return json.dumps(verdict.to_json())


def _decode(stored: str, sha256: str) -> Verdict:
    return Verdict.from_json(json.loads(stored), sha256)


class SearchCache:
    """Searches of a whole release (where a symbol is defined, where a fragment occurs), by release and query.

    A relocation hint or a `gotchas trace` step reads every Python file of a
    release to answer one question; the answer depends only on the release's
    content (its identity: an archive's sha256 or a commit) and the question,
    so it is kept in the cache directory's SQLite file beside the verdicts and
    asked again for free. A release without a stable identity (a directory) is
    never cached.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "verdicts.sqlite3"
        self.hits = self.misses = 0
        self._memory: dict[tuple[str, str, str], list] = {}
        self._db: sqlite3.Connection | None = connect(
            self.path, "PRAGMA journal_mode=WAL",
            "CREATE TABLE IF NOT EXISTS searches (verifier TEXT, release TEXT, kind TEXT, query TEXT, found TEXT,"
            " PRIMARY KEY (verifier, release, kind, query))")

    @staticmethod
    def cacheable(identity: str | None) -> TypeGuard[str]:
        return identity is not None and bool(identity) and not identity.startswith("dir:")

    def get(self, identity: str | None, kind: str, query: str) -> list | None:
        """The stored answer (plain JSON values), or None when it was never asked."""
        if not self.cacheable(identity):
            return None
        key = (identity, kind, query)
        found = self._memory.get(key)
        if found is None and self._db is not None:
            try:
                row = self._db.execute("SELECT found FROM searches WHERE verifier=? AND release=? AND kind=? AND "
                                       "query=?", (SEMANTICS, identity, kind, query)).fetchone()
                found = json.loads(row[0]) if row else None
            except (sqlite3.Error, ValueError):
                found = None
            if found is not None and not isinstance(found, list):
                found = None
            if found is not None:
                self._memory[key] = found
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, identity: str | None, kind: str, query: str, found: list) -> None:
        if not self.cacheable(identity):
            return
        self._memory[(identity, kind, query)] = found
        if self._db is None:
            return
        try:
            with self._db:
                self._db.execute("INSERT OR REPLACE INTO searches VALUES (?, ?, ?, ?, ?)",
                                 (SEMANTICS, identity, kind, query, json.dumps(found)))
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
