"""Hints for a fragment that was not found: the line of a scope most like the code looked for."""

from __future__ import annotations

import difflib
import re
from functools import cached_property

from ._file import Scope, _File, fold_whitespace

_WORD = re.compile(r"\w+")
_SHORTLIST = 8  # lines compared character by character for a closest-line hint
#: Characters of a line, and of the code looked for, that a closest-line hint compares (difflib's ratio
#: costs their product): a longer one is compared by its beginning.
_HINT_CHARS = 500


class _Hints(_File):
    """`closest_line`, with each line's folded text and words made once per file (shared by every hint)."""

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
