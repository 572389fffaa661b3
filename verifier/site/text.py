"""Entries as text: plain words for search and feeds, one-line summaries for release pages, sections as
Markdown (raw HTML off, only safe links, at most MAX_MARKDOWN characters an entry)."""

from __future__ import annotations

import functools
import re

from markupsafe import Markup

from ..model import Entry
from .safe import _text, markdown_renderer

#: The most characters of an entry's sections rendered as Markdown (the largest entry's sections hold 5 KB). Its
#: inline rules cost tens of microseconds for each `[` or `*` (a link label is tried at every nesting level), so
#: the 1 MiB an entry may hold would take minutes; a section past this budget is shown as text.
MAX_MARKDOWN = 32 * 1024
#: The longest one-line summary (a symptom's first sentence, a workaround's first step), in characters.
MAX_SUMMARY = 220

SECTION_IDS = {"Symptom": "symptom", "Root cause": "root-cause", "Workaround": "workaround", "Notes": "notes"}

_MD = markdown_renderer()


def _plain(markdown: str) -> str:
    """Markdown as words for search and feeds: code spans and link texts kept, link targets dropped, identifiers
    kept whole (`vllm:num_preemptions`, never `vllm:num preemptions`).

    A link's text stops at the next `[` and its target at the next `(` (but one pair inside): a match that fails
    ends where the next one starts, and the pass is linear. A text that ran on past `[` made 100 KB of `[` take
    minutes.
    """
    text = re.sub(r"`([^`]*)`", r"\1", markdown)
    text = re.sub(r"\[([^\[\]]*)\]\((?:[^()]|\([^()]*\))*\)", r"\1", text)
    text = re.sub(r"(?<!\w)[*_]+|[*_]+(?!\w)", " ", text)  # emphasis, not the `_` inside `max_num_seqs`
    return re.sub(r"(?m)^[ \t]*(?:#+|>+)", " ", text)


def render_sections(entry: Entry | dict) -> list[dict]:
    """Each section (of an entry, or a dict title -> Markdown) as {title, anchor, html, shown_as_text}: Markdown
    within the budget, text past it."""
    sections = []
    budget = MAX_MARKDOWN
    for title, text in (entry if isinstance(entry, dict) else entry.sections).items():
        anchor = SECTION_IDS.get(title, re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section")
        if len(text) <= budget:
            budget -= len(text)
            sections.append({"title": title, "anchor": anchor, "html": _demote(_MD.render(_text(text))),
                             "paragraphs": None})
        else:
            sections.append({"title": title, "anchor": anchor, "html": None,
                             "paragraphs": [p for p in text.split("\n\n") if p.strip()]})
    return sections


def section_html(markdown: str) -> Markup:
    """One section as HTML (headings below an h3), within the Markdown budget, else as paragraphs of text."""
    if len(markdown) > MAX_MARKDOWN:
        return Markup("".join(f"<p>{Markup.escape(p)}</p>" for p in markdown.split("\n\n") if p.strip()))
    return _demote(_MD.render(_text(markdown)), 3)


def _demote(rendered: str, by: int = 2) -> Markup:
    """Headings inside a section sit below its h2, so the page keeps one h1 and an orderly outline."""
    def shift(match: re.Match) -> str:
        return f"<{match.group(1)}h{min(6, int(match.group(2)) + by)}"
    return Markup(re.sub(r"<(/?)h([1-6])", shift, rendered))


_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\[(\"])")


@functools.lru_cache(maxsize=1024)  # asked for each entry on each release page
def summary(markdown: str) -> Markup | str:
    """A section in one line: its first list item, or its first sentence, as inline Markdown when short
    enough, else as text cut at a word boundary."""
    text = (markdown or "").strip()
    if not text:
        return ""
    first = text.split("\n\n", 1)[0]
    if _ITEM.match(first):
        item = _ITEM.sub("", first, count=1)
        first = re.split(r"\n\s*(?:[-*+]|\d+[.)])\s+", item, maxsplit=1)[0]
    first = " ".join(first.split())
    sentence = _SENTENCE_END.split(first, maxsplit=1)[0] if len(first) > MAX_SUMMARY else first
    if len(sentence) <= MAX_SUMMARY and len(text) <= MAX_MARKDOWN:
        return Markup(_MD.renderInline(_text(sentence)))
    plain = " ".join(_plain(sentence).split())
    return cut(plain, MAX_SUMMARY)


def cut(text: str, limit: int) -> str:
    """`text` of at most about `limit` characters, cut at a space, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:") + " …"
