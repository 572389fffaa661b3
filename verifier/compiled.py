"""The KB compiled for `gotchas audit`: what an audit needs of every entry, with its status at every release.

`audit` must work from an installed wheel, with no checkout: the wheel carries
this compilation as package data (`verifier/kb.json`), written at build time by
`setup.py` from the checkout's entries and ledger, so that the data shipped is
always the data the wheel was built from (a committed copy would go stale with
every nightly ledger update). A checkout (`--kb DIR`, or the checkout an
editable install runs from) is compiled on the fly, the same way.

Per entry: id, title, severity, engines, the first step of its Workaround (title and step as they read across
every release, and per engine as they read at each release, with the parts that hold there: `texts`), its conditions
(`when`), and per engine the status at each release of the ledger (recomputed
from the check verdicts with the entry's `introduced`/`fixed`, as `show` does),
and per condition the releases where its witness check holds and, from the release surface, the default the code
of each release gives its setting.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from . import __version__
from .errors import EXIT_ERROR, GotchasError
from .model import Condition, version_key

FORMAT = 3  # 3: texts per release (bounded prose, values, parts); 2: severity, conditions of every kind
PACKAGED = "kb.json"  # beside this module, in a wheel
#: The largest compiled KB read (today's is about 0.3 MB).
MAX_BYTES = 32 << 20


class CompiledKBError(GotchasError, exit_code=EXIT_ERROR):
    """The compiled KB (packaged, or compiled from a checkout) cannot be read or made; the message says why."""


def compile_kb(root: str | os.PathLike) -> dict:
    """The compiled KB of a checkout: its entries (lint-clean ones only) and its ledger."""
    from . import kb as kb_module
    from .ledger import DEFAULT_DIR, Ledger, LedgerError

    root = Path(root)
    try:
        kb = kb_module.load(root)
    except kb_module.KBError as exc:
        raise CompiledKBError(str(exc)) from None
    ledger = Ledger(root / DEFAULT_DIR)
    try:
        ledgers = {engine: ledger.load(engine) for engine in kb.engines}
        surfaces = {engine: ledger.load_surfaces(engine) for engine in kb.engines}
    except LedgerError as exc:
        raise CompiledKBError(str(exc)) from None
    return compile_loaded(kb, ledgers, surfaces)


def compile_loaded(kb, ledgers: dict, stored_surfaces: dict) -> dict:
    """The compiled KB of a KB already loaded, from its engines' ledgers (EngineLedger) and release surfaces
    (surface.store.EngineSurfaces) by engine: what `compile_kb` makes of a checkout, for a caller that holds them
    (`gotchas site`, whose ledger may be another folder: `--ledger`)."""
    from . import lint, prose
    from .entries import load_entry
    from .ledger import status_of
    from .model import entry_rules
    from .surface.store import EngineSurfaces

    surfaces = {engine: _Surfaces(EngineSurfaces(engine) if stored_surfaces.get(engine) is None
                                  else stored_surfaces[engine]) for engine in kb.engines}
    skipped = []
    entries = []
    names = {key: e.name for key, e in kb.engines.items()}
    for path in kb.entry_files():
        loaded = load_entry(path, display=f"gotchas/{path.name}")
        entry = loaded.entry
        if entry is None or lint.lint(loaded, kb):
            skipped.append(path.stem)  # an entry with lint problems is not audited: what it says is not sure
            continue
        statuses: dict[str, dict[str, str]] = {}
        for engine in entry.engines:
            bounds = entry_rules(entry, engine)
            found = {}
            for version, release in ledgers[engine].releases.items():
                record = release.entries.get(entry.id)
                if record is not None:
                    found[version] = status_of(version, record.checks, bounds)
            statuses[engine] = dict(sorted(found.items(), key=lambda kv: version_key(kv[0])))
        def compiled_condition(condition: Condition, entry=entry) -> dict:
            """The condition, with where its default is known: the releases where its witness holds, and the
            code's default per release (the release surface); an `any` carries its alternatives so."""
            data = condition_to_json(condition)
            data["any"] = [compiled_condition(member) for member in condition.any]
            if condition.kind not in ("flag", "env"):
                return {**data, "confirmed": [], "defaults": {}}
            confirmed = [v for v, release in ledgers[condition.engine].releases.items()
                         if (record := release.entries.get(entry.id)) is not None
                         and (check := record.checks.get(condition.witness or "")) is not None
                         and check.verdict == "holds"]
            defaults, spellings = _from_surfaces(condition, surfaces[condition.engine],
                                                 ledgers[condition.engine].versions())
            # `set:` asks only whether the setting is given, under any of its spellings: no default to carry
            return {**data, "confirmed": sorted(confirmed, key=version_key),
                    "defaults": defaults if condition.given is None else {}, "spellings": spellings}

        conditions = [compiled_condition(c) for c in entry.conditions]
        across = prose.entry_text(entry, None, None, ledgers, kb.engines, names, surfaces)
        entries.append({
            "id": entry.id,
            "title": across.title,
            "severity": entry.severity,
            "engines": list(entry.engines),
            "workaround": first_step(across.sections.get("Workaround", "")),
            "texts": {engine: _texts(entry, engine, ledgers, kb.engines, names, surfaces)
                      for engine in entry.engines},
            "withdrawn": entry.withdrawn.isoformat() if entry.withdrawn else None,
            "conditions": conditions,
            "statuses": statuses,
        })
    from .deployment import BuildsError, vendored_data

    vendored = {}  # what audit needs of a vendored engine's builds (llama.cpp): commits, build numbers, flag grammars
    try:
        for key, e in kb.engines.items():
            builds = vendored_data(kb.root, key, ledgers[key], stored_surfaces.get(key) or EngineSurfaces(key),
                                   ledgers[key].versions()) if e.vendored_at else None
            if builds is not None:
                vendored[key] = builds
    except BuildsError as exc:
        raise CompiledKBError(str(exc)) from None
    return {
        "format": FORMAT,
        "compiled_by": f"gotchas {__version__}",
        "vendored": vendored,
        "severities": list(kb.severities),
        "surface": {key: _spellings(surfaces[key], ledgers[key].versions()) for key in kb.engines},
        "engines": {key: {"name": e.name, "package": e.package,
                          "releases": ledgers[key].versions()} for key, e in kb.engines.items()},
        "entries": entries,
        "skipped": skipped,
    }


