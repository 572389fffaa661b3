"""Verdicts cached by (check, file content): a file that did not change between releases is not matched again.

Kept in SQLite under the cache directory. The key holds the verifier's version
(matching may change between versions), the check's fingerprint (what it looks
for) and the sha256 of the file's content. Only `holds` and `changed` are
cached: an `error` may be passing (a timeout) and is always recomputed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from . import __version__
from .cache import cache_dir
from .model import CHANGED, HOLDS, Check, Verdict


class VerdictCache:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "verdicts.sqlite3"
        self.hits = self.misses = 0
        try:
            self._db = sqlite3.connect(self.path, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS verdicts (verifier TEXT, check_fp TEXT, sha256 TEXT, verdict TEXT,"
                " PRIMARY KEY (verifier, check_fp, sha256))")
        except sqlite3.Error:
            self._db = None  # a cache that cannot open is no cache, not a failure

    def get(self, check: Check, sha256: str) -> Verdict | None:
        if self._db is None:
            return None
        try:
            row = self._db.execute(
                "SELECT verdict FROM verdicts WHERE verifier=? AND check_fp=? AND sha256=?",
                (__version__, check.fingerprint, sha256)).fetchone()
        except sqlite3.Error:
            row = None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        data = json.loads(row[0])
        lines = tuple(data["lines"]) if data.get("lines") else None
        return Verdict(data["status"], data.get("reason"), data.get("path"), lines, data.get("symbol"),
                       data.get("hint"), data.get("message"), sha256)

    def put(self, check: Check, verdict: Verdict) -> None:
        if self._db is None or verdict.status not in (HOLDS, CHANGED) or not verdict.file_sha:
            return
        data = {"status": verdict.status, "reason": verdict.reason, "path": verdict.path,
                "lines": list(verdict.lines) if verdict.lines else None, "symbol": verdict.symbol,
                "hint": verdict.hint, "message": verdict.message}
        try:
            with self._db:
                self._db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)",
                                 (__version__, check.fingerprint, verdict.file_sha, json.dumps(data)))
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
