"""Build the static site from the entries and the ledger folder.

It reads only entries, the KB's own data and the ledger (with its evidence
files); it writes HTML that works without JavaScript, JSON for tools, Atom
feeds and SVG badges. URLs are stable: `entries/<id>/`, `concepts/<term>/`,
`schemes/<term>/`, `engines/<engine>/<version>/`.

Whatever entries and the ledger hold reaches each output through one function
for that output: `esc` for HTML text and attributes and for XML (characters
XML 1.0 does not allow become U+FFFD), `_link` for a URL (a link only when it
is http(s) or relative; anything else is shown as text), `_json` for JSON;
Markdown is rendered with raw HTML off and only safe links. Every file goes
through `Builder._put`, which writes only under the output folder (names are
single path parts, never `..`, never through a link) and never over a file;
the output folder is replaced only when the site built it (`MARKER`).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from urllib.parse import quote, urlsplit

from markdown_it import MarkdownIt

from . import __version__, history
from .kb import KB, Engine
from .ledger import EngineLedger, EntryRecord, Ledger
from .matchers import REGISTRY
from .model import CHANGED, ERROR, HOLDS, MISSING, NOT_AFFECTED, STATUSES, UNVERIFIED, VERDICTS, Entry, entry_bounds
from .safety import PathError, inside, open_regular, read_regular

SECTION_IDS = {"Symptom": "symptom", "Root cause": "root-cause", "Workaround": "workaround", "Notes": "notes"}
#: Entry statuses and check verdicts, in words and icons (never colour alone).
STATUS_WORDS = {NOT_AFFECTED: "not affected", HOLDS: "holds", CHANGED: "changed", UNVERIFIED: "unverified",
                MISSING: "missing", ERROR: "error", None: "not verified"}
STATUS_ICONS = {NOT_AFFECTED: "○", HOLDS: "✓", CHANGED: "✗", UNVERIFIED: "?", MISSING: "?", ERROR: "!", None: "–"}
#: What each check verdict means, for readers (shown beside a check that does not hold).
VERDICT_MEANINGS = {
    CHANGED: "the check found its place in this release, and the claim is not true there",
    MISSING: "the check's file or symbol is not in this release: the code may have moved; this says nothing "
             "about the behaviour",
    ERROR: "the verifier could not read or evaluate this check here",
}
#: The file that marks a folder as one `gotchas site` built: only such a folder is deleted to build it again.
MARKER = ".gotchas-site"
MARKER_TEXT = "Built by `gotchas site`, which deletes and rebuilds this folder.\n"
#: The most bytes a template or an asset may hold (the largest, minisearch.js, holds 86 KB).
MAX_ASSET_BYTES = 4 * 1024 * 1024
#: The most characters of an entry's sections rendered as Markdown (the largest entry's sections hold 5 KB). Its
#: inline rules cost tens of microseconds for each `[` or `*` (a link label is tried at every nesting level), so
#: the 1 MiB an entry may hold would take minutes; a section past this budget is shown as text.
MAX_MARKDOWN = 32 * 1024

_WEB_SCHEMES = ("", "http", "https")  # "" is a relative link
_MARKDOWN_SCHEMES = (*_WEB_SCHEMES, "mailto")
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
#: What no URL written into a page may hold: spaces and controls (a browser drops some of them, so that
#: `java\tscript:` is `javascript:`), lone surrogates, and what would end an attribute or a tag.
_URL_REFUSED = re.compile("[\x00-\x20\x7f-\x9f\ud800-\udfff\"'<>`\\\\]")
#: What XML 1.0 does not allow (C0 controls but tab, newline and return; lone surrogates; U+FFFE, U+FFFF),
#: and what HTML calls a parse error (DEL and C1 controls): each becomes U+FFFD.
_NOT_TEXT = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class SiteError(Exception):
    """No site can be built from this data, or into this folder; the message says why."""


def _text(value) -> str:
    return _NOT_TEXT.sub("\ufffd", "" if value is None else str(value))


def esc(value) -> str:
    """Text for HTML (text or a quoted attribute) and for XML: the one way data reaches a page, a feed or a badge."""
    return html.escape(_text(value), quote=True)


def _url_scheme(url) -> str | None:
    """A URL's scheme as a browser reads it, lowercased; "" for a relative URL; None for a URL that is not to be
    written into a page at all (see _URL_REFUSED, or a colon before the first '/' that names no scheme)."""
    if not isinstance(url, str) or _URL_REFUSED.search(url):
        return None
    found = _URL_SCHEME.match(url)
    if found:
        return found.group(1).lower()
    return None if ":" in re.split(r"[/?#]", url, maxsplit=1)[0] else ""


def _validate_link(url: str) -> bool:
    """Markdown links: web, mail and relative ones; never javascript:, data:, file: or the like."""
    return _url_scheme(url) in _MARKDOWN_SCHEMES


def _link(url, text: str) -> str:
    """`text` (HTML) as a link to `url` when that is an http(s) or relative URL, else as it is: the one way a URL
    from data (a reference, an engine's repository, a permalink built from it) becomes a link."""
    return f'<a href="{esc(url)}">{text}</a>' if _url_scheme(url) in _WEB_SCHEMES else text


def _q(name: str, safe: str = "") -> str:
    """A name as a part of a URL (a name that cannot be one is refused when its file is written)."""
    return quote(name, safe=safe, errors="replace")


def _json(data, indent: int | None = None) -> bytes:
    """JSON as UTF-8; a lone surrogate (JSON can carry one, UTF-8 cannot) is written as its JSON escape."""
    return json.dumps(data, indent=indent, ensure_ascii=False).encode("utf-8", "backslashreplace")


def markdown_renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.validateLink = _validate_link
    return md


def url_problem(url, what: str, web_only: bool = False) -> str | None:
    """Why `url` cannot be the site's base URL (a path from the root, or an http(s) URL with a host), or its
    edit URL (`web_only`: http(s) only); None when it can."""
    if not isinstance(url, str) or _URL_REFUSED.search(url):
        return (f"{what} {url!r} may not hold spaces, control characters, quotes, '<', '>', '`' or a backslash")
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is not None and parts.scheme.lower() in ("http", "https") and parts.netloc:
        return None
    if not web_only and parts is not None and not parts.scheme and url.startswith("/") and not url.startswith("//"):
        return None
    return f"{what} {url!r} must be " + (
        "an http(s) URL" if web_only else "a path from the root (/...) or an http(s) URL")


# --- data ------------------------------------------------------------------------------------

@dataclass
class EngineView:
    engine: Engine
    ledger: EngineLedger
    evidence: dict

    @property
    def versions(self) -> list[str]:
        return self.ledger.versions()

    @property
    def latest(self) -> str | None:
        versions = self.versions
        return versions[-1] if versions else None


@dataclass
class EntryStatus:
    """An entry's standing on one engine, derived from the ledger."""

    engine: str
    statuses: list[tuple[str, str]]
    ranges: list[history.Range]
    transitions: list[history.Transition]
    latest_version: str | None
    latest: str | None  # the entry's status at the engine's newest release in the ledger
    verified: dict[str, tuple[int, int]] = field(default_factory=dict)  # version -> (claims verified, claims)
    introduced: str | None = None
    fixed: str | None = None

    def to_json(self) -> dict:
        return {
            "engine": self.engine,
            "latest_version": self.latest_version,
            "latest": self.latest,
            "introduced": self.introduced,
            "fixed": self.fixed,
            "ranges": [{"status": r.status, "first": r.first, "last": r.last, "latest": r.latest,
                        "next": {"version": r.next[0], "status": r.next[1]} if r.next else None}
                       for r in self.ranges],
            "transitions": [{"check": t.check, "before_version": t.before_version, "after_version": t.after_version,
                             "before": t.before.to_json(), "after": t.after.to_json()} for t in self.transitions],
            "statuses": dict(self.statuses),
            "verified": {v: {"verified": n, "claims": m} for v, (n, m) in self.verified.items()},
        }


@dataclass
class Site:
    kb: KB
    entries: list[Entry]
    engines: dict[str, EngineView]
    base_url: str = "/"
    edit_base: str | None = None  # e.g. https://github.com/OWNER/REPO/edit/main/ ; None: no edit links
    generated: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))

    def status(self, entry: Entry, engine: str) -> EntryStatus:
        view = self.engines.get(engine)
        if view is None:
            return EntryStatus(engine, [], [], [], None, None)
        statuses = history.entry_statuses(view.ledger, entry.id)
        latest = history.status_at(view.ledger, entry.id, view.latest) if view.latest else None
        verified = {v: view.ledger.entry(v, entry.id).verified for v, _ in statuses}
        return EntryStatus(engine, statuses, history.segments(history.entry_statuses(view.ledger, entry.id, True)),
                           history.transitions(view.ledger, entry.id), view.latest, latest, verified,
                           *entry_bounds(entry, engine))

    def record(self, entry: Entry, engine: str, version: str) -> EntryRecord | None:
        view = self.engines.get(engine)
        if view is None:
            return None
        return view.ledger.entry(version, entry.id)


