"""Python code in one canonical layout (docs/format.md, "Comparing code"), as a token stream.

A scope's code and a fragment are both put in this layout, then compared
token by token (`_fragments`). The layout is made from tree-sitter's syntax
tree, so that only what Python reads counts:

- comments, whitespace, line breaks and continuations are not tokens;
- a statement ends with a NL mark, a block opens with INDENT and closes with
  DEDENT (so a run of statements stays inside one block, whatever the layout);
- parentheses that group nothing are left out (`x = (0)`, `if (a and b):`,
  `for (a, b) in z`); those that group (`(a + b) * c`, a tuple in an argument)
  stay;
- a trailing comma is left out, but for the one of a one-element tuple;
- a string or number is one token whose text is its value (quote style,
  prefixes, escapes and implicit concatenation aside; `0xAB` is 171);
- the keyword arguments of a call come after the others, in name order.

Each token keeps the offsets of what it stands for in the original text, so
that a match still has its lines. `ends` records, for each token index, where
each expression starting there ends: a fragment's `$NAME` binds one of them.

A fragment is laid out by the same walk (`_fragment_tokens`), its `$NAME`
and `$$$` written as the placeholder names below; which parentheses group
something is `_parens`'s.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import tree_sitter

from . import _python
from ._parens import EXPRESSIONS, _needs_parens
from ._tokens import ELLIPSIS_META, META, NAME, NUMBER, OP, STRING, Token

MARK = "mark"
NL, INDENT, DEDENT = "⏎", "⇥", "⇤"
#: `$$$` among the items of a list (arguments, elements, parameters): a run of whole items. Its text says
#: which commas it needs: `,$$$` (after an item), `$$$,` (before one), `,$$$,` (between two), `$$$`.
ITEMS_RUN = "meta-items"
#: `$$$` as a statement: a run of whole statements.
STATEMENTS_RUN = "meta-statements"
RUNS = (ELLIPSIS_META, ITEMS_RUN, STATEMENTS_RUN)

_META_PREFIX = "__gotchas_meta_"
_RUN_NAME = "__gotchas_run__"

#: Items separated by commas, each container's brackets (None: none), and whether keyword arguments are
#: sorted in it. Their trailing commas are left out.
_ITEM_LISTS = {
    "argument_list": ("(", ")"), "parameters": ("(", ")"), "lambda_parameters": (None, None),
    "list": ("[", "]"), "set": ("{", "}"), "dictionary": ("{", "}"), "list_pattern": ("[", "]"),
    "expression_list": (None, None), "pattern_list": (None, None), "with_clause": (None, None),
}
_SKIP = frozenset({"comment", "line_continuation"})
_STATEMENT_PARENTS = frozenset({"module", "block"})
#: Where a bare tuple reads as the tuple (`return a, b`, `x = a, b`, `for a, b in z`, `d[a, b]`).
_BARE_TUPLE = frozenset({"expression_statement", "assignment", "augmented_assignment", "return_statement",
                         "for_statement", "subscript", "yield", "parenthesized_expression"})


@dataclass
class Stream:
    """A scope's code as tokens, and the expressions that start at each token."""

    tokens: list[Token] = field(default_factory=list)
    ends: dict[int, list[int]] = field(default_factory=dict)  # token index -> end indices of expressions there

    @cached_property
    def index(self) -> dict[str, list[int]]:
        """Each token's text -> where it occurs, in order."""
        found: dict[str, list[int]] = {}
        for i, token in enumerate(self.tokens):
            found.setdefault(token.text, []).append(i)
        return found


