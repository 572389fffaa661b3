"""A Python tokenizer for sources and check fragments alike.

Both sides of a `contains` comparison go through this one tokenizer so that they
agree on what a token is. It never fails: what it does not recognise becomes a
one-character token. Comments, whitespace, line breaks and line continuations
are dropped. A string literal (any prefix, triple quotes, f-strings with nested
quotes) is one token whose text is its source text.

In fragments, `$NAME` is a metavariable (one token) and `$$$` a run of tokens.

One regular expression finds each token and skips what precedes it, so a token
costs one match; only f-strings, whose replacement fields may nest quotes, are
ended by a small scanner (`_string_end`).

Why not the standard library's `tokenize`: it raises on what it cannot tokenize
(an unterminated string, a fragment such as `foo(` or `$$$`), where this one must
never fail, and it is slower: on 200 Python files (3 MB) of a vLLM wheel, 4.8-5.6 s
against 1.8-2.6 s here (#19, same run; it makes an object per token, comments and
layout included, that this would then drop).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple, cast

NAME = "name"
NUMBER = "number"
STRING = "string"
OP = "op"
META = "meta"  # $NAME
ELLIPSIS_META = "meta-run"  # $$$

_STRING_START = re.compile(r"(?i:rb|br|fr|rf|tr|rt|b|r|u|f|t)?('''|\"\"\"|'|\")")
#: `_STRING_START.match` where an opening is known to be there (the token pattern matched one): never None, a
#: cast made once here rather than on each f-string.
_string_opening = cast("Callable[[str, int], re.Match[str]]", _STRING_START.match)
_NUMBER = (
    r"0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+"
    r"|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?"
)
_OPERATORS = sorted(
    """**= //= >>= <<= ... -> := += -= *= /= %= &= |= ^= @= == != <= >= ** // << >>
    + - * / % @ & | ^ ~ < > ( ) [ ] { } , : ; . = !""".split(),
    key=len,
    reverse=True,
)
# Whitespace, line continuations and comments before a token.
_SKIP = r"(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*+)*+"
# A string literal without f/t prefix, whole. It ends at its closing quote; an
# unterminated single-quoted one at its line's end, an unterminated triple-quoted
# one at the end of the text (where Python's tokenizer gives up). A backslash
# escapes the character after it.
_PLAIN_STRING = (
    r"(?i:rb|br|b|r|u)?(?:"
    r"'''(?:[^'\\]|\\[\s\S]?|'(?!''))*+(?:'''|\Z)"
    r'|"""(?:[^"\\]|\\[\s\S]?|"(?!""))*+(?:"""|\Z)'
    r"|'(?:[^'\\\r\n]|\\[\s\S]?)*+'?"
    r'|"(?:[^"\\\r\n]|\\[\s\S]?)*+"?'
    r")"
)
# The groups, tried in this order: 1 `$$$` or `$NAME` (fragments only), 2 the
# opening of an f/t-string, 3 a plain string, 4 a name, 5 a number, 6 an
# operator, 7 any other character (a token of its own); or the end of the text, so
# that a match never skips ahead.
_BODY = r"({meta})|((?i:fr|rf|tr|rt|f|t)(?:'''|\"\"\"|'|\"))|({plain})|([^\W\d]\w*)|({number})|({ops})|([\s\S])"
_META_TOKEN = r"\$\$\$|\$[A-Za-z_][A-Za-z0-9_]*"


def _token_pattern(fragment: bool) -> re.Pattern:
    return re.compile(_SKIP + "(?:" + _BODY.format(
        meta=_META_TOKEN if fragment else r"(?!)", plain=_PLAIN_STRING, number=_NUMBER,
        ops="|".join(re.escape(o) for o in _OPERATORS)) + r"|\Z)")


_TOKEN = {False: _token_pattern(False), True: _token_pattern(True)}
_KINDS = (None, None, STRING, STRING, NAME, NUMBER, OP, OP)


class Token(NamedTuple):
    kind: str
    text: str
    start: int  # character offset in the tokenized text
    end: int


def tokenize(text: str, *, fragment: bool = False, start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of text[start:end], with offsets into `text`. With `fragment`, `$NAME` and `$$$` are metavariables.

    A token that starts before `end` is whole, even where it runs past `end`.
    """
    return scan(text, _TOKEN[fragment], _KINDS, _f_string_end, start, end)


def _f_string_end(text: str, begin: int) -> int:
    return _string_end(text, _string_opening(text, begin))


def scan(text: str, pattern: re.Pattern, kinds: tuple, special_end, start: int = 0, end: int | None = None
         ) -> list[Token]:
    """The loop of a tokenizer (this one's, and `_cpp_tokens`'s): `pattern`'s groups are, in order, 1 a
    metavariable, 2 the opening of a token that `special_end(text, begin)` ends (an f-string, a raw string), then
    the token kinds `kinds` gives by group; no group: only whitespace and comments are left."""
    tokens: list[Token] = []
    append = tokens.append
    n = len(text) if end is None else end
    new = tuple.__new__  # Token(...) without the Python-level __new__ of a NamedTuple
    pos = start
    while pos < n:
        for m in pattern.finditer(text, pos):
            group = m.lastindex
            if group is None:  # only whitespace and comments are left
                return tokens
            begin = m.start(group)
            if begin >= n:
                return tokens
            if group == 2:  # ended by its scanner, then go on after it
                stop = special_end(text, begin)
                append(Token(STRING, text[begin:stop], begin, stop))
                pos = stop
                break
            value = m.group(group)
            if group == 1:
                append(Token(ELLIPSIS_META if value == "$$$" else META, value, begin, m.end()))
            else:
                append(new(Token, (kinds[group], value, begin, m.end())))
        else:
            return tokens
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