def load(kb: KB, entries: list[Entry], ledger: Ledger, base_url: str = "/", edit_base: str | None = None) -> Site:
    engines = {}
    for key, engine in kb.engines.items():
        engine_ledger = ledger.load(key)
        # Statuses as the entries say now: an edited `introduced` or `fixed` shows before the next verify.
        engine_ledger.restatus({e.id: entry_bounds(e, key) for e in entries if key in e.engines})
        engines[key] = EngineView(engine, engine_ledger, ledger.load_evidence(key))
    if edit_base and not edit_base.endswith("/"):
        edit_base += "/"
    return Site(kb, sorted(entries, key=lambda e: e.id), engines, base_url if base_url.endswith("/") else base_url + "/",
                edit_base)


# --- writing -------------------------------------------------------------------------------------

@dataclass
class Page:
    path: tuple[str, ...]  # names from the output root, e.g. ("entries", "x", "index.html")
    title: str
    content: str
    description: str = ""
    head: str = ""
    fixed_root: str | None = None  # for a page served at any address (404): links from the site's base URL

    @property
    def root(self) -> str:
        return self.fixed_root if self.fixed_root is not None else "../" * (len(self.path) - 1)

    @property
    def url(self) -> str:
        return "/".join(_q(name) for name in self.path).removesuffix("index.html")


class Builder:
    def __init__(self, site: Site, templates: Path, assets: Path, out: Path) -> None:
        self.site = site
        self.out = Path(out)
        self.assets = Path(assets)
        self.layout = Template(_read_file(Path(templates) / "layout.html").decode("utf-8"))
        self.md = markdown_renderer()
        self.pages: list[Page] = []
        self.files: list[tuple[tuple[str, ...], str | bytes]] = []

    # links, relative to a page
    @staticmethod
    def entry_url(entry_id: str) -> str:
        return f"entries/{_q(entry_id)}/"

    @staticmethod
    def release_url(engine: str, version: str) -> str:
        return f"engines/{_q(engine)}/{_q(version)}/"

    def add(self, path: tuple[str, ...], data: str | bytes) -> None:
        self.files.append((path, data))

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
        return self.layout.substitute(
            title=esc(page.title), description=esc(page.description or page.title), root=esc(page.root),
            content=page.content, head=page.head, generated=esc(self.site.generated))

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


def check(site: Site) -> None:
    """Refuse data no site can be built from: a base URL that is no path or web URL, an edit URL that is no web
    URL, two entries with one id (one would replace the other's page, badge and JSON)."""
    problem = url_problem(site.base_url, "--base-url") or (
        url_problem(site.edit_base, "--edit-url", web_only=True) if site.edit_base else None)
    if problem:
        raise SiteError(problem)
    seen: dict[str, Entry] = {}
    for entry in site.entries:
        first = seen.setdefault(entry.id, entry)
        if first is not entry:
            raise SiteError(f"two entries have the id {entry.id!r}: {first.file!r} and {entry.file!r}; "
                            "give each its own id (its file name without .md)")


def build(site: Site, templates: Path, assets: Path, out: Path) -> Builder:
    check(site)
    builder = Builder(site, templates, assets, out)
    for render in (_index_page, _entry_pages, _vocabulary_pages, _engine_pages, _search, _feeds, _api, _badges,
                   _not_found, _sitemap):
        render(builder)
    builder.write()
    return builder


