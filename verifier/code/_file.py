"""One file's text as the matchers read it: its lines, the mapping between character and byte offsets, and its
Python structure (tree-sitter's tree, scopes by symbol), each computed lazily and once.

`SourceFile` (the package's public class) is this with the searches (`_search`) and hints (`_hints`) added.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
from dataclasses import dataclass
from functools import cached_property

from ..model import is_python_path
from . import _cpp, _python

_WS = re.compile(r"\s+")
_CONTINUATION = re.compile(rb"[\x80-\xbf]")
_WIDE = re.compile(r"[^\x00-\x7f]")


def fold_whitespace(text: str) -> str:
    return _WS.sub(" ", text).strip()


@dataclass(frozen=True)
class Scope:
    """A region of a file: character offsets, and the symbol it is (None: whole file)."""

    start: int
    end: int
    symbol: str | None = None


@dataclass(frozen=True)
class Span:
    """Where something was found: character offsets into the file's text."""

    start: int
    end: int


class _File:
    """A file's bytes, and what the matchers read of them."""

    def __init__(self, path: str, data: bytes, sha256: str | None = None) -> None:
        self.path = path
        self.data = data
        if sha256 is not None:
            self.__dict__["sha256"] = sha256  # the cached_property below, already known

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @cached_property
    def is_python(self) -> bool:
        return is_python_path(self.path)

    @cached_property
    def is_cpp(self) -> bool:
        """A C or C++ file (`_cpp`): scopes by symbol and code compared by tokens, as a Python file's are."""
        return _cpp.is_cpp_path(self.path)

    @property
    def structured(self) -> bool:
        """Whether `in` scopes and token comparison apply (a Python, C or C++ file), not text alone."""
        return self.is_python or self.is_cpp

    @cached_property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    @cached_property
    def _line_starts(self) -> list[int]:
        # The start of each line: 0, then one past each newline (accumulated line lengths + 1).
        starts = list(itertools.accumulate(map((1).__add__, map(len, self.text.split("\n"))), initial=0))
        starts.pop()  # one past the end of the text
        return starts

    def line_of(self, offset: int) -> int:
        """1-based line number of a character offset."""
        return bisect.bisect_right(self._line_starts, offset)

    def lines_of(self, span: Span) -> tuple[int, int]:
        last = max(span.start, span.end - 1)
        return self.line_of(span.start), self.line_of(last)

    def line_text(self, line: int) -> str:
        starts = self._line_starts
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[starts[line - 1]:end]

    # --- Python structure -------------------------------------------------

    @cached_property
    def _encoded(self) -> bytes:
        # The text re-encoded: tree-sitter's byte offsets then map onto the text exactly,
        # even where the original bytes were not valid UTF-8.
        return self.text.encode("utf-8")

    @property
    def encoded(self) -> bytes:
        """The bytes tree-sitter parses (the text re-encoded): its byte offsets are `byte()`'s."""
        return self._encoded

    @cached_property
    def _ascii(self) -> bool:
        return len(self._encoded) == len(self.text)

    @cached_property
    def _continuations(self) -> list[int]:
        """Byte offsets of the UTF-8 continuation bytes: each makes the text one character shorter than its bytes.
        (The canonical layout asks for a character offset of every token: a search from the start each time
        was quadratic on files with a few non-ASCII characters.)"""
        return [m.start() for m in _CONTINUATION.finditer(self._encoded)]

    @cached_property
    def _wide(self) -> tuple[list[int], list[int]]:
        """Character offsets of the characters that take more than one byte, and how many bytes more each
        and those before it take."""
        offsets, extra, total = [], [], 0
        for m in _WIDE.finditer(self.text):
            total += len(m.group().encode("utf-8")) - 1
            offsets.append(m.start())
            extra.append(total)
        return offsets, extra

    def char(self, byte: int) -> int:
        """The character offset of a byte offset into the encoded text."""
        if self._ascii:
            return byte
        return byte - bisect.bisect_right(self._continuations, byte)

    def byte(self, char: int) -> int:
        if self._ascii:
            return char
        offsets, extra = self._wide
        before = bisect.bisect_left(offsets, char)
        return char + (extra[before - 1] if before else 0)

    @cached_property
    def tree(self):
        return _cpp.parse(self._encoded, self.path) if self.is_cpp else _python.parse(self._encoded, self.path)

    @property
    def root(self):
        return self.tree.root_node

    def whole(self) -> Scope:
        return Scope(0, len(self.text), None)

    def scopes(self, symbol: str) -> list[Scope]:
        """Every definition of `symbol` in this file (empty when there is none)."""
        if self.is_cpp:
            return [Scope(self.char(a), self.char(b), symbol)
                    for a, b in _cpp.resolve(self.root, symbol, self._cpp_definitions)]
        return [Scope(self.char(a), self.char(b), symbol) for a, b in _python.resolve(self.root, symbol, self._members)]

    @cached_property
    def _cpp_definitions(self) -> list[tuple[str, tuple[int, int]]]:
        return list(_cpp.definitions(self.root))

    def _members(self, container) -> list:
        """`_python.members(container)`, computed once per container: checks on one file share them."""
        found = self._members_of.get(container.id)
        if found is None:
            found = self._members_of[container.id] = list(_python.members(container))
        return found

    @cached_property
    def _members_of(self) -> dict[int, list]:
        return {}

    def has_error(self, scope: Scope | None = None) -> bool:
        """Whether the syntax tree has errors in the scope (the whole file by default)."""
        if scope is None or scope.symbol is None:
            return self.root.has_error
        node = self.root.descendant_for_byte_range(self.byte(scope.start), self.byte(scope.end))
        return node is None or node.has_error

    def definitions(self) -> list[tuple[str, Scope]]:
        return self._definitions

    @cached_property
    def _definitions(self) -> list[tuple[str, Scope]]:
        found = self._cpp_definitions if self.is_cpp else _python.definitions(self.root)
        return [(name, Scope(self.char(a), self.char(b), name)) for name, (a, b) in found]

    def imported_from(self, name: str) -> str | None:
        """Where an import in this file says `name` comes from (a repository path), or None."""
        found = _python.imported_from(self.root, name) if self.is_python else None
        return _python.module_path(self.path, *found) if found else None

    def symbol_at(self, offset: int) -> str | None:
        """The qualified name of the innermost definition holding a character offset.

        Descends from the module through the members holding the offset (the last
        one that starts latest, at each level), without listing every definition.
        """
        byte = self.byte(offset)
        if self.is_cpp:  # the innermost (latest starting) definition holding it
            holding = [(a, -b, name) for name, (a, b) in self._cpp_definitions if a <= byte < b]
            return max(holding)[2] if holding else None
        container, prefix, found = self.root, "", None
        while container is not None:
            best = None
            for name, (a, b), node in self._members(container):
                if a <= byte < b and (best is None or a >= best[1]):
                    best = (name, a, node)
            if best is None:
                break
            found = prefix + best[0]
            container = best[2] if best[2].type in _python.DEFINITIONS else None
            prefix = found + "."
        return found
