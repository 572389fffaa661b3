"""Upgrade pages: what changes from one release to another (`gotchas diff`), as a static page for every pair of
consecutive releases, from every release to the newest and from the last release of a minor series to the last of
each of the next three (`engines/<engine>/<from>...<to>/`, see `pairs`), and a picker (`engines/<engine>/upgrade/`)
that links to them and, with JavaScript, shows any pair.

A page says what the surface diff says (items removed, renamed, changed with the default and the line on both
sides, added) and which entries start and stop biting (history.between), with the checks whose verdict flipped.

The picker computes in the browser what `surface.diff.diff` and `history.between` compute here, from JSON this
module writes: `api/upgrade/<engine>.json` holds every item body of the engine once, numbered in the order diff
sorts items (kind, then name), and `api/upgrade/<engine>/<version>.json` holds a release's items as
[body, file, line] (and the file and line of the default when it is written elsewhere) and the status and check
verdicts of every entry. What JavaScript cannot compare as Python does becomes a number here: a default by what it
means (`0.90` is `0.9`), the spellings of a flag as argparse reads them (`flag_key`), the config field and the help
text a rename is paired by. The script then compares numbers and pairs renames by diff's three rules in its order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from packaging.version import InvalidVersion, Version

from .. import history
from ..model import HOLDS
from ..surface.diff import (  # diff's own rules, not copies
    RENAME_HELP,
    Change,
    default_key,
    diff,
)
from ..surface.model import FLAG, KINDS, Item, Surface, flag_key
from ..urls import entry_url
from . import evidence, words
from .model import EngineView, Site
from .safe import _json, _q, web_url
from .surface import KIND_VIEWS, blob, default_place, place, shown_default, surfaced
from .writer import Builder, Page

#: What a field of a change is called on a page.
FIELD_WORDS = {"default": "default", "choices": "choices", "aliases": "spellings", "deprecated": "deprecation"}
#: The sections of entries, by how their status moves.
BITING = (("start", "Gotchas that start biting", "start biting"), ("stop", "Gotchas that stop biting", "stop biting"),
          ("other", "Other status changes", "other status changes"))

FORMAT = 1


def upgrade_name(older: str, newer: str) -> str:
    return f"{older}...{newer}"


#: From the last release of a minor series (0.10.2), pages to the last release of each of this many later ones.
SERIES_AHEAD = 3


def series(version: str) -> tuple:
    """A release's minor series: 0.10 for 0.10.2 and 0.10.1.1."""
    try:
        return Version(version).release[:2]
    except InvalidVersion:
        return (version,)


def pairs(versions: list[str]) -> list[tuple[str, str]]:
    """The upgrades with a page, oldest first: every release to the next and to the newest, and the last release of
    each minor series to the last of each of the SERIES_AHEAD series after it (0.10.2 to 0.11.2, 0.12.0, 0.13.0)."""
    found = []
    heads: dict[tuple, str] = {}
    for version in versions:
        heads[series(version)] = version  # versions are oldest first: the last one of a series stays
    lasts = list(heads.values())
    for i, older in enumerate(versions[:-1]):
        found.append((older, versions[i + 1]))
        if older in lasts:
            at = lasts.index(older)
            found += [(older, newer) for newer in lasts[at + 1:at + 1 + SERIES_AHEAD]]
        found.append((older, versions[-1]))
    unique = dict.fromkeys(found)
    order = {v: n for n, v in enumerate(versions)}
    return sorted(unique, key=lambda p: (order[p[0]], order[p[1]]))


# --- the static pages ----------------------------------------------------------------------------------------

def _side(view: EngineView, surface: Surface, item: Item | None, change: Change) -> dict | None:
    if item is None:
        return None
    mode, text = shown_default(item)
    return {"mode": mode, "default": text, "deprecated": item.deprecated,
            "where": place(view, surface, item.path, item.line),
            "default_where": default_place(view, surface, item),
            "spellings": item.spellings() if "aliases" in change.fields else None,
            "choices": item.choices if "choices" in change.fields else None}


def change_word(change: Change) -> str:
    if not change.fields:
        return change.what
    return f"{change.what}: {', '.join(FIELD_WORDS[f] for f in change.fields)}"


