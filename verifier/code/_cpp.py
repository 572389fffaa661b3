"""C and C++ structure from tree-sitter (the C++ grammar reads both): definitions by dotted symbol, as `_python`
gives Python's, for the third engine's code (llama.cpp, #30).

A symbol is the definition's qualified name with `.` between its parts (`::` is accepted for it): namespaces,
classes, structs, unions and enums are containers; a function or method definition, a field of a class or struct
(with or without a default member initializer: `int32_t n_ctx = 4096;`), an enumerator and a variable defined at
namespace level are members. A method defined outside its class (`void server_context::update_slots() {...}`)
is the class's member by its qualified name, wherever the class is. Templates, `extern "C"` blocks, anonymous
namespaces and preprocessor conditionals (`#ifdef GGML_USE_CUDA`) hold definitions that belong to the enclosing
scope. Declarations that define nothing (a prototype, a method declared in its class and defined elsewhere, a
forward `struct x;`) are not definitions; lambdas and local variables are not symbols.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import tree_sitter
import tree_sitter_cpp

from ..model import language_of
from . import _limits, _python

LANGUAGE = tree_sitter.Language(tree_sitter_cpp.language())

#: Containers: a member's symbol is the container's, a dot, and its name.
CONTAINERS = ("namespace_definition", "class_specifier", "struct_specifier", "union_specifier", "enum_specifier")
# Nodes whose children belong to the enclosing scope.
_TRANSPARENT = frozenset("""template_declaration linkage_specification declaration_list preproc_if preproc_ifdef
    preproc_else preproc_elif preproc_elifdef""".split())
# Declarators that wrap the one that names what is declared (`*x`, `&f()`, `x[4]`, `(f)`).
_WRAPPERS = ("pointer_declarator", "reference_declarator", "array_declarator", "parenthesized_declarator",
             "attributed_declarator", "init_declarator")


def is_cpp_path(path: str) -> bool:
    return language_of(path) == "cpp"


@functools.lru_cache(maxsize=1)
def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(LANGUAGE)


# A format macro written between string literals (`"n_tokens = %" PRId64 "\n"`, `"%09" PRId64, ns`): the
# preprocessor joins them; the grammar, which does not expand macros, would see an error. `parse` reads each as
# a string literal of the same length, so that every offset stays where it is.
_FORMAT_MACRO = re.compile(rb'(?<=")(\s*)((?:PRI|SCN)[A-Za-z0-9_]+)\b|\b((?:PRI|SCN)[A-Za-z0-9_]+)(?=\s*")')


# A macro that stands for a statement or an attribute, alone on its line without a semicolon (`CHECK_ARG` in
# old argument parsers, `LLAMA_COMMON_ATTRIBUTE_FORMAT(1, 2)` before a declaration): `parse` reads it as blank.
# Only where a statement or declaration may start (`_statement_ends`) and one follows: never an enum's last
# enumerator, an initializer's value, or an argument that a formatter put on a line of its own.
_BARE_MACRO = re.compile(rb"(?m)^[ \t]*([A-Z_][A-Z0-9_]*(?:\([^()\n]*\))?)[ \t]*\r?$")
_STARTS_CODE = re.compile(rb"\s*[A-Za-z_~]")


def _statement_ends(before: bytes) -> bool:
    """Whether what precedes a line ends a statement, a block or a declaration (so the line starts one): its last
    line ends with `;`, `{` or `}`, or is a comment or a directive, or there is nothing before it."""
    lines = before.rstrip().rsplit(b"\n", 1)
    last = lines[-1].strip()
    return not last or last.endswith((b";", b"{", b"}")) or last.startswith((b"//", b"#")) or last.endswith(b"*/")


def masked(data: bytes) -> bytes:
    """`data` as `parse` reads it, every offset where it was: each format macro next to a string literal read as
    a string literal of its length, each bare macro line as blanks."""
    def literal(m: re.Match) -> bytes:
        name = m.group(2) or m.group(3)
        return (m.group(1) or b"") + b'"' + b"_" * (len(name) - 2) + b'"'
    if b"PRI" in data or b"SCN" in data:
        data = _FORMAT_MACRO.sub(literal, data)
    out, since = None, 0
    for m in _BARE_MACRO.finditer(data):
        # What precedes the line, from the line of the bare macro before (its start is a line's, and its name
        # is no blank): the same last line as all that precedes it, and each byte copied once, not once a line.
        before, since = data[since:m.start()], m.start()
        if not (_statement_ends(before) and _STARTS_CODE.match(data, m.end())):
            continue
        if out is None:
            out = bytearray(data)
        out[m.start(1):m.end(1)] = b" " * (m.end(1) - m.start(1))
    return bytes(out) if out is not None else data


def parse(data: bytes, where: str | None = None) -> tree_sitter.Tree:
    """`data`'s tree; `_limits.ParseRefused` (naming `where`) for a file past the bounds tree-sitter parses in."""
    _limits.check(data, where)
    return parser().parse(masked(data))


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def normalize(symbol: str) -> str:
    """A symbol as written in a check (`a::b::c` or `a.b.c`) in the dotted form definitions are named by."""
    return ".".join(part.strip() for part in symbol.replace("::", ".").split("."))


