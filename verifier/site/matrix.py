"""The matrix of an engine (`engines/<engine>/matrix/`): every entry of the engine (rows) at every release
(columns), in the manner of caniuse.com's tables. Each cell says the entry's status at that release by colour and
by symbol (`words.STATUS_ICONS`, the `cell-<status>` classes of the entry page's strip) and links to the entry page
at that release (`entries/<id>/?release=<version>#evidence`). Rows come the worst severity first (the KB's order
of `severities.yaml`), then by title; `assets/matrix.js` filters them by severity and by area (the scheme), and
without JavaScript the whole table shows.

The cells are worked out here, once, so that the template prints each of some 2,000 cells with no logic: the
page stays small (each cell is one link) and its markup plain."""

from __future__ import annotations

from ..model import ERROR, HOLDS, UNVERIFIED, Entry
from . import words
from .model import EngineView, Site
from .writer import Builder, Page

#: A status in a cell, in words: "holds" is what a release page calls it, "bites".
CELL_WORDS = {HOLDS: "bites"}

#: The statuses the legend line names, in the order it names them (an error appears only where one occurred).
LEGEND = (HOLDS, UNVERIFIED, "changed", "not-affected", None)


def cell_word(status) -> str:
    return CELL_WORDS.get(status, words.word(status))


def _anchor(status) -> str:
    """The legend's term for a status in a cell; an entry's `error` (every check failed to evaluate) is the
    verdict's term, the legend having no such entry status."""
    return words.verdict_anchor(status) if status == ERROR else words.status_anchor(status)


def order(site: Site, entries: list[Entry]) -> list[Entry]:
    """The worst severity first (the KB's order; an entry without one last), then by title."""
    rank = {term: i for i, term in enumerate(site.kb.severities)}
    return sorted(entries, key=lambda e: (rank.get(e.severity, len(rank)), e.title.casefold(), e.id))


def rows(site: Site, key: str, view: EngineView, versions: list[str]) -> list[dict]:
    """Per entry of the engine: its cells at `versions`, each (version, css class suffix, icon, label)."""
    name = view.engine.name
    found = []
    for entry in order(site, [e for e in site.entries if key in e.engines]):
        st = site.status(entry, key)
        statuses = dict(st.statuses)
        cells = []
        for version in versions:
            status = statuses.get(version)
            label = f"{name} {version}: {cell_word(status)}"
            if status == UNVERIFIED and version in st.verified:
                label += " ({} of {} claims verified)".format(*st.verified[version])
            cells.append((version, words.css(status), words.STATUS_ICONS.get(status, "?"), label))
        found.append({"entry": entry, "cells": cells})
    return found


def _options(values: list[str], present: list[str]) -> list[tuple[str, int]]:
    """The filter's options: the vocabulary's terms, in its order, that some row has, with how many do."""
    return [(term, present.count(term)) for term in values if term in present]


def build(b: Builder) -> None:
    site = b.site
    for key, view in site.engines.items():
        # Newest first: the releases a reader most likely runs stand beside the titles, in sight without scrolling
        # sideways (on a phone, the first few columns are all one sees), and the release list page reads the same
        # way. The entry page's strip, a timeline, runs the other way, oldest on the left.
        versions = list(reversed(view.versions))
        found = rows(site, key, view, versions)
        entries = [r["entry"] for r in found]
        severities = _options(list(site.kb.severities), [e.severity for e in entries])
        schemes = _options(list(site.kb.schemes), [e.scheme for e in entries])
        legend = [{"status": s, "css": words.css(s), "icon": words.STATUS_ICONS[s], "word": cell_word(s),
                   "anchor": _anchor(s)} for s in LEGEND]
        if any(cell[1] == words.css(ERROR) for r in found for cell in r["cells"]):
            legend.append({"status": ERROR, "css": words.css(ERROR), "icon": words.STATUS_ICONS[ERROR],
                           "word": cell_word(ERROR), "anchor": _anchor(ERROR)})
        context = {"key": key, "engine": view.engine, "versions": versions, "rows": found,
                   "severities": severities, "schemes": schemes, "legend": legend}
        name = view.engine.name
        b.page(Page(("engines", key, "matrix", "index.html"), f"{name}: every gotcha at every release",
                    "matrix.html", context,
                    f"Which gotchas bite each {name} release: every entry at every release, in one table."))
