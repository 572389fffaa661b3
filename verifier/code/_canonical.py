"""Python code in one canonical layout (FORMAT.md, "Comparing code"), as a token stream.

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

Fragments: `$NAME` and `$$$` are put in the code as placeholder names, and
the fragment is parsed; when it parses without errors it is laid out the same
way (a *structural* fragment: `$NAME` binds an expression, `$$$` a run of
arguments, elements or statements). A fragment that is not Python as written
(`] = False`, `and self.flag`) is tokenized as before, with its strings and
numbers by value and trailing commas left out, and compared with the scope's
tokens without the marks; there `$NAME` binds one token.

`_parens` says which parentheses group something.
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
from ._tokens import ELLIPSIS_META, META, NAME, NUMBER, OP, STRING, Token, tokenize

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
_META_SOURCE = re.compile(r"\$\$\$|\$([A-Za-z_][A-Za-z0-9_]*)")

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


# --- scopes and fragments ----------------------------------------------------------------------------------

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


@dataclass(frozen=True)
class CanonicalFragment:
    tokens: tuple[Token, ...]
    structural: bool  # parsed as Python: compared with the marks, `$NAME` binding an expression


def fragment_tokens(code: str) -> CanonicalFragment:
    """A `contains`/`absent`/`after` fragment in the canonical layout (see the module's docstring)."""
    placed = _dedent(_META_SOURCE.sub(lambda m: _RUN_NAME if m.group(1) is None else _META_PREFIX + m.group(1),
                                      code))
    if placed.strip():
        tokens = _parsed(placed)
        if tokens is None:
            tokens = _header(placed)
        if tokens:
            return CanonicalFragment(tuple(tokens), True)
    return CanonicalFragment(tuple(_plain(code)), False)


def _parsed(text: str) -> list[Token] | None:
    tree = _python.parse(text.encode("utf-8"))
    return None if tree.root_node.has_error else _structural(tree.root_node, text)


#: The header of a compound statement written without its colon (`if x is None`), as authors often write an
#: `after` fragment: how to complete it into Python (before, after), and where its own tokens begin.
_HEADERS = {"if": ("", ""), "while": ("", ""), "for": ("", ""), "with": ("", ""), "def": ("", ""),
            "class": ("", ""), "async": ("", ""), "elif": ("if True:\n    pass\n", ""),
            "else": ("if True:\n    pass\n", ""), "except": ("try:\n    pass\n", ""),
            "finally": ("try:\n    pass\n", "")}


def _header(text: str) -> list[Token] | None:
    """A clause that only parses after another (`elif x:`, `except E:` with their bodies), or a compound
    statement's header without its colon and body (`if a and b`): laid out as such, without what was added
    to parse it. A header without its colon still matches the start of a longer condition, as its tokens did."""
    first = re.match(r"\s*([A-Za-z_]*)", text).group(1)
    if first not in _HEADERS:
        return None
    before, _ = _HEADERS[first]
    alone = "\n" not in text.strip()
    colon = text.rstrip().endswith(":")
    if alone:  # a header alone, with or without its colon: a body is added to parse it, then left out
        tokens = _parsed(f"{before}{text.rstrip()}{'' if colon else ':'}\n    {_RUN_NAME}\n")
    else:
        tokens = _parsed(f"{before}{text}\n")
    if tokens is None:
        return None
    start = next((i for i, t in enumerate(tokens) if t.text == first and i >= (1 if before else 0)
                  and (not before or tokens[i - 1].kind == MARK)), None)
    if start is None:
        return None
    if alone:
        if len(tokens) < start + 3 or [t.text for t in tokens[-3:]] != [":", INDENT, "$$$"]:
            return None
        return tokens[start:-2 if colon else -3]  # without the body added to parse it (and the colon, if added)
    return tokens[start:]


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code).strip("\n")


def _structural(root: tree_sitter.Node, text: str) -> list[Token]:
    statements = [c for c in root.named_children if c.type not in _SKIP]
    emitter = _Emitter(_char_of(text), fragment=True)
    if len(statements) == 1 and statements[0].type == "expression_statement" and not _is_run(statements[0]):
        expression = statements[0]
        only = [c for c in expression.named_children if c.type not in _SKIP]
        if len(only) == 1:
            emitter.node(only[0], expression, 0)  # one expression: it may stand anywhere, as before
        else:
            emitter.node(expression, root)
    else:
        emitter.block(root, indent=False)
    tokens = emitter.out
    while tokens and tokens[-1].kind == MARK:  # a fragment ends where its code ends: what follows is free
        tokens.pop()
    while tokens and tokens[0].kind == MARK:
        tokens.pop(0)
    return tokens


def _char_of(text: str):
    encoded = text.encode("utf-8")
    if len(encoded) == len(text):
        return None  # ASCII: a byte offset is a character offset
    return lambda byte: len(encoded[:byte].decode("utf-8", errors="ignore"))


def _plain(code: str) -> list[Token]:
    """A fragment that is not Python, tokenized as before: strings and numbers by value, and no trailing commas."""
    tokens = tokenize(code, fragment=True)
    out: list[Token] = []
    for i, token in enumerate(tokens):
        if token.kind == STRING:
            token = token._replace(text=_string_token_key(token.text))
        elif token.kind == NUMBER:
            token = token._replace(text=number_key(token.text))
        elif token.text == "," and _closes(tokens, i + 1):
            continue  # a trailing comma (`f(a,)`, or `f(a, $$$)` written for one): the scope has none
        out.append(token)
    return out


def _closes(tokens: list[Token], i: int) -> bool:
    """Whether tokens[i:] starts with a closing bracket, or with `$$$` and then one."""
    if i < len(tokens) and tokens[i].kind == ELLIPSIS_META:
        i += 1
    return i < len(tokens) and tokens[i].text in (")", "]", "}")


def _string_token_key(text: str) -> str:
    tree = _python.parse(text.encode("utf-8"))
    node = tree.root_node
    while node.named_child_count and node.type not in ("string", "concatenated_string"):
        node = node.named_children[0]
    return string_key(node) if node.type in ("string", "concatenated_string") else text