# --- fragments --------------------------------------------------------------------------------------

def _status_badge(status: str | None) -> str:
    word = STATUS_WORDS.get(status, status)
    return f'<span class="status status-{esc(word.replace(" ", "-"))}"><span aria-hidden="true">{STATUS_ICONS.get(status, "?")}</span> {esc(word)}</span>'


def _status_sentence(site: Site, entry: Entry, engine: str) -> str:
    """Each run of releases with one status, oldest first; an unverified run says how many claims were verified."""
    name = site.kb.engines[engine].name if engine in site.kb.engines else engine
    st = site.status(entry, engine)
    if not st.statuses:
        return f"not yet verified against {esc(name)}"
    parts = []
    for r in st.ranges:
        text = f"{esc(history.STATUS_PHRASES.get(r.status, r.status))} in {esc(name)} {esc(r.first)}" + (
            f" – {esc(r.last)}" if r.last != r.first else "")
        if r.latest:
            text += " (latest)"
        if r.status == UNVERIFIED and r.last in st.verified:
            held, total = st.verified[r.last]
            text += f" ({held} of {total} claims verified in {esc(r.last)})"
        parts.append(text)
    return "; ".join(parts)


def _strip(site: Site, entry: Entry, engine: str, root: str) -> str:
    view = site.engines.get(engine)
    if view is None or not view.versions:
        return ""
    cells = []
    st = site.status(entry, engine)
    verdicts = dict(st.statuses)
    for version in view.versions:
        status = verdicts.get(version)
        word = STATUS_WORDS.get(status, status)
        label = word
        if status == UNVERIFIED and version in st.verified:
            label += " ({} of {} claims verified)".format(*st.verified[version])
        cells.append(f'<li class="cell cell-{esc(word.replace(" ", "-"))}"><a href="{root}{Builder.release_url(engine, version)}" '
                     f'title="{esc(version)}: {esc(label)}"><span aria-hidden="true">{STATUS_ICONS.get(status, "–")}</span>'
                     f'<span class="visually-hidden">{esc(version)}: {esc(label)}</span></a></li>')
    first, last = view.versions[0], view.versions[-1]
    return (f'<figure class="strip-figure"><figcaption>History across {esc(view.engine.name)} releases '
            f'{esc(first)} to {esc(last)}, oldest first</figcaption><ol class="strip">{"".join(cells)}</ol></figure>')


def _permalink(engine: Engine, version: str, path: str, lines) -> str:
    """Where a reader sees the code at a release; written as a link only when the repository is a web URL."""
    base = engine.repository.rstrip("/").removesuffix(".git")
    anchor = ""
    if lines:
        anchor = f"#L{lines[0]}" + (f"-L{lines[1]}" if lines[1] != lines[0] else "")
    return f"{base}/blob/{_q(engine.tag(version))}/{_q(path, safe='/')}{anchor}"


