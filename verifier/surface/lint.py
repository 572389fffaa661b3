"""Lint against the ledger and the release surface: the prose (G501, G504, G505, in `prose_lint`) and the conditions
(G502, G503) of an entry, judged at every release where the entry holds.

It reads the ledger (where each entry holds) and the surface files beside it, both committed, so it runs without the
network; `gotchas check` runs it unless `--offline`, and `verify` does not wait for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..model import HOLDS, Diagnostic, release_spans
from .model import ENV, Surface

if TYPE_CHECKING:
    from ..model import Entry


def surface_problems(entry: Entry, path: Path, ledgers: dict, surfaces: dict) -> list[Diagnostic]:
    """G501, G504 and G505 for one entry (`prose_lint`): `ledgers` and `surfaces` by engine (ledger.EngineLedger,
    store.EngineSurfaces). `path` is kept for callers; lines come from the entry."""
    from .prose_lint import prose_problems

    return prose_problems(entry, ledgers, surfaces)


CONDITION_CODE = "G502"


def condition_problems(entry: Entry, ledgers: dict, surfaces: dict) -> list[Diagnostic]:
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
        where: dict[str, str] = {}
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


def condition_setting_problems(entry: Entry, ledgers: dict, surfaces: dict) -> list[Diagnostic]:
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


__all__ = ["CONDITION_CODE", "SETTING_CODE", "condition_problems", "condition_setting_problems", "surface_problems"]
