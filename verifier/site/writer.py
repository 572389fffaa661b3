"""Writing the site: the Jinja2 environment (autoescape on for every template), pages rendered into the layout,
and the one function that writes a file (`Builder._put`)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from ..safety import PathError, inside, open_regular, read_regular
from ..urls import entry_url, release_url
from . import words
from .model import Site, SiteError
from .safe import _link, _q, _text, finalize, json_script

#: The file that marks a folder as one `gotchas site` built: only such a folder is deleted to build it again.
MARKER = ".gotchas-site"
MARKER_TEXT = "Built by `gotchas site`, which deletes and rebuilds this folder.\n"
#: The most bytes a template or an asset may hold (the largest, site.js, holds 45 KB).
MAX_ASSET_BYTES = 4 * 1024 * 1024


@dataclass
class Page:
    path: tuple[str, ...]  # names from the output root, e.g. ("entries", "x", "index.html")
    title: str
    template: str
    context: dict = field(default_factory=dict)
    description: str = ""
    fixed_root: str | None = None  # for a page served at any address (404): links from the site's base URL

    @property
    def root(self) -> str:
        return self.fixed_root if self.fixed_root is not None else "../" * (len(self.path) - 1)

    @property
    def url(self) -> str:
        return "/".join(_q(name) for name in self.path).removesuffix("index.html")


def environment(templates: Path) -> jinja2.Environment:
    """Templates read as regular files of at most MAX_ASSET_BYTES (never through a link), one name each."""
    def source(name: str) -> str:
        if "/" in name or name.startswith("."):
            raise SiteError(f"no template {name!r}")
        return _read_file(inside(Path(templates), name)).decode("utf-8")

    env = jinja2.Environment(loader=jinja2.FunctionLoader(source), autoescape=True, finalize=finalize,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(link=_link, entry_url=entry_url, release_url=release_url, words=words,
                       json_script=json_script)
    env.filters["q"] = _q
    env.filters["word"] = words.word
    env.filters["css"] = words.css
    return env


class Builder:
    def __init__(self, site: Site, templates: Path, assets: Path, out: Path) -> None:
        self.site = site
        self.out = Path(out)
        self.assets = Path(assets)
        self.env = environment(templates)
        self.env.get_template("layout.html")  # a missing layout stops the build before anything is deleted
        self.pages: list[Page] = []
        self.files: list[tuple[tuple[str, ...], str | bytes]] = []

    entry_url = staticmethod(entry_url)
    release_url = staticmethod(release_url)

    def add(self, path: tuple[str, ...], data: str | bytes) -> None:
        self.files.append((path, data))

    def render(self, template: str, **context) -> str:
        """A file that is no page (a feed, a badge, the sitemap) from its template."""
        return self.env.get_template(template).render(site=self.site, **context)

    def write(self) -> None:
        """Every page and file into `out`. Every path is checked before anything is deleted, so a name from the
        data that would leave the folder, or two files at one path, leave an earlier site as it was."""
        outputs = [(page.path, self._render(page)) for page in self.pages] + self.files + self._assets()
        seen: set[str] = set()
        for path, _ in outputs:
            relative = _relative(path)
            inside(self.out, relative)
            if relative in seen:
                raise SiteError(f"two files of the site would be written at {relative!r}")
            seen.add(relative)
        self._empty_out()
        self._put((MARKER,), MARKER_TEXT)
        for path, data in outputs:
            self._put(path, data)

    def _render(self, page: Page) -> str:
        return self.env.get_template(page.template).render(
            page=page, root=page.root, site=self.site, title=page.title,
            description=page.description or page.title, **page.context)

    def _empty_out(self) -> None:
        """`out` as an empty folder: created, found empty, or emptied when the site built it (it holds MARKER).
        Never a link, and never a folder that holds the KB or a git checkout, marker or not (a pull request
        can add a file of that name to the repository)."""
        out = self.out
        if out.is_symlink():
            raise SiteError(f"{out} is a symbolic link; refusing to write through it: give --out a folder")
        if out.exists() and not out.is_dir():
            raise SiteError(f"{out} is not a folder; refusing to replace it: give another --out")
        if out.is_dir() and any(out.iterdir()):
            kb = self.site.kb.root.resolve()
            if (out / ".git").exists() or out.resolve() in (kb, *kb.parents):
                raise SiteError(f"{out} holds the knowledge base or a git checkout; refusing to delete it: "
                                "give --out a folder of its own (default: _site)")
            marker = out / MARKER
            if marker.is_symlink() or not marker.is_file():
                raise SiteError(f"{out} is not empty and was not built by `gotchas site` (it has no {MARKER}); "
                                "refusing to delete it: give another --out, or empty the folder yourself")
            shutil.rmtree(out)
        out.mkdir(parents=True, exist_ok=True)

    def _put(self, path: tuple[str, ...], data: str | bytes) -> None:
        """The one way the site writes a file: under `out` (see safety.inside), and never over a file or a link."""
        target = inside(self.out, _relative(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = open_regular(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL)  # never over a file or through a link
        except FileExistsError:  # two names one file system does not tell apart (`A` and `a` on macOS)
            raise SiteError(f"two files of the site would be written at {target}") from None
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)

    def _assets(self) -> list[tuple[tuple[str, ...], bytes]]:
        """The site's scripts, styles and icons, read as regular files: a link among them, which would copy
        whatever it points at into the published site, is refused."""
        found = []

        def walk(folder: Path, path: tuple[str, ...]) -> None:
            if folder.is_symlink():
                raise PathError(folder, "is a symbolic link; the site's assets must be files in the KB")
            for item in sorted(os.scandir(folder), key=lambda e: e.name):
                if item.is_symlink():
                    raise PathError(item.path, "is a symbolic link; the site's assets must be files in the KB")
                if item.is_dir(follow_symlinks=False):
                    walk(Path(item.path), (*path, item.name))
                else:
                    found.append(((*path, item.name), _read_file(Path(item.path))))

        walk(self.assets, ("assets",))
        return found


def _relative(path: tuple[str, ...]) -> str:
    """A path of the site from its names; a name (an entry id, a term, an engine key, a version) that holds a
    '/' or a character no file name should hold is refused, whether or not it would leave the folder."""
    for name in path:
        if not isinstance(name, str) or "/" in name or _text(name) != name:
            shown = "/".join(map(str, path))
            raise PathError(repr(name), f"cannot name a file of the site ({shown!r}): a name is one part of a path, "
                                        "without '/' or control characters")
    return "/".join(path)


def _read_file(path: Path) -> bytes:
    """A template or an asset: a regular file (never through a link), of at most MAX_ASSET_BYTES."""
    data = read_regular(path, MAX_ASSET_BYTES)
    if len(data) > MAX_ASSET_BYTES:
        raise SiteError(f"{path} is over {MAX_ASSET_BYTES} bytes; a template or an asset holds at most that")
    return data
