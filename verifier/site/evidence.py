"""Evidence as a reader sees it: a few lines around a match, the first lines of a scope and its size for a
check that covers a whole scope, and links to code only where the file exists in that release."""

from __future__ import annotations

from dataclasses import dataclass

from ..kb import Engine
from ..ledger import WINDOW_CONTEXT, WINDOW_LINE, WINDOW_MATCH, CheckRecord, window_at
from ..model import MISSING, Check
from .model import EngineView, Site
from .safe import _q

#: Lines shown before and after a match; a match longer than MAX_MATCH lines is shown by its first lines (it
#: covers a scope more than it points at a line); characters of one line shown (the rest of a very long line is
#: cut, with an ellipsis). The ledger's evidence keeps that much of every release (`ledger.window`).
CONTEXT, MAX_MATCH, MAX_LINE = WINDOW_CONTEXT, WINDOW_MATCH, WINDOW_LINE
#: Lines of a scope shown for `absent` and whole-scope checks.
SCOPE_LINES = 5


@dataclass
class Row:
    number: int
    text: str
    hit: bool


@dataclass
class Excerpt:
    path: str
    rows: list[Row]
    match: tuple[int, int]
    scope: tuple[int, int] | None = None  # (first line, lines) when the excerpt is the start of a whole scope

    @property
    def first(self) -> int:
        return self.rows[0].number if self.rows else self.match[0]

    @property
    def last(self) -> int:
        return self.rows[-1].number if self.rows else self.match[1]


def _number(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def record(view: EngineView | None, key: str, version: str | None) -> dict | None:
    """The excerpt the ledger's evidence file keeps for `key` (entry/check) at `version`, or None when it has
    none of that release, or a record that is not one (the file is data: it is read, never trusted)."""
    data = view.evidence if view else None
    if not isinstance(data, dict) or data.get("version") != version or not isinstance(data.get("checks"), dict):
        return None
    found = data["checks"].get(key)
    if not isinstance(found, dict):
        return None
    start, match, lines, path = found.get("start"), found.get("match"), found.get("lines"), found.get("path")
    if not (_number(start) and isinstance(match, list) and len(match) == 2 and all(map(_number, match))
            and isinstance(lines, list) and all(isinstance(line, str) for line in lines) and isinstance(path, str)):
        return None
    return {"start": start, "match": tuple(match), "lines": lines, "path": path}


def at_release(view: EngineView | None, key: str, version: str, verdict: CheckRecord | None) -> dict | None:
    """What the evidence keeps of `key` (entry/check) at any release, as `record` gives it: the window of lines
    the site shows, at the place the ledger's verdict names. None when it has none (a file not read, a verdict
    without lines, a ledger older than the windows)."""
    data = view.evidence if view else None
    if not isinstance(data, dict) or verdict is None or not verdict.lines or not verdict.path:
        return None
    found = window_at(data, version, key)
    if found is None:
        return None
    start, lines = found
    return {"start": start, "match": tuple(verdict.lines), "lines": lines, "path": verdict.path}


def excerpt(evidence: dict | None, whole_scope: bool = False) -> Excerpt | None:
    """At most CONTEXT lines either side of a match of at most MAX_MATCH lines; for a check that covers a
    whole scope (`absent`, or a match longer than MAX_MATCH lines), its first SCOPE_LINES lines and its size."""
    if not evidence or not evidence["lines"]:
        return None
    start, lines = evidence["start"], evidence["lines"]
    first, last = evidence["match"]
    end = start + len(lines) - 1
    if first > last:
        first, last = last, first
    scope = None
    if whole_scope or last - first + 1 > MAX_MATCH:
        scope = (max(first, start), last - max(first, start) + 1)  # the window may stop before the scope ends
        low, high = scope[0], scope[0] + SCOPE_LINES - 1
        hits = range(0)
    else:
        low, high = first - CONTEXT, last + CONTEXT
        hits = range(first, last + 1)
    low, high = max(low, start), min(high, end)
    rows = [Row(n, _clip(lines[n - start]), n in hits) for n in range(low, high + 1)]
    return Excerpt(evidence["path"], rows, (first, last), scope)


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[:MAX_LINE] + " …"


def whole_scope(check: Check, verdict: CheckRecord | None) -> bool:
    """Whether the form a verdict is of looks at a whole scope (`absent`: nothing points at a line)."""
    forms = check.forms
    form = forms[verdict.form] if verdict and verdict.form is not None and 0 <= verdict.form < len(forms) else forms[0]
    return form.matcher == "absent"


def permalink(engine: Engine, ref: str, path: str, lines) -> str | None:
    """Where a reader sees the code at a release, by what the release is named in the repository (`ref`: its
    tag, or the commit a vendored engine's release holds; `EngineView.ref`); None when that is not known (a link
    only when the repository is a web URL)."""
    if not ref:
        return None
    base = engine.repository.rstrip("/").removesuffix(".git")
    anchor = ""
    if lines:
        anchor = f"#L{lines[0]}" + (f"-L{lines[1]}" if lines[1] != lines[0] else "")
    return f"{base}/blob/{_q(ref)}/{_q(path, safe='/')}{anchor}"


def code_link(site: Site, engine: str, version: str, verdict: CheckRecord | None) -> str | None:
    """The permalink of a verdict's place, only when its file exists in that release by the site's own
    verdicts (never for a `missing` file, an `error`, or a file no check found there)."""
    known = site.kb.engines.get(engine)
    if verdict is None or known is None or not verdict.path or engine not in site.engines:
        return None
    if verdict.path not in site.files_at(engine, version):
        return None
    lines = verdict.lines if verdict.verdict != MISSING else None
    return permalink(known, site.engines[engine].ref(version), verdict.path, lines)
