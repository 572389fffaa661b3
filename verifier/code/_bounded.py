"""Regular expressions and tree-sitter queries from untrusted entries, bounded in time and size."""

from __future__ import annotations

import functools
import re

import regex
import tree_sitter

from ._python import LANGUAGE

#: Seconds one regular expression may run over one scope.
REGEX_TIMEOUT = 1.0
#: In-progress matches a query may hold at once.
QUERY_MATCH_LIMIT = 256

# py-tree-sitter evaluates these predicates with Python's unbounded `re`.
_REGEX_PREDICATE = re.compile(r"#(?:any-)?(?:not-)?match\?")


class InvalidPattern(ValueError):
    """A regex or query that cannot be compiled or run; the message says why."""


@functools.lru_cache(maxsize=512)
def compile_regex(pattern: str) -> regex.Pattern:
    try:
        return regex.compile(pattern, regex.MULTILINE | regex.VERSION0)
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise InvalidPattern(f"regular expression does not compile: {exc}") from None


def search_regex(pattern: str, text: str, start: int, end: int, timeout: float = REGEX_TIMEOUT):
    """The first match in text[start:end], or None; InvalidPattern when it runs too long."""
    compiled = compile_regex(pattern)
    try:
        return compiled.search(text, start, end, timeout=timeout)
    except TimeoutError:
        raise InvalidPattern(f"regular expression ran longer than {timeout:g} s (catastrophic backtracking?)") from None


@functools.lru_cache(maxsize=512)
def compile_query(source: str) -> tree_sitter.Query:
    if _REGEX_PREDICATE.search(source):
        raise InvalidPattern("regex predicates (#match? and its kin) are not supported in queries; use `matches:`")
    try:
        return tree_sitter.Query(LANGUAGE, source)
    except (tree_sitter.QueryError, ValueError, RuntimeError) as exc:
        raise InvalidPattern(f"query does not compile: {exc}") from None


def query_matches(source: str, root: tree_sitter.Node, start: int, end: int) -> list[tuple[int, int]]:
    """Byte ranges of the query's matches lying wholly within [start, end)."""
    query = compile_query(source)
    cursor = tree_sitter.QueryCursor(query, match_limit=QUERY_MATCH_LIMIT)
    cursor.set_byte_range(start, end)
    found = []
    for _pattern, captures in cursor.matches(root):
        nodes = [node for group in captures.values() for node in (group if isinstance(group, list) else [group])]
        if not nodes:
            found.append((start, end))
            continue
        first = min(n.start_byte for n in nodes)
        last = max(n.end_byte for n in nodes)
        if first >= start and last <= end:
            found.append((first, last))
    return sorted(found)  # matches do not come in source order; the first reported must be stable
