"""Finding a fragment in a file: in a Python file, its tokens among those of the scope's code in the canonical
layout, laid out only around the places where the fragment's rarest name is written; in a C or C++ file, its
C/C++ tokens among the scope's (layout and comments aside), both read without the parentheses that group nothing
and the commas before a `}` (`_cpp_parens`), or both as written; in any other file, its text with whitespace
folded."""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Sequence
from functools import cached_property

from . import _canonical, _cpp, _cpp_parens, _cpp_tokens, _fragments, _python
from ._file import _WS, Scope, Span, _File
from ._fragment_tokens import Fragment
from ._tokens import META, NUMBER, STRING, Token


class _Search(_File):
    """`find`, and the token streams and regions it reads, each made once per file."""

    def stream(self, scope: Scope, structural: bool = True, reorder: bool = True) -> _canonical.Stream:
        """The scope's code in the canonical layout (or, for fragments that are not Python, as written but
        for literals and trailing commas; without `reorder`, its comparisons in their written order), made
        once per scope."""
        key = (scope.start, scope.end, structural, reorder)
        found = self._streams.get(key)
        if found is None:
            char = None if self._ascii else self.char
            start, end = self.byte(scope.start), self.byte(scope.end)
            if not structural:
                found = _canonical.plain_stream(self.root, start, end, char)
            else:
                found = _canonical.scope_stream(self.root, start, end, char, reorder)
            self._streams[key] = found
        return found

    @cached_property
    def _streams(self) -> dict[tuple[int, int, bool, bool], _canonical.Stream]:
        return {}

    def find(self, fragment: Fragment, scope: Scope) -> list[Span]:
        """Every occurrence of the fragment in the scope, in order of start."""
        if not self.structured:
            return self._find_text(fragment, scope)
        return [span for span, _ in self.find_bound(fragment, scope)]

    def find_bound(self, fragment: Fragment, scope: Scope) -> list[tuple[Span, dict[str, str]]]:
        """Every occurrence of the fragment in the scope of a Python, C or C++ file, in order of start, with the
        source text each `$NAME` bound there (a check's named values: docs/format.md, "Values read from the code")."""
        if self.is_cpp:
            return self._find_cpp(fragment, scope)
        found: dict[Span, dict[str, str]] = {}
        self._find_python(fragment, fragment.tokens, scope, True, found)
        if fragment.written_order is not None:
            # and with its comparisons as written: a fragment that names part of an operand (`b >= c` in
            # `a.b >= c`) matches where it did before comparisons were turned around
            self._find_python(fragment, fragment.written_order, scope, False, found)
        return sorted(found.items(), key=lambda item: (item[0].start, item[0].end))

    def _find_python(self, fragment: Fragment, pattern: list, scope: Scope, reorder: bool,
                     found: dict[Span, dict[str, str]]) -> None:
        for region in self._regions(fragment, scope):
            stream = self.stream(region, fragment.structural, reorder)
            tokens, index = stream.tokens, stream.index
            ends = stream.ends if fragment.structural else None
            bound: list[dict] = []
            for start, end in _fragments.find(pattern, tokens, 0, len(tokens), index, ends=ends,
                                              bound=bound):
                names = bound[-1]
                if end > start:  # an empty match only comes from a fragment of bare `$$$`
                    last = end - 1
                    while last > start and tokens[last].kind == _canonical.MARK:
                        last -= 1  # a run may end with marks: the match ends with its code
                    found.setdefault(_span(tokens, start, last + 1),
                                     {name: self._bound_text(tokens, a, b) for name, (a, b) in names.items()})

    def _bound_text(self, tokens, a: int, b: int) -> str:
        """The source text of tokens[a:b] (marks left out at both ends), whitespace folded."""
        while a < b and tokens[a].kind == _canonical.MARK:
            a += 1
        while b > a and tokens[b - 1].kind == _canonical.MARK:
            b -= 1
        if a >= b:
            return ""
        span = _span(tokens, a, b)
        written = " ".join(self.text[span.start:span.end].split())
        if not self.is_cpp and tokens[b - 1].kind in (NUMBER, STRING) and b - a <= 2:
            value = _folded_value(tokens[a:b], written)
            if value is not None:
                return value  # `5 * 60` binds 300, as it is compared (docs/format.md, "Equivalences")
        return written

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

    # --- C and C++: tokens, layout and comments aside ---------------------------

    @cached_property
    def _cpp_tokens(self) -> _CppTokens:
        """The file's C/C++ tokens as written."""
        return _CppTokens(_cpp_tokens.tokenize(self.text))

    @cached_property
    def _cpp_canonical(self) -> _CppTokens:
        """The file's C/C++ tokens without the parentheses that group nothing and the commas before a `}`
        (`_cpp_parens`, from the file's tree)."""
        written = self._cpp_tokens.tokens
        dropped = _cpp_parens.redundant(self.root, 0, len(self._encoded))
        canonical = _cpp_parens.canonical(written, dropped, None if self._ascii else self.char)
        return self._cpp_tokens if len(canonical) == len(written) else _CppTokens(canonical)

    @cached_property
    def _cpp_expressions(self) -> list[tuple[int, int]]:
        """Character offsets of the file's expressions, braced initializers and types (`_cpp.expression_spans`)."""
        if self._ascii:
            return _cpp.expression_spans(self.root)
        return [(self.char(a), self.char(b)) for a, b in _cpp.expression_spans(self.root)]

    def _find_cpp(self, fragment: Fragment, scope: Scope) -> list[tuple[Span, dict[str, str]]]:
        """Where the fragment's tokens are the scope's, both read without the parentheses that group nothing and
        the commas before a `}`, or both as written: a pair that the fragment's parse keeps and the file's does
        not (or a fragment that does not parse as C++) still matches the code written as it is."""
        found: dict[Span, dict[str, str]] = {}
        searches = [(fragment.cpp_canonical, self._cpp_canonical)]
        if [t.text for t in fragment.cpp_canonical] != [t.text for t in fragment.cpp_tokens] \
                or self._cpp_canonical is not self._cpp_tokens:
            searches.append((fragment.cpp_tokens, self._cpp_tokens))
        names = any(t.kind == META for t in fragment.cpp_tokens)
        for pattern, stream in searches:
            tokens = stream.tokens
            lo, hi = bisect.bisect_left(stream.starts, scope.start), bisect.bisect_left(stream.starts, scope.end)
            bound: list[dict] = []
            ends = stream.ends(self._cpp_expressions) if names else None
            for start, end in _fragments.find(pattern, tokens, lo, hi, stream.index, ends=ends, bound=bound):
                if end > start:  # an empty match only comes from a fragment of bare `$$$`
                    found.setdefault(Span(tokens[start].start, tokens[end - 1].end),
                                     {name: self._bound_text(tokens, a, b) for name, (a, b) in bound[-1].items()})
        return sorted(found.items(), key=lambda item: (item[0].start, item[0].end))

    # --- text (files that are neither Python nor C/C++) -------------------------

    @cached_property
    def _folded(self) -> tuple[str, list[int]]:
        """The text with runs of whitespace folded to one space, and each folded char's offset."""
        out: list[str] = []
        offsets: list[int] = []
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


