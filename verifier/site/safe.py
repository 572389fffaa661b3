"""What data may become in an output: text (control characters replaced), a link (only http(s) and relative
URLs), JSON (lone surrogates escaped), a name in a URL. Templates escape HTML themselves (Jinja2 autoescape);
these are the few things autoescape does not know."""

from __future__ import annotations

import json
import re
from urllib.parse import quote, urlsplit

from markdown_it import MarkdownIt
from markupsafe import Markup, escape

_WEB_SCHEMES = ("", "http", "https")  # "" is a relative link
_MARKDOWN_SCHEMES = (*_WEB_SCHEMES, "mailto")
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
#: What no URL written into a page may hold: spaces and controls (a browser drops some of them, so that
#: `java\tscript:` is `javascript:`), lone surrogates, and what would end an attribute or a tag.
_URL_REFUSED = re.compile("[\x00-\x20\x7f-\x9f\ud800-\udfff\"'<>`\\\\]")
#: What XML 1.0 does not allow (C0 controls but tab, newline and return; lone surrogates; U+FFFE, U+FFFF),
#: and what HTML calls a parse error (DEL and C1 controls): each becomes U+FFFD.
_NOT_TEXT = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: object) -> str:
    return _NOT_TEXT.sub("\ufffd", "" if value is None else str(value))


def finalize(value: object):
    """Every value a template prints: markup the site made itself as it is, anything else as text whose
    characters XML and HTML allow (autoescape then escapes it)."""
    return value if isinstance(value, Markup) else _text(value)


def _url_scheme(url: object) -> str | None:
    """A URL's scheme as a browser reads it, lowercased; "" for a relative URL; None for a URL that is not to be
    written into a page at all (see _URL_REFUSED, or a colon before the first '/' that names no scheme)."""
    if not isinstance(url, str) or _URL_REFUSED.search(url):
        return None
    found = _URL_SCHEME.match(url)
    if found:
        return found.group(1).lower()
    return None if ":" in re.split(r"[/?#]", url, maxsplit=1)[0] else ""


def web_url(url: object) -> bool:
    """Whether `url` may be written as a link: http(s) or relative."""
    return _url_scheme(url) in _WEB_SCHEMES


def _validate_link(url: str) -> bool:
    """Markdown links: web, mail and relative ones; never javascript:, data:, file: or the like."""
    return _url_scheme(url) in _MARKDOWN_SCHEMES


def _link(url: object, text: object) -> Markup:
    """`text` as a link to `url` when that is an http(s) or relative URL, else as text: the one way a URL from
    data (a reference, an engine's repository, a permalink built from it) becomes a link."""
    if web_url(url):
        return Markup(f'<a href="{escape(url)}">{escape(finalize(text))}</a>')  # a web URL holds no control
    return escape(finalize(text))


def _q(name: str, safe: str = "") -> str:
    """A name as a part of a URL (a name that cannot be one is refused when its file is written)."""
    return quote(name, safe=safe, errors="replace")


def _json(data: object, indent: int | None = None) -> bytes:
    """JSON as UTF-8; a lone surrogate (JSON can carry one, UTF-8 cannot) is written as its JSON escape."""
    return json.dumps(data, indent=indent, ensure_ascii=False).encode("utf-8", "backslashreplace")


def json_script(data: object) -> Markup:
    """JSON for a <script type="application/json"> element: no "</" can close it, no "&" starts a reference."""
    return Markup(json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def markdown_renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.validateLink = _validate_link  # type: ignore[method-assign]  # markdown-it's own way to change the check
    return md


def url_problem(url: object, what: str, web_only: bool = False) -> str | None:
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


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