class _Emitter:
    """Walks a syntax tree and writes its canonical tokens."""

    def __init__(self, char=None, fragment: bool = False, as_written: bool = False) -> None:
        self.stream = Stream()
        self.out = self.stream.tokens
        self.char = char  # None: the text is ASCII, a byte offset is a character offset
        self.fragment = fragment
        #: Parentheses and keyword arguments as written (for fragments that are not Python: see `plain`).
        self.as_written = as_written

    # -- tokens -----------------------------------------------------------------------------------------

    def token(self, kind: str, text: str, node: tree_sitter.Node) -> None:
        char = self.char
        if char is None:
            self.out.append(Token(kind, text, node.start_byte, node.end_byte))
        else:
            self.out.append(Token(kind, text, char(node.start_byte), char(node.end_byte)))

    def mark(self, text: str, at: int) -> None:
        offset = at if self.char is None else self.char(at)
        self.out.append(Token(MARK, text, offset, offset))

    # -- nodes ------------------------------------------------------------------------------------------

    def node(self, node: tree_sitter.Node, parent: tree_sitter.Node | None = None, index: int = 0) -> None:
        start = len(self.out)
        kind = node.type
        if kind == "parenthesized_expression":
            inner = _inner(node)
            if inner is None or self.as_written or _needs_parens(inner, parent, index):
                self.token(OP, "(", node)
                if inner is not None:
                    self.node(inner, node, 0)
                self.token(OP, ")", node)
            else:
                self.node(inner, parent, index)  # as if it stood where the parentheses are
        elif kind in ("string", "concatenated_string"):
            self.token(STRING, string_key(node), node)
        elif kind in ("integer", "float"):
            self.token(NUMBER, number_key(node.text.decode("utf-8", "replace")), node)
        elif kind == "identifier":
            self.name(node)
        elif kind in ("tuple", "tuple_pattern"):
            self.tuple(node, parent)
        elif kind in _ITEM_LISTS:
            self.items(node, *_ITEM_LISTS[kind], sort_keywords=kind == "argument_list" and not self.as_written)
        elif kind == "subscript":
            self.subscript(node)
        elif kind == "import_from_statement":
            self.import_from(node)
        elif kind in ("module", "block"):
            self.block(node, kind == "block")
        elif kind == "decorated_definition":
            for child in node.named_children:
                if child.type == "decorator":
                    self.node(child, node)
                    self.mark(NL, child.end_byte)
                elif child.type not in _SKIP:
                    self.node(child, node)
        elif node.child_count == 0:
            self.leaf(node)
        else:
            for i, child in enumerate(node.children):
                if child.type in _SKIP or (child.type == ";" and not child.is_named):
                    continue
                self.node(child, node, i)
        if kind in EXPRESSIONS and len(self.out) > start:
            self.stream.ends.setdefault(start, []).append(len(self.out))

    def leaf(self, node: tree_sitter.Node) -> None:
        text = node.text.decode("utf-8", "replace")
        if not text:
            return  # a MISSING node (a source with syntax errors)
        self.token(NAME if text[:1].isidentifier() else OP, text, node)

    def name(self, node: tree_sitter.Node) -> None:
        text = node.text.decode("utf-8", "replace")
        if self.fragment and text.startswith(_META_PREFIX):
            self.token(META, "$" + text[len(_META_PREFIX):], node)
        elif self.fragment and text == _RUN_NAME:
            self.token(ELLIPSIS_META, "$$$", node)
        else:
            self.token(NAME, text, node)

    def block(self, node: tree_sitter.Node, indent: bool) -> None:
        if indent:
            self.mark(INDENT, node.start_byte)
        for child in node.named_children:
            if child.type in _SKIP:
                continue
            if self.fragment and _is_run(child):
                self.token(STATEMENTS_RUN, "$$$", child)
                continue
            self.node(child, node)
            self.mark(NL, child.end_byte)
        if indent:
            self.mark(DEDENT, node.end_byte)

    def items(self, node: tree_sitter.Node, opening: str | None, closing: str | None,
              sort_keywords: bool = False) -> None:
        items = [c for c in node.named_children if c.type not in _SKIP]
        if sort_keywords:
            keywords = sorted((c for c in items if c.type == "keyword_argument"), key=_keyword_name)
            items = [c for c in items if c.type != "keyword_argument"] + keywords
        if opening and node.child_count and node.children[0].type == opening:
            self.token(OP, opening, node.children[0])
        self.sequence(node, items, keyword_runs=sort_keywords)
        if len(items) == 1 and node.type in ("expression_list", "pattern_list"):
            self.token(OP, ",", node)  # `x, = y`: a one-element tuple
        if closing and node.child_count and node.children[-1].type == closing:
            self.token(OP, closing, node.children[-1])

    def sequence(self, node: tree_sitter.Node, items: list[tree_sitter.Node], keyword_runs: bool = False) -> None:
        """Items separated by commas; in a fragment, `$$$` among them is a run of whole items, and where
        keyword arguments are sorted, runs go between them too (`$$$` takes what the fragment does not name)."""
        runs = [self.fragment and _is_run(item) for item in items]
        if keyword_runs and any(runs):
            spread: list[tree_sitter.Node | None] = []
            for item, run in zip(items, runs):
                if item.type == "keyword_argument":
                    if not spread or spread[-1] is not None:
                        spread.append(None)  # a run before each keyword
                    spread.append(item)
                elif run:
                    if not spread or spread[-1] is not None:
                        spread.append(None)
                else:
                    spread.append(item)
            if spread and spread[-1] is not None and spread[-1].type == "keyword_argument":
                spread.append(None)  # and after the last
            items, runs = [i if i is not None else node for i in spread], [i is None for i in spread]
        for n, (item, run) in enumerate(zip(items, runs)):
            before = n > 0 and not runs[n - 1]
            after = n + 1 < len(items) and not runs[n + 1]
            if run:
                self.token(ITEMS_RUN, ("," if before else "") + "$$$" + ("," if after else ""), item)
                continue
            self.node(item, node, n)
            if after:
                self.token(OP, ",", item)

    def tuple(self, node: tree_sitter.Node, parent: tree_sitter.Node | None) -> None:
        items = [c for c in node.named_children if c.type not in _SKIP]
        if self.as_written:
            bracketed = node.child_count > 0 and node.children[0].type == "("
        else:
            bracketed = not items or parent is None or parent.type not in _BARE_TUPLE
        if bracketed:
            self.token(OP, "(", node)
        self.sequence(node, items)
        if len(items) == 1 and any(c.type == "," for c in node.children):
            self.token(OP, ",", node)  # the comma that makes a one-element tuple (`(x) = y` has none)
        if bracketed:
            self.token(OP, ")", node)

    def subscript(self, node: tree_sitter.Node) -> None:
        value = node.child_by_field_name("value")
        indices = node.children_by_field_name("subscript")
        self.node(value, node, 0)
        self.token(OP, "[", node)
        self.sequence(node, indices)
        if len(indices) == 1 and any(c.type == "," for c in node.children):
            self.token(OP, ",", node)  # `d[k,]`: the index is a one-element tuple
        self.token(OP, "]", node)

    def import_from(self, node: tree_sitter.Node) -> None:
        """`from m import (a, b,)` is `from m import a, b`."""
        names = node.children_by_field_name("name")
        module = node.child_by_field_name("module_name")
        self.token(NAME, "from", node)
        if module is not None:
            self.node(module, node)
        self.token(NAME, "import", node)
        if names:
            self.sequence(node, names)
        else:
            for child in node.named_children:
                if child.type == "wildcard_import":
                    self.node(child, node)


