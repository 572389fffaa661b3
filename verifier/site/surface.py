"""Release surface pages: for each release, every flag, environment variable, Prometheus metric and OpenAI request
field (`gotchas surface`), with its default as the code writes it, its choices and its file and line, linked to the
code at that release. One table per kind; the help text is cut to MAX_HELP characters (the code says the rest);
a filter box narrows the tables in the browser, and every row is in the page without it.

A place links to code only when the file is one the release's surface was read from (its record names the file and
its sha256), as evidence links only go to files a check found (evidence.code_link)."""

from __future__ import annotations

import functools

from markupsafe import Markup, escape

from ..kb import Engine
from ..surface.model import KINDS, METRIC, Item, Surface
from .evidence import permalink
from .model import EngineView
from .safe import _link, _q, web_url
from .writer import Builder, Page

#: Characters of an item's help text shown in a table (SGLang's 2,000 items a release stay a few hundred KB).
MAX_HELP = 100

#: Per kind: the section's title, its anchor, the name column's header, what its default column shows, and the
#: kind in a sentence.
KIND_VIEWS = {
    "flag": ("Flags", "flags", "Flag", "Default", "flags"),
    "env": ("Environment variables", "env", "Variable", "Default", "environment variables"),
    "metric": ("Prometheus metrics", "metrics", "Metric", "Type", "Prometheus metrics"),
    "request": ("Request fields", "requests", "Field", "Default", "request fields"),
}

#: How a default is shown: as words ("no default", a metric's type), as code, or as the code it is computed by.
PLAIN, CODE, COMPUTED = 0, 1, 2


def has_surface(view: EngineView, version: str | None) -> bool:
    return version is not None and view.surfaces is not None and version in view.surfaces.releases


def surfaced(view: EngineView, version: str) -> Surface | None:
    """The release surface of `version`, or None when the surface file has none."""
    return view.surfaces.surface(version) if view.surfaces is not None and has_surface(view, version) else None


def shown_default(item: Item) -> tuple[int, str]:
    """(PLAIN | CODE | COMPUTED, text): a metric's type, "no default", a default as written, or its expression."""
    if item.kind == METRIC:
        return PLAIN, item.detail
    if item.default is None:
        return PLAIN, "no default"
    return (COMPUTED if item.computed else CODE), item.default


@functools.lru_cache(maxsize=1024)
def blob(engine: Engine, ref: str) -> str | None:
    """The URL under which a release's files are (`ref`: `EngineView.ref`), or None when the repository is no web
    URL or the release's ref is not known."""
    found = permalink(engine, ref, "", None)
    return found if found and web_url(found) else None


@functools.cache  # emptied after each build (clear)
def _place(under: str | None, path: str, line: int) -> Markup:
    text = f"{path}:{line}" if line else path
    if under is None:
        return escape(text)
    return _link(f"{under}{_q(path, safe='/')}" + (f"#L{line}" if line else ""), text)


def place(view: EngineView, surface: Surface, path: str, line: int) -> Markup | None:
    """`path:line`, linked to the line at that release when the surface was read from that file (the same
    permalink as evidence.permalink); None when there is no path. Cached: a release's places recur on its surface
    page and on every upgrade page that names it."""
    if not path:
        return None
    return _place(blob(view.engine, view.ref(surface.version)) if path in surface.files else None, path, line)


def default_place(view: EngineView, surface: Surface, item: Item) -> Markup | None:
    """Where the default is written, when that is not where the item is (a config class's field)."""
    path = getattr(item, "default_path", "")
    return place(view, surface, path, getattr(item, "default_line", 0)) if path else None


def clear() -> None:
    _place.cache_clear()
    blob.cache_clear()


def clip(text: str, limit: int = MAX_HELP) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return cut.rstrip(" ,.;:") + " …"


def row(view: EngineView, surface: Surface, item: Item) -> dict:
    mode, text = shown_default(item)
    return {"spellings": item.spellings(), "mode": mode, "default": text, "choices": item.choices,
            "deprecated": item.deprecated, "where": place(view, surface, item.path, item.line),
            "default_where": default_place(view, surface, item), "help": clip(item.help)}


def build(b: Builder) -> None:
    for key, view in b.site.engines.items():
        versions = view.versions
        for i, version in enumerate(versions):
            _page(b, key, view, version, versions[i - 1] if i else None,
                  versions[i + 1] if i + 1 < len(versions) else None, versions[-1])


def _page(b: Builder, key: str, view: EngineView, version: str, previous: str | None, following: str | None,
          newest: str) -> None:
    surface = surfaced(view, version)
    if surface is None:
        return
    engine = view.engine
    sections = []
    for kind in KINDS:
        title, anchor, name_header, default_header, words = KIND_VIEWS[kind]
        rows = [row(view, surface, item) for item in surface.of_kind(kind)]
        sections.append({"kind": kind, "title": title, "anchor": anchor, "name_header": name_header,
                         "default_header": default_header, "words": words, "rows": rows})
    previous = previous if has_surface(view, previous) else None
    following = following if has_surface(view, following) else None
    context = {"key": key, "engine": engine, "version": version, "sections": sections, "previous": previous,
               "following": following, "newest": newest if newest != version else None,
               "total": sum(len(s["rows"]) for s in sections), "files": len(surface.files),
               "max_help": MAX_HELP, "tag": view.ref(version), "PLAIN": PLAIN, "COMPUTED": COMPUTED}
    name = engine.name
    b.page(Page(("engines", key, version, "surface", "index.html"), f"{name} {version}: release surface",
                "surface.html", context,
                f"Every flag, environment variable, metric and request field of {name} {version}, with its "
                "default as the code writes it and its line."))
