"""The release surface read from C++ source (llama.cpp's llama-server) with tree-sitter-cpp: flags, environment
variables, metrics and request fields, each with its default as the code writes it and the file and line that
define it. Like `extract` for Python: nothing is compiled or run, and a default the code computes (an enumerator,
a call, something decided at run time) is `computed`, shown as written, never guessed.

What is read, by kind (the files are the engine registry's `surface` patterns):

- flags: the `add_opt(common_arg(...))` calls of `common_params_parser_init` (`llama_arg` and
  `gpt_params_parser_init` in 0.3.0) that the server keeps: those whose `.set_examples({...})` holds
  LLAMA_EXAMPLE_SERVER or LLAMA_EXAMPLE_COMMON, or that have none (an option's examples default to COMMON), and
  whose `.set_excludes({...})` does not name the server; an option declared under `if (ex == ...)` counts where
  that condition holds for the server (and where it is not about `ex`, such as `#ifdef GGML_USE_RPC`, it counts).
  Spellings are the first initializer list (and the second, `{"--no-x"}`, of a negatable pair); the value hints
  are the string literals between them and the help; the help is the format text of `string_format(...)`. The
  default is that of the field the handler assigns (`params.n_ctx = value;` -> `int32_t n_ctx = 4096;` of
  `struct common_params`, `params.sampling.temp` through `struct common_params_sampling`), overridden by the
  assignments at the top of the function that run for the server (`if (ex == LLAMA_EXAMPLE_SERVER) {
  params.n_parallel = -1; }`, or unconditional ones). A setting the server assigns again after parsing (0.3.17
  `if (params.n_parallel < 0) { params.n_parallel = 4; params.kv_unified = true; }` in tools/server/server.cpp)
  has a computed default: the one written, and what the server does, where;
- environment variables: each server option's `.set_env("LLAMA_ARG_X")`, with the option's default (and, where
  `get_value_from_env` reads the `LLAMA_ARG_NO_X` of a negatable pair, that one), then literal
  `getenv("X")` reads in the other files;
- metrics: the names of the Prometheus emitter (`"# HELP llamacpp:" << name`): the `{"name", "x"}` tables of
  0.3.0-0.3.17 and the `std::vector<metric_item>` lists of later releases in the function that emits them, and
  names written whole in a `# TYPE` line, with the prefix the emitter writes;
- request fields: `json_value(data, "field", default)` in the completion request parser (`params_from_json_cmpl`)
  and `field_num("field", params.x)`-style declarations of the request schema (0.3.36 server-schema.cpp).

A flag's `detail` says what llama-server's parser takes after it (the handler's parameters decide): empty for a
switch, `value: N` for one value (the hint as written, spaces and all), `values: FNAME SCALE` for two, and for a
negatable pair the spellings that turn it off, `off: -nkvo, --no-kv-offload` (every spelling is among the
item's). A variable an option declares says which flag it sets (`sets --ctx-size`; `LLAMA_ARG_NO_X`:
`sets --no-x`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

import tree_sitter

from .._nodes import node_bytes, node_field
from ..code import _cpp
from .extract import MAX_DEFAULT, MAX_HELP, Default, _text, fold, prefiltered
from .extract import _strip_parens as _unwrap  # tree-sitter-cpp names the node as Python's grammar does
from .model import ENV, FLAG, METRIC, NO_VALUE, REQUEST, Item

#: The example whose options are the surface: llama-server's.
SERVER = "LLAMA_EXAMPLE_SERVER"
#: The example an option belongs to when it names none (`std::set<enum llama_example> examples =
#: {LLAMA_EXAMPLE_COMMON};` in common_arg); every example inherits its options.
COMMON = "LLAMA_EXAMPLE_COMMON"
#: The functions that declare the options (0.3.0: gpt_params_parser_init).
_PARSER_INIT = re.compile(r"(common|gpt)_params_parser_init")
#: The option constructors (0.3.0: llama_arg).
_OPTION = ("common_arg", "llama_arg")
#: Calls whose first argument is a help text's format (`string_format("... (default: %d)", params.n_ctx)`).
_FORMATTERS = ("string_format", "format")
#: The calls that read an environment variable by a literal name; a second literal argument is its default
#: (the server's own `getenv(name, default)` helper).
_GETENV = ("getenv", "std::getenv", "secure_getenv", "_wgetenv")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_METRIC_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_METRIC_TYPES = ("counter", "gauge", "histogram", "summary")
#: The request parsers' reads: `json_value(data, "name", default)`; the schema's `field_num("name", target)`.
_JSON_VALUE = "json_value"
_SCHEMA_FIELD = re.compile(r"field_[a-z]+")
#: Where a completion request's fields are read: 0.3.0 server_context::launch_slot_with_task, then
#: server_task::params_from_json_cmpl, then (0.3.36) server_schema::make_llama_cmpl_schema.
_REQUEST_FUNCTIONS = re.compile(r"launch_slot_with_task|params_from_json_cmpl|make_\w*_schema")
#: Containers whose default-constructed value is empty: a field of one with no initializer holds that.
_EMPTY_LISTS = ("vector", "set", "unordered_set", "list", "deque")
_EMPTY_MAPS = ("map", "unordered_map")
#: A help text that says the option is deprecated or gone (`... (DEPRECATED)`, "the argument has been removed").
_DEPRECATED = re.compile(r"(?i)^\[?deprecated\b|\(deprecated\)|has been removed")
_NUMBER = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)([uUlLfF]*)")

_NOT_LITERAL = object()


# --- reading nodes --------------------------------------------------------------------------------------------

def _string(node: tree_sitter.Node | None, data: bytes) -> str | None:
    """A string literal's value (adjacent literals joined, escapes resolved, a raw string as written; a format
    macro between literals, which `_cpp.parse` reads as a literal, is its name); None for anything else."""
    if node is None:
        return None
    node = _unwrap(node)
    if node.type == "concatenated_string":
        pieces = [c for c in node.named_children if c.type.endswith("string_literal")]
    elif node.type.endswith("string_literal"):
        pieces = [node]
    else:
        return None
    out = []
    for piece in pieces:
        original = data[piece.start_byte:piece.end_byte]
        out.append(original.decode("utf-8", "replace") if original != piece.text else _cpp.string_value(piece))
    return "".join(out)


def _number(text: str) -> object:
    """The value of a C++ number literal (`4096`, `0.80f`, `1e-5`, `0x0A00`, `1'000`), else _NOT_LITERAL."""
    match = _NUMBER.fullmatch(text.replace("'", ""))
    if match is None or len(text) > 64:
        return _NOT_LITERAL
    body, suffix = match.group(0)[:len(match.group(0)) - len(match.group(4))], match.group(4).lower()
    try:
        if body.lstrip("+-").lower().startswith("0x"):
            return int(body, 16) if "f" not in suffix else _NOT_LITERAL
        if "." in body or "e" in body.lower() or "f" in suffix:
            value = float(body)
            return value if value == value and abs(value) != float("inf") else _NOT_LITERAL
        return int(body, 10)
    except ValueError:
        return _NOT_LITERAL


def literal(node: tree_sitter.Node | None, data: bytes) -> object:
    """The value of a literal expression (a JSON value: a number, a bool, nullptr as None, a string, a list of
    them), else _NOT_LITERAL. An enumerator or a macro is not a literal here: what it stands for is elsewhere."""
    if node is None:
        return _NOT_LITERAL
    node = _unwrap(node)
    kind = node.type
    if kind == "number_literal":
        return _number(node_bytes(node).decode("ascii", "replace"))
    if kind in ("true", "false"):
        return kind == "true"
    if kind == "null":
        return None
    if kind == "unary_expression" and node.child_count == 2 and node.children[0].type in ("-", "+"):
        value = literal(node.children[1], data)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if node.children[0].type == "-" else value
        return _NOT_LITERAL
    value = _string(node, data)
    if value is not None:
        return value
    if kind == "initializer_list":
        values = [literal(c, data) for c in node.named_children if c.type != "comment"]
        return _NOT_LITERAL if any(v is _NOT_LITERAL for v in values) else values
    return _NOT_LITERAL


def _default_of(node: tree_sitter.Node, data: bytes, scalar: bool = False) -> Default:
    """The default an initializer or an assigned expression stands for: its value when it is a literal, else the
    expression as written, computed. `scalar`: `{true}` initializes a scalar, so it is `true`, not a list."""
    node = _unwrap(node)
    if scalar and node.type == "initializer_list" and node.named_child_count == 1:
        node = node.named_children[0]
    text = _text(node)
    value = literal(node, data)
    if value is _NOT_LITERAL or len(text) > MAX_DEFAULT:
        return Default(fold(text, MAX_DEFAULT))
    return Default(text, value)


def _chain(node: tree_sitter.Node | None, root: str) -> list[str] | None:
    """`root.a.b` (a field expression on the identifier `root`): ["a", "b"]; None for anything else."""
    parts: list[str] = []
    while node is not None and node.type == "field_expression":
        operator = node.child_by_field_name("operator")
        name = node.child_by_field_name("field")
        if operator is None or operator.type != "." or name is None:
            return None
        parts.append(node_bytes(name).decode())
        node = node.child_by_field_name("argument")
    if node is None or node.type != "identifier" or node_bytes(node).decode() != root or not parts:
        return None
    return parts[::-1]


@functools.cache
def _query(kinds: tuple[str, ...]) -> tree_sitter.Query:
    return tree_sitter.Query(_cpp.LANGUAGE, "[" + " ".join(f"({k})" for k in kinds) + "] @n")


def _nodes(root: tree_sitter.Node, *kinds: str) -> list[tree_sitter.Node]:
    """The nodes of these types under `root` (itself included), in source order, found by tree-sitter."""
    cursor = tree_sitter.QueryCursor(_query(kinds))
    cursor.set_byte_range(root.start_byte, root.end_byte)
    found = cursor.captures(root).get("n", [])
    return sorted((n for n in found if root.start_byte <= n.start_byte and n.end_byte <= root.end_byte),
                  key=lambda n: (n.start_byte, -n.end_byte))


def _callee(call: tree_sitter.Node) -> str:
    function = call.child_by_field_name("function")
    return "".join(_text(function).split()) if function is not None else ""


def _arguments(call: tree_sitter.Node) -> list[tree_sitter.Node]:
    arguments = call.child_by_field_name("arguments")
    return [c for c in arguments.named_children if c.type != "comment"] if arguments is not None else []


def _calls(root: tree_sitter.Node, names: Iterable[str]) -> Iterator[tree_sitter.Node]:
    """The calls under `root` of these callees (as written, `std::getenv`, or by their last name), in order."""
    wanted = set(names)
    for call in _nodes(root, "call_expression"):
        callee = _callee(call)
        if callee in wanted or callee.rsplit("::", 1)[-1] in wanted:
            yield call


def _line(node: tree_sitter.Node) -> int:
    return node.start_point[0] + 1


def _enclosing(node: tree_sitter.Node, *kinds: str) -> tree_sitter.Node | None:
    current = node.parent
    while current is not None and current.type not in kinds:
        current = current.parent
    return current


def _function_name(node: tree_sitter.Node) -> str:
    name, _ = _cpp._declared_name(node.child_by_field_name("declarator"))
    return name or ""


# --- the structs that hold the defaults -------------------------------------------------------------------------

@dataclass
class _Field:
    name: str
    type_name: str  # the type's own name (`common_params_sampling`, `string`, `vector`, `int32_t`)
    scalar: bool  # a primitive type, not an array
    array: bool  # `float tensor_split[128] = {0};`: its initializer is no list of its values
    initializer: tree_sitter.Node | None
    path: str
    line: int
    data: bytes

    def default(self, owner: str) -> Default:
        """The field's default member initializer as written; with none, the empty value a string or container
        is constructed with; a struct, computed from its own fields (`common_grammar{}`); a scalar without one is
        not zeroed: its declaration, computed."""
        origin = f"{owner}.{self.name}"
        if self.initializer is not None:
            found = _default_of(self.initializer, self.data, self.scalar)
            value = NO_VALUE if self.array else found.value
            return Default(found.text, value, origin, self.path, self.line)
        if self.type_name == "string":
            return Default('""', "", origin, self.path, self.line)
        if self.type_name in _EMPTY_LISTS:
            return Default("{}", [], origin, self.path, self.line)
        if self.type_name in _EMPTY_MAPS:
            return Default("{}", {}, origin, self.path, self.line)
        if not self.scalar and not self.array:  # a struct: constructed with its own fields' defaults
            return Default(f"{self.type_name}{{}}", NO_VALUE, origin, self.path, self.line)
        return Default(f"{self.type_name} {self.name} (no initializer)", NO_VALUE, origin, self.path, self.line)


def _type_name(node: tree_sitter.Node | None) -> str:
    """The name of a declared type: `struct x` -> x, `std::vector<int>` -> vector, `int32_t` -> int32_t."""
    while node is not None:
        if node.type in ("struct_specifier", "class_specifier", "enum_specifier", "union_specifier"):
            node = node.child_by_field_name("name")
        elif node.type == "qualified_identifier":
            node = node.child_by_field_name("name")
        elif node.type == "template_type":
            node = node.child_by_field_name("name")
        else:
            return node_bytes(node).decode("utf-8", "replace")
    return ""


class _Structs:
    """The structs of the files read, by name: their fields with their default member initializers."""

    def __init__(self, trees: dict[str, tuple[tree_sitter.Tree, bytes]]) -> None:
        self.fields: dict[str, dict[str, _Field]] = {}
        for path in sorted(trees):
            tree, data = trees[path]
            if b"struct" not in data:
                continue
            for node in _nodes(tree.root_node, "struct_specifier", "class_specifier"):
                name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
                if name is not None and body is not None and name.type == "type_identifier":
                    self.fields.setdefault(node_bytes(name).decode(), self._fields(body, path, data))

    @staticmethod
    def _fields(body: tree_sitter.Node, path: str, data: bytes) -> dict[str, _Field]:
        found: dict[str, _Field] = {}
        for declaration in body.named_children:
            if declaration.type != "field_declaration":
                continue
            type_node = declaration.child_by_field_name("type")
            type_name = _type_name(type_node)
            declarator = None
            for index, child in enumerate(declaration.children):
                role = declaration.field_name_for_child(index)
                if role == "declarator":
                    if declarator is not None:
                        found.setdefault(*_field(declarator, type_node, type_name, None, path, data))
                    declarator = child
                elif role == "default_value" and declarator is not None:
                    found.setdefault(*_field(declarator, type_node, type_name, child, path, data))
                    declarator = None
            if declarator is not None:
                found.setdefault(*_field(declarator, type_node, type_name, None, path, data))
        return {k: v for k, v in found.items() if k}

    def default(self, struct: str, chain: list[str]) -> Default | None:
        """The default of `struct.a.b...` (through the fields' struct types), or None when a link is not found."""
        fields = self.fields.get(struct)
        owner = struct
        for index, name in enumerate(chain):
            if fields is None or name not in fields:
                return None
            found = fields[name]
            if index == len(chain) - 1:
                return found.default(owner)
            owner, fields = found.type_name, self.fields.get(found.type_name)
        return None


def _field(declarator: tree_sitter.Node, type_node, type_name: str, initializer, path: str, data: bytes
           ) -> tuple[str, _Field]:
    name, function = _cpp._declared_name(declarator)
    if name is None or function:
        return "", None  # type: ignore[return-value]
    array = declarator.type == "array_declarator"
    scalar = type_node is not None and type_node.type in ("primitive_type", "sized_type_specifier") and not array
    return name, _Field(name, type_name, scalar, array, initializer, path, _line(declarator), data)


# --- conditions on the example ----------------------------------------------------------------------------------

def _for_server(node: tree_sitter.Node | None, ex: str) -> bool | None:
    """Whether a condition on the example (`ex == LLAMA_EXAMPLE_SERVER`, `!=`, `!`, `&&`, `||`) holds for the
    server; None when it is about something else too (`llama_supports_rpc()`): then it may hold."""
    if node is None:
        return None
    node = _unwrap(node)
    if node.type == "condition_clause":
        inner = node.child_by_field_name("value")
        return _for_server(inner, ex) if inner is not None else None
    if node.type == "unary_expression" and node.children and node.children[0].type == "!":
        found = _for_server(node.child_by_field_name("argument"), ex)
        return None if found is None else not found
    if node.type != "binary_expression":
        return None
    operator = node.child_by_field_name("operator")
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if operator is None or left is None or right is None:
        return None
    if operator.type in ("==", "!="):
        names = {_text(left), _text(right)}
        if ex not in names or len(names) != 2:
            return None
        (other,) = names - {ex}
        if not other.startswith("LLAMA_EXAMPLE_"):
            return None
        return (other == SERVER) == (operator.type == "==")
    if operator.type in ("&&", "||"):
        a, b = _for_server(left, ex), _for_server(right, ex)
        if operator.type == "&&":
            return False if a is False or b is False else (True if a and b else None)
        return True if a is True or b is True else (False if a is False and b is False else None)
    return None


def _runs_for_server(node: tree_sitter.Node, scope: tree_sitter.Node, ex: str) -> bool | None:
    """Whether `node` (inside `scope`) runs for the server: False when an `if` around it cannot hold for the
    server, None when one may or may not (it is about something else), True otherwise."""
    answer: bool | None = True
    child, current = node, node.parent
    while current is not None and current != scope:
        if current.type == "if_statement":
            condition = _for_server(current.child_by_field_name("condition"), ex)
            in_else = child.type == "else_clause" or child == current.child_by_field_name("alternative")
            if condition is not None and condition == in_else:
                return False
            if condition is None:
                answer = None
        child, current = current, current.parent
    return answer


# --- help texts -------------------------------------------------------------------------------------------------

def _help(node: tree_sitter.Node | None, data: bytes, ex: str) -> str:
    """An option's help: a string; the format of `string_format("...", ...)` as written; the branch of
    `ex == X ? "a" : "b"` the server takes; else the string parts of the expression that builds it."""
    if node is None:
        return ""
    node = _unwrap(node)
    value = _string(node, data)
    if value is not None:
        return fold(value.replace("%%", "%"), MAX_HELP)
    if node.type == "call_expression" and _callee(node).rsplit("::", 1)[-1] in _FORMATTERS:
        arguments = _arguments(node)
        return _help(arguments[0], data, ex) if arguments else ""
    if node.type == "conditional_expression":
        condition = _for_server(node.child_by_field_name("condition"), ex)
        if condition is not None:
            return _help(node.child_by_field_name("consequence" if condition else "alternative"), data, ex)
    parts = [_string(n, data) for n in _nodes(node, "string_literal", "raw_string_literal", "concatenated_string")
             if n.parent is None or n.parent.type != "concatenated_string"]
    return fold(" ".join(p for p in parts if p).replace("%%", "%"), MAX_HELP)


# --- options ----------------------------------------------------------------------------------------------------

@dataclass
class _Option:
    """One option the server keeps, as declared."""

    spellings: list[str]
    negatives: list[str]
    hints: list[str]
    help: str
    handler: _Handler
    env: str | None
    env_line: int
    deprecated: bool
    path: str
    line: int


@dataclass
class _Parser:
    """`common_params_parser_init` of one file: the options the server keeps, and the defaults it sets."""

    path: str
    struct: str  # the params struct (`common_params`, `gpt_params`)
    params: str  # the name of its parameter (`params`)
    ex: str  # the name of the example parameter (`ex`)
    options: list[_Option] = field(default_factory=list)
    overrides: dict[tuple[str, ...], Default] = field(default_factory=dict)
    negative_env: tuple[str, str] | None = None  # ("LLAMA_ARG_", "LLAMA_ARG_NO_"): a pair's variable turned off
    example_lists: dict[str, set[str]] = field(default_factory=dict)  # `mmproj_examples` -> its examples


def _parameters(function: tree_sitter.Node) -> list[tuple[str, str]]:
    """(type, name) of each parameter of a function definition or a lambda, as written (name "" when none)."""
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in ("function_declarator", "abstract_function_declarator"):
        declarator = declarator.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    found = []
    for parameter in parameters.named_children if parameters is not None else ():
        if parameter.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        name, _ = _cpp._declared_name(parameter.child_by_field_name("declarator"))
        found.append((_type_name(parameter.child_by_field_name("type")), name or ""))
    return found


def _parsers(path: str, tree: tree_sitter.Tree, data: bytes) -> list[_Parser]:
    found = []
    for function in _nodes(tree.root_node, "function_definition"):
        if not _PARSER_INIT.fullmatch(_function_name(function).rsplit(".", 1)[-1]):
            continue
        parameters = _parameters(function)
        struct = next((t for t, _ in parameters if t.endswith("_params")), "")
        params = next((n for t, n in parameters if t == struct), "params")
        ex = next((n for t, n in parameters if t == "llama_example"), "ex")
        parser = _Parser(path, struct, params, ex, example_lists=_example_lists(tree.root_node))
        body = function.child_by_field_name("body")
        if body is None:
            continue
        _read_overrides(parser, body, data)
        for call in _calls(body, ["add_opt"]):
            if _runs_for_server(call, body, ex) is False:
                continue
            option = _option(call, parser, data)
            if option is not None:
                parser.options.append(option)
        parser.negative_env = _negative_env(tree.root_node, data)
        found.append(parser)
    return found


def _read_overrides(parser: _Parser, body: tree_sitter.Node, data: bytes) -> None:
    """The defaults the function sets before it declares the options: the assignments to `params.x` in its own
    statements (not in an option's handler) that run for the server. One whose `if` is about something else
    makes the default computed."""
    for statement in body.named_children:
        if statement.type not in ("expression_statement", "if_statement"):
            continue
        for assignment in _nodes(statement, "assignment_expression"):
            if _enclosing(assignment, "lambda_expression") is not None:
                continue
            target = _chain(assignment.child_by_field_name("left"), parser.params)
            operator = assignment.child_by_field_name("operator")
            right = assignment.child_by_field_name("right")
            if target is None or right is None or operator is None or operator.type != "=":
                continue
            runs = _runs_for_server(assignment, body, parser.ex)
            if runs is False:
                continue
            found = _default_of(right, data)
            if runs is None:  # under a condition that is not about the example: it may or may not run
                found = Default(fold(f"{_text(assignment)} (under a condition)", MAX_DEFAULT))
            parser.overrides[tuple(target)] = Default(found.text, found.value, "", parser.path, _line(assignment))


def _negative_env(root: tree_sitter.Node, data: bytes) -> tuple[str, str] | None:
    """`string_replace_all(neg_env, "LLAMA_ARG_", "LLAMA_ARG_NO_")` in `get_value_from_env`: a negatable pair's
    variable is also read with that prefix, and turns the pair off."""
    for function in _nodes(root, "function_definition"):
        if _function_name(function).rsplit(".", 1)[-1] != "get_value_from_env":
            continue
        for call in _calls(function, ["string_replace_all"]):
            arguments = _arguments(call)
            if len(arguments) == 3:
                old, new = _string(arguments[1], data), _string(arguments[2], data)
                if old and new:
                    return old, new
    return None


def _setters(node: tree_sitter.Node) -> tuple[tree_sitter.Node | None, dict[str, tuple[tree_sitter.Node, list]]]:
    """`common_arg(...).set_env(...).set_examples(...)`: (the constructor call, {setter: (its call, arguments)})."""
    setters: dict[str, tuple[tree_sitter.Node, list]] = {}
    node = _unwrap(node)
    while node.type == "call_expression":
        function = node.child_by_field_name("function")
        if function is None:
            return None, setters
        if function.type == "field_expression":
            name = function.child_by_field_name("field")
            if name is not None:
                setters.setdefault(node_bytes(name).decode(), (node, _arguments(node)))
            inner = function.child_by_field_name("argument")
            if inner is None:
                return None, setters
            node = _unwrap(inner)
            continue
        if _callee(node) in _OPTION:
            return node, setters
        return None, setters
    return None, setters


def _examples(arguments: list, named: dict[str, set[str]]) -> set[str]:
    """The examples of `.set_examples({...})`: the identifiers written, a list declared at file level
    (`.set_examples(mmproj_examples)`) by its own."""
    names: set[str] = set()
    for argument in arguments:
        for node in _nodes(argument, "identifier"):
            names |= named.get(node_bytes(node).decode(), {node_bytes(node).decode()})
    return names


def _example_lists(root: tree_sitter.Node) -> dict[str, set[str]]:
    """`static std::initializer_list<enum llama_example> mmproj_examples = {LLAMA_EXAMPLE_MTMD, ...};` at file
    level: name -> the examples it lists."""
    found = {}
    for declaration in root.named_children:
        if declaration.type != "declaration":
            continue
        for declarator in declaration.children_by_field_name("declarator"):
            value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
            name, _ = _cpp._declared_name(declarator)
            if name and value is not None and value.type == "initializer_list":
                found[name] = {node_bytes(c).decode() for c in value.named_children if c.type == "identifier"}
    return found


def _option(call: tree_sitter.Node, parser: _Parser, data: bytes) -> _Option | None:
    arguments = _arguments(call)
    if len(arguments) != 1:
        return None
    constructor, setters = _setters(arguments[0])
    if constructor is None:
        return None
    if "set_examples" in setters:
        examples = _examples(setters["set_examples"][1], parser.example_lists)
        if SERVER not in examples and COMMON not in examples:
            return None
    if "set_excludes" in setters and SERVER in _examples(setters["set_excludes"][1], parser.example_lists):
        return None
    if "set_preset_only" in setters:
        return None  # read from a preset file, never from the command line
    parts = _arguments(constructor)
    lists = []
    while parts and parts[0].type == "initializer_list":
        lists.append([_string(c, data) for c in parts.pop(0).named_children if c.type != "comment"])
    if not lists or not lists[0] or any(s is None for spellings in lists for s in spellings) or len(parts) < 2:
        return None
    handler, help_node = parts[-1], parts[-2]
    hints = [_string(p, data) or _text(p) for p in parts[:-2]]
    spellings, negatives = [s for s in lists[0] if s], [s for s in (lists[1] if len(lists) > 1 else []) if s]
    handled = _handler(handler, len(hints), bool(negatives))
    env, env_line = None, 0
    if "set_env" in setters:
        env_call, env_arguments = setters["set_env"]
        env = _string(env_arguments[0], data) if env_arguments else None
        env_line = _line(node_field(node_field(env_call, "function"), "field"))
    help_text = _help(help_node, data, parser.ex)
    deprecated = handled.removed or _DEPRECATED.search(help_text) is not None
    return _Option(spellings, negatives, hints, help_text, handled, env, env_line, deprecated, parser.path,
                   _line(call))


#: Calls on a field that fill or empty it (`params.api_keys.push_back(value)`): a value handler that assigns
#: nothing sets that field.
_FILLERS = ("push_back", "emplace_back", "insert", "emplace", "clear", "assign", "append", "push_front")


@dataclass(frozen=True)
class _Handler:
    """What an option's handler lambda does, as far as the default needs it."""

    values: int  # words that follow the flag: 0 (a switch, a pair), 1 or 2
    target: list[str] | None = None  # the params field it sets: ["sampling", "temp"]
    negated: bool = False  # a pair's `params.no_perf = !value;`: the flag is the field negated
    switch: bool = False  # a switch whose handler sets no bool field: not given, it is off
    removed: bool = False  # it only says the option was removed (`arg_removed(...)`)


def _handler(node: tree_sitter.Node, hints: int, pair: bool) -> _Handler:
    """How many words follow the flag (the handler's parameters: `(params)` a switch, `(params, bool)` a pair,
    `(params, int)` or `(params, const std::string &)` one, three parameters two), and the field it sets:

    - a switch: the first field it assigns a bool (`params.endpoint_metrics = true;`), whose default is the
      switch's (as argparse's store_true and store_false have their dest's); with none, it is off when not given;
    - a pair: the field it assigns the value (`= value`) or its negation (`= !value`);
    - a value: the first field assigned from the value (`params.n_ctx = value;`, `= std::stof(value)`), else
      one under an `if` on it (`if (is_truthy(value)) { params.fit_params = true; }`), else the first field it fills
      (`params.api_keys.push_back(value);`); the handler's locals stand for the value (`std::string arg_next =
      value;`, `params.speculative.synth_rates = std::move(rates);`). An assignment that does not depend on the value
      (`params.cpuparams.mask_valid = true;` of `--cpu-mask`) is not the flag's field."""
    node = _unwrap(node)
    if node.type != "lambda_expression":
        return _Handler(0 if pair else min(hints, 2))
    parameters = _parameters(node)
    values = 0 if len(parameters) <= 1 or pair else (2 if len(parameters) >= 3 else 1)
    params = parameters[0][1] if parameters else ""
    value_names = {name for _, name in parameters[1:] if name}
    body = node.child_by_field_name("body")
    switch = values == 0 and not pair
    if body is None or not params:  # `[](common_params &) { ... exit(0); }`: it sets nothing
        return _Handler(values, switch=switch)
    removed = any(True for _ in _calls(body, ["arg_removed"]))

    def uses_value(expression: tree_sitter.Node | None) -> bool:
        return expression is not None and any(node_bytes(n).decode() in value_names
                                              for n in _nodes(expression, "identifier"))

    for declaration in _nodes(body, "declaration", "for_range_loop"):  # the handler's locals: made from the value
        for declarator in declaration.children_by_field_name("declarator"):
            name, _ = _cpp._declared_name(declarator)
            if name:
                value_names.add(name)
    tested = None  # a value's first field assigned under a test of the value, when none is assigned from it
    for assignment in _nodes(body, "assignment_expression"):
        operator = assignment.child_by_field_name("operator")
        target = _chain(assignment.child_by_field_name("left"), params)
        right = assignment.child_by_field_name("right")
        if target is None or right is None or operator is None or operator.type != "=":
            continue
        right = _unwrap(right)
        if switch:
            if right.type in ("true", "false"):
                return _Handler(0, target, removed=removed)
        elif pair:
            negated = right.type == "unary_expression" and right.children[0].type == "!"
            operand = _unwrap(node_field(right, "argument")) if negated else right
            if operand is not None and operand.type == "identifier" and node_bytes(operand).decode() in value_names:
                return _Handler(0, target, negated, removed=removed)
        elif uses_value(right):
            return _Handler(values, target, removed=removed)
        elif tested is None and _under_value_test(assignment, body, uses_value):
            tested = target
    if tested is not None:
        return _Handler(values, tested, removed=removed)
    if values and not pair:
        for call in _nodes(body, "call_expression"):
            function = call.child_by_field_name("function")
            if function is None or function.type != "field_expression":
                continue
            method = function.child_by_field_name("field")
            target = _chain(function.child_by_field_name("argument"), params)
            if target is not None and method is not None and node_bytes(method).decode() in _FILLERS:
                return _Handler(values, target, removed=removed)
    return _Handler(values, switch=switch, removed=removed)


def _under_value_test(node: tree_sitter.Node, scope: tree_sitter.Node, uses_value) -> bool:
    """Whether an `if`, `switch` or `?:` between `node` and `scope` tests the handler's value."""
    current = node.parent
    while current is not None and current != scope:
        if current.type in ("if_statement", "switch_statement", "conditional_expression") \
                and uses_value(current.child_by_field_name("condition")):
            return True
        current = current.parent
    return False


def _flag_default(option: _Option, parser: _Parser, structs: _Structs) -> Default:
    """The default of the option's field (the server's override first), negated for a pair that assigns `!value`;
    a switch that sets no field is off; with no field, none; with one not found in the structs read, the field as
    written, computed."""
    handler = option.handler
    if handler.target is None:
        return Default("false", False) if handler.switch else Default(None)
    found = parser.overrides.get(tuple(handler.target))
    if found is None:
        found = structs.default(parser.struct, handler.target)
    if found is None:
        return Default(f"{parser.params}.{'.'.join(handler.target)}")
    if handler.negated:
        if isinstance(found.value, bool):
            return Default("true" if not found.value else "false", not found.value, found.origin, found.path,
                           found.line)
        return Default(fold(f"!({found.text})", MAX_DEFAULT), NO_VALUE, found.origin, found.path, found.line)
    return found


def _detail(option: _Option) -> str:
    """What follows the flag on a command line: nothing (a switch), `value: N`, `values: FNAME SCALE`; a pair
    says which spellings turn it off (`off: -nkvo, --no-kv-offload`)."""
    if option.negatives:
        return "off: " + ", ".join(option.negatives)
    if option.handler.values == 0:
        return ""
    return ("value: " if option.handler.values == 1 else "values: ") + " ".join(option.hints)


def _primary(spellings: list[str]) -> str:
    """The flag's name: its first long spelling (`--ctx-size` of `-c, --ctx-size`)."""
    return next((s for s in spellings if s.startswith("--")), spellings[0])


def _at_default(item: Item, default: Default) -> Item:
    if default.path and (default.path, default.line) != (item.path, item.line):
        return replace(item, default_path=default.path, default_line=default.line)
    return item


# --- what the server changes after parsing ---------------------------------------------------------------------

#: The calls that parse the command line (0.3.0: gpt_params_parse).
_PARSE = ("common_params_parse", "gpt_params_parse")


@dataclass(frozen=True)
class _Later:
    """An assignment the server makes to a setting after parsing (`if (params.n_parallel < 0) {
    params.n_parallel = 4; params.kv_unified = true; }`, 0.3.17 on): the setting's default is then not the one
    written, whatever it is."""

    text: str  # `params.kv_unified = true if params.n_parallel < 0`
    path: str
    line: int


def _after_parse(path: str, tree: tree_sitter.Tree, data: bytes) -> dict[tuple[str, ...], _Later]:
    """field -> the first assignment to it after `common_params_parse(argc, argv, params, LLAMA_EXAMPLE_SERVER)`
    in the function that calls it, and in the functions of the same file it passes `params` to (0.3.36 main calls
    `llama_server(params, argc, argv)`); not in lambdas (a route's handler runs per request)."""
    functions: dict[str, list[tree_sitter.Node]] = {}  # by name: overloads (0.3.36 has two llama_server)
    for function in _nodes(tree.root_node, "function_definition"):
        if function.child_by_field_name("body") is not None:
            functions.setdefault(_function_name(function).rsplit(".", 1)[-1], []).append(function)
    found: dict[tuple[str, ...], _Later] = {}
    for function in (f for overloads in functions.values() for f in overloads):
        body = node_field(function, "body")  # those with a body only (above)
        for call in _calls(body, _PARSE):
            arguments = _arguments(call)
            if len(arguments) < 4 or _text(arguments[3]) != SERVER or arguments[2].type != "identifier":
                continue
            params = node_bytes(arguments[2]).decode()
            _assignments(body, params, call.end_byte, path, found)
            for passed in _nodes(body, "call_expression"):
                given = _arguments(passed)
                positions = [i for i, a in enumerate(given) if _text(a) == params]
                if passed.start_byte < call.end_byte or not positions:
                    continue
                for callee in functions.get(_callee(passed), ()):
                    names = [name for _, name in _parameters(callee)]
                    if callee is not function and len(names) == len(given) and names[positions[0]]:
                        _assignments(node_field(callee, "body"), names[positions[0]], 0, path, found)
    return found


def _assignments(body: tree_sitter.Node, params: str, after: int, path: str,
                 found: dict[tuple[str, ...], _Later]) -> None:
    """The assignments to `params.x` in `body` from the byte `after` on (and the calls that fill a field,
    `params.model_alias.insert(name)`), each with the condition of the `if` around it."""
    for node in _nodes(body, "assignment_expression", "call_expression"):
        if node.start_byte < after or _enclosing(node, "lambda_expression"):
            continue
        if node.type == "assignment_expression":
            target = _chain(node.child_by_field_name("left"), params)
        else:
            function = node.child_by_field_name("function")
            method = function.child_by_field_name("field") if function is not None \
                and function.type == "field_expression" else None
            target = _chain(function.child_by_field_name("argument"), params) \
                if function is not None and method is not None and node_bytes(method).decode() in _FILLERS else None
        if target is None:
            continue
        text = _text(node)
        test = _enclosing(node, "if_statement")
        if test is not None and body.start_byte <= test.start_byte:
            condition = test.child_by_field_name("condition")
            text += f" if {_text(condition.child_by_field_name('value') or condition)}" if condition else ""
        found.setdefault(tuple(target), _Later(fold(text, MAX_DEFAULT), path, _line(node)))


def _changed_later(default: Default, later: _Later) -> Default:
    """A default the server may change after parsing: computed, saying how and where."""
    text = fold(f"{default.text} (after parsing: {later.text}, {later.path}:{later.line})", MAX_DEFAULT)
    return Default(text, NO_VALUE, default.origin, default.path, default.line)


def _flags_and_env(parsers: list[_Parser], structs: _Structs, later: dict[tuple[str, ...], _Later]
                   ) -> tuple[list[Item], list[Item]]:
    flags: list[Item] = []
    env: list[Item] = []
    for parser in parsers:
        for option in parser.options:
            default = _flag_default(option, parser, structs)
            target = option.handler.target
            if target is not None and tuple(target) in later and default.text is not None:
                default = _changed_later(default, later[tuple(target)])
            name = _primary(option.spellings)
            aliases = tuple(s for s in option.spellings + option.negatives if s != name)
            flag = _at_default(Item(FLAG, name, default.text, default.value, aliases, (), option.help,
                                    _detail(option), option.deprecated, option.path, option.line), default)
            flags.append(flag)
            if option.env is None or not _ENV_NAME.fullmatch(option.env):
                continue
            env.append(_at_default(Item(ENV, option.env, default.text, default.value, help=option.help,
                                        detail=f"sets {name}", path=option.path, line=option.env_line), default))
            if option.negatives and parser.negative_env and option.env.startswith(parser.negative_env[0]):
                old, new = parser.negative_env
                env.append(Item(ENV, new + option.env[len(old):], "unset", False, help=option.help,
                                detail=f"sets {_primary(option.negatives)}", path=option.path, line=option.env_line))
    return flags, env


# --- plain reads of the environment -----------------------------------------------------------------------------

def _getenv(path: str, tree: tree_sitter.Tree, data: bytes) -> list[Item]:
    found = []
    for call in _calls(tree.root_node, _GETENV):
        arguments = _arguments(call)
        name = _string(arguments[0], data) if arguments else None
        if name is None or not _ENV_NAME.fullmatch(name):
            continue
        default = _default_of(arguments[1], data) if len(arguments) > 1 else Default("nullptr", None)
        found.append(Item(ENV, name, default.text, default.value, detail=fold(_text(call), MAX_DEFAULT), path=path,
                          line=_line(call)))
    return found


# --- metrics ----------------------------------------------------------------------------------------------------

def _metrics(path: str, tree: tree_sitter.Tree, data: bytes) -> list[Item]:
    """The metrics of the emitters in the file: each literal that starts a `# HELP` line (`"# HELP llamacpp:"`)
    names the prefix; the names are read in the nearest function or lambda around it that holds a table."""
    found: list[Item] = []
    for node in _nodes(tree.root_node, "string_literal"):
        value = _string(node, data) or ""
        match = re.fullmatch(r"# HELP ([A-Za-z_][A-Za-z0-9_]*:)", value)
        if match is None:
            continue
        prefix = match.group(1)
        scope = _enclosing(node, "lambda_expression", "function_definition")
        while scope is not None:
            items = _metric_tables(scope, prefix, path, data)
            if items:
                found.extend(items)
                break
            scope = _enclosing(scope, "lambda_expression", "function_definition")
    helps, types = {}, []  # a metric written whole: `"# HELP llamacpp:x" " text\n"`, `"# TYPE llamacpp:x counter\n"`
    for node in _nodes(tree.root_node, "string_literal", "concatenated_string"):
        if node.type == "string_literal" and node.parent is not None and node.parent.type == "concatenated_string":
            continue
        value = _string(node, data) or ""
        described = re.fullmatch(r"# HELP ([A-Za-z_][A-Za-z0-9_]*:[A-Za-z0-9_]+) (.*?)\n?", value, re.S)
        if described is not None:
            helps[described.group(1)] = fold(described.group(2), MAX_HELP)
        typed = re.fullmatch(r"# TYPE ([A-Za-z_][A-Za-z0-9_]*:[A-Za-z0-9_]+) (\w+)\n?", value)
        if typed is not None and typed.group(2) in _METRIC_TYPES:
            types.append((typed.group(1), typed.group(2), _line(node)))
    for name, kind, line in types:
        found.append(Item(METRIC, name, help=helps.get(name, ""), detail=kind, path=path, line=line))
    return found


def _metric_tables(scope: tree_sitter.Node, prefix: str, path: str, data: bytes) -> list[Item]:
    """The metrics of `scope`: `{"name", "x"}` pairs of a JSON table under `{"counter", ...}` (help from the
    `{"help", "..."}` beside), and `{"x", "help", value}` items of a list that a call emits as a type
    (`add_items("counter", counters)`)."""
    found = []
    emitted = {}  # list name -> type, from `f("counter", counters)`
    for call in _nodes(scope, "call_expression"):
        arguments = _arguments(call)
        if len(arguments) == 2 and _string(arguments[0], data) in _METRIC_TYPES and arguments[1].type == "identifier":
            emitted[node_bytes(arguments[1]).decode()] = _string(arguments[0], data)
    for node in _nodes(scope, "initializer_list"):
        children = [c for c in node.named_children if c.type != "comment"]
        if len(children) == 2 and _string(children[0], data) == "name":
            name = _string(children[1], data)
            if name and _METRIC_NAME.fullmatch(name):
                found.append(Item(METRIC, prefix + name, help=_json_help(node, data), detail=_json_type(node, data),
                                  path=path, line=_line(children[1])))
        elif len(children) >= 2 and node.parent is not None and node.parent.type == "initializer_list":
            name, help_text = _string(children[0], data), _string(children[1], data)
            declaration = _enclosing(node, "init_declarator", "declaration")
            declared = declaration.child_by_field_name("declarator") if declaration is not None else None
            kind = emitted.get(node_bytes(declared).decode()) if declared is not None else None
            if name and help_text is not None and kind and _METRIC_NAME.fullmatch(name) \
                    and node.parent.parent is not None and node.parent.parent.type in ("init_declarator",
                                                                                      "declaration"):
                found.append(Item(METRIC, prefix + name, help=fold(help_text, MAX_HELP), detail=kind, path=path,
                                  line=_line(children[0])))
    return found


def _json_help(pair: tree_sitter.Node, data: bytes) -> str:
    """The `{"help", "..."}` beside a `{"name", "x"}` pair."""
    parent = pair.parent
    for sibling in parent.named_children if parent is not None else ():
        children = [c for c in sibling.named_children if c.type != "comment"]
        if sibling.type == "initializer_list" and len(children) == 2 and _string(children[0], data) == "help":
            return fold(_string(children[1], data) or "", MAX_HELP)
    return ""


def _json_type(pair: tree_sitter.Node, data: bytes) -> str:
    """The `{"counter", {...}}` a `{"name", "x"}` pair is in."""
    current = pair.parent
    while current is not None and current.type == "initializer_list":
        first = next((c for c in current.named_children if c.type != "comment"), None)
        kind = _string(first, data) if first is not None else None
        if kind in _METRIC_TYPES:
            return kind
        current = current.parent
    return ""


# --- request fields ---------------------------------------------------------------------------------------------

def _requests(path: str, tree: tree_sitter.Tree, data: bytes) -> list[Item]:
    """The fields a completion request may carry, in the functions that read them (`_REQUEST_FUNCTIONS`):
    `json_value(data, "temperature", defaults.sampling.temp)` (its default as written: a literal, or the server's
    setting, computed), and the schema's `new field_num("temperature", params.sampling.temp)` declarations of
    0.3.36 with their `->add_alias(...)` spellings and `->set_desc(...)` help (a nested field's are
    `stream_options.include_usage`; their default is the task's setting, computed)."""
    found = []
    for function in _nodes(tree.root_node, "function_definition"):
        if not _REQUEST_FUNCTIONS.fullmatch(_function_name(function).rsplit(".", 1)[-1]):
            continue
        for call in _nodes(function, "call_expression"):
            arguments = _arguments(call)
            if _callee(call).rsplit("::", 1)[-1] != _JSON_VALUE or len(arguments) != 3:
                continue
            key = _string(arguments[1], data)
            if key and _REQUEST_KEY.fullmatch(key):
                default = _default_of(arguments[2], data)
                found.append(Item(REQUEST, key, default.text, default.value, detail=_JSON_VALUE, path=path,
                                  line=_line(call)))
        for new in _nodes(function, "new_expression"):
            declared = _schema_field(new, data)
            if declared is None:
                continue
            kind, key, target = declared
            outer = _enclosing_schema_field(new, data)
            if outer is not None:
                key = f"{outer}.{key}"
            if not _REQUEST_KEY.fullmatch(key):
                continue
            default = _default_of(target, data) if target is not None else Default(None)
            aliases, help_text = _schema_setters(new, data)
            found.append(Item(REQUEST, key, default.text, default.value, tuple(aliases), help=help_text,
                              detail=kind, path=path, line=_line(new)))
    return found


_REQUEST_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _schema_field(new: tree_sitter.Node, data: bytes) -> tuple[str, str, tree_sitter.Node | None] | None:
    """`new field_num("n_predict", params.n_predict)`: ("field_num", "n_predict", the target), else None."""
    type_node = new.child_by_field_name("type")
    arguments = new.child_by_field_name("arguments")
    if type_node is None or arguments is None or not _SCHEMA_FIELD.fullmatch(_type_name(type_node)):
        return None
    values = [c for c in arguments.named_children if c.type != "comment"]
    key = _string(values[0], data) if values else None
    if key is None:
        return None
    return _type_name(type_node), key, values[1] if len(values) > 1 else None


def _calls_on(new: tree_sitter.Node) -> Iterator[tuple[str, list[tree_sitter.Node], tree_sitter.Node]]:
    """The `->method(args)` calls chained on a `new` expression: (method, arguments, call), innermost first."""
    node = new
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    while node.parent is not None and node.parent.type == "field_expression" \
            and node.parent.child_by_field_name("argument") == node:
        method = node.parent.child_by_field_name("field")
        call = node.parent.parent
        if method is None or call is None or call.type != "call_expression":
            return
        yield node_bytes(method).decode(), _arguments(call), call
        node = call


def _schema_setters(new: tree_sitter.Node, data: bytes) -> tuple[list[str], str]:
    aliases, help_text = [], ""
    for method, arguments, _ in _calls_on(new):
        value = _string(arguments[0], data) if arguments else None
        if method == "add_alias" and value:
            aliases.append(value)
        elif method == "set_desc" and value is not None:
            help_text = fold(value, MAX_HELP)
    return aliases, help_text


def _enclosing_schema_field(new: tree_sitter.Node, data: bytes) -> str | None:
    """The key of the `field_nested` whose `->add_subfield(...)` holds this field, else None."""
    current = new.parent
    while current is not None and current.type != "function_definition":
        if current.type == "argument_list" and current.parent is not None \
                and current.parent.type == "call_expression":
            function = current.parent.child_by_field_name("function")
            method = function.child_by_field_name("field") if function is not None and \
                function.type == "field_expression" else None
            if function is not None and method is not None and node_bytes(method).decode() == "add_subfield":
                receiver = _unwrap(node_field(function, "argument"))
                while receiver.type == "call_expression":  # ->add_subfield(a)->add_subfield(b)
                    inner = receiver.child_by_field_name("function")
                    if inner is None or inner.type != "field_expression":
                        break
                    receiver = _unwrap(node_field(inner, "argument"))
                if receiver.type == "new_expression":
                    declared = _schema_field(receiver, data)
                    if declared is not None:
                        return declared[1]
        current = current.parent
    return None


# --- the whole surface ------------------------------------------------------------------------------------------

def _options(read: dict[str, tuple[tree_sitter.Tree, bytes]]) -> tuple[list[Item], list[Item]]:
    """(the flags, the variables they declare) of the option declarations among the files read, with the
    defaults of their structs and what the server changes after parsing."""
    parsers = [p for path in sorted(read) if b"add_opt(" in read[path][1] for p in _parsers(path, *read[path])]
    if not parsers:
        return [], []
    later: dict[tuple[str, ...], _Later] = {}
    for path in sorted(read):
        if any(name.encode() in read[path][1] for name in _PARSE):
            for key, value in _after_parse(path, *read[path]).items():
                later.setdefault(key, value)
    return _flags_and_env(parsers, _Structs(read), later)


#: Bytes that a file must contain to be worth parsing for a kind.
PREFILTER = {FLAG: (b"add_opt(", b"struct ", b"_params_parse("),
             ENV: (b"getenv", b"set_env(", b"struct ", b"_params_parse("),
             METRIC: (b"# HELP ", b"# TYPE "), REQUEST: (b"json_value(", b"field_")}


def extract(files_by_kind: dict[str, dict[str, bytes]], env_primary: Iterable[str] = ()) -> list[Item]:
    """Every item of a release from its C++ files by kind (`{kind: {path: bytes}}`), sorted by kind and name; an
    item defined twice keeps its first definition (the options first, then files in path order; for variables,
    the `env_primary` files first)."""
    trees: dict[str, tuple[tree_sitter.Tree, bytes]] = {}

    def parsed(files: dict[str, bytes]) -> dict[str, tuple[tree_sitter.Tree, bytes]]:
        for path, data in files.items():
            if path not in trees:
                trees[path] = (_cpp.parse(data, path), data)
        return {p: trees[p] for p in files}

    items: list[Item] = []
    for kind, files in files_by_kind.items():
        wanted = prefiltered(files, kind, env_primary, PREFILTER)
        if not wanted:
            continue
        read = parsed(wanted)
        if kind in (FLAG, ENV):
            flags, declared = _options(read)
            items.extend(flags if kind == FLAG else declared)
            if kind == ENV:
                primary = set(env_primary)
                for path in sorted(read, key=lambda p: (p not in primary, p)):
                    items.extend(_getenv(path, *read[path]))
        elif kind == METRIC:
            for path in sorted(read):
                items.extend(_metrics(path, *read[path]))
        else:
            for path in sorted(read):
                items.extend(_requests(path, *read[path]))
    unique: dict[tuple[str, str], Item] = {}
    for item in items:
        unique.setdefault(item.key, item)
    return sorted(unique.values(), key=lambda i: (i.kind, i.name))


__all__ = ["extract", "literal"]
