"""Reading the Markdown body of an entry: its `##` sections, in order, none empty, the required ones present."""

from __future__ import annotations

from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

from ..model import Entry

if TYPE_CHECKING:
    from ._values import Problem

SECTIONS = ("Symptom", "Root cause", "Workaround", "Notes")
REQUIRED_SECTIONS = ("Symptom", "Root cause", "Workaround")

_MD = MarkdownIt("commonmark")
# Only the block structure is read (h2 headings and their lines): inline parsing would be wasted.
_MD.core.ruler.disable(["inline", "text_join"], ignoreInvalid=True)


def _read_body(entry: Entry, body: str, first_line: int, problem: Problem) -> None:
    tokens = _MD.parse(body)
    headings = []  # (title, body line index of the heading, token index)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h2" and token.map:
            headings.append((tokens[i + 1].content.strip(), token.map[0]))
    body_lines = body.split("\n")
    if headings:
        before = "\n".join(body_lines[: headings[0][1]]).strip()
        if before:
            problem(first_line, "G405", "text before the first section; start the body with '## Symptom'")
    seen: list[str] = []
    for index, (title, start) in enumerate(headings):
        line = first_line + start
        end = headings[index + 1][1] if index + 1 < len(headings) else len(body_lines)
        content = "\n".join(body_lines[start + 1:end]).strip()
        first = next((k for k in range(start + 1, end) if body_lines[k].strip()), start + 1)
        if title not in SECTIONS:
            problem(line, "G403", f"unknown section {title!r}; sections are: {', '.join(SECTIONS)}")
            continue
        if title in seen:
            problem(line, "G402", f"section {title!r} appears twice")
            continue
        if seen and SECTIONS.index(title) < SECTIONS.index(seen[-1]):
            problem(line, "G402", f"section {title!r} must come before {seen[-1]!r}")
        if not content:
            problem(line, "G404", f"section {title!r} is empty")
        seen.append(title)
        entry.sections[title] = content
        entry.lines[f"section:{title}"] = line
        entry.lines[f"text:{title}"] = first_line + first  # the section's first line of text (prose lint's lines)
    for title in REQUIRED_SECTIONS:
        if title not in seen:
            problem(first_line if not headings else first_line + headings[-1][1], "G401",
                    f"missing section '## {title}'")
