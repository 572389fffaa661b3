"""The addresses of the site's pages, for every output that links to them: the site's own pages and feeds,
`audit` (text, JSON, Markdown, SARIF's `helpUri`) and `verify --report`.

An address is relative to the site's root (`entries/<id>/`, as the site's pages link to each other), or from the
site's URL when one is given (`https://gotchas.example/entries/<id>/`). Each name is one part of the path,
quoted: an entry id is kebab-case (lint G204), but a name from data never adds a `/`, `?` or `#` of its own.
"""

from __future__ import annotations

from urllib.parse import quote


def _part(name: str) -> str:
    return quote(name, safe="", errors="replace")


def _from(base: str, path: str) -> str:
    return f"{base.rstrip('/')}/{path}" if base else path


def entry_url(entry_id: str, base: str = "") -> str:
    """An entry's page: `entries/<id>/`, from `base` (the site's URL) when given."""
    return _from(base, f"entries/{_part(entry_id)}/")


def release_url(engine: str, version: str, base: str = "") -> str:
    """A release's page: `engines/<engine>/<version>/`, from `base` (the site's URL) when given."""
    return _from(base, f"engines/{_part(engine)}/{_part(version)}/")
