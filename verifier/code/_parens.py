"""Which parentheses group something: Python's expressions as tree-sitter names them, and how tightly each binds.

The canonical layout (`_canonical`) leaves out parentheses that group nothing
(`x = (0)`, `if (a and b):`); `_needs_parens` says, from the precedence table
of the Python reference, whether a parenthesized expression reads otherwise
without them where it stands.
"""

from __future__ import annotations

import tree_sitter

#: Expressions, as tree-sitter names them: what a structural `$NAME` may stand for.
EXPRESSIONS = frozenset("""identifier attribute call subscript string concatenated_string integer float true
false none ellipsis list tuple set dictionary list_comprehension dictionary_comprehension set_comprehension
generator_expression parenthesized_expression binary_operator unary_operator boolean_operator not_operator
comparison_operator conditional_expression lambda await named_expression list_splat dictionary_splat
yield slice keyword_identifier type generic_type union_type constrained_type member_type splat_type""".split())

# Binding strength, loosest first (the Python reference's precedence table).
_PRECEDENCE = {"lambda": 1, "conditional_expression": 2, "not_operator": 5, "comparison_operator": 6,
               "unary_operator": 13, "await": 15}
_BOOLEAN = {"or": 3, "and": 4}
_BINARY = {"|": 7, "^": 8, "&": 9, "<<": 10, ">>": 10, "+": 11, "-": 11, "*": 12, "/": 12, "//": 12, "%": 12,
           "@": 12, "**": 14}
_ATOM = 16


def _precedence(node: tree_sitter.Node) -> int:
    kind = node.type
    if kind == "boolean_operator":
        op = node.child_by_field_name("operator")
        return _BOOLEAN.get(op.type if op is not None else "", 3)
    if kind == "binary_operator":
        op = node.child_by_field_name("operator")
        return _BINARY.get(op.type if op is not None else "", 11)
    return _PRECEDENCE.get(kind, _ATOM if kind in EXPRESSIONS else 0)


def _needs_parens(inner: tree_sitter.Node, parent: tree_sitter.Node | None, index: int) -> bool:
    """Whether `(inner)`, the `index`-th child of `parent`, reads otherwise without its parentheses."""
    if inner.type == "named_expression" and parent is not None and index == 1 \
            and parent.type in ("if_statement", "elif_clause", "while_statement"):
        return False  # `if (n := f()):`, as formatters write `if n := f():` when they break the line
    if inner.type in ("yield", "named_expression", "list_splat", "dictionary_splat", "expression_list"):
        return True  # rare, and not always optional: kept
    strength = _precedence(inner)
    if strength == 0:
        return True  # not an expression we know: kept
    if parent is None:
        return False
    kind = parent.type
    if strength == _ATOM:
        return False  # a name, a call, a literal, a display...: never grouped
    if kind in ("attribute", "call", "subscript") and index == 0:
        return True  # `(a + b).c`, `(f or g)()`
    if kind in ("binary_operator", "boolean_operator"):
        outer = _precedence(parent)
        if strength != outer:
            return strength < outer
        right_associative = kind == "binary_operator" and outer == _BINARY["**"]
        return index == 0 if right_associative else index != 0
    if kind == "comparison_operator":
        return strength <= _PRECEDENCE["comparison_operator"]
    if kind in ("not_operator", "unary_operator", "await"):
        return strength < _precedence(parent) or (kind == "await" and strength < _ATOM)
    if kind == "conditional_expression":
        return strength <= _PRECEDENCE["conditional_expression"]
    if kind in ("for_in_clause", "if_clause"):
        return strength <= _PRECEDENCE["conditional_expression"]  # `for x in (a if b else c)` in a comprehension
    return False  # an argument, an element, a value, a condition, a return value...
