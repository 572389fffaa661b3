"""Text safe to print on a terminal: every control character in data shown as its escape, never acted on.

Text for a terminal (and for a workflow's log, which renders ANSI sequences) goes through `terminal`, once per
output: data (a title, a ledger's hint, a path) can hold ESC and the rest, and a terminal acts on them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

_T = TypeVar("_T")

#: What a terminal acts on or cannot print: C0 controls but tab (and newline, where lines are kept), DEL, C1
#: controls (ESC and CSI begin the sequences that move the cursor, clear the screen or retitle the window), lone
#: surrogates (which no encoding prints), and the bidirectional controls that reorder what is shown.
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str, lines: bool = True) -> str:
    """`text` safe to print: each control character shown as its escape (`\\x1b`), never acted on. With `lines`,
    newlines are kept (`text` is several lines); without, `text` is one line and a newline in it is shown too."""
    if lines:
        return "\n".join(_NOT_PRINTABLE.sub(_visible, line) for line in text.split("\n"))
    return _NOT_PRINTABLE.sub(_visible, text)


def _terminal_lines(out: Sequence[str]) -> str:
    """Lines built from data, each one line whatever the data holds, as one text ending in a newline."""
    return "\n".join(terminal(line, lines=False) for line in out) + "\n"


def printable(run: Callable[[_T], int], args: _T) -> int:
    """`run(args)` (a command) with standard output that writes what no encoding can as its escape
    (`backslashreplace`, as Python's standard error does already): a lone surrogate that reached the output some
    other way than through `terminal` or `verifier.md` (an argument, a file name of invalid UTF-8) is written as
    `\\udcff`, never a UnicodeEncodeError traceback. The stream is put back as it was on leaving."""
    stream = sys.stdout
    errors = getattr(stream, "errors", None)
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is None or errors == "backslashreplace":
        return run(args)
    try:
        reconfigure(errors="backslashreplace")
    except (ValueError, OSError):  # a closed or odd stream: left as it is
        return run(args)
    try:
        return run(args)
    finally:
        try:
            reconfigure(errors=errors)
        except (ValueError, OSError):
            pass
