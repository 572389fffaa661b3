"""Finding a tokenized fragment in a token stream.

`$NAME` binds one token (the same text wherever the name recurs); `$$$` stands
for a run of tokens, possibly empty, whose brackets balance, so that
`len($$$.output_ids)` stays inside one call instead of running on to a later one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

from ._tokens import ELLIPSIS_META, META, Token

#: Matching steps allowed for one fragment in one scope before giving up.
STEP_BUDGET = 2_000_000


class BudgetExceeded(Exception):
    """The fragment is too ambiguous to match within the step budget."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise BudgetExceeded


def _match_at(pattern: Sequence[Token], source: Sequence[Token], pi: int, si: int, hi: int,
              bindings: dict[str, str], budget: _Budget) -> int | None:
    """End index (exclusive) of the shortest match of pattern[pi:] at source[si:hi], or None."""
    while pi < len(pattern):
        budget.spend()
        expected = pattern[pi]
        if expected.kind == ELLIPSIS_META:
            if pi + 1 == len(pattern):
                return si
            for k in _balanced_ends(source, si, hi, budget):
                end = _match_at(pattern, source, pi + 1, k, hi, dict(bindings), budget)
                if end is not None:
                    return end
            return None
        if si >= hi:
            return None
        actual = source[si].text
        if expected.kind == META:
            bound = bindings.setdefault(expected.text, actual)
            if bound != actual:
                return None
        elif expected.text != actual:
            return None
        pi += 1
        si += 1
    return si


_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(_OPENERS.values())


def _balanced_ends(source: Sequence[Token], si: int, hi: int, budget: _Budget) -> Iterator[int]:
    """Each k, shortest first, such that source[si:k] is a run with balanced brackets."""
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


def find(pattern: Sequence[Token], source: Sequence[Token], lo: int, hi: int,
         index: dict[str, list[int]] | None = None, steps: int = STEP_BUDGET) -> Iterator[tuple[int, int]]:
    """Every (start, end) token span in source[lo:hi] where the pattern matches, by start.

    `index` maps a token's text to its positions in `source`, so that a fragment
    starting with a literal token is only tried where that token occurs.
    """
    if not pattern:
        return
    budget = _Budget(steps)
    first = pattern[0]
    if first.kind in (META, ELLIPSIS_META):
        starts = range(lo, hi)
    elif index is not None:
        positions = index.get(first.text, ())
        starts = positions[bisect.bisect_left(positions, lo):bisect.bisect_left(positions, hi)]
    else:  # only where the first token occurs
        text = first.text
        starts = [i for i in range(lo, hi) if source[i].text == text]
    for start in starts:
        end = _match_at(pattern, source, 0, start, hi, {}, budget)
        if end is not None:
            yield start, end