def change_rows(b: Builder, view: EngineView, older: Surface, newer: Surface, result) -> list[dict]:
    """Per kind, its rows as markup. A row is rendered once for all the pages that show it: the items added by
    the newest release are the same rows on the page from every release to it."""
    macro = b.env.get_template("macros.html").module.change_row  # type: ignore[attr-defined]  # a macro of it
    sections = []
    for kind in KINDS:
        title, anchor, name_header, *_ = KIND_VIEWS[kind]
        rows = []
        for c in result.of(kind=kind):
            key = (kind, c.what, c.fields, c.name, id(c.before), older.version if c.before else None, id(c.after),
                   newer.version if c.after else None)
            found = _ROWS.get(key)
            if found is None:
                found = _ROWS[key] = macro({
                    "word": change_word(c), "old_name": c.before.name if c.what == "renamed" else None,
                    "name": c.name, "before": _side(view, older, c.before, c), "after": _side(view, newer, c.after, c)})
            rows.append(found)
        sections.append({"kind": kind, "title": title, "anchor": anchor, "name_header": name_header, "rows": rows})
    return sections


#: Rendered rows by what they show, for one build (`build` empties it): items are told apart by identity, which
#: the release surfaces share between releases where an item stays as it was, at the same place.
_ROWS: dict[tuple, object] = {}


def _record_view(site: Site, key: str, version: str, record) -> dict:
    url = evidence.code_link(site, key, version, record)
    return {"verdict": record.verdict, "path": record.path, "lines": record.lines, "symbol": record.symbol,
            "url": url if url and web_url(url) else None}


def entry_changes(site: Site, key: str, view: EngineView, older: str, newer: str) -> dict[str, list[dict]]:
    """history.between's changes of the entries the site has, as (start, stop, other) biting."""
    titles = {e.id: e.title for e in site.entries}
    groups: dict[str, list[dict]] = {group: [] for group, *_ in BITING}
    for change in history.between(view.ledger, older, newer):
        if change.entry not in titles:
            continue
        group = "start" if change.after == HOLDS else "stop" if change.before == HOLDS else "other"
        groups[group].append({
            "entry": change.entry, "title": titles[change.entry], "before": change.before, "after": change.after,
            "checks": [{"check": t.check, "before": _record_view(site, key, older, t.before),
                        "after": _record_view(site, key, newer, t.after)} for t in change.checks]})
    return groups


def _page(b: Builder, key: str, view: EngineView, older: str, newer: str) -> None:
    site = b.site
    engine = view.engine
    a, z = surfaced(view, older), surfaced(view, newer)
    result = diff(a, z) if a is not None and z is not None else None
    groups = entry_changes(site, key, view, older, newer)
    context = {"key": key, "engine": engine, "older": older, "newer": newer, "newest": view.latest,
               "sections": change_rows(b, view, a, z, result) if result and a is not None and z is not None else [],
               "counts": result.counts() if result else None, "groups": groups, "biting": BITING,
               "missing": [v for v, s in ((older, a), (newer, z)) if s is None],
               "older_surface": a is not None, "newer_surface": z is not None}
    b.page(Page(("engines", key, upgrade_name(older, newer), "index.html"),
                f"Upgrading {engine.name} from {older} to {newer}", "upgrade.html", context,
                f"What changes from {engine.name} {older} to {newer}: flags, environment variables, metrics "
                "and request fields, and the gotchas that start or stop biting."))


def _picker(b: Builder, key: str, view: EngineView, pages: list[tuple[str, str]]) -> None:
    versions = view.versions
    following = {v: versions[i + 1] for i, v in enumerate(versions[:-1])}
    rows = []
    for version in reversed(versions[:-1]):
        later = [newer for older, newer in pages
                 if older == version and newer not in (following[version], versions[-1])]
        rows.append({"version": version, "next": following[version],
                     "newest": versions[-1] if following[version] != versions[-1] else None, "series": later})
    context = {"key": key, "engine": view.engine, "versions": versions, "rows": rows,
               "default_from": versions[-2] if len(versions) > 1 else None, "default_to": versions[-1],
               "data": {"engine": key, "json": f"api/upgrade/{_q(key)}.json", "release": f"api/upgrade/{_q(key)}/",
                        "pages": [upgrade_name(*p) for p in pages]}}
    b.page(Page(("engines", key, "upgrade", "index.html"), f"Upgrading {view.engine.name}", "upgrades.html",
                context, f"What changes when you upgrade {view.engine.name} from one release to another."))


# --- the JSON the picker reads -------------------------------------------------------------------------------

class _Numbers:
    """Each distinct value once, as a number from 0."""

    def __init__(self) -> None:
        self.found: dict = {}

    def __call__(self, value) -> int | None:
        if value is None:
            return None
        return self.found.setdefault(value, len(self.found))


