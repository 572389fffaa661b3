"""Matching source text: the one public surface over tokens, Python scopes and text.

`SourceFile` wraps the bytes of one file and computes, lazily and once, what the
matchers need: its text, tokens, token index, syntax tree and line table.
"""

from __future__ import annotations

import bisect
import difflib
import functools
import hashlib
import itertools
import re
from dataclasses import dataclass
from functools import cached_property

from ..model import is_python_path
from . import _canonical, _fragments, _python, _tokens
from ._canonical import RUNS
from ._fragments import BudgetExceeded, PatternTooDeep

__all__ = ["BudgetExceeded", "Fragment", "PatternTooDeep", "Scope", "SourceFile", "Span", "fold_whitespace",
           "fragment"]

_WS = re.compile(r"\s+")
_CONTINUATION = re.compile(rb"[\x80-\xbf]")
_WIDE = re.compile(r"[^\x00-\x7f]")
_WORD = re.compile(r"\w+")
_SHORTLIST = 8  # lines compared character by character for a closest-line hint
#: Characters of a line, and of the code looked for, that a closest-line hint compares (difflib's ratio
#: costs their product): a longer one is compared by its beginning.
_HINT_CHARS = 500


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


@functools.lru_cache(maxsize=4096)
def fragment(code: str) -> Fragment:
    """The tokenized fragment of `code`, shared by every check and release that uses it."""
    return Fragment(code)


class Fragment:
    """A `contains`/`absent`/`after` fragment in the canonical layout (`_canonical`), made once.

    A fragment that cannot be matched within bounds (it nests too deeply to lay out, or has more `$$$` and
    `$NAME` than matching may recurse for) has no tokens and says why in `problem` ("the fragment " + problem):
    the check's fault, never the file's.
    """

    def __init__(self, code: str) -> None:
        self.code = code
        self.problem: str | None = None
        try:
            canonical = _canonical.fragment_tokens(code)
        except RecursionError:
            canonical = _canonical.CanonicalFragment((), False)
            self.problem = "nests too deeply to analyse (brackets or blocks within one another)"
        variables = sum(1 for t in canonical.tokens if t.kind in RUNS or t.kind == _tokens.META)
        if variables > _fragments.MAX_VARIABLES:
            canonical = _canonical.CanonicalFragment((), False)
            self.problem = (f"has {variables} `$$$` and `$NAME`, too many to match (matching recurses for each); "
                            f"at most {_fragments.MAX_VARIABLES}")
        self.tokens = list(canonical.tokens)
        #: Parsed as Python: compared with the statement marks, its `$NAME` binding a whole expression.
        #: Otherwise (`] = False`) compared with the scope's tokens without marks, `$NAME` binding one token.
        self.structural = canonical.structural
        self.folded = fold_whitespace(code)

    @property
    def is_empty(self) -> bool:
        """True when the fragment has no token that must be present (a fragment with a problem is not empty)."""
        return self.problem is None and all(t.kind in RUNS for t in self.tokens)