class _CppTokens:
    """C/C++ tokens, their starts, and each token text's positions (a fragment is tried only where its first token
    is written)."""

    def __init__(self, tokens: list) -> None:
        self.tokens = tokens
        self.starts = [t.start for t in tokens]
        self.index: dict[str, list[int]] = {}
        for i, token in enumerate(tokens):
            self.index.setdefault(token.text, []).append(i)
        self._ends: _CppEnds | None = None

    def ends(self, spans: list[tuple[int, int]]) -> _CppEnds:
        """What a `$NAME` may bind from each token (`_CppEnds`), from the character spans of the file's
        expressions; made once."""
        if self._ends is None:
            starts = self.starts
            longer: dict[int, list[int]] = {}
            for a, b in spans:
                i = bisect.bisect_left(starts, a)
                if i < len(starts) and starts[i] == a:  # not a pair left out: what it holds starts a token
                    j = bisect.bisect_left(starts, b)
                    if j > i + 1:
                        longer.setdefault(i, []).append(j)
            self._ends = _CppEnds(longer)
        return self._ends


class _CppEnds:
    """Where a `$NAME` that binds from token i may end, as `_fragments.find` asks it (`ends.get(i)`): after the one
    token, or after a whole expression, braced initializer or type that starts there, the shortest first (so that
    the one token it bound before is tried first)."""

    def __init__(self, longer: dict[int, list[int]]) -> None:
        self.longer = longer

    def get(self, i: int, default=()) -> list[int]:
        return [i + 1, *self.longer.get(i, ())]


def _folded_value(tokens, written: str) -> str | None:
    """A Python literal for an arithmetic of literals that the canonical layout folded into one number or string
    (`5 * 60`, `-(5 * 60)`, `'a' + 'b'`), or None where the code is a literal as written, or not one of those."""
    *sign, value = tokens
    if sign and (value.kind != NUMBER or sign[0].text != "-"):
        return None
    if value.kind == NUMBER:
        text = "-" * len(sign) + value.text
    elif value.text.startswith("s"):
        text = value.text[1:]  # a str by value: its Python repr
    else:
        return None
    try:
        if ast.literal_eval(written) == ast.literal_eval(text):
            return None  # a literal as written (`0x10`, `"a" "b"`): the code's own spelling
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    return text


def _span(tokens, a: int, b: int) -> Span:
    """The text that tokens[a:b] stand for: from the first start to the last end among them (an equivalence may
    lay code out in another order than it is written: `x > 0` is laid out `0 < x`)."""
    window = tokens[a:b]
    return Span(min(t.start for t in window), max(t.end for t in window))


def _statement_shape(tokens: Sequence[Token], name: str) -> tuple[int, int, int | None] | None:
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
