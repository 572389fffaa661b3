"""Markdown that every command writes (`check --format markdown`, `verify --report`, `follow --report`, `audit
--format markdown`, `surface`/`diff --format markdown`, docs/format.md's generated tables): the one escaper, so
that data (a title, a path, a message, a hint read from a ledger) is shown and never becomes markup.

- `text(value)`: data shown as written: every character that could format (`*`, `_` where it could emphasise,
  backticks, `[`/`]`, `~`, a backslash) escaped, `<`, `>` and `&` as entities (no raw HTML, no `<!--` hiding the
  rest of a job summary), `|` escaped for a table, on one line, and no bare URL that GitHub would link;
- `code(value)`: data as a code span, fenced by more backticks than it holds;
- `inline(markdown)`: Markdown an entry or the verifier wrote (a title, a workaround's first step, a sentence
  with code spans), kept as Markdown on one line: `|` escaped, `<` and `>` outside code spans as entities, a
  link to anything but http(s), mail or a relative address left as text; with `links=False` (a sentence the
  verifier wrote around data: a note, a hint, a reason) no link at all, its code spans kept;
- `fence(line)`: a line inside a fenced block (no run of backticks that would close it).

Each makes control characters visible as their escapes (`\\x1b`, as `report.terminal` does), so that a report
read in a terminal moves no cursor: C0 controls, DEL, C1 controls (ESC, CSI), lone surrogates and the
bidirectional controls. `text`, `code` and `inline` write one line; `start=True` is for a value that begins a
line or a list item, where `#`, `-`, `+`, `=` or `1.` would start a heading, a list or a rule.

(Not `verifier/text.py`: `text` is the name of the text writers of `report` and `audit`, and `site/text.py` is the
site's.)
"""

from __future__ import annotations

import re

