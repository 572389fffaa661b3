"""Plain typed values shared by every stage: entries, checks, diagnostics, verdicts."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property

#: The matchers of FORMAT.md, in the order they are documented.
MATCHERS = ("contains", "absent", "string", "matches", "defines", "query")

HOLDS = "holds"
CHANGED = "changed"
ERROR = "error"

#: Reasons a check is `changed` (the code moved away from the claim).
CHANGED_REASONS = ("file-missing", "symbol-missing", "not-found", "out-of-order", "not-adjacent", "present")
#: Reasons a check is `error` (the machinery could not decide).
ERROR_REASONS = ("unavailable", "invalid", "unparsable")


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in an entry, with the place a contributor must look at."""

    path: str
    line: int
    code: str
    message: str
    column: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.code} {self.message}"


@dataclass(frozen=True)
class Check:
    """One claim about an engine's source code; exactly one matcher."""

    id: str
    claim: str
    engine: str
    path: str
    matcher: str
    pattern: str
    scope: str | None = None  # the `in` key
    after: str | None = None
    adjacent: bool = False
    line: int = 0  # line of the check's `- id:` item in the entry file

    @property
    def is_python(self) -> bool:
        return is_python_path(self.path)

    @cached_property  # asked for every verdict of every release; a frozen dataclass keeps it valid
    def fingerprint(self) -> str:
        """A short hash of what the check looks for: a verdict is reused only while it is unchanged."""
        spec = [self.engine, self.path, self.matcher, self.pattern, self.scope, self.after, self.adjacent]
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class HistoryEvent:
    date: _dt.date
    note: str


@dataclass
class Entry:
    """One gotcha: front matter, body sections, and where each field was written."""

    id: str
    file: str  # path of the Markdown file as given to the loader
    title: str = ""
    scheme: str = ""
    concepts: tuple[str, ...] = ()
    engines: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    history: tuple[HistoryEvent, ...] = ()
    withdrawn: _dt.date | None = None
    checks: tuple[Check, ...] = ()
    sections: dict[str, str] = field(default_factory=dict)  # section title -> Markdown
    lines: dict[str, int] = field(default_factory=dict)  # field or section name -> line

    def line_of(self, key: str) -> int:
        return self.lines.get(key, 1)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check against one snapshot of one release."""

    status: str  # holds | changed | error
    reason: str | None = None
    path: str | None = None
    lines: tuple[int, int] | None = None
    symbol: str | None = None
    hint: str | None = None
    message: str | None = None
    file_sha: str | None = None  # sha256 of the file content the verdict was computed from

    def to_json(self) -> dict:
        return {
            "verdict": self.status,
            "reason": self.reason,
            "path": self.path,
            "lines": list(self.lines) if self.lines else None,
            "symbol": self.symbol,
            "hint": self.hint,
            "message": self.message,
        }


def is_python_path(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


def combine(statuses) -> str:
    """An entry's verdict for one engine at one release, from its checks' verdicts."""
    statuses = list(statuses)
    if statuses and all(s == HOLDS for s in statuses):
        return HOLDS
    if any(s == CHANGED for s in statuses):
        return CHANGED
    return ERROR


@dataclass(frozen=True)
class Release:
    """One release of an engine as a source knows it."""

    engine: str
    version: str
    date: str | None = None  # ISO date of publication, when known
    identity: str | None = None  # what was read: archive digest, commit, or a directory
    url: str | None = None  # where a reader can see the release's code (a tag on the forge), when known


@dataclass(frozen=True)
class CheckResult:
    """One check of one entry at one release: what the reports print and the ledger keeps."""

    entry: str
    check: Check
    release: Release
    verdict: Verdict
    file: str = ""  # the entry's file, for annotations at the check's line

    def to_json(self) -> dict:
        return {
            "kind": "check",
            "entry": self.entry,
            "check": self.check.id,
            "engine": self.release.engine,
            "version": self.release.version,
            **self.verdict.to_json(),
            "claim": self.check.claim,
            "file": self.file,
            "line": self.check.line,
        }