def _declared_name(declarator: tree_sitter.Node | None) -> tuple[str | None, bool]:
    """(the dotted name a declarator declares, whether it declares a function), through pointers, references,
    arrays and initializers; None for an abstract or unnamed declarator."""
    node = declarator
    function = False
    while node is not None:
        if node.type == "function_declarator":
            function = True
            node = node.child_by_field_name("declarator")
        elif node.type in _WRAPPERS:
            node = node.child_by_field_name("declarator") or next(
                (c for c in node.named_children if c.type.endswith("declarator") or c.type.endswith("identifier")),
                None)
        elif node.type in ("identifier", "field_identifier", "type_identifier", "destructor_name", "operator_name",
                           "namespace_identifier"):
            return _text(node), function
        elif node.type == "qualified_identifier":
            return ".".join(_parts(node)), function
        elif node.type == "template_function":
            name = node.child_by_field_name("name")
            return (_text(name) if name is not None else None), function
        else:
            return None, function
    return None, function


def _parts(node: tree_sitter.Node) -> list[str]:
    """The names of a qualified name (`a::b<T>::c`: a, b, c), from its nodes, however it is laid out."""
    if node.type in ("qualified_identifier", "nested_namespace_specifier"):
        found = []
        for child in node.named_children:
            found.extend(_parts(child))
        return found
    if node.type in ("template_type", "template_function"):
        name = node.child_by_field_name("name")
        return _parts(name) if name is not None else []
    if node.type.endswith("identifier") or node.type in ("destructor_name", "operator_name"):
        return ["".join(_text(node).split())]
    return []


def _container_name(node: tree_sitter.Node) -> str | None:
    name = node.child_by_field_name("name")
    return ".".join(_parts(name)) or None if name is not None else None


def members(container: tree_sitter.Node) -> Iterator[tuple[str, tuple[int, int], tree_sitter.Node]]:
    """(name, byte range, node) of each definition directly in `container` (a translation unit, a namespace,
    class, struct, union or enum); a name may be dotted (`server_context.update_slots`, a method defined outside
    its class; `a.b` for `namespace a::b`)."""
    body = container.child_by_field_name("body") if container.type in CONTAINERS else container
    if body is None:
        return
    for child in body.named_children:
        yield from _member(child)