def _number(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _evidence(view: EngineView | None, key: str, version: str | None) -> dict | None:
    """The excerpt the ledger's evidence file keeps for `key` (entry/check) at `version`, or None when it has
    none of that release, or a record that is not one (the file is data: it is read, never trusted)."""
    data = view.evidence if view else None
    if not isinstance(data, dict) or data.get("version") != version or not isinstance(data.get("checks"), dict):
        return None
    found = data["checks"].get(key)
    if not isinstance(found, dict):
        return None
    start, match, lines, path = found.get("start"), found.get("match"), found.get("lines"), found.get("path")
    if not (_number(start) and isinstance(match, list) and len(match) == 2 and all(map(_number, match))
            and isinstance(lines, list) and all(isinstance(line, str) for line in lines) and isinstance(path, str)):
        return None
    return {"start": start, "match": tuple(match), "lines": lines, "path": path}


def _excerpt(evidence: dict | None) -> str:
    if not evidence:
        return ""
    start = evidence["start"]
    first, last = evidence["match"]
    rows = []
    for offset, line in enumerate(evidence["lines"]):
        number = start + offset
        hit = first <= number <= last
        cls = ' class="hit"' if hit else ""
        mark = '<span class="visually-hidden">matched: </span>' if hit else ""
        rows.append(f'<tr{cls}><th scope="row">{number}</th><td><code>{mark}{esc(line) or " "}</code></td></tr>')
    label = f'{esc(evidence["path"])} lines {start} to {start + len(evidence["lines"]) - 1}'
    return (f'<div class="excerpt-wrap" tabindex="0" role="region" aria-label="{label}"><table class="excerpt">'
            f'<caption class="visually-hidden">{label}; matched lines {first} to {last} '
            f'are highlighted</caption><tbody>{"".join(rows)}</tbody></table></div>')


def _where(record) -> str:
    text = esc(record.path)
    if record.lines:
        a, b = record.lines
        text += f":{esc(a)}" + (f"–{esc(b)}" if b != a else "")
    if record.symbol:
        text += f" in <code>{esc(record.symbol)}</code>"
    return text


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


# --- pages ---------------------------------------------------------------------------------------------

def _entry_row(site: Site, entry: Entry, root: str) -> str:
    statuses = []
    data = {"scheme": entry.scheme, "concepts": " ".join(entry.concepts), "engines": " ".join(entry.engines)}
    status_words = []
    for engine in entry.engines:
        st = site.status(entry, engine)
        name = site.kb.engines[engine].name if engine in site.kb.engines else engine
        unverified = ""
        if st.latest == UNVERIFIED and st.latest_version in st.verified:
            unverified = " ({} of {} claims verified)".format(*st.verified[st.latest_version])
        statuses.append(f"<li>{esc(name)}: {_status_badge(st.latest)}{esc(unverified)}</li>")
        status_words.append(f"{engine}:{STATUS_WORDS.get(st.latest, st.latest).replace(' ', '-')}")
    attrs = " ".join(f'data-{k}="{esc(v)}"' for k, v in data.items())
    return (f'<tr {attrs} data-status="{esc(" ".join(status_words))}"><td><a href="{root}{Builder.entry_url(entry.id)}">{esc(entry.title)}</a>'
            f'{" <span class=withdrawn>(withdrawn)</span>" if entry.withdrawn else ""}</td>'
            f'<td><a href="{root}schemes/{_q(entry.scheme)}/">{esc(entry.scheme)}</a></td>'
            f'<td><ul class="plain">{"".join(statuses)}</ul></td></tr>')


def _entries_table(site: Site, entries: list[Entry], root: str, table_id: str = "") -> str:
    if not entries:
        return "<p>No entries.</p>"
    rows = "".join(_entry_row(site, e, root) for e in entries)
    ident = f' id="{table_id}"' if table_id else ""
    return (f'<table class="entries"{ident}><thead><tr><th scope="col">Gotcha</th><th scope="col">Scheme</th>'
            f'<th scope="col">Status at the latest release</th></tr></thead><tbody>{rows}</tbody></table>')


def _index_page(b: Builder) -> None:
    site = b.site
    root = ""
    pickers = []
    options = []
    for key, view in site.engines.items():
        if not view.versions:
            continue
        links = "".join(f'<li><a href="{Builder.release_url(key, v)}">{esc(v)}</a></li>' for v in reversed(view.versions))
        pickers.append(f'<details class="picker-list"><summary>{esc(view.engine.name)} releases ({len(view.versions)})</summary>'
                       f'<ul class="versions">{links}</ul></details>')
        options.append({"engine": key, "name": view.engine.name, "versions": list(reversed(view.versions))})
    schemes = "".join(f'<li><a href="schemes/{_q(t)}/">{esc(t)}</a></li>' for t in site.kb.schemes)
    concepts = "".join(f'<li><a href="concepts/{_q(t)}/">{esc(t)}</a></li>' for t in site.kb.concepts
                       if any(t in e.concepts for e in site.entries))
    engines = "".join(f'<li><a href="engines/{_q(k)}/">{esc(v.engine.name)}</a></li>' for k, v in site.engines.items())
    status_lists = []
    for key, view in site.engines.items():
        for status in STATUSES:
            members = [e for e in site.entries if key in e.engines and site.status(e, key).latest == status]
            if members:
                items = "".join(f'<li><a href="{Builder.entry_url(e.id)}">{esc(e.title)}</a></li>' for e in members)
                status_lists.append(f'<details><summary>{esc(STATUS_WORDS[status].capitalize())} in the latest {esc(view.engine.name)} '
                                    f'({len(members)})</summary><ul>{items}</ul></details>')
    picker_form = ""
    if options:
        picker_form = (
            '<form class="version-picker" id="version-picker" hidden aria-label="Pick an engine release">'
            '<label for="picker-engine">Engine</label> <select id="picker-engine"></select> '
            '<label for="picker-version">Version</label> <select id="picker-version"></select> '
            '<button type="submit">Show the gotchas of this release</button></form>')
    filters = (
        '<form class="filters" id="filters" hidden aria-label="Filter entries">'
        + _select("filter-engine", "Engine", [("", "any")] + [(k, v.engine.name) for k, v in site.engines.items()])
        + _select("filter-scheme", "Scheme", [("", "any")] + [(t, t) for t in site.kb.schemes])
        + _select("filter-concept", "Concept", [("", "any")] + [(t, t) for t in site.kb.concepts])
        + _select("filter-status", "Status at the latest release",
                  [("", "any")] + [(STATUS_WORDS[s].replace(" ", "-"), STATUS_WORDS[s]) for s in STATUSES]
                  + [("not-verified", "not verified")])
        + '<p id="filter-count" role="status" aria-live="polite"></p></form>')
    content = f"""<h1>Gotchas of LLM serving engines</h1>
<p class="lead">How vLLM and SGLang fail in production, each gotcha tied to the engines' source code and re-checked at every release.
{len(site.entries)} entries.</p>
<section aria-labelledby="which-release"><h2 id="which-release">Which gotchas bite the release you run?</h2>
{picker_form}
<div class="pickers">{''.join(pickers) or '<p>No release verified yet.</p>'}</div>
<script type="application/json" id="picker-data">{_json_script(options)}</script>
</section>
<section aria-labelledby="all-entries"><h2 id="all-entries">All entries</h2>
{filters}
<nav class="browse" aria-label="Browse entries"><div><h3>By engine</h3><ul class="inline">{engines}</ul></div>
<div><h3>By scheme</h3><ul class="inline">{schemes}</ul></div>
<div><h3>By concept</h3><ul class="inline">{concepts}</ul></div>
<div><h3>By status</h3>{''.join(status_lists)}</div></nav>
{_entries_table(site, site.entries, root, "entries-table")}
</section>"""
    b.pages.append(Page(("index.html",), "Gotchas of LLM serving engines", content,
                        "Operational gotchas of vLLM and SGLang, verified against every release."))


def _select(ident: str, label: str, options: list[tuple[str, str]]) -> str:
    opts = "".join(f'<option value="{esc(v)}">{esc(t)}</option>' for v, t in options)
    return f'<span class="field"><label for="{ident}">{esc(label)}</label> <select id="{ident}">{opts}</select></span> '


def _json_script(data) -> str:
    # Safe inside <script type="application/json">: no "</" can close the element.
    return json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _entry_pages(b: Builder) -> None:
    site = b.site
    for entry in site.entries:
        root = "../../"
        status_items = []
        strips = []
        for engine in entry.engines:
            st = site.status(entry, engine)
            name = site.kb.engines[engine].name if engine in site.kb.engines else engine
            icon = f'<span class="status status-{esc(STATUS_WORDS.get(st.latest, "").replace(" ", "-"))}" aria-hidden="true">{STATUS_ICONS.get(st.latest, "?")}</span>'
            status_items.append(f'<li>{icon} <strong>{esc(name)}</strong>: {_status_sentence(site, entry, engine)}'
                                f' <span class="visually-hidden">(latest release: {esc(STATUS_WORDS.get(st.latest, st.latest))})</span></li>')
            strips.append(_strip(site, entry, engine, root))
        sections = []
        budget = MAX_MARKDOWN
        for title, text in entry.sections.items():
            anchor = SECTION_IDS.get(title, _slug(title))
            if len(text) <= budget:
                budget -= len(text)
                body = _demote_headings(b.md.render(_text(text)))
            else:
                body = (f"<p><em>Shown as written: an entry's sections are rendered as Markdown up to {MAX_MARKDOWN} "
                        "characters in all, and this one goes past that.</em></p>"
                        + "".join(f"<p>{esc(part)}</p>" for part in text.split("\n\n") if part.strip()))
            sections.append(f'<section aria-labelledby="{anchor}"><h2 id="{anchor}">{esc(title)} '
                            f'<a class="anchor" href="#{anchor}" aria-label="Link to {esc(title)}">#</a></h2>'
                            f'{body}</section>')
        checks = []
        for check in entry.checks:
            view = site.engines.get(check.engine)
            engine = site.kb.engines.get(check.engine)
            version = view.latest if view else None
            record = site.record(entry, check.engine, version) if version else None
            verdict = record.checks.get(check.id) if record else None
            status = verdict.verdict if verdict else None
            evidence = _evidence(view, f"{entry.id}/{check.id}", version)
            where = ""
            if verdict and engine:
                form = f" (form {esc(verdict.form)} of the check)" if verdict.form else ""
                if verdict.verdict == MISSING:  # no link to a file the release does not have
                    where = f'<p class="where">{_where(verdict)} in {esc(engine.name)} {esc(version)}{form}</p>'
                else:
                    link = _permalink(engine, version, verdict.path or check.path, verdict.lines)
                    where = (f'<p class="where">{_where(verdict)} in {esc(engine.name)} {esc(version)}{form} · '
                             f'{_link(link, f"view at {esc(engine.tag(version))}")}</p>')
            hint = ""
            if verdict and verdict.verdict != HOLDS:
                meaning = VERDICT_MEANINGS.get(verdict.verdict, "")
                reason = (f"<p>Reason: <strong>{esc(verdict.reason)}</strong>: {esc(meaning)}</p>" if verdict.reason
                          else "")
                hint = reason + (f'<p class="hint">Hint: {esc(verdict.hint)}</p>' if verdict.hint else "")
            matcher = f'<p class="matcher"><span class="key">{esc(check.matcher)}</span> <code>{esc(check.pattern)}</code>'
            if check.scope:
                matcher += f' <span class="key">in</span> <code>{esc(check.scope)}</code>'
            if check.after:
                matcher += f' <span class="key">after</span> <code>{esc(check.after)}</code>'
                if check.adjacent:
                    matcher += ' <span class="key">(adjacent)</span>'
            matcher += f' <span class="key">file</span> <code>{esc(check.path)}</code></p>'
            checks.append(f'<li class="check" id="check-{esc(check.id)}"><h3>{_status_badge(status)} {esc(check.claim)}</h3>'
                          f'{matcher}{where}{hint}{_excerpt(evidence)}</li>')
        references = "".join(f"<li>{_link(u, esc(u))}</li>" for u in entry.references)
        events = "".join(f"<li><time datetime=\"{esc(e.date.isoformat())}\">{esc(e.date.isoformat())}</time>: {esc(e.note)}</li>"
                         for e in entry.history)
        transitions = []
        for engine in entry.engines:
            for t in site.status(entry, engine).transitions:
                transitions.append(f"<li>{esc(engine)} <code>{esc(t.check)}</code>: "
                                   f"{esc(history.describe_verdict(t.before))} in "
                                   f"{esc(t.before_version)} ({_where(t.before)}) → "
                                   f"{esc(history.describe_verdict(t.after))} in "
                                   f"{esc(t.after_version)} ({_where(t.after)})</li>")
        concepts = ", ".join(f'<a href="{root}concepts/{_q(c)}/">{esc(c)}</a>' for c in entry.concepts)
        withdrawn = (f'<p class="banner" role="note">Withdrawn on {esc(entry.withdrawn.isoformat())}: kept for the record; '
                     "do not rely on it.</p>" if entry.withdrawn else "")
        content = f"""<article>
<h1>{esc(entry.title)}</h1>
{withdrawn}<p class="meta">Scheme <a href="{root}schemes/{_q(entry.scheme)}/">{esc(entry.scheme)}</a> · Concepts {concepts} · <code>{esc(entry.id)}</code></p>
<section aria-labelledby="status"><h2 id="status">Status</h2><ul class="statuses">{''.join(status_items)}</ul>{''.join(strips)}</section>
{''.join(sections)}
<section aria-labelledby="evidence"><h2 id="evidence">Evidence <a class="anchor" href="#evidence" aria-label="Link to Evidence">#</a></h2>
<p>Each claim is a check against the engine's code, shown as it stands in the latest verified release.</p>
<ol class="checks">{''.join(checks)}</ol></section>
{f'<section aria-labelledby="transitions"><h2 id="transitions">Transitions</h2><ul>{"".join(transitions)}</ul></section>' if transitions else ''}
{f'<section aria-labelledby="references"><h2 id="references">References</h2><ul>{references}</ul></section>' if references else ''}
{f'<section aria-labelledby="history"><h2 id="history">History</h2><ul>{events}</ul></section>' if events else ''}
<p class="links"><a href="{root}api/entries/{_q(entry.id)}.json">JSON of this entry</a> · <a href="{root}badges/{_q(entry.id)}.svg">status badge</a>{_edit_link(site, entry)}</p>
</article>"""
        b.pages.append(Page(("entries", entry.id, "index.html"), entry.title, content,
                            entry.sections.get("Symptom", entry.title)[:300]))


def _edit_link(site: Site, entry: Entry) -> str:
    if not site.edit_base:
        return ""
    return " · " + _link(f"{site.edit_base}gotchas/{_q(entry.id)}.md", "edit on GitHub")


def _demote_headings(rendered: str) -> str:
    """Headings inside a section sit below its h2, so the page keeps one h1 and an orderly outline."""
    def shift(match: re.Match) -> str:
        level = min(6, int(match.group(2)) + 2)
        return f"<{match.group(1)}h{level}"
    return re.sub(r"<(/?)h([1-6])", shift, rendered)


def _vocabulary_pages(b: Builder) -> None:
    site = b.site
    for kind, terms, attr in (("concepts", site.kb.concepts, "concepts"), ("schemes", site.kb.schemes, "scheme")):
        items = []
        for term, description in terms.items():
            members = [e for e in site.entries if (term in e.concepts if attr == "concepts" else e.scheme == term)]
            items.append(f'<li><a href="{_q(term)}/">{esc(term)}</a> ({len(members)}): {esc(description)}</li>')
            content = (f"<h1>{esc(kind[:-1].capitalize())}: {esc(term)}</h1><p class=\"lead\">{esc(description)}</p>"
                       f"{_entries_table(site, members, '../../')}")
            b.pages.append(Page((kind, term, "index.html"), f"{kind[:-1].capitalize()} {term}", content, description))
        b.pages.append(Page((kind, "index.html"), kind.capitalize(),
                            f"<h1>{esc(kind.capitalize())}</h1><ul>{''.join(items)}</ul>"))


def _engine_pages(b: Builder) -> None:
    site = b.site
    overview = []
    for key, view in site.engines.items():
        rows = []
        previous = None
        for version in view.versions:
            record = view.ledger.releases[version]
            counts = {s: sum(1 for e in record.entries.values() if e.status == s) for s in STATUSES}
            rows.append(f'<tr><td><a href="{_q(version)}/">{esc(version)}</a></td><td>{esc(record.date or "")}</td>'
                        + "".join(f"<td>{counts[s]}</td>" for s in (HOLDS, UNVERIFIED, CHANGED, NOT_AFFECTED)) + "</tr>")
            _release_page(b, key, view, version, previous)
            previous = version
        table = ('<table class="releases"><thead><tr><th scope="col">Release</th><th scope="col">Date</th>'
                 '<th scope="col">Entries that hold</th><th scope="col">Unverified</th><th scope="col">Changed</th>'
                 '<th scope="col">Not affected</th></tr></thead>'
                 f"<tbody>{''.join(reversed(rows))}</tbody></table>") if rows else "<p>No release verified yet.</p>"
        b.pages.append(Page(("engines", key, "index.html"), f"{view.engine.name} releases",
                            f"<h1>{esc(view.engine.name)} releases</h1><p>Package <code>{esc(view.engine.package)}</code>, "
                            f'repository {_link(view.engine.repository, esc(view.engine.repository))}. '
                            f'Atom feeds: <a href="../../feeds/{_q(key)}.xml">status changes</a>, '
                            f'<a href="../../feeds/{_q(key)}-entries.xml">new entries</a>.</p>{table}'))
        overview.append(f'<li><a href="{_q(key)}/">{esc(view.engine.name)}</a>: {len(view.versions)} releases verified'
                        + (f", latest {esc(view.latest)}" if view.latest else "") + "</li>")
    b.pages.append(Page(("engines", "index.html"), "Engines",
                        f"<h1>Engines and releases</h1><ul>{''.join(overview)}</ul>"))


#: The sections of a release page, by entry status: what each says to an operator.
_RELEASE_SECTIONS = (
    (HOLDS, "bite", "These gotchas bite {version}",
     "Every claim of the entry holds in this release's code."),
    (UNVERIFIED, "unverified", "Unverified in {version}",
     ("Not every claim could be checked here (its code is not where the check looks, or could not be read); "
      "none is contradicted. Do not read this as \"does not apply\".")),
    (CHANGED, "changed", "Changed in {version}",
     "A claim is contradicted by this release's code: the gotcha may be gone or different."),
    (NOT_AFFECTED, "not-affected", "Not affected in {version}",
     "The entry states that its gotcha began later or ended earlier (introduced / fixed)."),
)


def _release_page(b: Builder, key: str, view: EngineView, version: str, previous: str | None) -> None:
    site = b.site
    root = "../../../"
    record = view.ledger.releases[version]
    engine = view.engine
    groups: dict[str, list[str]] = {status: [] for status, *_ in _RELEASE_SECTIONS}
    changed_since = []
    for entry in site.entries:
        result = record.entries.get(entry.id)
        if result is None:
            continue
        before = view.ledger.entry(previous, entry.id) if previous else None
        if before is not None and before.status != result.status:
            changed_since.append(f'<li><a href="{root}{Builder.entry_url(entry.id)}">{esc(entry.title)}</a>: '
                                 f'{esc(STATUS_WORDS.get(before.status, before.status))} in {esc(previous)} → '
                                 f'{esc(STATUS_WORDS.get(result.status, result.status))} here</li>')
        checks = []
        for check in entry.checks:
            verdict = result.checks.get(check.id)
            if verdict is None:
                continue
            reason = f" ({esc(verdict.reason)})" if verdict.reason else ""
            code = ""
            if verdict.verdict != MISSING:  # no link to a file the release does not have
                link = _permalink(engine, version, verdict.path or check.path, verdict.lines)
                code = " · " + _link(link, f"code at {esc(engine.tag(version))}")
            checks.append(f'<li>{_status_badge(verdict.verdict)}{reason} {esc(check.claim)} '
                          f'<span class="where">{_where(verdict)}{code}</span></li>')
        held, total = result.verified
        count = f" ({held} of {total} claims verified)" if result.status == UNVERIFIED else ""
        item = (f'<li class="release-entry"><h3><a href="{root}{Builder.entry_url(entry.id)}">{esc(entry.title)}</a></h3>'
                f'<p>{_status_badge(result.status)}{esc(count)} in {esc(engine.name)} {esc(version)}</p>'
                f'<ul class="checks-brief">{"".join(checks)}</ul></li>')
        groups.setdefault(result.status, []).append(item)
    nav = f'<p><a href="../">All {esc(engine.name)} releases</a>' + (
        f' · previous: <a href="../{_q(previous)}/">{esc(previous)}</a>' if previous else "") + "</p>"
    sections = []
    for status, anchor, heading, meaning in _RELEASE_SECTIONS:
        items = groups.get(status, [])
        if not items and status != HOLDS:
            continue
        sections.append(f'<section aria-labelledby="{anchor}"><h2 id="{anchor}">{esc(heading.format(version=version))} '
                        f'({len(items)})</h2><p>{esc(meaning)}</p>'
                        f'<ol class="release-list">{"".join(items) or "<li>None.</li>"}</ol></section>')
    content = f"""<h1>Gotchas in {esc(engine.name)} {esc(version)}</h1>
{nav}<p class="meta">Released {esc(record.date or 'on an unknown date')}; verified {esc(record.verified_at or '')} from {esc(record.source or '')} ({esc(record.identity or '')}).</p>
{sections[0]}
<section aria-labelledby="changed-since"><h2 id="changed-since">Changed status since {esc(previous or 'the first verified release')} ({len(changed_since)})</h2><ul>{''.join(changed_since) or '<li>None.</li>'}</ul></section>
{''.join(sections[1:])}"""
    b.pages.append(Page(("engines", key, version, "index.html"), f"Gotchas in {engine.name} {version}", content))


def _plain(markdown: str) -> str:
    """Markdown as words for search and feeds: code spans and link texts kept, link targets dropped.

    A link's text stops at the next `[` and its target at the next `(` (but one pair inside): a match that fails
    ends where the next one starts, and the pass is linear. A text that ran on past `[` made 100 KB of `[` take
    minutes.
    """
    text = re.sub(r"`([^`]*)`", r"\1", markdown)
    text = re.sub(r"\[([^\[\]]*)\]\((?:[^()]|\([^()]*\))*\)", r"\1", text)
    return re.sub(r"[*_>#]+", " ", text)


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


def _search(b: Builder) -> None:
    site = b.site
    documents = []
    for entry in site.entries:
        documents.append({
            "id": entry.id, "url": Builder.entry_url(entry.id), "title": entry.title, "scheme": entry.scheme,
            "concepts": " ".join(entry.concepts), "engines": " ".join(entry.engines),
            "symptom": _plain(entry.sections.get("Symptom", "")),
            "text": " ".join(_plain(entry.sections.get(s, "")) for s in ("Root cause", "Workaround", "Notes")),
            "identifiers": " ".join(_identifiers(entry)),
        })
    b.add(("search", "documents.json"), _json(documents))
    content = """<h1>Search</h1>
<form class="search-form" id="search-form" role="search" aria-label="Search the gotchas">
<label for="search-input">Search titles, symptoms, flags and identifiers</label>
<input type="search" id="search-input" name="q" autocomplete="off" spellcheck="false">
<button type="submit">Search</button>
</form>
<noscript><p>Search needs JavaScript. Without it, browse the <a href="../">entries</a>, <a href="../concepts/">concepts</a> and <a href="../schemes/">schemes</a>.</p></noscript>
<p id="search-status" role="status" aria-live="polite"></p>
<ol id="search-results" class="search-results"></ol>"""
    b.pages.append(Page(("search", "index.html"), "Search", content,
                        head='<script src="../assets/vendor/minisearch.js" defer></script>\n'))


def _atom(title: str, self_url: str, site_url: str, items: list[dict], updated: str) -> str:
    entries = []
    for item in items:
        entries.append(
            "<entry>"
            f"<title>{esc(item['title'])}</title>"
            f"<id>{esc(item['id'])}</id>"
            f'<link href="{esc(item["link"])}"/>'
            f"<updated>{esc(item['updated'])}</updated>"
            f"<summary>{esc(item['summary'])}</summary>"
            "</entry>")
    return ('<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
            f"<title>{esc(title)}</title><id>{esc(self_url)}</id>"
            f'<link rel="self" href="{esc(self_url)}"/><link href="{esc(site_url)}"/>'
            f"<updated>{esc(updated)}</updated><author><name>gotchas verifier</name></author>"
            f"{''.join(entries)}</feed>\n")


def _timestamp(date: str | None, fallback: str) -> str:
    return f"{date}T00:00:00Z" if date and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) else fallback