def _body(item: Item, numbers: dict[str, _Numbers]) -> list:
    """An item as the browser's diff needs it: [kind, name, how its default is shown, that default's text, the
    default by what it means, aliases, choices, deprecated, its spellings as flag_key reads them, the config field
    and the help text a rename may pair it by] (each of the last four, and the meaning, as numbers)."""
    mode, text = shown_default(item)
    field = item.detail if item.kind == FLAG and "." in item.detail else None  # diff's rename rules, as diff has them
    text_help = item.help if len(item.help) >= RENAME_HELP else None
    return [KINDS.index(item.kind), item.name, mode, text, numbers["default"](repr(default_key(item))),
            list(item.aliases), list(item.choices), 1 if item.deprecated else 0,
            sorted({numbers["spelling"](flag_key(s)) for s in item.spellings()}),
            numbers["field"](field), numbers["help"](text_help)]


def engine_json(site: Site, key: str, view: EngineView) -> tuple[dict, Iterator[tuple[str, dict]]]:
    """The engine's file (every item body once, the releases, the words) and each release's file, (version,
    data), made as the iterator is read: together they hold every entry's verdicts at every release, which the
    build writes one release at a time."""
    numbers = {name: _Numbers() for name in ("default", "spelling", "field", "help")}
    surfaces = {v: surfaced(view, v) for v in view.versions}
    bodies: dict[str, list] = {}
    made: dict[int, str] = {}  # id(item) -> its body's text: releases share unchanged items
    for surface in surfaces.values():
        for item in (surface.items.values() if surface is not None else ()):
            if id(item) not in made:
                body = _body(item, numbers)
                text = json.dumps(body, ensure_ascii=False)
                bodies.setdefault(text, body)
                made[id(item)] = text
    order = sorted(bodies, key=lambda text: (bodies[text][0], bodies[text][1], text))  # diff's order
    index = {text: n for n, text in enumerate(order)}
    titles = {e.id: e.title for e in site.entries}
    releases = ((version, _release_json(site, key, view, version, surface, made, index, titles))
                for version, surface in surfaces.items())
    data = {
        "format": FORMAT, "engine": key, "name": view.engine.name, "versions": view.versions,
        "kinds": [[kind, *KIND_VIEWS[kind][:3]] for kind in KINDS],
        "field_words": FIELD_WORDS, "biting": [list(g) for g in BITING],
        "words": [[status, words.word(status), words.STATUS_ICONS.get(status, "?"), words.css(status)]
                  for status in words.STATUS_WORDS],
        "entries": {e: [title, entry_url(e)] for e, title in titles.items()}, "items": [bodies[text] for text in order],
        "surfaces": [v for v, s in surfaces.items() if s is not None],
    }
    return data, releases


def _release_json(site: Site, key: str, view: EngineView, version: str, surface: Surface | None, made: dict,
                  index: dict, titles: dict) -> dict:
    found: dict = {"version": version, "blob": None, "files": [], "quoted": {}, "items": None}
    if surface is not None:
        where = surface.files
        paths = sorted({p for i in surface.items.values() for p in (i.path, getattr(i, "default_path", "")) if p})
        number = {p: n for n, p in enumerate(paths)}
        rows = []
        for item in surface.items.values():
            row = [index[made[id(item)]], number[item.path] if item.path else -1, item.line]
            if getattr(item, "default_path", ""):
                row += [number[item.default_path], item.default_line]
            rows.append(row)
        rows.sort()
        found.update(blob=blob(view.engine, view.ref(version)), files=paths, items=rows,
                     linked=[n for n, p in enumerate(paths) if p in where],
                     quoted={str(n): _q(p, safe="/") for n, p in enumerate(paths) if _q(p, safe="/") != p})
    entries = {}
    release = view.ledger.releases.get(version)
    for entry_id, record in sorted((release.entries if release else {}).items()):
        if entry_id not in titles:
            continue
        checks = {}
        for check_id, verdict in sorted(record.checks.items()):
            shown = _record_view(site, key, version, verdict)
            checks[check_id] = [verdict.verdict, verdict.form, verdict.path, list(verdict.lines) if verdict.lines
                                else None, verdict.symbol, shown["url"]]
        entries[entry_id] = [record.status, checks]
    found["entries"] = entries
    return found


def build(b: Builder) -> None:
    site = b.site
    _ROWS.clear()
    for key, view in site.engines.items():
        versions = view.versions
        if not versions:
            continue
        pages = pairs(versions)
        for older, newer in pages:
            _page(b, key, view, older, newer)
        _picker(b, key, view, pages)
        data, releases = engine_json(site, key, view)
        b.add(("api", "upgrade", f"{key}.json"), _json(data))
        for version, release in releases:
            b.add(("api", "upgrade", key, f"{version}.json"), _json(release))
    _ROWS.clear()
