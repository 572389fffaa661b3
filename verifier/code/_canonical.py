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
- the keyword arguments of a call come after the others, in name order;
- a few equivalences of meaning (docs/format.md, "Equivalences"): a comparison
  written with `>` or `>=` is written with `<` or `<=` and its operands swapped,
  and `==`/`!=` with a literal on the left has it on the right; `not (a == b)`
  is `a != b` (and `in`/`not in`, `is`/`is not`); an arithmetic of number
  literals whose value is exact is that number (`5 * 60` is `300`), and a `+`
  of two string literals is one string; an annotation (`x: int = 5`,
  `a: int = 1` among parameters, `-> int`) is preceded by an OPTIONAL token
  that says how many tokens it has, so that a fragment without it skips it.

Each token keeps the offsets of what it stands for in the original text, so
that a match still has its lines. `ends` records, for each token index, where
each expression starting there ends: a fragment's `$NAME` binds one of them.

A fragment is laid out by the same walk (`_fragment_tokens`), its `$NAME`
and `$$$` written as the placeholder names below; which parentheses group
something is `_parens`'s.
"""

from __future__ import annotations

import ast
import fractions
import math
import operator
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import cast

import tree_sitter

from . import _python
from ._parens import EXPRESSIONS, _needs_parens
from ._tokens import ELLIPSIS_META, META, NAME, NUMBER, OP, STRING, Token

MARK = "mark"
#: Before an annotation (`: int`, `-> int`): its text is "?" and the number of the annotation's tokens, which a
#: fragment that has no annotation there skips (`_fragments`); a fragment that has one has this token too.
OPTIONAL = "optional"
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

    def __init__(self, char=None, fragment: bool = False, as_written: bool = False, reorder: bool = True) -> None:
        self.stream = Stream()
        self.out = self.stream.tokens
        self.char = char  # None: the text is ASCII, a byte offset is a character offset
        self.fragment = fragment
        #: Parentheses and keyword arguments as written (for fragments that are not Python: see `plain`).
        self.as_written = as_written
        #: Comparisons turned around and `not` of a comparison folded in (`comparison`, `negated`). Without, the
        #: layout the matcher falls back to, so that a fragment that names part of an operand (`b >= c` in
        #: `a.b >= c`) still matches where it did (`_search`).
        self.reorder = reorder and not as_written
        #: `_fold`'s values, by node id: an expression is evaluated once however deep it is nested.
        self.values: dict[int, object] = {}

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
            if inner is None or self.as_written or (_needs_parens(inner, parent, index)
                                                    and not self.folds_to_atom(inner)):
                self.token(OP, "(", node)
                if inner is not None:
                    self.node(inner, node, 0)
                self.token(OP, ")", node)
            else:
                self.node(inner, parent, index)  # as if it stood where the parentheses are
        elif kind in ("string", "concatenated_string"):
            self.token(STRING, string_key(node), node)
        elif kind in ("integer", "float"):
            self.token(NUMBER, number_key((node.text or b"").decode("utf-8", "replace")), node)
        elif kind == "binary_operator" and not self.as_written and self.folded(node):
            pass
        elif kind == "comparison_operator" and self.reorder:
            self.comparison(node)
        elif kind == "not_operator" and self.reorder and self.negated(node):
            pass
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
            annotated = not self.as_written and kind in _ANNOTATED
            children = node.children
            for i, child in enumerate(children):
                if child.type in _SKIP or (child.type == ";" and not child.is_named):
                    continue
                if annotated and child.type in (":", "->") and i + 1 < len(children) \
                        and children[i + 1].type == "type":
                    self.annotation(child, children[i + 1], node, i)
                    continue
                if annotated and child.type == "type" and i > 0 and children[i - 1].type in (":", "->"):
                    continue  # laid out with its `:` or `->`
                self.node(child, node, i)
        if kind in EXPRESSIONS and len(self.out) > start:
            self.stream.ends.setdefault(start, []).append(len(self.out))

    # -- equivalences (docs/format.md, "Equivalences") ------------------------------------------------------

    def annotation(self, colon: tree_sitter.Node, annotation: tree_sitter.Node, parent: tree_sitter.Node,
                   index: int) -> None:
        """`: int` or `-> int`, after an OPTIONAL token that says how many tokens follow."""
        at = len(self.out)
        self.token(OPTIONAL, "?", colon)
        self.token(OP, colon.type, colon)
        self.node(annotation, parent, index + 1)
        self.out[at] = self.out[at]._replace(text=f"?{len(self.out) - at - 1}")

    def comparison(self, node: tree_sitter.Node) -> None:
        """A comparison, its operators in one direction: `a > b` as `b < a`, `a >= b` as `b <= a` (a chain
        when every operator in it points that way), and `0 == x` as `x == 0` (a literal on the right)."""
        operands, operators = _comparison_parts(node)
        texts = [_operator_text(op) for op in operators]
        swapped = None
        if texts and all(t in _REVERSED for t in texts):
            swapped = [_REVERSED[t] for t in reversed(texts)]
        elif len(texts) == 1 and texts[0] in ("==", "!=") and _is_literal(operands[0], self.values) \
                and not _is_literal(operands[1], self.values):
            swapped = texts
        if swapped is None:
            for i, child in enumerate(node.children):
                if child.type not in _SKIP:
                    self.node(child, node, i)
            return
        ordered, ops = list(reversed(operands)), list(reversed(operators))
        for n, operand in enumerate(ordered):
            if n:
                self.operator(swapped[n - 1], ops[n - 1])
            self.node(operand, node, 0 if n == 0 else 2)

    def negated(self, node: tree_sitter.Node) -> bool:
        """`not (a == b)` laid out as `a != b` (and `not in`, `is not`, both ways); False if it is not one."""
        argument = node.child_by_field_name("argument")
        while argument is not None and argument.type == "parenthesized_expression":
            argument = _inner(argument)
        if argument is None or argument.type != "comparison_operator":
            return False
        operands, operators = _comparison_parts(argument)
        if len(operators) != 1 or _operator_text(operators[0]) not in _COMPLEMENT:
            return False
        text = _COMPLEMENT[_operator_text(operators[0])]
        if text in ("==", "!=") and _is_literal(operands[0], self.values) and not _is_literal(operands[1], self.values):
            operands = operands[::-1]
        self.node(operands[0], argument, 0)
        self.operator(text, operators[0])
        self.node(operands[1], argument, 2)
        return True

    def operator(self, text: str, node: tree_sitter.Node) -> None:
        for word in text.split():
            self.token(NAME if word[:1].isidentifier() else OP, word, node)

    def folds_to_atom(self, node: tree_sitter.Node) -> bool:
        """Whether the expression is laid out as one literal (`(2 + 3) * x` is `5 * x`)."""
        value = _fold(node, self.values)
        return value is not None and (isinstance(value, str) or not _negative(value))

    def folded(self, node: tree_sitter.Node) -> bool:
        """An arithmetic of literals laid out as its value, when that value is exact (`_fold`)."""
        value = _fold(node, self.values)
        if value is None:
            return False
        if isinstance(value, str):
            self.token(STRING, value, node)
        elif _negative(value):
            self.token(OP, "-", node)  # as `-300` is laid out: a `-`, then the number
            self.token(NUMBER, repr(-value), node)
        else:
            self.token(NUMBER, repr(value), node)
        return True

    def leaf(self, node: tree_sitter.Node) -> None:
        text = (node.text or b"").decode("utf-8", "replace")
        if not text:
            return  # a MISSING node (a source with syntax errors)
        self.token(NAME if text[:1].isidentifier() else OP, text, node)

    def name(self, node: tree_sitter.Node) -> None:
        text = (node.text or b"").decode("utf-8", "replace")
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
        assert value is not None  # a field the grammar requires (an assert, not a cast: no call on each node)
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
    return (name.text or b"").decode("utf-8", "replace") if name is not None else ""


#: Where an annotation may stand: parameters, an assignment, a definition's return.
_ANNOTATED = frozenset({"typed_parameter", "typed_default_parameter", "assignment", "function_definition"})
_REVERSED = {">": "<", ">=": "<="}
_COMPLEMENT = {"==": "!=", "!=": "==", "in": "not in", "not in": "in", "is": "is not", "is not": "is"}
_LITERALS = frozenset({"integer", "float", "string", "concatenated_string", "true", "false", "none"})


def _comparison_parts(node: tree_sitter.Node) -> tuple[list[tree_sitter.Node], list[tree_sitter.Node]]:
    operands: list[tree_sitter.Node] = []
    operators: list[tree_sitter.Node] = []
    for child in node.children:
        if child.type in _SKIP:
            continue
        (operands if child.is_named else operators).append(child)
    return operands, operators


def _operator_text(node: tree_sitter.Node) -> str:
    return " ".join((node.text or b"").decode("utf-8", "replace").split())  # `not  in` is `not in`


def _is_literal(node: tree_sitter.Node, values: dict) -> bool:
    while node.type == "parenthesized_expression":
        inner = _inner(node)
        if inner is None:
            return False
        node = inner
    if node.type == "unary_operator":
        argument = node.child_by_field_name("argument")
        return argument is not None and argument.type in ("integer", "float")
    return node.type in _LITERALS or _fold(node, values) is not None


#: Integer arithmetic folded, and how large a value may grow (bits): CPython's own compiler folds these
#: (and stops at 128 bits for `*`, `**` and `<<`); beyond that a number is left as written.
_INT_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
            "**": operator.pow, "<<": operator.lshift, ">>": operator.rshift, "&": operator.and_,
            "|": operator.or_, "^": operator.xor}
_FLOAT_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
_MAX_BITS = 128


def _negative(value: int | float) -> bool:
    return value < 0 or (isinstance(value, float) and math.copysign(1.0, value) < 0)


_FAILED = object()


def _fold(node: tree_sitter.Node, values: dict) -> int | float | str | None:
    """The value of an arithmetic of literals (`5 * 60`, `2 ** 20`, `(1 << 10) - 1`, `-1`, `"a" + "b"`), or None.

    A number is folded only when its value is exact: integers (within `_MAX_BITS`), and floats where the result
    is the exact result of the operation on the operands' values (`0.5 * 4` is `2.0`; `0.1 * 3` is left as
    written). Strings: `+` of two plain (or two bytes) literals. A literal alone is not folded here (it is its
    own token already)."""
    if node.type not in ("binary_operator", "unary_operator"):
        return None
    try:
        return _value(node, values, top=True)
    except (ArithmeticError, ValueError, TypeError, RecursionError):
        return None


def _value(node: tree_sitter.Node, values: dict, top: bool = False):
    """`_evaluate`, once per node (`values`); ValueError where the node has no constant value."""
    if top:
        return _evaluate(node, values, top)
    found = values.get(node.id)
    if found is None:
        try:
            found = _evaluate(node, values)
        except (ArithmeticError, ValueError, TypeError):
            found = _FAILED
        values[node.id] = found
    if found is _FAILED:
        raise ValueError
    return found


def _evaluate(node: tree_sitter.Node, values: dict, top: bool = False):
    kind = node.type
    if kind == "parenthesized_expression":
        inner = _inner(node)
        if inner is None:
            raise ValueError
        return _value(inner, values)
    if kind in ("integer", "float"):
        value = ast.literal_eval(number_key((node.text or b"").decode("utf-8", "replace")))
        if isinstance(value, complex):
            raise ValueError
        return value
    if kind == "string":
        key = string_key(node)
        if key[0] not in "sb":
            raise ValueError  # an f-string is not a constant
        return key
    if kind == "unary_operator":
        op = node.child_by_field_name("operator")
        argument = node.child_by_field_name("argument")
        if top or op is None or op.type not in ("-", "+") or argument is None:
            raise ValueError  # `-1` alone is laid out as it was, `-` and `1`
        value = _value(argument, values)
        if isinstance(value, str):
            raise ValueError
        return -value if op.type == "-" else value
    if kind != "binary_operator":
        raise ValueError
    op = node.child_by_field_name("operator")
    left_node = node.child_by_field_name("left")
    assert left_node is not None  # both operands are fields the grammar requires (as a subscript's value)
    left = _value(left_node, values)
    right_node = node.child_by_field_name("right")
    assert right_node is not None
    right = _value(right_node, values)
    text = op.type if op is not None else ""
    if isinstance(left, str) or isinstance(right, str):
        if text != "+" or not (isinstance(left, str) and isinstance(right, str)) or left[0] != right[0]:
            raise ValueError
        return left[0] + repr(ast.literal_eval(left[1:]) + ast.literal_eval(right[1:]))
    if isinstance(left, int) and isinstance(right, int) and text in _INT_OPS:
        if text == "**" and (right < 0 or right * max(abs(left), 2).bit_length() > _MAX_BITS):
            raise ValueError
        if text == "<<" and (right < 0 or right + left.bit_length() > _MAX_BITS):
            raise ValueError
        value = _INT_OPS[text](left, right)
        if value.bit_length() > _MAX_BITS:
            raise ValueError
        return value
    if text == "/" and isinstance(left, int) and isinstance(right, int) and right == 0:
        raise ValueError
    if text in _FLOAT_OPS and (isinstance(left, float) or isinstance(right, float) or text == "/"):
        value = float(_FLOAT_OPS[text](left, right))
        if not math.isfinite(value):
            raise ValueError
        exact = _FLOAT_OPS[text](fractions.Fraction(left), fractions.Fraction(right))
        if fractions.Fraction(value) != exact:
            raise ValueError  # `0.1 * 3` is not exactly 0.3: left as written
        return value
    raise ValueError


# --- values ------------------------------------------------------------------------------------------------

#: `re.match(rb"[A-Za-z]*", text)`, a string literal's prefix (`rb`, `f`...): it always matches (maybe nothing), so
#: it is typed as never None (a cast made once here, not on each string).
_string_prefix = cast("Callable[[bytes], re.Match[bytes]]", re.compile(rb"[A-Za-z]*").match)

def string_key(node: tree_sitter.Node) -> str:
    """A string literal by value: its kind (str, bytes, f-string) and value, whatever its quotes and pieces."""
    pieces = [node] if node.type == "string" else [c for c in node.named_children if c.type == "string"]
    kinds = set()
    for piece in pieces:
        prefix = _string_prefix(piece.text or b"").group().lower()
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

def scope_stream(root: tree_sitter.Node, start: int, end: int, char=None, reorder: bool = True) -> Stream:
    """The canonical tokens of the code between two byte offsets of a parsed file: every node wholly inside
    is laid out; a statement of a block ends with a NL mark, as in a block. Without `reorder`, comparisons
    keep their written order (`_Emitter.reorder`)."""
    emitter = _Emitter(char, reorder=reorder)
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