def _texts(entry, engine: str, ledgers: dict, engines, names, surfaces) -> list[dict]:
    """The entry's title, first workaround step and parts as they read at each release of the engine where it has
    a record, one item per distinct reading, with its releases: `audit` prints the one of the audited release."""
    from . import prose

    ledger = ledgers[engine]
    versions = [v for v in ledger.versions() if ledger.entry(v, entry.id) is not None]
    order = {v: i for i, v in enumerate(versions)}
    variants: dict[tuple, list[str]] = {}  # readings that differ only past the workaround's first step are one
    for releases, text in prose.readings(
            entry, versions, lambda v: prose.entry_text(entry, engine, v, ledgers, engines, names, surfaces)):
        key = (text.title, first_step(text.sections.get("Workaround", "")), tuple(text.says))
        variants.setdefault(key, []).extend(releases)
    return [{"releases": sorted(found, key=order.__getitem__), "title": title, "workaround": workaround,
             "parts": list(parts)} for (title, workaround, parts), found in variants.items()]


def text_at(entry: dict, engine: str, release: str) -> dict:
    """A compiled entry as it reads at one release: its `title`, `workaround` and `parts` those of the release."""
    for variant in entry.get("texts", {}).get(engine, ()):
        if release in variant["releases"]:
            return {**entry, "title": variant["title"], "workaround": variant["workaround"],
                    "parts": variant["parts"]}
    return entry


class _Surfaces:
    """An engine's recorded surfaces, each release's made once for all the conditions and the spellings."""

    def __init__(self, stored) -> None:
        self.releases = stored.releases
        self._stored = stored
        self._made: dict = {}

    def versions(self) -> list[str]:
        return self._stored.versions()

    def surface(self, version: str):
        if version not in self._made:
            self._made[version] = self._stored.surface(version)
        return self._made[version]


