"""A Python tokenizer for sources and check fragments alike.

Both sides of a `contains` comparison go through this one tokenizer so that they
agree on what a token is. It never fails: what it does not recognise becomes a
one-character token. Comments, whitespace, line breaks and line continuations
are dropped. A string literal (any prefix, triple quotes, f-strings with nested
quotes) is one token whose text is its source text.

In fragments, `$NAME` is a metavariable (one token) and `$$$` a run of tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME = "name"
NUMBER = "number"
STRING = "string"
OP = "op"
META = "meta"  # $NAME
ELLIPSIS_META = "meta-run"  # $$$

_STRING_START = re.compile(r"(?i:rb|br|fr|rf|tr|rt|b|r|u|f|t)?('''|\"\"\"|'|\")")
_NAME = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+"
    r"|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?"
)
_OPERATORS = sorted(
    """**= //= >>= <<= ... -> := += -= *= /= %= &= |= ^= @= == != <= >= ** // << >>
    + - * / % @ & | ^ ~ < > ( ) [ ] { } , : ; . = !""".split(),
    key=len,
    reverse=True,
)
_OP = re.compile("|".join(re.escape(o) for o in _OPERATORS))
_SPACE = re.compile(r"(?:[ \t\f\r\n]|\\\r?\n)+")
_COMMENT = re.compile(r"#[^\r\n]*")
_META = re.compile(r"\$\$\$|\$[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    start: int  # character offset in the tokenized text
    end: int


def tokenize(text: str, *, fragment: bool = False, start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of text[start:end], with offsets into `text`. With `fragment`, `$NAME` and `$$$` are metavariables."""
    tokens: list[Token] = []
    pos, n = start, len(text) if end is None else end
    append = tokens.append
    while pos < n:
        m = _SPACE.match(text, pos)
        if m:
            pos = m.end()
            continue
        c = text[pos]
        if c == "#":
            pos = _COMMENT.match(text, pos).end()
            continue
        if fragment and c == "$":
            m = _META.match(text, pos)
            if m:
                kind = ELLIPSIS_META if m.group() == "$$$" else META
                append(Token(kind, m.group(), pos, m.end()))
                pos = m.end()
                continue
        m = _STRING_START.match(text, pos)
        if m:
            end = _string_end(text, m)
            append(Token(STRING, text[pos:end], pos, end))
            pos = end
            continue
        m = _NAME.match(text, pos)
        if m:
            append(Token(NAME, m.group(), pos, m.end()))
            pos = m.end()
            continue
        if c.isdigit() or (c == "." and pos + 1 < n and text[pos + 1].isdigit()):
            m = _NUMBER.match(text, pos)
            append(Token(NUMBER, m.group(), pos, m.end()))
            pos = m.end()
            continue
        m = _OP.match(text, pos)
        if m:
            append(Token(OP, m.group(), pos, m.end()))
            pos = m.end()
            continue
        append(Token(OP, c, pos, pos + 1))
        pos += 1
    return tokens


def _string_end(text: str, start: re.Match) -> int:
    """Offset just past the string literal that `start` (prefix and quote) opens.

    An unterminated single-quoted string ends at its line's end, a triple-quoted
    one at the end of the text, where Python's own tokenizer would give up.
    """
    quote = start.group(1)
    prefix = start.group()[: -len(quote)].lower()
    formatted = "f" in prefix or "t" in prefix
    triple = len(quote) == 3
    pos, n = start.end(), len(text)
    depth = 0  # brace depth inside an f-string's replacement fields
    while pos < n:
        c = text[pos]
        if depth:
            nested = _STRING_START.match(text, pos)
            if nested and (pos == 0 or not (text[pos - 1].isalnum() or text[pos - 1] == "_")):
                pos = _string_end(text, nested)
                continue
            depth += c == "{"
            depth -= c == "}"
        elif c == "\\":
            pos += 1
        elif text.startswith(quote, pos):
            return pos + len(quote)
        elif c in "\r\n" and not triple:
            return pos
        elif c == "{" and formatted:
            if text.startswith("{{", pos):
                pos += 1
            else:
                depth = 1
        pos += 1
    return n
