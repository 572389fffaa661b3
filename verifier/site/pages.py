"""The front page, the vocabulary pages, the engines' release lists, the legend and the 404 page."""

from __future__ import annotations

from ..model import HOLDS, NOT_AFFECTED, STATUSES, Entry
from . import release, words
from .model import Site
from .writer import Builder, Page


def entry_rows(site: Site, entries: list[Entry]) -> list[dict]:
    """Per entry: per engine, the runs of releases it bites (every claim holds), and its latest status."""
    rows = []
    for entry in entries:
        engines = []
        tokens = []
        for engine in entry.engines:
            st = site.status(entry, engine)
            bites = [r for r in st.ranges if r.status == HOLDS]
            engines.append({"engine": engine, "name": site.engine_name(engine), "latest": st.latest,
                            "latest_version": st.latest_version, "bites": bites,
                            "verified": st.verified.get(st.latest_version) if st.latest_version else None})
            tokens.append(f"{engine}:{words.css(st.latest)}")
            if bites and st.latest == NOT_AFFECTED:
                tokens.append(f"{engine}:fixed")
        rows.append({"entry": entry, "engines": engines, "status": " ".join(tokens)})
    return rows


#: The status filter: (value, label); a value matches a row's `engine:value` token.
_FILTERS = [(words.css(s), f"{words.word(s)} at the latest release") for s in STATUSES] + [
    ("fixed", "fixed: bites older releases only"), ("not-verified", "not verified at the latest release")]


def _index(b: Builder) -> None:
    site = b.site
    releases = [{"key": key, "name": view.engine.name, "versions": list(reversed(view.versions))}
                for key, view in site.engines.items() if view.versions]
    rows = entry_rows(site, site.entries)
    counts = {value: sum(1 for r in rows if any(t.split(":")[1] == value for t in r["status"].split()))
              for value, _ in _FILTERS}
    statuses = [(value, f"{label} ({counts[value]})") for value, label in _FILTERS if counts[value]]
    concepts = [t for t in site.kb.concepts if any(t in e.concepts for e in site.entries)]
    schemes = [t for t in site.kb.schemes if any(t == e.scheme for e in site.entries)]
    engines = [(key, view.engine.name) for key, view in site.engines.items()
               if any(key in e.engines for e in site.entries)]
    b.page(Page(("index.html",), "Gotchas of LLM serving engines", "index.html",
                {"releases": releases, "engines": engines, "rows": rows, "status_options": statuses,
                 "concepts": concepts, "schemes": schemes},
                "Operational gotchas of vLLM and SGLang, verified against every release."))


def _vocabulary(b: Builder) -> None:
    site = b.site
    for kind, terms, attr in (("concepts", site.kb.concepts, "concepts"), ("schemes", site.kb.schemes, "scheme")):
        items = []
        for term, description in terms.items():
            members = [e for e in site.entries if (term in e.concepts if attr == "concepts" else e.scheme == term)]
            items.append({"term": term, "description": description, "count": len(members)})
            b.page(Page((kind, term, "index.html"), f"{kind[:-1].capitalize()} {term}", "term.html",
                        {"kind": kind[:-1].capitalize(), "term": term, "lead": description,
                         "rows": entry_rows(site, members)}, description))
        b.page(Page((kind, "index.html"), kind.capitalize(), "terms.html", {"items": items}))


def _engines(b: Builder) -> None:
    site = b.site
    overview = []
    for key, view in site.engines.items():
        rows = []
        versions = view.versions
        for i, version in enumerate(versions):
            record = view.ledger.releases[version]
            counts = {s: sum(1 for e in record.entries.values() if e.status == s) for s in STATUSES}
            rows.append({"version": version, "date": record.date, "counts": counts, "commit": record.commit})
            release.build(b, key, view, version, versions[i - 1] if i else None,
                          versions[i + 1] if i + 1 < len(versions) else None)
        b.page(Page(("engines", key, "index.html"), f"{view.engine.name} releases", "releases.html",
                    {"key": key, "engine": view.engine, "rows": list(reversed(rows))}))
        overview.append({"key": key, "name": view.engine.name, "count": len(versions), "latest": view.latest})
    b.page(Page(("engines", "index.html"), "Engines", "engines.html", {"engines": overview}))


def _legend(b: Builder) -> None:
    b.page(Page(("legend", "index.html"), "What the statuses mean", "legend.html",
                {"statuses": words.STATUS_TERMS, "verdicts": words.VERDICT_TERMS,
                 "reasons": words.REASON_TERMS},
                "What holds, unverified, changed, not affected, missing, error and each reason mean."))


def _not_found(b: Builder) -> None:
    b.page(Page(("404.html",), "Page not found", "404.html", fixed_root=b.site.base_url))


def build(b: Builder) -> None:
    for render in (_index, _vocabulary, _engines, _legend, _not_found):
        render(b)