class SourceFile:
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
        return _python.parse(self._encoded)

    @property
    def root(self):
        return self.tree.root_node

    def whole(self) -> Scope:
        return Scope(0, len(self.text), None)

    def scopes(self, symbol: str) -> list[Scope]:
        """Every definition of `symbol` in this file (empty when there is none)."""
        return [Scope(self.char(a), self.char(b), symbol) for a, b in _python.resolve(self.root, symbol, self._members)]

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
        return [(name, Scope(self.char(a), self.char(b), name)) for name, (a, b) in _python.definitions(self.root)]

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

    # --- tokens ---------------------------------------------------------------

    def stream(self, scope: Scope, structural: bool = True) -> _canonical.Stream:
        """The scope's code in the canonical layout (or, for fragments that are not Python, as written but
        for literals and trailing commas), made once per scope."""
        key = (scope.start, scope.end, structural)
        found = self._streams.get(key)
        if found is None:
            make = _canonical.scope_stream if structural else _canonical.plain_stream
            found = self._streams[key] = make(self.root, self.byte(scope.start), self.byte(scope.end),
                                              None if self._ascii else self.char)
        return found

    @cached_property
    def _streams(self) -> dict[tuple[int, int, bool], _canonical.Stream]:
        return {}

    def find(self, fragment: Fragment, scope: Scope) -> list[Span]:
        """Every occurrence of the fragment in the scope, in order of start."""
        if not self.is_python:
            return self._find_text(fragment, scope)
        spans: set[Span] = set()
        for region in self._regions(fragment, scope):
            stream = self.stream(region, fragment.structural)
            tokens, index = stream.tokens, stream.index
            ends = stream.ends if fragment.structural else None
            for start, end in _fragments.find(fragment.tokens, tokens, 0, len(tokens), index, ends=ends):
                if end > start:  # an empty match only comes from a fragment of bare `$$$`
                    last = end - 1
                    while last > start and tokens[last].kind == _canonical.MARK:
                        last -= 1  # a run may end with marks: the match ends with its code
                    spans.add(Span(tokens[start].start, tokens[last].end))
        return sorted(spans, key=lambda s: (s.start, s.end))

    def _regions(self, fragment: Fragment, scope: Scope) -> list[Scope]:
        """Where in the scope the fragment can match: the scope, or, for a structural fragment that names
        something, just the code around each place where that name is written.

        Laying out a whole scope costs a walk of its tree; most fragments name something rare (the longest
        name they have), and every match holds it. A match of a fragment without statement marks lies within
        one statement, which must hold that name: only those statements are laid out. A fragment of
        statements (`if ...:` and its body, two statements in a row) matches a run of statements of one
        block: if the name is first written in its `index`-th statement, `depth` blocks deep, the statement
        that holds it in the code is that many blocks under the run's, and only the run is laid out (its
        whole block, where the fragment has a run of statements `$$$` that may stand for any number).
        """
        names = [t.text for t in fragment.tokens if t.kind == "name"] if fragment.structural else []
        if not names:
            return [scope]
        rarest = max(names, key=len)
        shape = _statement_shape(fragment.tokens, rarest)
        key = (rarest, shape, scope)
        found = self._region_memo.get(key)
        if found is None:  # checks and searches for other fragments with the same longest name ask it again
            found = self._region_memo[key] = self._regions_of(rarest, shape, scope)
        return found

    @cached_property
    def _region_memo(self) -> dict:
        return {}

    def _regions_of(self, rarest: str, shape: tuple[int, int, int | None] | None, scope: Scope) -> list[Scope]:
        regions: dict[tuple[int, int], Scope] = {}
        for m in re.compile(r"\b" + re.escape(rarest) + r"\b").finditer(self.text, scope.start, scope.end):
            statement = _python.statement_at(self.root, self.byte(m.start()))
            if statement is not None and statement.type == "comment":
                continue  # the name in a comment of its own line: no code there, and no statement to run from
            if statement is not None and shape is not None:
                statement = _python.enclosing_statement(statement, shape[0])
            if statement is None:
                return [scope]  # not inside a statement of a block (a decorator, a class's bases...): all of it
            if shape is None:
                first = last = statement
            else:
                run = _python.statement_run(statement, shape[1], shape[2])
                if run is None:
                    continue  # the fragment's statements would reach outside the block: no match here
                first, last = run
            a, b = self.char(first.start_byte), self.char(last.end_byte)
            if a < scope.start or b > scope.end:
                return [scope]  # the statements are larger than the scope (an assignment's scope, say)
            regions[(a, b)] = Scope(a, b, scope.symbol)
        return list(regions.values())

    # --- text (files that are not Python) --------------------------------------

    @cached_property
    def _folded(self) -> tuple[str, list[int]]:
        """The text with runs of whitespace folded to one space, and each folded char's offset."""
        out, offsets = [], []
        last = 0
        for m in _WS.finditer(self.text):
            out.append(self.text[last:m.start()])
            offsets.extend(range(last, m.start()))
            out.append(" ")
            offsets.append(m.start())
            last = m.end()
        out.append(self.text[last:])
        offsets.extend(range(last, len(self.text)))
        offsets.append(len(self.text))
        return "".join(out), offsets

    def _find_text(self, fragment: Fragment, scope: Scope) -> list[Span]:
        folded, offsets = self._folded
        needle = fragment.folded
        if not needle:
            return []
        lo = bisect.bisect_left(offsets, scope.start)
        hi = bisect.bisect_left(offsets, scope.end)
        spans = []
        at = folded.find(needle, lo, hi)
        while at != -1:
            end_index = at + len(needle)
            spans.append(Span(offsets[at], offsets[end_index - 1] + 1))
            at = folded.find(needle, at + 1, hi)
        return spans

    # --- hints ----------------------------------------------------------------

    @cached_property
    def _folded_lines(self) -> list[tuple[str, frozenset[str]] | None]:
        """Per line, once computed: its text with whitespace folded, and its words (shared by every hint)."""
        return [None] * len(self._line_starts)

    def _folded_line(self, number: int) -> tuple[str, frozenset[str]]:
        found = self._folded_lines[number - 1]
        if found is None:
            line = fold_whitespace(self.line_text(number))
            found = self._folded_lines[number - 1] = (line, frozenset(_WORD.findall(line)))
        return found

    def closest_line(self, code: str, scope: Scope) -> tuple[int, str] | None:
        """The line in the scope most similar to `code`: (line number, its text).

        Lines are first ranked by the words they share with `code` (cheap), and
        only the best few are compared character by character.
        """
        target = fold_whitespace(code)[:_HINT_CHARS]
        if not target:
            return None
        words = set(_WORD.findall(target))
        first, last = self.line_of(scope.start), self.line_of(max(scope.start, scope.end - 1))
        shortlist: list[tuple[int, int, str]] = []
        for number in range(first, last + 1):
            line, line_words = self._folded_line(number)
            if line:
                shortlist.append((-len(words & line_words), number, line))
        shortlist.sort()
        best = None
        for _, number, line in shortlist[:_SHORTLIST]:
            matcher = difflib.SequenceMatcher(None, target, line[:_HINT_CHARS], autojunk=False)
            # the cheap upper bounds of the ratio first: a line that cannot reach 0.5, or beat the best, is not
            # compared in full (the same answer, for a fraction of the cost)
            if best is not None and best[0] >= 0.5:
                if matcher.real_quick_ratio() <= best[0] or matcher.quick_ratio() <= best[0]:
                    continue
            elif matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5:
                continue
            ratio = matcher.ratio()
            if best is None or ratio > best[0]:
                best = (ratio, number, line)
        return (best[1], best[2]) if best and best[0] >= 0.5 else None


def _statement_shape(tokens: tuple, name: str) -> tuple[int, int, int | None] | None:
    """For a fragment of statements (one with marks): where `name` is first written in it, as (how many blocks
    deep, in which of its top-level statements), and how many top-level statements it has (None: a `$$$` among
    them stands for any number). None for a fragment without marks (it matches within one statement)."""
    if not any(t.kind == _canonical.MARK for t in tokens):
        return None
    depth, statements, found, runs = 0, 0, None, False
    for token in tokens:
        if found is None and token.text == name and token.kind == "name":
            found = (depth, statements)
        if token.kind == _canonical.MARK:
            if token.text == _canonical.INDENT:
                depth += 1
            elif token.text == _canonical.DEDENT:
                depth -= 1
            elif token.text == _canonical.NL and depth == 0:
                statements += 1
        elif (token.kind == _canonical.STATEMENTS_RUN or token.text == "@") and depth == 0:
            runs = True  # a run of statements, or a decorator (its NL mark does not end a statement)
    if found is None:
        return None
    return found[0], found[1], None if runs else statements + 1  # the last statement has no NL of its own
