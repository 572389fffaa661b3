"""Matching source text: the one public surface over tokens, Python scopes and text.

`SourceFile` wraps the bytes of one file and computes, lazily and once, what the
matchers need: its text, tokens, token index, syntax tree and line table.

Where each job is done:

- `_file`: a file's text, lines, offsets and Python structure (`Scope`, `Span`);
- `_search`: finding a fragment in a file; `_hints`: the closest line when it is not there;
- `_fragment_tokens`: a check's fragment (`Fragment`) in the canonical layout;
- `_canonical`: the canonical layout of a syntax tree (`_parens`: which parentheses group something);
- `_fragments`: matching a fragment's tokens against a scope's; `_tokens`: the tokenizer;
- `_python`: Python structure from tree-sitter; `_cpp`: C and C++ structure (definitions, statements, string
  literals); `_cpp_tokens`: the C/C++ tokenizer; `_cpp_parens`: which C/C++ parentheses group nothing;
  `_bounded`: regex and tree-sitter query forms, bounded.
"""

from __future__ import annotations

from ._file import Scope, Span, fold_whitespace
from ._fragment_tokens import Fragment, fragment
from ._fragments import BudgetExceeded, PatternTooDeep
from ._hints import _Hints
from ._limits import unparsable_message as unparsable_message
from ._search import _Search

__all__ = ["BudgetExceeded", "Fragment", "PatternTooDeep", "Scope", "SourceFile", "Span", "fold_whitespace",
           "fragment"]


class SourceFile(_Search, _Hints):
    """One file: its text, lines and Python structure (`_file._File`), the searches for a fragment in it
    (`_search`) and the hints when one is not there (`_hints`)."""
