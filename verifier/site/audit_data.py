"""`api/audit.json`: what the front page's "paste your deployment" box (site/assets/audit.js) audits a serve command
line with, in the browser, as `gotchas audit --serve` does. It is the KB compiled for audit, made by the function that
compiles it for the CLI (`compiled.compile_loaded`, on the site's own KB, ledgers and release surfaces), less what the
box does not use (the engines' packages, the entries' engines, the skipped ids), and packed; audit.js unpacks it into
the compiled KB's own shape (`unpack`), and the tests check that what it unpacks is `subset` of the compiled KB. Its
`format` is this file's (FORMAT), `kb_format` the compiled KB's.

Packing, each step undone by audit.js's `unpack`:

- a set of releases of one engine (a condition's `confirmed`, the releases of a reading in `texts`) is runs of indices
  into the engine's `releases`, `[[first, last], ...]`;
- an entry's `statuses` of an engine is one letter per release of the engine (`STATUS_LETTERS`; `-` no record);
- a condition's `defaults` (release -> [value, "path:line"]) is `[[value, path, [[first, last, line], ...]], ...]`: per
  value and file, the runs of releases where it is at one line (`_defaults`);
- a condition leaves out `kind` (the condition's fields say it again) and every key of `CONDITION_KEYS` whose value is
  that key's default there (null, [], {}, `negated` false): a key is left out only where the Python code reads it
  as the same thing (`data.get`, or a value of no effect);
- a reading (`texts`) is `[runs, title, workaround, parts]`, with null for a title or workaround that is the entry's
  own, and without `parts` when it has none; `withdrawn` is there only when the entry is withdrawn.
"""

from __future__ import annotations

import json
from typing import Any

from .. import compiled
from .model import SiteError
from .writer import Builder

FORMAT = 1
PATH = ("api", "audit.json")
STATUS_LETTERS = {"holds": "h", "unverified": "u", "changed": "c", "not-affected": "n"}
NO_RECORD = "-"
#: A compiled condition's keys with the value a packed condition leaves out (audit.js puts it back).
CONDITION_KEYS: dict[str, Any] = {
    "engine": None, "flags": [], "env": None, "request": None, "endpoint": None, "only_if": None,
    "values": [], "negated": False, "default": None, "witness": None, "since": None, "until": None,
    "set": None, "any": [], "confirmed": [], "defaults": {}, "spellings": []}
ENTRY_KEYS = ("id", "title", "severity", "workaround", "withdrawn", "texts", "conditions", "statuses")


def subset(kb: dict) -> dict:
    """The part of a compiled KB the box audits with, as audit.js unpacks it: every condition with every key of
    CONDITION_KEYS (its default where the compiled one has none) and no `kind`."""
    return {
        "format": kb["format"], "compiled_by": kb.get("compiled_by"), "severities": list(kb.get("severities") or []),
        "engines": {key: {"name": e["name"], "releases": list(e["releases"])} for key, e in kb["engines"].items()},
        "surface": kb.get("surface") or {},
        "entries": [{**{key: entry.get(key) for key in ENTRY_KEYS},
                     "conditions": [_full_condition(c) for c in entry["conditions"]]} for entry in kb["entries"]],
    }


def _full_condition(data: dict) -> dict:
    full = {key: data[key] if key in data else json.loads(json.dumps(default))  # a list or dict of its own
            for key, default in CONDITION_KEYS.items()}
    full["any"] = [_full_condition(member) for member in data.get("any") or ()]
    return full