def _inner(node: tree_sitter.Node) -> tree_sitter.Node | None:
    return next((c for c in node.named_children if c.type not in _SKIP), None)


def _is_run(node: tree_sitter.Node) -> bool:
    """A `$$$` placeholder standing alone (as an item, or as a statement)."""
    if node.type == "expression_statement" and node.named_child_count == 1:
        node = node.named_children[0]
    return node.type == "identifier" and node.text == _RUN_NAME.encode()


def _keyword_name(node: tree_sitter.Node) -> str:
    name = node.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None else ""


# --- values ------------------------------------------------------------------------------------------------

def string_key(node: tree_sitter.Node) -> str:
    """A string literal by value: its kind (str, bytes, f-string) and value, whatever its quotes and pieces."""
    pieces = [node] if node.type == "string" else [c for c in node.named_children if c.type == "string"]
    kinds = set()
    for piece in pieces:
        prefix = re.match(rb"[A-Za-z]*", piece.text).group().lower()
        kinds.add("b" if b"b" in prefix else "f" if (b"f" in prefix or b"t" in prefix) else "s")
    kind = "f" if "f" in kinds else "b" if kinds == {"b"} else "s"
    value = "".join(_python.string_value(piece) for piece in pieces)
    return kind + repr(value)


@lru_cache(maxsize=4096)
def number_key(text: str) -> str:
    """A number literal by value: `0xAB` is `171`, `1E5` is `100000.0`, `10_000` is `10000`.

    A decimal integer as Python writes it is its own value; the rest goes through `ast.literal_eval` (with
    warnings silenced, 40 us a number), and numbers repeat (0, 1, 2...): the cache. Measured on vLLM 0.33.0's
    `arg_utils.py`, 3,015 numbers: the layout of the whole file took 0.23 s, half of it here, before both."""
    if text.isascii() and text.isdigit() and (text[0] != "0" or text == "0"):
        return text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text.lower()
    return repr(value) if isinstance(value, (int, float, complex)) and not isinstance(value, bool) else text


# --- scopes ---------------------------------------------------------------------------------------------------

def scope_stream(root: tree_sitter.Node, start: int, end: int, char=None) -> Stream:
    """The canonical tokens of the code between two byte offsets of a parsed file: every node wholly inside
    is laid out; a statement of a block ends with a NL mark, as in a block."""
    emitter = _Emitter(char)
    _emit_range(emitter, _anchor(root, start, end), start, end)
    return emitter.stream


def plain_stream(root: tree_sitter.Node, start: int, end: int, char=None) -> Stream:
    """The tokens that a fragment that is not Python is compared with: as the canonical ones, but with the
    parentheses and keyword arguments as written, and no marks (such a fragment is compared as before,
    token by token, with only its strings, numbers and trailing commas made layout-free)."""
    emitter = _Emitter(char, as_written=True)
    _emit_range(emitter, _anchor(root, start, end), start, end)
    return Stream([t for t in emitter.out if t.kind != MARK])


def _anchor(root: tree_sitter.Node, start: int, end: int) -> tree_sitter.Node:
    """The smallest node that holds the range and is not wholly inside it: laying out the range from there is
    laying it out from the root, without walking the root's other statements (a search across a release lays
    out one statement at a time, and walking down from the root each time was half of its cost)."""
    node = root.descendant_for_byte_range(start, end) or root
    while node.parent is not None and node.start_byte >= start and node.end_byte <= end:
        node = node.parent
    return node


def _emit_range(emitter: _Emitter, node: tree_sitter.Node, start: int, end: int) -> None:
    # A block is never laid out whole here: the scope is what is in it (a block can start and end with the
    # one definition that is the scope).
    if node.start_byte >= start and node.end_byte <= end and node.type not in _STATEMENT_PARENTS:
        emitter.node(node, node.parent)
        if node.parent is not None and node.parent.type in _STATEMENT_PARENTS and node.type not in _SKIP:
            emitter.mark(NL, node.end_byte)
        return
    for child in node.children:
        if child.end_byte <= start or child.start_byte >= end or child.type in _SKIP:
            continue
        if node.type in _STATEMENT_PARENTS and not child.is_named:
            continue  # a `;` between statements
        _emit_range(emitter, child, start, end)

