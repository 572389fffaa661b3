"""Which parentheses of C and C++ code group nothing, from tree-sitter-cpp's `parenthesized_expression`, and the
tokens a comparison reads without them (#30): the C++ counterpart of `_parens`.

A pair is left out only where C++ reads the code the same without it, decided by the precedence of what it holds
and where it stands: `x = (0);`, `return (a);`, the inner pair of `if ((a && b))`, `(a).b`, `a + (b * c)`,
`f((x))`, `c ? x : (n / 2)`. It stays wherever that is not certain, kept being the safe side (a kept pair can make
a check stricter, never make it hold where it should not): around what binds more loosely than its place needs
(`(a + b) * c`, `a - (b - c)`, `!(a && b)`, `(*p).x`), around a comma expression or anything holding a comma (a
macro's argument would split there: `FOO((std::pair<int, int>()))`), around a call's callee (`(max)(a, b)` keeps
a macro from expanding), in `sizeof`, `decltype` (`decltype((x))` is a reference), casts, `new`, template
arguments, a constructor's arguments (`T v((a));` is no function declaration), `&(A::m)` (no pointer to member),
and under a node the table does not know (a `do ... while (x)`'s own parentheses are one). A cast `(int) x` is
not a parenthesized expression. Nothing is left out where the parser saw an error, in the pair, in the
expression it stands in, or around that.

A trailing comma before a closing brace (`{1, 2,}`, an enumerator list's) is left out too: before `}` a comma
ends a list and means nothing else (before `)` it would: `FOO(a,)` passes an empty macro argument).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Iterable

import tree_sitter

from ._cpp import LANGUAGE, field_of, parse
from ._tokens import ELLIPSIS_META, META, Token

# Binding strength, loosest first (the C++ standard's grammar, as cppreference tabulates it).
_COMMA, _ASSIGNMENT, _UNARY, _POSTFIX, _ATOM = 1, 2, 15, 16, 17
_BINARY = {"||": 3, "or": 3, "&&": 4, "and": 4, "|": 5, "bitor": 5, "^": 6, "xor": 6, "&": 7, "bitand": 7,
           "==": 8, "!=": 8, "not_eq": 8, "<": 9, "<=": 9, ">": 9, ">=": 9, "<=>": 10, "<<": 11, ">>": 11,
           "+": 12, "-": 12, "*": 13, "/": 13, "%": 13}
_PRECEDENCE = {"comma_expression": _COMMA, "assignment_expression": _ASSIGNMENT,
               "conditional_expression": _ASSIGNMENT, "unary_expression": _UNARY, "pointer_expression": _UNARY,
               "cast_expression": _UNARY, "sizeof_expression": _UNARY, "alignof_expression": _UNARY,
               "new_expression": _UNARY, "delete_expression": _UNARY, "co_await_expression": _UNARY,
               "call_expression": _POSTFIX, "field_expression": _POSTFIX, "subscript_expression": _POSTFIX}
_ATOMS = frozenset("""identifier qualified_identifier template_function number_literal string_literal
    raw_string_literal concatenated_string char_literal user_defined_literal true false null this""".split())
#: Where a whole expression stands alone: what it holds is grouped by the place itself (a statement, a condition's
#: own parentheses, an initializer's `=`), so any expression but a comma expression reads the same there.
_ALONE = frozenset("""expression_statement return_statement throw_statement condition_clause init_declarator
    field_declaration optional_parameter_declaration initializer_list initializer_pair subscript_argument_list
    for_statement enumerator""".split())
#: Nodes under which nothing is left out: their reading depends on more than precedence.
_REFUSE = frozenset({"ERROR", "template_argument_list", "preproc_arg"})


def _precedence(node: tree_sitter.Node) -> int:
    kind = node.type
    if kind == "binary_expression":
        op = node.child_by_field_name("operator")
        return _BINARY.get(op.type if op is not None else "", 0)
    if kind == "update_expression":  # `++x` is unary, `x++` postfix
        return _UNARY if node.children and node.children[0].type in ("++", "--") else _POSTFIX
    if kind in _ATOMS:
        return _ATOM
    return _PRECEDENCE.get(kind, 0)


def _needs_parens(inner: tree_sitter.Node, parent: tree_sitter.Node, role: str | None,
                  grandparent: tree_sitter.Node | None) -> bool:
    """Whether `(inner)`, standing as `role` of `parent` (itself under `grandparent`, None at the root), may read
    otherwise without its parentheses."""
    strength = _precedence(inner)
    if strength <= _COMMA or b"," in (inner.text or b""):
        return True  # not an expression we know, a comma expression, or a comma a macro's argument would split at
    kind = parent.type
    if kind == "parenthesized_expression" or kind in _ALONE:
        return False
    if kind == "argument_list":  # a call's argument (the callee may be a macro): only what cannot come apart
        return strength < _POSTFIX or grandparent is None or grandparent.type != "call_expression"
    if kind == "binary_expression":
        outer = _precedence(parent)
        return outer == 0 or strength < outer or (strength == outer and role != "left")  # all are left-associative
    if kind == "assignment_expression":
        return strength < (_UNARY if role == "left" else _ASSIGNMENT)  # `(a ? b : c) = d` is kept
    if kind == "conditional_expression":
        if role == "consequence":
            return False
        # `c ? a : (b = d)` reads otherwise in C, and `(a = b) ? c : d` everywhere; `c ? a : (b ? d : e)` does not
        return strength <= _ASSIGNMENT and not (role == "alternative" and inner.type == "conditional_expression")
    if kind == "pointer_expression" and inner.type == "qualified_identifier":
        return True  # `&(A::m)` is a plain pointer, `&A::m` a pointer to member
    if kind in ("unary_expression", "pointer_expression", "update_expression", "delete_expression",
                "co_await_expression"):
        return strength < _POSTFIX
    if kind in ("field_expression", "subscript_expression") and role == "argument":
        return strength < _POSTFIX  # `(a).b`, `(a.b)[0]`; `(*p).x` is kept
    return True  # a callee, a cast, sizeof, decltype, new, a case label, a node not listed: kept


def redundant(root: tree_sitter.Node, start: int, end: int, runs: Iterable[int] = ()) -> set[int]:
    """Byte offsets of the `(` and `)` of every pair within [start, end) that groups nothing. `runs` are the
    offsets of a fragment's `$$$`: a pair holding one is kept (it may stand for a comma expression).

    The pairs are judged outer ones first, along one walk of a cursor down the paths from `root` to them
    (`_Step`): what a pair needs of the nodes around it (the node it stands in, its field, an error or a node of
    `_REFUSE` around it) is read off that path, never with `Node.parent`, which costs the node's depth each
    time and made a nest of pairs cost more than the square of its depth."""
    runs = sorted(runs)
    cursor = tree_sitter.QueryCursor(_query())
    cursor.set_byte_range(start, end)
    nodes = sorted(cursor.captures(root).get("p", ()), key=lambda n: (n.start_byte, -n.end_byte))
    path = _path_to(root)
    walker = root.walk()
    innermost: dict[int, tree_sitter.Node] = {}
    offsets: set[int] = set()
    for node in nodes:
        if node.start_byte < start or node.end_byte > end or node.has_error:
            continue
        parts = _parts(node)
        at = bisect.bisect_left(runs, node.start_byte)
        if parts is None or (at < len(runs) and runs[at] < node.end_byte):
            continue
        here = _walk_to(path, walker, node)
        if here == 0:
            continue  # the tree's root: it stands in nothing
        # The pair around it is left out: it stands where that one stood (the outermost of a run left out).
        place, above = path[here - 1].stands or (here, here - 1)
        parent = path[above]
        if parent.refused or parent.node.has_error:
            continue  # where the parser saw an error around it, its reading is not known
        opening, inner, closing = parts
        inner = _innermost(inner, innermost)  # `((a))`: judged by what the innermost pair holds
        if not _needs_parens(inner, parent.node, path[place].field, path[above - 1].node if above else None):
            path[here].stands = (place, above)
            offsets.update((opening.start_byte, closing.start_byte))
    return offsets


class _Step:
    """A node on the path from the tree's root to the pair being judged, with what the pairs under it read of
    it."""

    __slots__ = ("node", "start", "end", "field", "refused", "stands")

    def __init__(self, node: tree_sitter.Node, field: str | None, under_refused: bool) -> None:
        self.node = node
        self.start, self.end = node.start_byte, node.end_byte
        self.field = field  # the field it stands in of the node above it
        self.refused = under_refused or node.type in _REFUSE  # it, or a node above it, is one of `_REFUSE`
        #: For a pair left out: the path's indexes of the node that stands in its place (the pair, or the
        #: outermost of the pairs left out around it) and of the node above that place.
        self.stands: tuple[int, int] | None = None


def _path_to(root: tree_sitter.Node) -> list[_Step]:
    """The steps from the tree's root down to `root` (only `root` when it is the tree's root)."""
    chain = [root]
    while (parent := chain[-1].parent) is not None:
        chain.append(parent)
    chain.reverse()
    path: list[_Step] = []
    for i, node in enumerate(chain):
        path.append(_Step(node, field_of(chain[i - 1], node) if i else None, bool(path) and path[-1].refused))
    return path


def _walk_to(path: list[_Step], cursor: tree_sitter.TreeCursor, node: tree_sitter.Node) -> int:
    """Move `cursor`, which stands at `path`'s last node, to `node`, a node under the cursor's root, and `path`
    with it; `node`'s index in `path`. A node that holds `node`'s bytes lies above it (siblings never overlap
    and a pair is never empty), so the walk goes up to the first such node and down through the children that
    hold its first byte: every node is stepped on at most once each way, however deep."""
    first, last = node.start_byte, node.end_byte
    while not (path[-1].start <= first and last <= path[-1].end):
        path.pop()
        cursor.goto_parent()
    while path[-1].node.id != node.id:
        if cursor.goto_first_child_for_byte(first) is None or (child := cursor.node) is None:
            raise ValueError(f"{node} is not under {path[-1].node}")
        path.append(_Step(child, cursor.field_name, path[-1].refused))
    return len(path) - 1


def _innermost(inner: tree_sitter.Node, known: dict[int, tree_sitter.Node]) -> tree_sitter.Node:
    """What the innermost of the pairs nested right in each other from `inner` holds (`inner` itself if it is no
    pair). `known` keeps each pair's answer, so that a nest of pairs is read once rather than once per pair."""
    chain: list[int] = []
    while inner.type == "parenthesized_expression" and inner.id not in known \
            and (nested := _parts(inner)) is not None:
        chain.append(inner.id)
        inner = nested[1]
    if inner.type == "parenthesized_expression" and inner.id in known:
        inner = known[inner.id]
    for pair in chain:
        known[pair] = inner
    return inner


