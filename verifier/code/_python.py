"""Python structure from tree-sitter: scopes by dotted symbol, statements, string literals."""

from __future__ import annotations

import ast
import functools
import re
import warnings
from collections.abc import Callable, Iterator
from typing import TypeGuard, cast

import tree_sitter
import tree_sitter_python

from .._nodes import node_bytes, node_parent
from . import _limits

LANGUAGE = tree_sitter.Language(tree_sitter_python.language())

DEFINITIONS = ("class_definition", "function_definition")
# Compound statements whose blocks hold definitions that still belong to the
# enclosing scope (`if TYPE_CHECKING:`, `try: ... except ImportError:` and the like).
_TRANSPARENT = frozenset(
    """block if_statement elif_clause else_clause try_statement except_clause
    except_group_clause finally_clause with_statement for_statement while_statement
    match_statement case_clause""".split()
)
_STATEMENT_PARENTS = ("block", "module")


@functools.lru_cache(maxsize=1)
def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(LANGUAGE)


def parse(data: bytes, where: str | None = None) -> tree_sitter.Tree:
    """`data`'s tree; `_limits.ParseRefused` (naming `where`) for a file past the bounds tree-sitter parses in."""
    _limits.check(data, where)
    return parser().parse(data)


def _definition(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The class or function node behind a possibly decorated definition."""
    return node.child_by_field_name("definition") if node.type == "decorated_definition" else node


def _assigned_names(statement: tree_sitter.Node) -> list[str]:
    """Names bound by a plain or annotated assignment statement (chained ones too)."""
    if statement.type != "expression_statement" or statement.named_child_count != 1:
        return []
    names: list[str] = []
    node: tree_sitter.Node | None = statement.named_children[0]
    while node is not None and node.type == "assignment":
        left = node.child_by_field_name("left")
        if left is not None:
            if left.type == "identifier":
                names.append((left.text or b"").decode("utf-8", "replace"))
            elif left.type in ("pattern_list", "tuple_pattern", "list_pattern"):
                names.extend(
                    (c.text or b"").decode("utf-8", "replace") for c in left.named_children if c.type == "identifier"
                )
        node = node.child_by_field_name("right")
    return names


def _next_statement(node: tree_sitter.Node) -> tree_sitter.Node | None:
    sibling = node.next_named_sibling
    while sibling is not None and sibling.type == "comment":
        sibling = sibling.next_named_sibling
    return sibling


def _is_docstring(node: tree_sitter.Node | None) -> TypeGuard[tree_sitter.Node]:
    return (
        node is not None
        and node.type == "expression_statement"
        and node.named_child_count == 1
        and node.named_children[0].type in ("string", "concatenated_string")
    )


def members(container: tree_sitter.Node, assignments: bool | None = None
            ) -> Iterator[tuple[str, tuple[int, int], tree_sitter.Node]]:
    """(name, byte range, node) of each definition directly in `container`.

    `container` is a module, class or function node. Definitions inside
    compound statements (if/try/with/...) count as the container's own.
    Assignments count in modules and classes, not in functions (locals are not
    symbols); an assignment's range runs through the docstring that follows it.
    """
    if assignments is None:
        assignments = container.type != "function_definition"
    if container.type in DEFINITIONS:
        body = container.child_by_field_name("body")
        if body is None:
            return
        container = body
    for child in container.named_children:
        if child.type == "decorated_definition" or child.type in DEFINITIONS:
            definition = _definition(child)
            if definition is not None and (name := definition.child_by_field_name("name")) is not None:
                yield (name.text or b"").decode("utf-8", "replace"), (child.start_byte, child.end_byte), definition
        elif child.type == "expression_statement" and assignments:
            names = _assigned_names(child)
            if names:
                end = child.end_byte
                following = _next_statement(child)
                if _is_docstring(following):
                    end = following.end_byte
                for assigned in names:
                    yield assigned, (child.start_byte, end), child
        elif child.type in _TRANSPARENT:
            yield from members(child, assignments)


def resolve(root: tree_sitter.Node, symbol: str, members_of=members) -> list[tuple[int, int]]:
    """Byte ranges of every definition of the dotted `symbol` (empty when none).

    `members_of` gives a container's members (a cached `members` spares walking a tree again per symbol).
    """
    containers = [root]
    ranges: list[tuple[int, int]] = []
    parts = symbol.split(".")
    for depth, part in enumerate(parts):
        found = [(rng, node) for c in containers for name, rng, node in members_of(c) if name == part]
        if depth == len(parts) - 1:
            ranges = [rng for rng, _ in found]
        containers = [node for _, node in found if node.type in DEFINITIONS]
    return ranges


def definitions(root: tree_sitter.Node, members_of=members, containers=DEFINITIONS
                ) -> Iterator[tuple[str, tuple[int, int]]]:
    """(qualified name, byte range) of every definition in the file, outermost first: `members_of` each container
    (a node of a type in `containers`: `_cpp` gives its own of both)."""
    stack = [("", root)]
    while stack:
        prefix, container = stack.pop(0)
        for name, rng, node in members_of(container):
            qualified = f"{prefix}{name}"
            yield qualified, rng
            if node.type in containers:
                stack.append((qualified + ".", node))


def imported_from(root: tree_sitter.Node, name: str) -> tuple[str, int] | None:
    """(module, number of leading dots) of the `from ... import` in the module's own statements that binds
    `name` (as itself, or `as name`), or None. An import binds a name; it does not define one."""
    for statement in _module_statements(root):
        if statement.type != "import_from_statement":
            continue
        module = statement.child_by_field_name("module_name")
        if module is None:
            continue
        for child in statement.children_by_field_name("name"):
            bound = child.child_by_field_name("alias") if child.type == "aliased_import" else child
            if bound is not None and node_bytes(bound).decode("utf-8", "replace") == name:
                text = node_bytes(module).decode("utf-8", "replace")
                level = len(text) - len(text.lstrip("."))
                return text[level:], level
    return None


def _module_statements(container: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The module's statements, those inside if/try/with blocks included (as `members` counts them)."""
    for child in container.named_children:
        if child.type in _TRANSPARENT:
            yield from _module_statements(child)
        else:
            yield child


def module_path(file_path: str, module: str, level: int) -> str | None:
    """The repository path of the module an import in `file_path` names (`.py`; it may be a package's
    `__init__.py` instead), or None for a module of another project. An absolute module is placed under
    the folder that holds its top package in `file_path` (so `sglang.srt.x` from `python/sglang/...` is
    `python/sglang/srt/x.py`); a top package that is not among those folders is another project's."""
    folders = file_path.split("/")[:-1]
    parts = module.split(".") if module else []
    if level:
        base = folders[:len(folders) - (level - 1)] if level > 1 else folders
    elif parts and parts[0] in folders:
        base = folders[:folders.index(parts[0])]
    else:
        return None
    if not parts:  # `from . import name`: the package itself
        return "/".join(base + ["__init__.py"])
    return "/".join(base + parts) + ".py"


def statement_at(root: tree_sitter.Node, byte: int) -> tree_sitter.Node | None:
    """The innermost statement (a direct child of a block or module) holding `byte`."""
    node = root.descendant_for_byte_range(byte, byte + 1)
    while node is not None and node.parent is not None and node.parent.type not in _STATEMENT_PARENTS:
        node = node.parent
    if node is None or node.parent is None:
        return None
    return node


def enclosing_statement(statement: tree_sitter.Node, levels: int) -> tree_sitter.Node | None:
    """The statement `levels` blocks above `statement` (itself for 0). None where there is none."""
    node = statement
    for _ in range(levels):
        above = node.parent  # the block that holds it...
        while above is not None and above.parent is not None and above.parent.type not in _STATEMENT_PARENTS:
            above = above.parent  # ...and the statement that holds that block
        if above is None or above.parent is None:
            return None
        node = above
    return node


def statement_run(statement: tree_sitter.Node, index: int, count: int | None
                  ) -> tuple[tree_sitter.Node, tree_sitter.Node] | None:
    """The first and last of `count` statements of `statement`'s block, of which `statement` is the `index`-th
    (count None: the whole block). None where the block has too few statements before or after it."""
    siblings = [c for c in node_parent(statement).named_children if c.type != "comment"]
    if count is None:
        return siblings[0], siblings[-1]
    at = next(i for i, c in enumerate(siblings) if c.id == statement.id)
    if at - index < 0 or at - index + count > len(siblings):
        return None
    return siblings[at - index], siblings[at - index + count - 1]


def consecutive(first: tree_sitter.Node, second: tree_sitter.Node) -> bool:
    """Whether `second` is the statement right after `first` in one block, comments aside."""
    following = _next_statement(first)
    return following is not None and following.id == second.id


@functools.lru_cache(maxsize=1)
def _string_query() -> tree_sitter.Query:
    return tree_sitter.Query(LANGUAGE, "[(string) (concatenated_string)] @s")


def string_literals(root: tree_sitter.Node, start: int, end: int) -> Iterator[tuple[tree_sitter.Node, str]]:
    """(node, value) of each string literal within the byte range, implicit concatenations joined."""
    cursor = tree_sitter.QueryCursor(_string_query())
    cursor.set_byte_range(start, end)
    # Captures do not come in source order (nor in the same order each run): sort, so that
    # the first literal found is always the same one.
    for node in sorted(cursor.captures(root).get("s", ()), key=lambda n: (n.start_byte, n.end_byte)):
        if node.start_byte < start or node.end_byte > end:
            continue
        if node.type == "string" and node.parent is not None and node.parent.type == "concatenated_string":
            continue
        if node.type == "concatenated_string":
            value = "".join(string_value(piece) for piece in node.named_children if piece.type == "string")
        else:
            value = string_value(node)
        yield node, value


_PREFIX = re.compile(rb"^[A-Za-z]*")
_QUOTE = re.compile(rb"\"\"\"|'''|\"|'")
#: Their `match` and `search` on a string literal's text: the one always matches (maybe nothing), the other always
#: finds the literal's quote, so neither is None (a cast made once here, not on each string).
_prefix = cast("Callable[[bytes], re.Match[bytes]]", _PREFIX.match)
_quote = cast("Callable[[bytes], re.Match[bytes]]", _QUOTE.search)


def string_value(node: tree_sitter.Node) -> str:
    """The value of one string literal: escapes resolved; an f-string keeps `{...}` as written."""
    text = node.text or b""
    prefix = _prefix(text).group().lower()
    if b"f" not in prefix and b"t" not in prefix:
        return _literal(text)
    quote = _quote(text).group()
    literal_prefix = bytes(c for c in prefix if c not in b"ft")
    parts = []
    for child in node.named_children:
        if child.type == "string_content":
            body = (child.text or b"").replace(b"{{", b"{").replace(b"}}", b"}")
            parts.append(_literal(literal_prefix + quote + body + quote))
        elif child.type == "interpolation":
            parts.append((child.text or b"").decode("utf-8", "replace"))
    return "".join(parts)


_SIMPLE = re.compile(rb"""([uU]?)("{3}|'{3}|"|')(.*)\2""", re.DOTALL)


def _literal(source: bytes) -> str:
    simple = _SIMPLE.fullmatch(source)
    if simple is not None and b"\\" not in source:  # no escape, no prefix that changes it: as written
        quote, body = simple.group(2), simple.group(3)
        if quote[:1] not in body if len(quote) == 1 else (quote not in body and not body.endswith(quote[:1])):
            return body.decode("utf-8", "replace")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = ast.literal_eval(source.decode("utf-8", "replace"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return source.decode("utf-8", "replace")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else source.decode("utf-8", "replace")


def has_error(node: tree_sitter.Node) -> bool:
    return node.has_error
