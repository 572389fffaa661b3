"""The tokenizer: a table of cases, and a differential test against a plain character scanner.

The scanner below (`_reference`) is the tokenizer as first written: one small
regular expression per token kind, tried in order at each position, every
string ended by the character scanner `_string_end`. The production tokenizer
finds each token with one combined expression and keeps `_string_end` only for
f-strings; both must give the same tokens, with the same offsets, on any text.
"""

from __future__ import annotations

import re
import signal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.code._tokens import (
    _OPERATORS,
    _STRING_START,
    ELLIPSIS_META,
    META,
    NAME,
    NUMBER,
    OP,
    STRING,
    _string_end,
    tokenize,
)

_R_NAME = re.compile(r"[^\W\d]\w*")
_R_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+"
    r"|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?"
)
_R_OP = re.compile("|".join(re.escape(o) for o in _OPERATORS))
_R_SPACE = re.compile(r"(?:[ \t\f\r\n]|\\\r?\n)+")
_R_COMMENT = re.compile(r"#[^\r\n]*")
_R_META = re.compile(r"\$\$\$|\$[A-Za-z_][A-Za-z0-9_]*")


def _reference(text: str, *, fragment: bool = False, start: int = 0, end: int | None = None) -> list[tuple]:
    """The tokens as (kind, text, start, end), scanned one kind at a time."""
    tokens: list[tuple] = []
    pos, n = start, len(text) if end is None else end
    append = tokens.append
    while pos < n:
        m = _R_SPACE.match(text, pos)
        if m:
            pos = m.end()
            continue
        c = text[pos]
        if c == "#":
            pos = _R_COMMENT.match(text, pos).end()
            continue
        if fragment and c == "$":
            m = _R_META.match(text, pos)
            if m:
                kind = ELLIPSIS_META if m.group() == "$$$" else META
                append((kind, m.group(), pos, m.end()))
                pos = m.end()
                continue
        m = _STRING_START.match(text, pos)
        if m:
            end = _string_end(text, m)
            append((STRING, text[pos:end], pos, end))
            pos = end
            continue
        m = _R_NAME.match(text, pos)
        if m:
            append((NAME, m.group(), pos, m.end()))
            pos = m.end()
            continue
        # (As first written, this crashed on ".²": '²' is a digit to str.isdigit, not to \d; and it
        # cut ".5" at `end`. The production tokenizer makes both one number or none, like this.)
        m = _R_NUMBER.match(text, pos)
        if m:
            append((NUMBER, m.group(), pos, m.end()))
            pos = m.end()
            continue
        m = _R_OP.match(text, pos)
        if m:
            append((OP, m.group(), pos, m.end()))
            pos = m.end()
            continue
        append((OP, c, pos, pos + 1))
        pos += 1
    return tokens


def _tokens(text: str, **kwargs) -> list[tuple]:
    return [tuple(token) for token in tokenize(text, **kwargs)]


@pytest.mark.parametrize("text, expected", [
    ("x = 1  # done\n", [(NAME, "x"), (OP, "="), (NUMBER, "1")]),
    ("return Exception()  # TODO: implement\n", [(NAME, "return"), (NAME, "Exception"), (OP, "("), (OP, ")")]),
    ("a\\\n  .b", [(NAME, "a"), (OP, "."), (NAME, "b")]),
    ("rb'x' + B\"y\" + u'''z'''", [(STRING, "rb'x'"), (OP, "+"), (STRING, 'B"y"'), (OP, "+"), (STRING, "u'''z'''")]),
    ("f'{a[\"k\"]}' g", [(STRING, "f'{a[\"k\"]}'"), (NAME, "g")]),
    ("f'{{x}}' 'y'", [(STRING, "f'{{x}}'"), (STRING, "'y'")]),
    ("'unterminated\nnext", [(STRING, "'unterminated"), (NAME, "next")]),
    ("'''open to the end\n x", [(STRING, "'''open to the end\n x")]),
    ("'a\\'b' c", [(STRING, "'a\\'b'"), (NAME, "c")]),
    ("x **= 0x1F_0 // .5e-3j", [(NAME, "x"), (OP, "**="), (NUMBER, "0x1F_0"), (OP, "//"), (NUMBER, ".5e-3j")]),
    ("tb'x'", [(NAME, "tb"), (STRING, "'x'")]),
    ("naïve ² ?", [(NAME, "naïve"), (NAME, "²"), (OP, "?")]),
    ("x.²", [(NAME, "x"), (OP, "."), (NAME, "²")]),
    ("   \n\t# only a comment", []),
])
def test_tokens(text, expected):
    assert [(kind, value) for kind, value, _, _ in _tokens(text)] == expected


def test_fragment_metavariables_only_in_fragments():
    assert [(k, v) for k, v, _, _ in _tokens("f($X, $$$)", fragment=True)] == [
        (NAME, "f"), (OP, "("), (META, "$X"), (OP, ","), (ELLIPSIS_META, "$$$"), (OP, ")")]
    assert [v for _, v, _, _ in _tokens("f($X)")] == ["f", "(", "$", "X", ")"]


def test_offsets_and_a_range():
    text = "def f():\n    return g(1)\n\nh = 2\n"
    start = text.index("return")
    end = text.index("h =")
    tokens = _tokens(text, start=start, end=end)
    assert [v for _, v, _, _ in tokens] == ["return", "g", "(", "1", ")"]
    assert all(text[s:e] == v for _, v, s, e in tokens)
    # a token that starts before `end` is whole
    assert _tokens("abc 'xyz'", start=0, end=5) == [(NAME, "abc", 0, 3), (STRING, "'xyz'", 4, 9)]


def _within(seconds: int, function, *args, **kwargs):
    def expired(signum, frame):
        raise TimeoutError(f"tokenize took more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        return function(*args, **kwargs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("text", [
    "x" + " " * 50_000,                      # trailing whitespace after the last token
    "x" + "# c # c # c\n" * 5_000,           # comments full of '#' and no token after them
    "'" + "\\" * 40_001,                     # an unterminated string of backslashes
    "'''" + "''\\" * 20_000,                 # an unterminated triple-quoted string of quote pairs
])
def test_no_catastrophic_backtracking(text):
    """Inputs that make a nested quantifier backtrack exponentially finish at once (an exponential one never would)."""
    assert _within(20, _tokens, text) == _reference(text)


_PIECES = st.sampled_from([
    " ", "\t", "\n", "\r\n", "\\\n", "#", "# c\n", "'", '"', "'''", '"""', "\\", "{", "}", "{{", "f", "rb", "t", "u",
    "x", "_y1", "é", "²", "0", "1.5", ".5", "0x1F", "e3", "j", "$", "$X", "$$$", "(", ")", "[", "]", ",", ".",
    "**=", "->", ":=", "...", "!", "?", "@",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40), st.booleans(), st.data())
def test_same_tokens_as_the_reference_scanner(pieces, fragment, data):
    text = "".join(pieces)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert _tokens(text, fragment=fragment) == _reference(text, fragment=fragment)
    assert _tokens(text, fragment=fragment, start=start, end=end) == _reference(
        text, fragment=fragment, start=start, end=end)


def test_same_tokens_as_the_reference_on_the_test_sources():
    """Every Python file of the test suite, as a whole."""
    from pathlib import Path

    texts = [p.read_text("utf-8", "replace") for p in Path(__file__).parent.rglob("*.py")]
    assert texts
    for text in texts:
        assert _tokens(text) == _reference(text)