def _member(child: tree_sitter.Node) -> Iterator[tuple[str, tuple[int, int], tree_sitter.Node]]:
    kind = child.type
    span = (child.start_byte, child.end_byte)
    if kind in _TRANSPARENT or (kind == "namespace_definition" and child.child_by_field_name("name") is None):
        inner = child.child_by_field_name("body") if kind in ("linkage_specification", "namespace_definition") \
            else None
        for grandchild in (inner.named_children if inner is not None else child.named_children):
            yield from _member(grandchild)
    elif kind in CONTAINERS:
        name = _container_name(child)
        if name is not None and child.child_by_field_name("body") is not None:
            yield name, span, child
    elif kind == "function_definition":
        name, _ = _declared_name(child.child_by_field_name("declarator"))
        if name is not None:
            yield name, span, child
    elif kind in ("field_declaration", "declaration"):
        # `struct x { ... } y;` defines a struct inside a declaration
        specifier = child.child_by_field_name("type")
        if specifier is not None and specifier.type in CONTAINERS and specifier.child_by_field_name("body"):
            name = _container_name(specifier)
            if name is not None:
                yield name, (specifier.start_byte, specifier.end_byte), specifier
        for declarator in child.children_by_field_name("declarator"):
            name, function = _declared_name(declarator)
            if name is not None and not function and (kind == "field_declaration" or _defines(declarator)):
                yield name, span, child
    elif kind == "enumerator":
        identifier = child.child_by_field_name("name")
        if identifier is not None:
            yield _text(identifier), span, child
    elif kind == "alias_declaration" or kind == "type_definition":
        identifier = child.child_by_field_name("name") or child.child_by_field_name("declarator")
        if identifier is not None and identifier.type.endswith("identifier"):
            yield _text(identifier), span, child


def _defines(declarator: tree_sitter.Node) -> bool:
    """Whether a declaration at namespace level defines a variable (it is initialized); `extern int x;` and a
    prototype do not."""
    return declarator.type == "init_declarator"


def definitions(root: tree_sitter.Node) -> Iterator[tuple[str, tuple[int, int]]]:
    """(qualified dotted name, byte range) of every definition in the file, outermost first."""
    return _python.definitions(root, members, CONTAINERS)


def resolve(root: tree_sitter.Node, symbol: str, found: list[tuple[str, tuple[int, int]]] | None = None
            ) -> list[tuple[int, int]]:
    """Byte ranges of every definition of `symbol` (dotted or with `::`), in file order (empty when none).
    `found` is `definitions(root)` when the caller has it already."""
    wanted = normalize(symbol)
    return sorted(rng for name, rng in (found if found is not None else definitions(root)) if name == wanted)


#: Nodes whose named children are statements (or declarations) one after another: a block, a file, a namespace's
#: or an `extern "C"` body, a class's member list, the statements after a `case` label, a preprocessor branch.
_STATEMENT_PARENTS = frozenset("""compound_statement translation_unit declaration_list field_declaration_list
    case_statement preproc_if preproc_ifdef preproc_else preproc_elif preproc_elifdef""".split())
#: Fields of those that are not statements: a `case`'s value, a preprocessor branch's condition or name and the
#: branch after it.
_NOT_STATEMENTS = frozenset({"value", "condition", "name", "alternative"})
#: Where a statement written without braces is a body of its own (`if (x) a = 1;`), a block of one statement:
#: the fields of the statements that have a body, and the nodes whose one statement is it (`else a = 1;`).
_BODIES = {"if_statement": "consequence", "while_statement": "body", "for_statement": "body",
           "for_range_loop": "body", "do_statement": "body"}
_WRAPPING = frozenset({"else_clause", "labeled_statement"})


def is_statement(node: tree_sitter.Node) -> bool:
    """Whether `node` is a statement as `statement_at` finds them."""
    parent = node.parent
    if parent is None or not node.is_named or node.type == "comment":
        return False
    if parent.type in _STATEMENT_PARENTS:
        return field_of(parent, node) not in _NOT_STATEMENTS
    if node.type == "compound_statement":
        return False  # a block's braces belong to the statement it is the body of
    if parent.type in _WRAPPING:
        return node.type != "statement_identifier"  # a label's name is no statement
    return parent.type in _BODIES and field_of(parent, node) == _BODIES[parent.type]


def field_of(parent: tree_sitter.Node, node: tree_sitter.Node) -> str | None:
    """The field `node` stands in of `parent` (`left`, `body`, ...), or None."""
    for i, child in enumerate(parent.children):
        if child.id == node.id:
            return parent.field_name_for_child(i)
    return None