def _spellings(surfaces, versions: list[str]) -> dict:
    """What audit needs to tell a deployment that a setting does not exist in its release: for each flag spelling
    (as `deployment.flag_key` writes it) and variable, the runs of releases (indices into `versions`) that have it.
    Empty when no release of the ledger has a recorded surface."""
    from .deployment import flag_key
    from .surface.model import ENV, FLAG

    recorded = [i for i, v in enumerate(versions) if v in surfaces.releases]
    flags: dict[str, list[int]] = {}
    env: dict[str, list[int]] = {}
    choices: dict[str, dict[tuple, list[int]]] = {}  # spelling -> its choices -> the releases with them
    for index in recorded:
        surface = surfaces.surface(versions[index])
        for item in surface.items.values():
            if item.kind == FLAG:
                for spelling in item.spellings():
                    flags.setdefault(flag_key(spelling), []).append(index)
                    if item.choices:
                        choices.setdefault(flag_key(spelling), {}).setdefault(tuple(item.choices), []).append(index)
            elif item.kind == ENV:
                env.setdefault(item.name, []).append(index)
    return {"recorded": _runs(recorded), "flags": {k: _runs(v) for k, v in sorted(flags.items())},
            "env": {k: _runs(v) for k, v in sorted(env.items())},
            "choices": {k: [[_runs(v), list(c)] for c, v in by.items()] for k, by in sorted(choices.items())}} \
        if recorded else {}


def _runs(indices: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return runs


def _from_surfaces(condition: Condition, surfaces, versions: list[str]) -> tuple[dict[str, list], list[str]]:
    """From the release surface of each release of the ledger that has the condition's setting (found once per
    release): release -> [default, "path:line"] where the condition applies (verifier.surface.conditions), and
    every other spelling the code of any release gives the flag (its aliases; not `--no-X`), so that a deployment's
    `-tp` meets a condition written on `--tensor-parallel-size`."""
    from .surface.conditions import item_default, setting_item

    defaults: dict[str, list] = {}
    spellings: set[str] = set()
    for version in versions:
        surface = surfaces.surface(version)
        item = setting_item(condition, surface) if surface is not None else None
        if item is None:
            continue
        if condition.flags:
            spellings.update(s for s in item.spellings() if not s.startswith("--no-"))
        if condition.applies(version):
            defaults[version] = list(item_default(condition, item))
    return defaults, sorted(spellings - set(condition.flags))


def condition_to_json(condition: Condition) -> dict:
    return {"engine": condition.engine, "kind": condition.kind, "flags": list(condition.flags), "env": condition.env,
            "request": condition.request, "endpoint": condition.endpoint, "only_if": condition.fact,
            "values": list(condition.values), "negated": condition.negated, "default": condition.default,
            "witness": condition.witness, "since": condition.since, "until": condition.until,
            "set": condition.given, "any": [condition_to_json(member) for member in condition.any]}


def condition_from_json(data: dict) -> Condition:
    return Condition(data["engine"], tuple(data["flags"]), data["env"], tuple(data["values"]), data["negated"],
                     data["default"], data["witness"], data["since"], data["until"], 0, data.get("request"),
                     data.get("endpoint"), data.get("only_if"),
                     tuple(condition_from_json(member) for member in data.get("any") or ()), data.get("set"))


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def first_step(markdown: str) -> str:
    """The first paragraph or list item of a section, on one line (`- Start the server with ...`); a paragraph
    that ends with a colon takes the item it introduces."""
    blocks: list[list[str]] = []
    for line in markdown.strip().split("\n"):
        if not line.strip() or _LIST_ITEM.match(line):
            if blocks and blocks[-1]:
                if not " ".join(blocks[-1]).rstrip().endswith(":"):
                    break
                blocks.append([])
            if not line.strip():
                continue
        if not blocks:
            blocks.append([])
        blocks[-1].append(_LIST_ITEM.sub("", line, count=1) if not blocks[-1] else line)
    return " ".join(" ".join(" ".join(b) for b in blocks).split())


def write(root: str | os.PathLike, target: str | os.PathLike) -> dict:
    """Compile a checkout into `target` (what `setup.py` does at build time)."""
    data = compile_kb(root)
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    return data


def packaged_path() -> Path:
    return Path(__file__).resolve().parent / PACKAGED


def load_packaged() -> dict | None:
    """The compiled KB this installation ships, or None when it ships none (an editable install, a checkout)."""
    path = packaged_path()
    if not path.is_file():
        return None
    return read(path)


def read(path: str | os.PathLike) -> dict:
    from .safety import PathError, read_regular

    try:
        data = read_regular(Path(path), MAX_BYTES)
    except (PathError, OSError) as exc:
        raise CompiledKBError(f"{path}: cannot read the compiled KB: {exc}") from None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CompiledKBError(f"{path}: not a compiled KB: {exc}") from None
    if not isinstance(value, dict) or value.get("format") != FORMAT or not isinstance(value.get("entries"), list) \
            or not isinstance(value.get("engines"), dict):
        raise CompiledKBError(f"{path}: not a compiled KB of format {FORMAT}; reinstall gotchas")
    return value