def pack(kb: dict) -> dict:
    """The compiled KB as api/audit.json holds it (the module's docstring says how)."""
    releases = {key: e["releases"] for key, e in kb["engines"].items()}
    index = {key: {v: i for i, v in enumerate(versions)} for key, versions in releases.items()}

    def runs(engine: str, versions) -> list[list[int]]:
        try:
            return compiled._runs([index[engine][v] for v in versions])
        except KeyError as exc:
            raise SiteError(f"api/audit.json: {exc} is not a tracked release of {engine}") from None

    def condition(data: dict) -> dict:
        engine = data["engine"]
        packed = {}
        for key, default in CONDITION_KEYS.items():
            value = data.get(key, default)
            if value == default and type(value) is type(default):  # `default: false` is not `default: null`
                continue
            if key == "any":
                value = [condition(member) for member in value]
            elif key == "confirmed":
                value = runs(engine, value)
            elif key == "defaults":
                value = _defaults(value, index[engine], engine)
            packed[key] = value
        return packed

    def entry(data: dict) -> dict:
        packed = {"id": data["id"], "title": data["title"], "severity": data.get("severity"),
                  "workaround": data.get("workaround", "")}
        if data.get("withdrawn"):
            packed["withdrawn"] = data["withdrawn"]
        packed["texts"] = {engine: [[runs(engine, t["releases"]),
                                     None if t["title"] == data["title"] else t["title"],
                                     None if t["workaround"] == data.get("workaround", "") else t["workaround"],
                                     *([t["parts"]] if t["parts"] else [])] for t in variants]
                           for engine, variants in data.get("texts", {}).items()}
        packed["conditions"] = [condition(c) for c in data["conditions"]]
        statuses = {}
        for engine, by_release in data["statuses"].items():
            unknown = set(by_release) - set(index[engine])
            if unknown or not set(by_release.values()) <= set(STATUS_LETTERS):
                raise SiteError(f"api/audit.json: {data['id']} has statuses of {engine} it cannot pack: "
                                f"{sorted(unknown) or sorted(set(by_release.values()) - set(STATUS_LETTERS))}")
            statuses[engine] = "".join(STATUS_LETTERS[by_release[v]] if v in by_release else NO_RECORD
                                       for v in releases[engine])
        packed["statuses"] = statuses
        return packed

    return {"format": FORMAT, "kb_format": kb["format"], "compiled_by": kb.get("compiled_by"),
            "severities": list(kb.get("severities") or []),
            "engines": {key: {"name": e["name"], "releases": list(e["releases"])} for key, e in kb["engines"].items()},
            "surface": kb.get("surface") or {}, "entries": [entry(e) for e in kb["entries"]]}


def _defaults(defaults: dict, index: dict, engine: str) -> list:
    """release -> [value, "path:line"] as [[value, path, [[first, last, line], ...]], ...]: per value and file, the
    runs of releases (indices) where the default is at one line (null: `where` is not "path:line", it is `path`)."""
    by_place: dict[str, list] = {}
    for version, (value, where) in sorted(defaults.items(), key=lambda kv: index.get(kv[0], -1)):
        if version not in index:
            raise SiteError(f"api/audit.json: {version!r} is not a tracked release of {engine}")
        path, line = where, None
        head, colon, tail = where.rpartition(":")
        if colon and tail.isascii() and tail.isdigit() and str(int(tail)) == tail:
            path, line = head, int(tail)
        runs = by_place.setdefault(json.dumps([value, path]), [value, path, []])[2]
        at = index[version]
        if runs and runs[-1][1] == at - 1 and runs[-1][2] == line:
            runs[-1][1] = at
        else:
            runs.append([at, at, line])
    return list(by_place.values())


def encode(kb: dict) -> bytes:
    """api/audit.json's bytes: packed, without a space (as `_json` writes JSON, a lone surrogate as its escape)."""
    return json.dumps(pack(kb), ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


def compile_site(site) -> dict:
    """The compiled KB of the site's own KB, ledgers and release surfaces (what `gotchas audit --kb` reads of the
    same checkout: `gotchas site` builds only from a KB whose every entry is lint-clean, the entries it compiles).
    An engine of the registry the site has no ledger of has an empty one."""
    from ..ledger import EngineLedger

    views = {key: site.engines.get(key) for key in site.kb.engines}
    ledgers = {key: EngineLedger(key) if view is None else view.ledger for key, view in views.items()}
    return compiled.compile_loaded(site.kb, ledgers, {key: None if view is None else view.surfaces
                                                      for key, view in views.items()})


def build(b: Builder) -> None:
    b.add(PATH, encode(compile_site(b.site)))
