"""The JSON API: one file per entry, the whole KB, and the schema they follow. JSON is not HTML: written with
`_json`, never through a template."""

from __future__ import annotations

from .. import __version__
from ..compiled import condition_to_json
from ..model import STATUSES, VERDICTS, Entry
from ..urls import entry_url
from .model import Site
from .safe import _json
from .writer import Builder


def entry_json(site: Site, entry: Entry) -> dict:
    return {
        "id": entry.id, "title": entry.title, "scheme": entry.scheme, "severity": entry.severity,
        "concepts": list(entry.concepts),
        "engines": list(entry.engines), "references": list(entry.references),
        "history": [{"date": e.date.isoformat(), "note": e.note} for e in entry.history],
        "withdrawn": entry.withdrawn.isoformat() if entry.withdrawn else None,
        "sections": dict(entry.sections),
        "introduced": dict(entry.introduced), "fixed": dict(entry.fixed),
        "conditions": [condition_to_json(c) for c in entry.conditions],
        "checks": [{"id": c.id, "claim": c.claim, "engine": c.engine, "path": c.path, "in": c.scope,
                    "matcher": c.matcher, "pattern": c.pattern, "after": c.after, "adjacent": c.adjacent,
                    "since": c.since, "until": c.until, "values": {n: list(a) for n, a in c.values}, "part": c.part,
                    "earlier": [{"since": f.since, "until": f.until, "path": f.path, "in": f.scope,
                                 "matcher": f.matcher, "pattern": f.pattern, "after": f.after, "adjacent": f.adjacent}
                                for f in c.earlier]}
                   for c in entry.checks],
        "status": {engine: site.status(entry, engine).to_json() for engine in entry.engines},
        "parts": dict(entry.parts),
        "texts": {engine: texts(site, entry, engine) for engine in entry.engines},
        "url": entry_url(entry.id),
    }


def texts(site: Site, entry: Entry, engine: str) -> list[dict]:
    """The entry as it reads at each release of the engine where it has a record, one item per distinct reading
    (title, sections, the parts that hold) with its releases: the text for release R is the item listing R."""
    from .. import prose

    view = site.engines.get(engine)
    versions = [v for v in view.versions if view.ledger.entry(v, entry.id) is not None] if view else []
    return [{"releases": releases, "title": text.title, "sections": text.sections, "parts": text.parts}
            for releases, text in prose.readings(site.written.get(entry.id, entry), versions,
                                                 lambda v: site.text_at(entry, engine, v))]


def build(b: Builder) -> None:
    site = b.site
    entries = [entry_json(site, e) for e in site.entries]
    for data in entries:
        b.add(("api", "entries", f"{data['id']}.json"), _json(data, indent=1))
    kb = {
        "format": 3, "generated": site.generated, "verifier": __version__,
        "engines": {k: {"name": v.engine.name, "package": v.engine.package, "repository": v.engine.repository,
                        "releases": [{"version": ver, "date": v.ledger.releases[ver].date} for ver in v.versions]}
                    for k, v in site.engines.items()},
        "schemes": site.kb.schemes, "severities": site.kb.severities, "concepts": site.kb.concepts,
        "entries": entries,
    }
    b.add(("api", "kb.json"), _json(kb, indent=1))
    b.add(("api", "kb.schema.json"), _json(KB_JSON_SCHEMA, indent=1))


_STATUS_ENUM = {"enum": [*STATUSES, None]}
ENTRY_JSON_SCHEMA = {
    "type": "object",
    "required": ["id", "title", "scheme", "severity", "concepts", "engines", "checks", "status", "sections", "texts",
                 "url"],
    "properties": {
        "id": {"type": "string"}, "title": {"type": "string"}, "scheme": {"type": "string"},
        "severity": {"type": "string"},
        "concepts": {"type": "array", "items": {"type": "string"}},
        "engines": {"type": "array", "items": {"type": "string"}},
        "references": {"type": "array", "items": {"type": "string"}},
        "history": {"type": "array", "items": {"type": "object", "required": ["date", "note"]}},
        "withdrawn": {"type": ["string", "null"]},
        "sections": {"type": "object", "additionalProperties": {"type": "string"}},
        "conditions": {"type": "array", "items": {"type": "object", "required": [
            "engine", "kind", "flags", "env", "request", "endpoint", "only_if", "values", "negated", "default",
            "witness", "since", "until", "any"]}},
        "checks": {"type": "array", "items": {"type": "object",
                                              "required": ["id", "claim", "engine", "path", "matcher", "pattern"]}},
        "status": {"type": "object", "additionalProperties": {
            "type": "object",
            "required": ["engine", "latest_version", "latest", "introduced", "fixed", "ranges", "transitions",
                         "statuses", "verified"],
            "properties": {
                "latest": _STATUS_ENUM,
                "ranges": {"type": "array", "items": {
                    "type": "object", "required": ["status", "first", "last", "latest", "next"],
                    "properties": {"status": {"enum": list(STATUSES)}}}},
                "transitions": {"type": "array", "items": {
                    "type": "object", "required": ["check", "before_version", "after_version", "before", "after"],
                    "properties": {"before": {"$ref": "#/$defs/verdict"}, "after": {"$ref": "#/$defs/verdict"}}}},
                "statuses": {"type": "object", "additionalProperties": {"enum": list(STATUSES)}},
                "verified": {"type": "object", "additionalProperties": {
                    "type": "object", "required": ["verified", "claims"]}},
            }}},
        "parts": {"type": "object", "additionalProperties": {"type": "string"}},
        "texts": {"type": "object", "additionalProperties": {"type": "array", "items": {
            "type": "object", "required": ["releases", "title", "sections", "parts"],
            "properties": {"releases": {"type": "array", "items": {"type": "string"}}, "title": {"type": "string"},
                           "sections": {"type": "object", "additionalProperties": {"type": "string"}},
                           "parts": {"type": "array", "items": {"type": "string"}}}}},
                  "description": "per engine, the entry as it reads at each release: the item whose releases "
                                 "list R is the text for R (title and sections above read across every release)"},
        "url": {"type": "string"},
    },
}
KB_JSON_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gotchas: the whole knowledge base with its verdicts",
    "type": "object",
    "required": ["format", "generated", "engines", "schemes", "concepts", "entries"],
    "properties": {
        "format": {"const": 3}, "generated": {"type": "string"}, "verifier": {"type": "string"},
        "engines": {"type": "object", "additionalProperties": {"type": "object", "required": ["name", "releases"]}},
        "schemes": {"type": "object", "additionalProperties": {"type": "string"}},
        "concepts": {"type": "object", "additionalProperties": {"type": "string"}},
        "entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}},
    },
    "$defs": {"entry": ENTRY_JSON_SCHEMA,
              "verdict": {"type": "object", "required": ["verdict"],
                          "properties": {"verdict": {"enum": list(VERDICTS)}, "form": {"type": "integer"}}}},
}
