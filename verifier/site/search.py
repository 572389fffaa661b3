"""The search index and the search page. The browser reads search/head.json for the first query (titles,
symptoms' starts, identifiers: some 60 KB) and search/documents.json after it (the whole text), and ranks: every
word must occur, an exact identifier or the whole phrase ranks its entry first (site/assets/site.js)."""

from __future__ import annotations

import json
import re

from ..matchers import REGISTRY
from ..model import Entry
from ..urls import entry_url
from .text import _plain
from .writer import Builder, Page


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


#: What the first query reads (search/head.json): a symptom's first characters and a document's identifiers
#: that look like one (a `_`, `-`, `.`, `:`, `/`, `=` or a capital inside: what is typed as written) of at most
#: HEAD_IDENTIFIER characters. The whole documents (search/documents.json) follow, for the full text.
HEAD_SYMPTOM, HEAD_IDENTIFIER = 280, 40
#: a flag, or a name with `_`, `.`, `:`, `/`, `=` or a capital inside (a bare kebab-case word is an id: not typed)
_IDENTIFIER_LIKE = re.compile(r"^--|[_.:/=]|[a-z][A-Z]")
HEAD_FIELDS = ("id", "title", "severity", "latest", "scheme", "concepts", "engines")  # the URL is the id's


def head(docs: list[dict]) -> list[dict]:
    """The documents as the first query reads them: what a result shows and what most queries match, without
    the Root cause, Workaround, Notes and code (a query that needs those gets its results when they arrive)."""
    found = []
    for doc in docs:
        words: list[str] = []
        for word in doc["identifiers"].split(" "):
            word = word.strip(".,;()[]{}'\"")
            if 1 < len(word) <= HEAD_IDENTIFIER and _IDENTIFIER_LIKE.search(word) and word not in words:
                words.append(word)
        symptom = doc["symptom"]
        if len(symptom) > HEAD_SYMPTOM:
            cut = symptom.rfind(" ", 0, HEAD_SYMPTOM)
            symptom = symptom[:cut if cut > 0 else HEAD_SYMPTOM]
        found.append({**{k: doc[k] for k in HEAD_FIELDS}, "symptom": symptom, "identifiers": " ".join(words)})
    return found


def _compact(data) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


def build(b: Builder) -> None:
    docs = documents(b.site.entries, b.site)
    b.add(("search", "head.json"), _compact(head(docs)))
    b.add(("search", "documents.json"), _compact(docs))
    # the releases, as the front page's release form has them: a version typed in the search box leads to its page
    releases = [{"key": key, "name": view.engine.name, "versions": list(reversed(view.versions))}
                for key, view in b.site.engines.items() if view.versions]
    b.page(Page(("search", "index.html"), "Search", "search.html", {"releases": releases}))