def statement_at(root: tree_sitter.Node, byte: int) -> tree_sitter.Node | None:
    """The innermost statement holding `byte`: a node that stands directly in a block, a file, a namespace, a
    class's members, after a `case` label or in a preprocessor branch, or a body written without braces. None
    where there is none."""
    node = root.descendant_for_byte_range(byte, byte + 1)
    while node is not None and not is_statement(node):
        node = node.parent
    return node


def consecutive(first: tree_sitter.Node, second: tree_sitter.Node) -> bool:
    """Whether `second` is the statement right after `first` in one block, comments aside (a body without braces
    has none after it)."""
    if first.parent is None or first.parent.type not in _STATEMENT_PARENTS:
        return False
    following = first.next_named_sibling
    while following is not None and following.type == "comment":
        following = following.next_named_sibling
    return following is not None and following.id == second.id


#: What a fragment's `$NAME` may stand for whole, besides one token: an expression, a braced initializer, a type.
EXPRESSIONS = tuple("""identifier qualified_identifier template_function field_expression call_expression
    subscript_expression binary_expression unary_expression pointer_expression update_expression cast_expression
    sizeof_expression alignof_expression conditional_expression assignment_expression comma_expression
    parenthesized_expression new_expression delete_expression lambda_expression compound_literal_expression
    co_await_expression fold_expression initializer_list number_literal string_literal raw_string_literal
    concatenated_string char_literal user_defined_literal true false null this template_type
    primitive_type type_identifier sized_type_specifier""".split())


@functools.lru_cache(maxsize=1)
def _expression_query() -> tree_sitter.Query:
    return tree_sitter.Query(LANGUAGE, "[" + " ".join(f"({kind})" for kind in EXPRESSIONS) + "] @e")


def expression_spans(root: tree_sitter.Node) -> list[tuple[int, int]]:
    """(start byte, end byte) of every expression, braced initializer and type of the file (`EXPRESSIONS`) that
    the parser read without an error."""
    nodes = tree_sitter.QueryCursor(_expression_query()).captures(root).get("e", ())
    return [(n.start_byte, n.end_byte) for n in nodes if not n.has_error]


@functools.lru_cache(maxsize=1)
def _string_query() -> tree_sitter.Query:
    return tree_sitter.Query(LANGUAGE, "[(string_literal) (raw_string_literal) (concatenated_string)] @s")


def string_literals(root: tree_sitter.Node, start: int, end: int, data: bytes | None = None
                    ) -> Iterator[tuple[tree_sitter.Node, str]]:
    """(node, value) of each string literal within the byte range, in file order: adjacent literals (`"a" "b"`)
    joined, escapes resolved, a raw string's text as written; a format macro among them (`parse`) is its name,
    read from the file's own `data`."""
    cursor = tree_sitter.QueryCursor(_string_query())
    cursor.set_byte_range(start, end)
    for node in sorted(cursor.captures(root).get("s", ()), key=lambda n: (n.start_byte, n.end_byte)):
        if node.start_byte < start or node.end_byte > end:
            continue
        if node.type != "concatenated_string" and node.parent is not None \
                and node.parent.type == "concatenated_string":
            continue
        pieces = node.named_children if node.type == "concatenated_string" else [node]
        yield node, "".join(_piece(piece, data) for piece in pieces if piece.type.endswith("string_literal"))


def _piece(node: tree_sitter.Node, data: bytes | None) -> str:
    if data is not None and data[node.start_byte:node.end_byte] != node.text:  # a format macro `parse` masked
        return data[node.start_byte:node.end_byte].decode("utf-8", "replace")
    return string_value(node)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"', "?": "?", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v"}


def string_value(node: tree_sitter.Node) -> str:
    """The value of one string literal: a raw string's content as written; otherwise its content with the
    common escapes resolved (`\\n`, `\\"`, `\\\\`; another escape is kept as written)."""
    if node.type == "raw_string_literal":
        content = next((c for c in node.named_children if c.type == "raw_string_content"), None)
        return _text(content) if content is not None else ""
    parts = []
    for child in node.named_children:
        if child.type == "string_content":
            parts.append(_text(child))
        elif child.type == "escape_sequence":
            text = _text(child)
            parts.append(_ESCAPES.get(text[1:], text))
    return "".join(parts)
