"""Finding a fragment's tokens in a token stream (both in the canonical layout, `_canonical`).

`$NAME` binds one token, or, with `ends` (a structural fragment against a
scope's stream), one whole expression; the same code wherever the name recurs.
`$$$` stands for a run of tokens, possibly empty, whose brackets balance, so
that `len($$$.output_ids)` stays inside one call instead of running on to a
later one. Among the items of a list it is a run of whole items (its commas
say on which sides it needs one); as a statement, a run of whole statements.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import Protocol

from ._canonical import DEDENT, INDENT, ITEMS_RUN, MARK, NL, OPTIONAL, RUNS, STATEMENTS_RUN
from ._tokens import ELLIPSIS_META, META, Token

#: Matching steps allowed for one fragment in one scope before giving up.
STEP_BUDGET = 2_000_000
#: `$$$` and `$NAME` a fragment may have: matching goes one call deeper for each (Python's stack is about
#: a thousand calls deep, and the matcher may itself be called from deep within a run).
MAX_VARIABLES = 100


class BudgetExceeded(Exception):
    """The fragment is too ambiguous to match within the step budget."""


class PatternTooDeep(Exception):
    """Matching the fragment recursed too deep (too many `$$$` and `$NAME`): the fragment's fault, not the file's."""


class Ends(Protocol):
    """What `find` reads of its `ends`: `ends.get(i, ())`, where the expressions that start at token i end. A
    stream's dict (`_canonical.Stream.ends`), or `_search._CppEnds`, which adds the one token to each."""

    def get(self, index: int, default: tuple[()], /) -> Sequence[int]: ...


class _Budget:
    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise BudgetExceeded


def _match_at(pattern: Sequence[Token], source: Sequence[Token], pi: int, si: int, hi: int,
              bindings: dict, budget: _Budget, ends: Ends | None, out: dict | None = None
              ) -> int | None:
    """End index (exclusive) of the shortest match of pattern[pi:] at source[si:hi], or None.

    `bindings` maps `$NAME` to the texts of the tokens it bound, and `@$NAME` to their (start, end) indices in
    `source`; with `out`, the bindings of the match found are copied there (a check's named values)."""
    while pi < len(pattern):
        budget.spend()
        expected = pattern[pi]
        kind = expected.kind
        if kind in RUNS:
            last = pi + 1 == len(pattern)
            for k in _run_ends(expected, source, si, hi, budget):
                if last:
                    if out is not None:
                        out.update(bindings)
                    return k
                end = _match_at(pattern, source, pi + 1, k, hi, dict(bindings), budget, ends, out)
                if end is not None:
                    return end
            return None
        if si >= hi:
            return None
        if source[si].kind == OPTIONAL and kind != OPTIONAL:
            si += 1 + int(source[si].text[1:])  # an annotation the fragment does not have: skipped
            continue
        if kind == OPTIONAL:  # an annotation in the fragment: one in the code too, compared token by token
            if source[si].kind != OPTIONAL:
                return None
            pi, si = pi + 1, si + 1
            continue
        if kind == META:
            bound = bindings.get(expected.text)
            if bound is not None:
                k = si + len(bound)
                if k > hi or tuple(t.text for t in source[si:k]) != bound:
                    return None
                pi, si = pi + 1, k
                continue
            if ends is not None:  # one whole expression: each that starts here, the shortest first
                spans = ends.get(si, ())
                for k in sorted(set(spans)):
                    if k > hi:
                        break
                    budget.spend()
                    trial = dict(bindings)
                    trial[expected.text] = tuple(t.text for t in source[si:k])
                    trial["@" + expected.text] = (si, k)
                    end = _match_at(pattern, source, pi + 1, k, hi, trial, budget, ends, out)
                    if end is not None:
                        return end
                return None
            if source[si].kind == MARK:
                return None
            bindings[expected.text] = (source[si].text,)
            bindings["@" + expected.text] = (si, si + 1)
        elif expected.text != source[si].text:
            return None
        pi += 1
        si += 1
    if out is not None:
        out.update(bindings)
    return si