def _feeds(b: Builder) -> None:
    site = b.site
    base = site.base_url
    new_entries = []
    for entry in site.entries:
        first = min((e.date for e in entry.history), default=None)
        new_entries.append({"title": entry.title, "id": f"{base}{Builder.entry_url(entry.id)}", "engines": entry.engines,
                            "link": f"{base}{Builder.entry_url(entry.id)}",
                            "updated": _timestamp(first.isoformat() if first else None, site.generated),
                            "summary": _plain(entry.sections.get("Symptom", ""))[:500]})
    new_entries.sort(key=lambda i: i["updated"], reverse=True)
    b.add(("feeds", "entries.xml"),
          _atom("gotchas: new entries", f"{base}feeds/entries.xml", base, new_entries, site.generated))
    for key, view in site.engines.items():
        mine = [n for n in new_entries if key in n["engines"]]
        b.add(("feeds", f"{key}-entries.xml"), _atom(f"gotchas: new {view.engine.name} entries",
                                                     f"{base}feeds/{_q(key)}-entries.xml", base, mine, site.generated))
    by_engine: dict[str, list[dict]] = {}
    for key, view in site.engines.items():
        changes = history.status_changes(view.ledger, view.versions)
        for c in changes:
            entry = next((e for e in site.entries if e.id == c.entry), None)
            if entry is None:
                continue
            date = view.ledger.releases[c.after_version].date
            by_engine.setdefault(key, []).append({
                "title": f"{view.engine.name} {c.after_version}: {entry.title} — {c.before} → {c.after}",
                "id": f"{base}{Builder.release_url(key, c.after_version)}#{_q(entry.id)}",
                "link": f"{base}{Builder.release_url(key, c.after_version)}",
                "updated": _timestamp(date, site.generated),
                "summary": "; ".join(t.summary for t in c.checks) or f"{c.before} in {c.before_version}, {c.after} in {c.after_version}",
            })
    everything = []
    for key, items in by_engine.items():
        items.sort(key=lambda i: i["updated"], reverse=True)
        everything.extend(items)
    for key in site.engines:
        items = by_engine.get(key, [])
        b.add(("feeds", f"{key}.xml"), _atom(f"gotchas: {site.engines[key].engine.name} status changes",
                                             f"{base}feeds/{_q(key)}.xml", base, items, site.generated))
    everything.sort(key=lambda i: i["updated"], reverse=True)
    b.add(("feeds", "changes.xml"),
          _atom("gotchas: status changes", f"{base}feeds/changes.xml", base, everything, site.generated))