#: What a terminal acts on or cannot print (the set `report.terminal` shows as escapes): C0 controls but tab,
#: DEL, C1 controls, lone surrogates, the bidirectional controls.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
#: Line breaks and tabs: spaces in a line of Markdown.
_BREAKS = re.compile("\r\n|[\t\n\v\f\r]")
#: Characters of `text` escaped with a backslash wherever they stand.
_PUNCTUATION = re.compile(r"[\\`*\[\]~|]")
#: `_` emphasises unless it stands between two letters or digits (`max_num_seqs` stays as written).
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
#: What begins a block at the start of a line: a heading, a quote, a list item, a setext underline or a rule.
_BLOCK_START = re.compile(r"[#>+=-]|\d{1,9}[.)]")
#: Link destinations kept as links: http(s) and mail; else one with no scheme (relative, a fragment), read as
#: CommonMark would before it decodes `&#58;` or `\:` into a colon.
_WEB_DESTINATION = re.compile(r"(?i)https?://|mailto:")
#: Where GitHub's Markdown (GFM's autolink extension) makes a link of bare text: a scheme it links before its `:`,
#: `www` before its `.`. A backslash there (`https\://`, `www\.`) shows the same text and links nothing.
_AUTOLINK = re.compile(r"(?i)(?:https?|ftp|xmpp)(?=:)|www(?=\.)")
#: What `inline(..., links=False)` escapes outside code spans: what begins or ends a link or an image.
_BRACKETS = re.compile(r"[\[\]]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _line(value: object) -> str:
    """`value` as one line: line breaks and tabs as spaces, control characters as their escapes."""
    return _CONTROL.sub(_visible, _BREAKS.sub(" ", "" if value is None else str(value)))


def _at_start(written: str) -> str:
    """`written` (escaped already) safe at the start of a line: what would begin a block escaped."""
    written = written.lstrip(" ")  # four spaces would begin a code block
    found = _BLOCK_START.match(written)
    if found is None:
        return written
    end = found.end()
    if written[end - 1] in "#+=-":
        return "\\" + written
    return written[:end - 1] + "\\" + written[end - 1:]  # `1.` -> `1\.`


def text(value: object, *, start: bool = False) -> str:
    """`value` (any object; None is "") as Markdown that shows it as written, on one line."""
    written = _line(value)
    written = _PUNCTUATION.sub(lambda m: "\\" + m.group(), written)
    written = _UNDERSCORE.sub(r"\\_", written)
    written = re.sub("[&<>]", lambda m: _ENTITIES[m.group()], written)
    written = _unlinked(written)
    return _at_start(written) if start else written


def _unlinked(written: str) -> str:
    """`written` (Markdown outside a code span) with no bare URL that GitHub would make a link of."""
    return _AUTOLINK.sub(lambda m: m.group() + "\\", written)


def code(value: object, *, table: bool = True) -> str:
    """`value` as a code span (empty for an empty value), on one line; in a table (`table`) its `|` escaped, as
    GFM reads a table's cells before their code spans."""
    written = _line(value)
    if not written:
        return ""
    if table:
        written = written.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", written)), default=0) + 1)
    # A span that begins or ends with a backtick, or with a space at both ends, is padded: CommonMark takes one
    # space off each end of a span that has one at both.
    pad = " " if written[0] == "`" or written[-1] == "`" or (
        written[0] == " " and written[-1] == " " and written.strip(" ")) else ""
    return f"{fence}{pad}{written}{pad}{fence}"


def inline(markdown: object, *, start: bool = False, links: bool = True) -> str:
    """Markdown (a title, a sentence with code spans, a cell of docs/format.md) kept as Markdown on one line
    (whitespace runs folded into one space), safe in a table cell: `|` escaped, raw HTML and autolinks made
    text (`<` and `>` outside code spans as entities), a link or image to anything but http(s), mail or an
    address with no scheme left as text. Code spans are found as CommonMark finds them (a backslash escapes a
    backtick outside one, not inside), in one pass.

    Without `links`, for a sentence the verifier wrote around data (a note, a hint, a reason that holds a file
    name, a setting's value, an index's answer): its code spans kept, and no link at all: `[` and `]` outside
    code spans escaped, and no bare URL that GitHub's autolinks would make a link of."""
    def plain(part: str) -> str:
        return part if links else _unlinked(_BRACKETS.sub(lambda m: "\\" + m.group(), part))

    source = _CONTROL.sub(_visible, " ".join(("" if markdown is None else str(markdown)).split()))
    out: list[str] = []
    unclosed: set[int] = set()  # lengths of backtick runs that no later run closes (never looked for again)
    i = 0
    for found in _SPECIAL.finditer(source):
        if found.start() < i:
            continue  # inside a code span already copied
        token = found.group()
        out.append(plain(source[i:found.start()]))
        i = found.end()
        if token[0] == "`":
            close = None if len(token) in unclosed else _closing(source, i, len(token))
            if close is None:
                unclosed.add(len(token))
                out.append(token)  # no closing run: the backticks are text
            else:
                out.append(source[found.start():close])
                i = close
        elif token in _ENTITIES:
            out.append(_ENTITIES[token])
        elif token == "](" and (not links or not _safe_destination(source, i)):
            out.append("\\](" if not links else "]\\(")  # `[x](javascript:...)`: the link stays text
        else:
            out.append(token)  # an escape (`\<` is no tag, `\`` opens no span), or a safe link
    out.append(plain(source[i:]))
    written = "".join(out).replace("|", "\\|")
    return _at_start(written) if start else written


#: What `inline` looks at: a backslash escape, a run of backticks, `<`, `>`, and the `](` of a link.
_SPECIAL = re.compile(r"\\[!-/:-@\[-`{-~]|`+|[<>]|\]\(")
_BACKTICKS = re.compile("`+")
_DESTINATION = re.compile(r" *([^\s)]*)")


def _closing(source: str, start: int, run: int) -> int | None:
    """The end of the run of exactly `run` backticks that closes a code span opened before `start`; None: none."""
    for found in _BACKTICKS.finditer(source, start):
        if len(found.group()) == run:
            return found.end()
    return None


def _safe_destination(source: str, at: int) -> bool:
    """Whether the destination of the link whose `](` ends at `at` may stay a link."""
    destination = _DESTINATION.match(source, at).group(1)  # type: ignore[union-attr]  # matches ""
    if _WEB_DESTINATION.match(destination):
        return True
    return not re.search(r"[:&\\<]", re.split(r"[/?#]", destination, maxsplit=1)[0])


def fence(line: str) -> str:
    """A line safe inside a fenced block (```): no run of backticks that would close it, no line break, control
    characters as their escapes (a tab stays)."""
    return _CONTROL.sub(_visible, line).replace("```", "`\u200b``")