_OPENERS = {"(": ")", "[": "]", "{": "}", INDENT: DEDENT}
_CLOSERS = frozenset(_OPENERS.values())


def _balanced_ends(source: Sequence[Token], si: int, hi: int, budget: _Budget) -> Iterator[int]:
    """Each k, shortest first, such that source[si:k] is a run with balanced brackets (and blocks)."""
    stack: list[str] = []
    k = si
    while True:
        if not stack:
            yield k
        if k >= hi:
            return
        budget.spend()
        text = source[k].text
        if text in _OPENERS:
            stack.append(_OPENERS[text])
        elif text in _CLOSERS:
            if not stack or stack.pop() != text:
                return
        k += 1


def _run_ends(run: Token, source: Sequence[Token], si: int, hi: int, budget: _Budget) -> Iterator[int]:
    """Where a `$$$` that starts at source[si] may end."""
    if run.kind == ELLIPSIS_META:
        yield from _balanced_ends(source, si, hi, budget)
    elif run.kind == ITEMS_RUN:
        lead, trail = run.text.startswith(","), run.text.endswith(",")
        for k in _balanced_ends(source, si, hi, budget):
            if k == si:
                if not (lead and trail):  # nothing between two items is no run: a comma is needed
                    yield k
                continue
            if (not lead or source[si].text == ",") and (not trail or source[k - 1].text == ","):
                yield k
    elif run.kind == STATEMENTS_RUN:
        for k in _balanced_ends(source, si, hi, budget):
            if k == si or (source[k - 1].kind == MARK and source[k - 1].text == NL):
                yield k


def find(pattern: Sequence[Token], source: Sequence[Token], lo: int, hi: int,
         index: dict[str, list[int]] | None = None, steps: int = STEP_BUDGET,
         ends: Ends | None = None, bound: list | None = None) -> Iterator[tuple[int, int]]:
    """Every (start, end) token span in source[lo:hi] where the pattern matches, by start.

    With `bound`, the bindings of each match are appended to it as it is yielded: NAME (of `$NAME`) -> the
    (start, end) token indices of what it bound.

    `index` maps a token's text to its positions in `source`, so that a fragment
    starting with a literal token is only tried where that token occurs. With
    `ends`, a `$NAME` binds a whole expression (`ends[i]`: where those that start at i end).
    """
    if not pattern:
        return
    variables = sum(1 for t in pattern if t.kind in RUNS or t.kind == META)
    if variables > MAX_VARIABLES:
        raise PatternTooDeep(f"the fragment has {variables} `$$$` and `$NAME`; at most {MAX_VARIABLES}")
    budget = _Budget(steps)
    first = pattern[0]
    starts: Sequence[int]
    if first.kind == META or first.kind in RUNS:
        starts = range(lo, hi)
    elif index is not None:
        positions = index.get(first.text, ())
        starts = positions[bisect.bisect_left(positions, lo):bisect.bisect_left(positions, hi)]
    else:  # only where the first token occurs
        text = first.text
        starts = [i for i in range(lo, hi) if source[i].text == text]
    for start in starts:
        if source[start].kind in (MARK, OPTIONAL) and first.kind != source[start].kind:
            continue  # a match begins with code, never with a mark
        try:
            found: dict | None = {} if bound is not None else None
            end = _match_at(pattern, source, 0, start, hi, {}, budget, ends, found)
        except RecursionError:  # the static bound above keeps it rare: a run called from very deep
            raise PatternTooDeep("matching the fragment recursed too deep (too many `$$$` and `$NAME`)") from None
        if end is not None:
            if bound is not None and found is not None:  # found is None exactly where bound is
                bound.append({k[2:]: v for k, v in found.items() if k.startswith("@$")})
            yield start, end