def entry_json(site: Site, entry: Entry) -> dict:
    return {
        "id": entry.id, "title": entry.title, "scheme": entry.scheme, "concepts": list(entry.concepts),
        "engines": list(entry.engines), "references": list(entry.references),
        "history": [{"date": e.date.isoformat(), "note": e.note} for e in entry.history],
        "withdrawn": entry.withdrawn.isoformat() if entry.withdrawn else None,
        "sections": dict(entry.sections),
        "introduced": dict(entry.introduced), "fixed": dict(entry.fixed),
        "checks": [{"id": c.id, "claim": c.claim, "engine": c.engine, "path": c.path, "in": c.scope,
                    "matcher": c.matcher, "pattern": c.pattern, "after": c.after, "adjacent": c.adjacent,
                    "since": c.since, "until": c.until,
                    "earlier": [{"since": f.since, "until": f.until, "path": f.path, "in": f.scope, "matcher": f.matcher,
                                 "pattern": f.pattern, "after": f.after, "adjacent": f.adjacent} for f in c.earlier]}
                   for c in entry.checks],
        "status": {engine: site.status(entry, engine).to_json() for engine in entry.engines},
        "url": Builder.entry_url(entry.id),
    }


def _api(b: Builder) -> None:
    site = b.site
    entries = [entry_json(site, e) for e in site.entries]
    for data in entries:
        b.add(("api", "entries", f"{data['id']}.json"), _json(data, indent=1))
    kb = {
        "format": 2, "generated": site.generated, "verifier": __version__,
        "engines": {k: {"name": v.engine.name, "package": v.engine.package, "repository": v.engine.repository,
                        "releases": [{"version": ver, "date": v.ledger.releases[ver].date} for ver in v.versions]}
                    for k, v in site.engines.items()},
        "schemes": site.kb.schemes, "concepts": site.kb.concepts, "entries": entries,
    }
    b.add(("api", "kb.json"), _json(kb, indent=1))
    b.add(("api", "kb.schema.json"), _json(KB_JSON_SCHEMA, indent=1))


