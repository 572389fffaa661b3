"""Writing the site: the Jinja2 environment (autoescape on for every template), pages rendered into the layout,
and the one function that writes a file (`Builder._put`)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
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
#: The staging folders `Builder._begin` makes (`tempfile.mkdtemp`'s names).
_LEFT_OVER = re.compile(re.escape(MARKER) + r"\.[A-Za-z0-9_]+\.building")
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
    """Writes the site as it is made: each page is rendered and each file written when it is added, into a
    folder of its own inside `out` (`_staging`), so that what the site holds in memory is what one page needs,
    not the whole site. `write` puts the assets and the marker beside them, and only then replaces the earlier
    site with them; a build that fails (a name from the data that would leave the folder, two files at one path,
    a template that does not render) is `discard`ed and leaves an earlier site as it was."""

    def __init__(self, site: Site, templates: Path, assets: Path, out: Path) -> None:
        self.site = site
        self.out = Path(out)
        self.assets = Path(assets)
        self.env = environment(templates)
        self.env.get_template("layout.html")  # a missing layout stops the build before anything is deleted
        self._asset_files = self._assets()  # and so does a link among the assets
        self.pages: list[Page] = []  # every page written, in order (the sitemap lists them); contexts dropped
        self.files: list[tuple[str, ...]] = []  # every other file written, by path
        self._seen: set[str] = set()
        self._staging: Path | None = None
        self._made: list[Path] = []  # the folders `out` was made in (the last is `out`), deleted by `discard`

    entry_url = staticmethod(entry_url)
    release_url = staticmethod(release_url)

    def page(self, page: Page) -> None:
        """Render `page` and write it. Its context (a release page's holds every entry) is dropped once written."""
        self._put(page.path, self._render(page))
        page.context = {}
        self.pages.append(page)

    def add(self, path: tuple[str, ...], data: str | bytes) -> None:
        self._put(path, data)
        self.files.append(path)

    def render(self, template: str, **context) -> str:
        """A file that is no page (a feed, a badge, the sitemap) from its template."""
        return self.env.get_template(template).render(site=self.site, **context)

    def write(self) -> None:
        """The assets and the marker beside what was written, then the site in `out` in place of the earlier one
        (`_empty_out` found it one the site built, or none)."""
        for path, data in self._asset_files:
            self._put(path, data)
        self._put((MARKER,), MARKER_TEXT)
        staging = self._begin()
        for item in sorted(os.scandir(self.out), key=lambda e: e.name):
            if item.name in (staging.name, MARKER):  # the marker is renamed over: a kill meanwhile leaves one
                continue
            if item.is_dir(follow_symlinks=False):
                shutil.rmtree(item.path)
            else:
                os.unlink(item.path)
        for item in sorted(os.scandir(staging), key=lambda e: e.name):
            os.rename(item.path, self.out / item.name)
        os.rmdir(staging)
        self._staging = None
        self._made = []

    def discard(self) -> None:
        """After a failed build: what it wrote is deleted, and so are `out` and the folders above it that it
        made; an earlier site in `out` is as it was."""
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None
        for folder in reversed(self._made):
            try:
                folder.rmdir()
            except OSError:  # something else was put there meanwhile: it stays
                break
        self._made = []

    def _render(self, page: Page) -> str:
        return self.env.get_template(page.template).render(
            page=page, root=page.root, site=self.site, title=page.title,
            description=page.description or page.title, **page.context)

    def _begin(self) -> Path:
        """The folder the site is written into until `write`: made inside `out` once `out` is found to be a
        folder the site may replace (`_empty_out`), beside the earlier site, which stays until `write`."""
        if self._staging is None:
            self._empty_out()
            self._staging = Path(tempfile.mkdtemp(prefix=f"{MARKER}.", suffix=".building", dir=self.out))
        return self._staging

    def _empty_out(self) -> None:
        """`out` as a folder the site may be written into: created, found empty, or one the site built (it holds
        MARKER), whose files `write` replaces. Never a link, and never a folder that holds the KB or a git
        checkout, marker or not (a pull request can add a file of that name to the repository)."""
        out = self.out
        if out.is_symlink():
            raise SiteError(f"{out} is a symbolic link; refusing to write through it: give --out a folder")
        if out.exists() and not out.is_dir():
            raise SiteError(f"{out} is not a folder; refusing to replace it: give another --out")
        # A staging folder of a build that was killed (no exception to discard it) is the site's own: not counted
        # as what `out` holds, and deleted once `out` is found to be a folder the site may write into.
        left = [item for item in out.iterdir() if _LEFT_OVER.fullmatch(item.name) and item.is_dir()
                and not item.is_symlink()] if out.is_dir() else []
        if out.is_dir() and any(item not in left for item in out.iterdir()):
            kb = self.site.kb.root.resolve()
            if (out / ".git").exists() or out.resolve() in (kb, *kb.parents):
                raise SiteError(f"{out} holds the knowledge base or a git checkout; refusing to delete it: "
                                "give --out a folder of its own (default: _site)")
            marker = out / MARKER
            if marker.is_symlink() or not marker.is_file():
                raise SiteError(f"{out} is not empty and was not built by `gotchas site` (it has no {MARKER}); "
                                "refusing to delete it: give another --out, or empty the folder yourself")
        for item in left:
            shutil.rmtree(item)
        missing = [folder for folder in (out, *out.parents) if not folder.exists()]
        out.mkdir(parents=True, exist_ok=True)
        self._made = list(reversed(missing))

    def _put(self, path: tuple[str, ...], data: str | bytes) -> None:
        """The one way the site writes a file: under the staging folder (see safety.inside), once per path, and
        never over a file or a link."""
        relative = _relative(path)
        if relative in self._seen:
            raise SiteError(f"two files of the site would be written at {relative!r}")
        target = inside(self.out, relative)  # a name that would leave the folder is refused before anything is made
        target = inside(self._begin(), relative)
        self._seen.add(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = open_regular(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL)  # never over a file or through a link
        except FileExistsError:  # two names one file system does not tell apart (`A` and `a` on macOS)
            raise SiteError(f"two files of the site would be written at {self.out / relative}") from None
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
