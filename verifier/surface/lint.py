"""Lint against the release surface (G501): a flag, environment variable or metric that an entry's title, Symptom,
Root cause or Workaround names must exist in every release where the entry holds.

It reads the ledger (where each entry holds) and the surface files beside it, both committed, so it runs without the
network; `gotchas check` runs it unless `--offline`, and `verify` does not wait for it. A name belongs to an engine
of the entry when some recorded release of that engine has it (a vLLM flag in an entry about both engines is not
looked for in SGLang); a name no engine of the entry has in any recorded release is reported too (a typo, or a
name that never existed). Until sentences can be bounded to releases, the way to answer a finding is the prose:
say from which release the flag exists, or name the one each range has.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model import HOLDS, Diagnostic, release_spans
from .model import ENV, FLAG, METRIC, Surface

CODE = "G501"  # what it catches is written in lint.RULES, with the other codes

_FLAG = re.compile(r"(?<![\w/.-])--[a-z0-9][a-z0-9_-]*[a-z0-9]")
_ENV = re.compile(r"\b(?:VLLM|SGLANG|SGL)_[A-Z0-9_]*[A-Z0-9]\b")
_METRIC = re.compile(r"\b(?:vllm|sglang):[a-z0-9_:]*[a-z0-9]\b")
#: What Prometheus adds to a metric's name when it is exported (a counter's `_total`, a histogram's series).
_METRIC_SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created")
_PROSE_SECTIONS = ("Symptom", "Root cause", "Workaround")


def mentions(lines: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """(line, kind, name) of each flag, variable and metric named in the numbered lines, once per line."""
    found = []
    for number, text in lines:
        seen = set()
        for kind, pattern in ((FLAG, _FLAG), (ENV, _ENV), (METRIC, _METRIC)):
            for m in pattern.finditer(text):
                if (kind, m.group()) not in seen:
                    seen.add((kind, m.group()))
                    found.append((number, kind, m.group()))
    return found


def _prose_lines(path: Path, entry) -> list[tuple[int, str]]:
    """The title's line and the lines of the Symptom, Root cause and Workaround sections, numbered as in the file."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return []
    chosen = []
    title_line = entry.lines.get("title")
    if title_line:
        chosen.append((title_line, lines[title_line - 1] if title_line <= len(lines) else entry.title))
    starts = sorted((line, title) for key, line in entry.lines.items() if key.startswith("section:")
                    for title in [key.split(":", 1)[1]])
    for index, (start, title) in enumerate(starts):
        if title not in _PROSE_SECTIONS:
            continue
        end = starts[index + 1][0] - 1 if index + 1 < len(starts) else len(lines)
        chosen += [(n, lines[n - 1]) for n in range(start + 1, end + 1) if n <= len(lines)]
    return chosen


def _has(surface: Surface, kind: str, name: str) -> bool:
    if kind == FLAG:
        return surface.flag(name) is not None
    if kind == ENV:
        return (ENV, name) in surface.items
    names = {name} | {name[:-len(s)] for s in _METRIC_SUFFIXES if name.endswith(s)}
    return any((METRIC, n) in surface.items for n in names)


def surface_problems(entry, path: Path, ledgers: dict, surfaces: dict) -> list[Diagnostic]:
    """G501, G504 and G505 for one entry (`prose_lint`): `ledgers` and `surfaces` by engine (ledger.EngineLedger,
    store.EngineSurfaces). `path` is kept for callers; lines come from the entry."""
    from .prose_lint import prose_problems

    return prose_problems(entry, ledgers, surfaces)


CONDITION_CODE = "G502"


def condition_problems(entry, ledgers: dict, surfaces: dict) -> list[Diagnostic]:
    """G502 for one entry: a condition whose written `default` is not the default the code gives the setting (a
    literal in the release surface) in releases where the entry holds. The surface wins in `audit`; the entry
    should say the same, or bound the condition (`since`/`until`) to where it is true."""
    from ..model import setting_value
    from .conditions import surface_default

    found = []
    for condition in (s for c in entry.conditions for s in c.settings()):
        if condition.default is None or condition.computed:
            continue
        stored, ledger = surfaces.get(condition.engine), ledgers.get(condition.engine)
        if stored is None or ledger is None:
            continue
        holds = [v for v in stored.versions() if condition.applies(v)
                 and (r := ledger.entry(v, entry.id)) is not None and r.status == HOLDS]
        differs: dict[str, list[str]] = {}
        where = {}
        for version in holds:
            default = surface_default(condition, stored.surface(version))
            if default is None or default[0] == "computed":
                continue
            if setting_value(default[0]) != setting_value(condition.default):
                differs.setdefault(str(default[0]), []).append(version)
                where.setdefault(str(default[0]), default[1])
        for value, versions in differs.items():
            found.append(Diagnostic(entry.file, condition.line, CONDITION_CODE,
                                    f"condition on {condition.setting}: default {condition.default!r}, but the code "
                                    f"of {condition.engine} {release_spans(versions, holds)} gives {value!r} "
                                    f"({where[value]}); bound the condition to where it is true"))
    return found


SETTING_CODE = "G503"


def condition_setting_problems(entry, ledgers: dict, surfaces: dict) -> list[Diagnostic]:
    """G503 for one entry: a condition on a flag or an engine variable (VLLM_..., SGLANG_...) that the code of a
    release does not have, in releases where the condition (and its `any`) applies and the entry holds: no
    deployment can set it there, so the condition should be bounded (`since`/`until`) to the releases that have
    it. Request fields are not judged: an engine may accept a field it does not declare."""
    found = []
    conditions = [(top, c) for top in entry.conditions for c in ([top] if not top.any else top.any)]
    for top, condition in conditions:
        if condition.kind not in ("flag", "env") or condition.env and not condition.env.startswith(
                {"vllm": ("VLLM_",), "sglang": ("SGLANG_", "SGL_")}.get(condition.engine, ("",))):
            continue
        line = condition.line
        stored, ledger = surfaces.get(condition.engine), ledgers.get(condition.engine)
        if stored is None or ledger is None:
            continue
        holds = [v for v in stored.versions() if top.applies(v) and condition.applies(v)
                 and (r := ledger.entry(v, entry.id)) is not None and r.status == HOLDS]
        lacking = [v for v in holds if not _has_setting(stored.surface(v), condition)]
        if lacking:
            word = {"flag": "flag", "env": "variable"}[condition.kind]
            found.append(Diagnostic(entry.file, line, SETTING_CODE,
                                    f"condition on the {word} {condition.setting}: {condition.engine} "
                                    f"{release_spans(lacking, holds)} does not have it, where the entry holds; bound "
                                    f"the condition (since/until) to the releases that have it"))
    return found


def _has_setting(surface: Surface, condition) -> bool:
    if condition.kind == "flag":
        return any(surface.flag(f) is not None for f in condition.flags)
    return (ENV, condition.env) in surface.items


__all__ = ["CODE", "CONDITION_CODE", "SETTING_CODE", "condition_problems", "condition_setting_problems", "mentions",
           "surface_problems"]
