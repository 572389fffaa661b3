"""What a file may hold before tree-sitter parses it: a linear pre-scan, so that a hostile release file is refused
with a clear message instead of costing gigabytes (and, under a memory limit, a segfault of the whole run).

tree-sitter's memory grows with the number of nodes it builds, about 200 to 370 bytes per token whatever the shape
(measured, tree-sitter-python: 1 MiB of `[1,1,...]` 216 MB, of `------x` 264 MB, of nested `[[...]]` 366 MB per
million tokens; real code, about 230 bytes per token, 54 MB per MiB): a 16 MiB file of nested brackets took 5.8 GB.
So the scan bounds two things, both in C-speed passes over the bytes (`bytes.translate`, `bytes.count`, one
`accumulate`):

- tokens: every punctuation byte, and every run of word bytes (ASCII letters, digits, `_` and every non-ASCII
  byte), counted; words in strings and comments count too, an over-estimate. The most in a real file: 729,520
  (llama.cpp's vendored miniaudio.h, 4 MB); in a Python file 205,633 (playwright's _generated.py, 1 MB); over
  the newest vLLM, SGLang and llama-cpp-python releases in the cache and the venv's site-packages (24,000
  files). MAX_TOKENS is 2,000,000: at most about 750 MB to parse.
- nesting of `(`, `[` and `{`: every bracket counted, inside strings and comments too (an over-estimate). The
  deepest real file: 82 (llama.cpp's tests/test-gguf.cpp); of Python 63 (pygments' lexers/prolog.py); same
  files. MAX_DEPTH is 256 (`_cpp_parens` once cost more than the square of a C/C++ file's depth, 1,000 levels
  4.5 to 20 s; it now grows about linearly, 1,000 levels in 10 ms).
  Deeper trees without brackets (`------x`, `a.b.c...`) cost what their tokens do; a walk in Python that
  recurses too far in one is a RecursionError, which `evaluate` already makes `unparsable`.

A refused file raises `ParseRefused`: a RecursionError, so `evaluate` makes it the check's `error unparsable`
verdict with the message (the same path as a file that nests too deeply to walk), and a GotchasError, so a command
that parses outside `evaluate` ends with `gotchas: <message>` rather than a traceback.
"""

from __future__ import annotations

import itertools

from ..errors import EXIT_ERROR, GotchasError

#: Tokens a file may have to be parsed (see above: the most in a real file is 729,520).
MAX_TOKENS = 2_000_000
#: Nesting of brackets a file may have to be parsed (see above: the deepest real file has 82).
MAX_DEPTH = 256

_BRACKETS = b"()[]{}"
_NOT_BRACKET = bytes(b for b in range(256) if b not in _BRACKETS)
_NOT_OPENING = bytes(b for b in range(256) if b not in b"([{")
_STEP = tuple(1 if b in b"([{" else -1 if b in b")]}" else 0 for b in range(256))
# Bytes that are no token on their own: word bytes (counted by runs, `_WORDS`) and whitespace.
_NOT_PUNCTUATION = bytes(b for b in range(256) if b >= 0x80 or chr(b).isalnum() or chr(b) in "_ \t\r\n\f\v")
# Each byte as `a` (a word byte: ASCII letter, digit, `_`, any non-ASCII byte) or a space: a run of words starts
# at each ` a`.
_WORDS = bytes(0x61 if b >= 0x80 or chr(b).isalnum() or b == 0x5F else 0x20 for b in range(256))


class ParseRefused(GotchasError, RecursionError, exit_code=EXIT_ERROR):
    """A file past MAX_TOKENS or MAX_DEPTH, refused before parsing; the message names it and says why."""


def tokens(data: bytes) -> int:
    """An over-estimate of the tokens of `data`: its punctuation bytes and its runs of word bytes."""
    words = data.translate(_WORDS)
    return len(data.translate(None, _NOT_PUNCTUATION)) + words.count(b" a") + words.startswith(b"a")


def depth(data: bytes) -> int:
    """The deepest nesting of brackets in `data`, every bracket counted (in strings and comments too)."""
    return max(itertools.accumulate(map(_STEP.__getitem__, data.translate(None, _NOT_BRACKET))), default=0)


def check(data: bytes, where: str | None = None) -> None:
    """Raise ParseRefused if `data` has more than MAX_TOKENS tokens or nests brackets deeper than MAX_DEPTH."""
    name = where or "a file"
    count = tokens(data)
    if count > MAX_TOKENS:
        raise ParseRefused(f"{name}: about {count:,} tokens, over the {MAX_TOKENS:,}-token bound; not parsed")
    if len(data.translate(None, _NOT_OPENING)) <= MAX_DEPTH:
        return  # fewer opening brackets than the bound: no deeper
    deepest = depth(data)
    if deepest > MAX_DEPTH:
        raise ParseRefused(f"{name}: nesting deeper than {MAX_DEPTH:,} ({deepest:,} levels); not parsed")


def unparsable_message(exc: RecursionError) -> str:
    """The message of the `error unparsable` verdict for `exc`: a refused file's own message, else that the file
    nests too deeply to analyse."""
    return str(exc) if isinstance(exc, ParseRefused) else "the file nests too deeply to analyse"
