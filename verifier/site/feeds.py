"""Atom feeds (new entries; status changes, per engine and in all) and the sitemap, from XML templates."""

from __future__ import annotations

import re
from typing import Any

from .. import history
from ..urls import entry_url, release_url
from .safe import _q
from .text import _plain
from .writer import Builder


def _timestamp(date: str | None, fallback: str) -> str:
    return f"{date}T00:00:00Z" if date and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) else fallback


def _atom(b: Builder, name: str, title: str, items: list[dict]) -> None:
    base = b.site.base_url
    b.add(("feeds", name), b.render("feed.xml", title=title, self_url=f"{base}feeds/{_q(name)}", site_url=base,
                                    items=items, updated=b.site.generated))


def build(b: Builder) -> None:
    site = b.site
    base = site.base_url
    new_entries: list[dict[str, Any]] = []
    for entry in site.entries:
        first = min((e.date for e in entry.history), default=None)
        new_entries.append({"title": entry.title, "id": f"{base}{entry_url(entry.id)}", "engines": entry.engines,
                            "link": f"{base}{entry_url(entry.id)}",
                            "updated": _timestamp(first.isoformat() if first else None, site.generated),
                            "summary": _plain(entry.sections.get("Symptom", ""))[:500]})
    new_entries.sort(key=lambda i: i["updated"], reverse=True)
    _atom(b, "entries.xml", "gotchas: new entries", new_entries)
    for key, view in site.engines.items():
        _atom(b, f"{key}-entries.xml", f"gotchas: new {view.engine.name} entries",
              [n for n in new_entries if key in n["engines"]])
    titles = {e.id: e.title for e in site.entries}
    everything = []
    for key, view in site.engines.items():
        items = []
        for c in history.status_changes(view.ledger, view.versions):
            if c.entry not in titles:
                continue
            items.append({
                "title": f"{view.engine.name} {c.after_version}: {titles[c.entry]} — {c.before} → {c.after}",
                "id": f"{base}{release_url(key, c.after_version)}#{_q(c.entry)}",
                "link": f"{base}{release_url(key, c.after_version)}",
                "updated": _timestamp(view.ledger.releases[c.after_version].date, site.generated),
                "summary": "; ".join(t.summary for t in c.checks)
                           or f"{c.before} in {c.before_version}, {c.after} in {c.after_version}",
            })
        items.sort(key=lambda i: i["updated"], reverse=True)
        everything.extend(items)
        _atom(b, f"{key}.xml", f"gotchas: {view.engine.name} status changes", items)
    everything.sort(key=lambda i: i["updated"], reverse=True)
    _atom(b, "changes.xml", "gotchas: status changes", everything)


def sitemap(b: Builder) -> None:
    base = b.site.base_url
    urls = [base + p.url for p in b.pages if p.path != ("404.html",)]
    b.add(("sitemap.xml",), b.render("sitemap.xml", urls=urls))