_STATUS_ENUM = {"enum": [*STATUSES, None]}
ENTRY_JSON_SCHEMA = {
    "type": "object",
    "required": ["id", "title", "scheme", "concepts", "engines", "checks", "status", "sections", "url"],
    "properties": {
        "id": {"type": "string"}, "title": {"type": "string"}, "scheme": {"type": "string"},
        "concepts": {"type": "array", "items": {"type": "string"}},
        "engines": {"type": "array", "items": {"type": "string"}},
        "references": {"type": "array", "items": {"type": "string"}},
        "history": {"type": "array", "items": {"type": "object", "required": ["date", "note"]}},
        "withdrawn": {"type": ["string", "null"]},
        "sections": {"type": "object", "additionalProperties": {"type": "string"}},
        "checks": {"type": "array", "items": {"type": "object", "required": ["id", "claim", "engine", "path", "matcher", "pattern"]}},
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
        "url": {"type": "string"},
    },
}
KB_JSON_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gotchas: the whole knowledge base with its verdicts",
    "type": "object",
    "required": ["format", "generated", "engines", "schemes", "concepts", "entries"],
    "properties": {
        "format": {"const": 2}, "generated": {"type": "string"}, "verifier": {"type": "string"},
        "engines": {"type": "object", "additionalProperties": {"type": "object", "required": ["name", "releases"]}},
        "schemes": {"type": "object", "additionalProperties": {"type": "string"}},
        "concepts": {"type": "object", "additionalProperties": {"type": "string"}},
        "entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}},
    },
    "$defs": {"entry": ENTRY_JSON_SCHEMA,
              "verdict": {"type": "object", "required": ["verdict"],
                          "properties": {"verdict": {"enum": list(VERDICTS)}, "form": {"type": "integer"}}}},
}


