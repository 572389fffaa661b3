"""Build the static site from the entries and the ledger folder.

It reads only entries, the KB's own data and the ledger (with its evidence files); it writes HTML that works
without JavaScript, JSON for tools, Atom feeds and SVG badges. URLs are stable: `entries/<id>/`,
`concepts/<term>/`, `schemes/<term>/`, `engines/<engine>/<version>/`, `engines/<engine>/<version>/surface/`,
`engines/<engine>/<from>...<to>/`, `engines/<engine>/upgrade/`, `engines/<engine>/matrix/`, `legend/`.

Pages, feeds, the sitemap and badges come from Jinja2 templates under site/templates with autoescape on, and
every value printed passes `safe.finalize` (characters XML 1.0 does not allow become U+FFFD); a URL from data
becomes a link only through `_link` (http(s) or relative); JSON is written by `_json`; Markdown is rendered
with raw HTML off and only safe links. Every file goes through `Builder._put`, which writes only under the
output folder (names are single path parts, never `..`, never through a link) and never over a file, as soon as
it is made (a folder of its own inside the output folder holds them until the build is done); the output
folder is replaced only when the site built it (`MARKER`).

Modules by job: `model` (the view model), `pages`, `entry`, `release` (HTML pages), `surface` (a release's
flags, variables, metrics and request fields), `upgrade` (what changes between two releases, and the JSON the
upgrade picker computes any pair from), `matrix` (an engine's entries by its releases), `search`, `feeds`,
`api` (JSON), `audit_data` (the JSON the front page's "paste your deployment" box audits with), `badges`,
`evidence` (bounded excerpts, links to code), `text` (Markdown and summaries),
`words` (statuses and the legend), `safe` (what data may become), `writer` (templates and files).
"""

from __future__ import annotations

from pathlib import Path

from . import api, audit_data, badges, entry, feeds, matrix, pages, search, surface, upgrade
from .api import ENTRY_JSON_SCHEMA, KB_JSON_SCHEMA, entry_json
from .model import EngineView, EntryStatus, Site, SiteError, check, load
from .safe import _json, _link, _q, markdown_renderer, url_problem
from .text import MAX_MARKDOWN, SECTION_IDS, _plain
from .words import STATUS_ICONS, STATUS_WORDS
from .writer import MARKER, MARKER_TEXT, MAX_ASSET_BYTES, Builder, Page


def build(site: Site, templates: Path, assets: Path, out: Path) -> Builder:
    """The site of `site` in `out`. Pages and files are written as they are made (`Builder`), beside an earlier
    site, which they replace only once all are written: a build that fails leaves it as it was."""
    check(site)
    builder = Builder(site, templates, assets, out)
    try:
        for render in (pages.build, surface.build, upgrade.build, entry.build, search.build, feeds.build,
                       api.build, audit_data.build, badges.build, matrix.build, feeds.sitemap):
            render(builder)
        builder.write()
    except BaseException:
        builder.discard()
        raise
    finally:
        surface.clear()
    return builder


__all__ = [
    "ENTRY_JSON_SCHEMA",
    "KB_JSON_SCHEMA",
    "MARKER",
    "MARKER_TEXT",
    "MAX_ASSET_BYTES",
    "MAX_MARKDOWN",
    "SECTION_IDS",
    "STATUS_ICONS",
    "STATUS_WORDS",
    "Builder",
    "EngineView",
    "EntryStatus",
    "Page",
    "Site",
    "SiteError",
    "_json",
    "_link",
    "_plain",
    "_q",
    "build",
    "check",
    "entry_json",
    "load",
    "markdown_renderer",
    "url_problem",
]
