"""The search index (search/documents.json) and the search page. The browser ranks: every word must occur,
an exact identifier or the whole phrase ranks its entry first (site/assets/site.js)."""

from __future__ import annotations

import re

from ..matchers import REGISTRY
from ..model import Entry
from .safe import _json
from .text import _plain
from .writer import Builder, Page, entry_url


def _identifiers(entry: Entry) -> list[str]:
    found = set()
    for text in entry.sections.values():
        found.update(re.findall(r"`([^`\n]{2,80})`", text))
    for check in entry.checks:
        if REGISTRY[check.matcher].search in ("text", "symbol"):  # words a reader may search for
            found.add(check.pattern)
        if check.scope:
            found.add(check.scope)
    return sorted(found)


def documents(entries: list[Entry], site=None) -> list[dict]:
    """One search document per entry; with the site, each engine's status at its newest release (a result says
    it beside the title, with the severity)."""
    latest = {}
    if site is not None:
        from . import words
        from .pages import entry_rows

        latest = {row["entry"].id: [[e["name"], e["latest_version"] or "", words.word(e["latest"])]
                                    for e in row["engines"]] for row in entry_rows(site, entries)}
    return [{
        "severity": entry.severity, "latest": latest.get(entry.id, []),
        "id": entry.id, "url": entry_url(entry.id), "title": entry.title, "scheme": entry.scheme,
        "concepts": " ".join(entry.concepts), "engines": " ".join(entry.engines),
        "symptom": " ".join(_plain(entry.sections.get("Symptom", "")).split()),
        "text": " ".join(" ".join(_plain(entry.sections.get(s, "")) for s in ("Root cause", "Workaround", "Notes"))
                         .split()),
        "identifiers": " ".join(_identifiers(entry)),
        "code": " ".join(" ".join(filter(None, (c.claim, c.pattern, c.scope, c.after))) for c in entry.checks),
    } for entry in entries]


def build(b: Builder) -> None:
    b.add(("search", "documents.json"), _json(documents(b.site.entries, b.site)))
    # the releases, as the front page's release form has them: a version typed in the search box leads to its page
    releases = [{"key": key, "name": view.engine.name, "versions": list(reversed(view.versions))}
                for key, view in b.site.engines.items() if view.versions]
    b.pages.append(Page(("search", "index.html"), "Search", "search.html", {"releases": releases}))