def _badge_svg(label: str, parts: list[tuple[str, str]]) -> str:
    colours = {HOLDS: "#1e6b34", CHANGED: "#a4262c", UNVERIFIED: "#555555", NOT_AFFECTED: "#2f5580", None: "#555555"}
    width = 6 * len(label) + 12
    x = width
    texts = [f'<rect width="{width}" height="20" fill="#333"/><text x="6" y="14">{esc(label)}</text>']
    words = []
    for name, status in parts:
        text = f"{name} {STATUS_ICONS.get(status, '?')} {STATUS_WORDS.get(status, status)}"
        w = 6 * len(text) + 12
        texts.append(f'<rect x="{x}" width="{w}" height="20" fill="{colours.get(status, "#555")}"/>'
                     f'<text x="{x + 6}" y="14">{esc(text)}</text>')
        words.append(f"{name} {STATUS_WORDS.get(status, status)}")
        x += w
    title = esc(f"{label}: {', '.join(words)}")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{x}" height="20" role="img" aria-label="{title}">'
            f'<title>{title}</title><g font-family="DejaVu Sans,Verdana,sans-serif" font-size="11" fill="#fff">'
            f'{"".join(texts)}</g></svg>\n')


def _badges(b: Builder) -> None:
    site = b.site
    for entry in site.entries:
        parts = [(site.kb.engines[e].name if e in site.kb.engines else e, site.status(entry, e).latest) for e in entry.engines]
        b.add(("badges", f"{entry.id}.svg"), _badge_svg("gotcha", parts))


def _not_found(b: Builder) -> None:
    base = b.site.base_url
    content = (f'<h1>Page not found</h1><p>Nothing lives at this address. Try the {_link(base, "list of entries")} '
               f'or {_link(base + "search/", "search")}.</p>')
    b.pages.append(Page(("404.html",), "Page not found", content, fixed_root=base))


def _sitemap(b: Builder) -> None:
    base = b.site.base_url
    urls = "".join(f"<url><loc>{esc(base + p.url)}</loc></url>" for p in b.pages if p.path != ("404.html",))
    b.add(("sitemap.xml",), '<?xml version="1.0" encoding="utf-8"?>\n'
                            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>\n')