def _parts(node: tree_sitter.Node) -> tuple[tree_sitter.Node, tree_sitter.Node, tree_sitter.Node] | None:
    """`(`, the expression and `)` of a parenthesized expression (comments aside), or None for another shape."""
    children = [c for c in node.children if c.type != "comment"]
    if len(children) != 3 or children[0].type != "(" or children[2].type != ")":
        return None
    return children[0], children[1], children[2]


@functools.lru_cache(maxsize=1)
def _query() -> tree_sitter.Query:
    return tree_sitter.Query(LANGUAGE, "(parenthesized_expression) @p")


#: How a fragment is parsed, in turn, until one parses without errors: as a file (a definition, a declaration),
#: as a function's body (statements: at file level `a + (b * c);` reads as something else), as an expression
#: (`string_format("%d", (n))`, written without its `;`).
_WRAPPINGS = (("", ""), ("void __gotchas_fragment__() {\n", "\n}"), ("void __gotchas_fragment__() {\n", ";\n}"))


def fragment_dropped(code: str, tokens: list[Token]) -> set[int]:
    """Character offsets into `code` (a check's fragment, tokenized as `tokens`) of the parentheses that group
    nothing: as in a file, once the fragment parses as C++ (`_WRAPPINGS`); none where it does not parse. `$NAME`
    is parsed as a name, `$$$` as one too, and a pair holding a `$$$` is kept."""
    placed = list(code)
    runs = []
    for token in tokens:
        if token.kind in (META, ELLIPSIS_META):  # a name of the same length: every offset stays
            placed[token.start:token.end] = "_" * (token.end - token.start)
            if token.kind == ELLIPSIS_META:
                runs.append(token.start)
    text = "".join(placed)
    for before, after in _WRAPPINGS:
        data = (before + text + after).encode("utf-8")
        root = parse(data).root_node
        if not root.has_error:
            break
    else:
        return set()
    char = _char_of(data)
    shift = len(before)
    dropped = redundant(root, len(before.encode()), len(data) - len(after.encode()),
                        [len((before + text[:r]).encode()) for r in runs])
    return {char(b) - shift for b in dropped}


def _char_of(data: bytes) -> Callable[[int], int]:
    if data.isascii():
        return lambda byte: byte
    return lambda byte: len(data[:byte].decode("utf-8", errors="ignore"))


def canonical(tokens: list[Token], dropped: set[int], char: Callable[[int], int] | None = None) -> list[Token]:
    """`tokens` without the parentheses at the byte offsets `dropped` (`char` maps a byte offset to the tokens'
    character offsets; None: the same) and without each comma right before a `}`."""
    at = {char(b) for b in dropped} if char is not None else dropped
    out: list[Token] = []
    for i, token in enumerate(tokens):
        if token.text in "()" and token.start in at:
            continue
        if token.text == "," and i + 1 < len(tokens) and tokens[i + 1].text == "}":
            continue
        out.append(token)
    return out
