"""A C and C++ tokenizer for sources and check fragments alike (#30), giving `_tokens.Token`s of the same kinds
as the Python one, so that a `contains` comparison of C++ code goes through the same matching.

Like the Python tokenizer it never fails: what it does not recognise becomes a one-character token.
Whitespace, line continuations and comments (`//` to the end of the line, `/* ... */`) are dropped. A string or
character literal, with its encoding prefix (`u8`, `u`, `U`, `L`) and a raw string (`R"x(...)x"`) whole, is one
token whose text is its source text; a number is one token with its digit separators and suffix (`1'000'000`,
`0.0f`, `4096u`). `>>` is two `>` tokens (no operator of the table is `>>`), as a template's closing brackets
are whichever way they are written (`std::vector<std::vector<int>>` and `> >`); a shift is then two tokens on both
sides of a comparison alike.

In fragments, `$NAME` is a metavariable (one token) and `$$$` a run of tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import cast

from ._tokens import NAME, NUMBER, OP, STRING, Token, scan

_OPERATORS = sorted(
    """<=> ->* ... <<= >>= :: -> ++ -- << <= >= == != && || += -= *= /= %= &= |= ^= .* ## #
    + - * / % ^ & | ~ ! = < > ( ) [ ] { } , ; : ? .""".split(),
    key=len,
    reverse=True,
)
# Whitespace, line continuations and comments before a token; an unterminated block comment runs to the end.
_SKIP = r"(?:[ \t\f\v\r\n]|\\\r?\n|//(?:[^\r\n\\]|\\[\s\S]?)*+|/\*(?:[^*]|\*(?!/))*+(?:\*/|\Z))*+"
_PREFIX = r"(?:u8|u|U|L)?"
# A raw string's opening: prefix, R, quote, delimiter, parenthesis (ended by `_raw_end`).
_RAW_START = re.compile(_PREFIX + r'R"([^()\\\s"]{0,16})\(')
#: `_RAW_START.match` where the token pattern matched a raw string's opening: never None, a cast made once here
#: rather than on each raw string.
_raw_opening = cast("Callable[[str, int], re.Match[str]]", _RAW_START.match)
# A string or character literal, whole; unterminated, it ends at its line's end.
_QUOTED = _PREFIX + r"""(?:"(?:[^"\\\r\n]|\\[\s\S]?)*+"?|'(?:[^'\\\r\n]|\\[\s\S]?)*+'?)"""
_NUMBER = (r"(?:0[xX][0-9a-fA-F']+(?:\.[0-9a-fA-F']*)?(?:[pP][+-]?\d+)?|0[bB][01']+"
           r"|(?:\d[\d']*(?:\.[\d']*)?|\.\d[\d']*)(?:[eE][+-]?\d[\d']*)?)(?:[A-Za-z_]\w*)?")
_META_TOKEN = r"\$\$\$|\$[A-Za-z_][A-Za-z0-9_]*"
# The groups, tried in this order: 1 `$$$` or `$NAME` (fragments only), 2 a raw string's opening, 3 a number, 4 a
# string or character literal, 5 a name, 6 an operator, 7 any other character; or the end of the text.
_BODY = r"({meta})|({raw})|({number})|({quoted})|([^\W\d]\w*)|({ops})|([\s\S])"
_KINDS = (None, None, STRING, NUMBER, STRING, NAME, OP, OP)


def _token_pattern(fragment: bool) -> re.Pattern:
    return re.compile(_SKIP + "(?:" + _BODY.format(
        meta=_META_TOKEN if fragment else r"(?!)", raw=_RAW_START.pattern.replace('R"(', 'R"(?:', 1),
        number=_NUMBER, quoted=_QUOTED,
        ops="|".join(re.escape(o) for o in _OPERATORS)) + r"|\Z)")


_TOKEN = {False: _token_pattern(False), True: _token_pattern(True)}


def tokenize(text: str, *, fragment: bool = False, start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of text[start:end], with offsets into `text`. With `fragment`, `$NAME` and `$$$` are metavariables.

    A token that starts before `end` is whole, even where it runs past `end`.
    """
    return scan(text, _TOKEN[fragment], _KINDS, _raw_end, start, end)


def _raw_end(text: str, begin: int) -> int:
    """Where a raw string that opens at `begin` ends: after `)delimiter"`, newlines and quotes inside; an
    unterminated one at the end of the text."""
    opening = _raw_opening(text, begin)
    close = text.find(")" + opening.group(1) + '"', opening.end())
    return len(text) if close < 0 else close + len(opening.group(1)) + 2
