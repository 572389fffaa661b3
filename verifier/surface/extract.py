"""The release surface read from Python source with tree-sitter: flags, environment variables, metrics and request
fields, each with its default as the code writes it and the file and line that define it. Nothing is imported or
run; a default the code computes is `computed`, shown as the expression it is computed from, never guessed.

What is read, by kind (the files are the engine registry's `surface` patterns):

- flags: every `add_argument("--x", ...)` call (option strings, `default=`, `action=`, `choices=`, `help=`,
  `deprecated=`), where `default=Cls.field` is followed to the field's default in the config classes of the
  same files; `**kwargs["field"]` with `kwargs = get_kwargs(Cls)` (vLLM) takes the field's default, its
  `Literal[...]` choices, and for a `bool` field the `--no-x` spelling; `for key, value in kwargs.items():
  add_argument(f"--{key...}", **value)` is every field of the class; `kwargs["field"]["default"] = ...` overrides
  a default; `add_cli_args_from_dataclass(parser, Cls)` (SGLang) is every `A[T, "help"]`/`A[T, Arg(...)]` field
  of the class and of the namespaces a module-level `collect_input_fields(LIST)` adds to it;
- environment variables: `os.getenv("X", d)`, `os.environ.get("X", d)`, `os.environ["X"]`, `"X" in os.environ`
  and the engines' helpers (`get_bool_env_var`, `get_int_env_var`, `env_with_choices`, ...), with the
  comments above a key of vLLM's `environment_variables` table as help; SGLang's `class Envs: X = EnvBool(d)`;
- metrics: calls of Gauge, Counter, Histogram, Summary (or `*_gauge_cls` and kin) with a literal name;
- request fields: the annotated fields of classes named `...Request` or `...ReqInput`, defaults from `= d` or
  `Field(default=d)`.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

import tree_sitter

from .._nodes import node_bytes
from ..code import _python
from .model import ENV, FLAG, METRIC, NO_VALUE, REQUEST, Item

#: The extractor's version: a release's stored surface is read again when it was extracted by another.
EXTRACTOR = 4
#: The longest default kept as written; a longer one is cut (and then not a literal).
MAX_DEFAULT = 200
#: The longest help text kept.
MAX_HELP = 240
#: How deep `default=Cls.field` is followed through other config classes.
MAX_HOPS = 6

_WS = re.compile(r"\s+")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_METRIC_CALL = re.compile(r"(?i)(gauge|counter|histogram|summary)(_cls)?")
_REQUEST_CLASS = re.compile(r".*(Request|ReqInput)")
#: Helpers that read an environment variable: name, default (the second argument or `default=`).
_ENV_READERS = {"getenv", "get", "get_bool_env_var", "get_int_env_var", "get_float_env_var", "get_str_env_var",
                "env_with_choices", "env_list_with_choices", "env_set_with_choices", "get_env_or_set_default",
                "_get_bool_env_var", "get_env_var"}
_ENV_READER_NAMES = tuple(sorted(_ENV_READERS))
_ENV_CLASSES = re.compile(r"Env(Bool|Int|Float|Str|Tuple|List|Field|Enum|Path|Json)?")


def fold(text: str, limit: int | None = None) -> str:
    folded = _WS.sub(" ", text).strip()
    if limit is not None and len(folded) > limit:
        folded = folded[:limit - 1].rstrip() + "…"
    return folded


def _text(node: tree_sitter.Node) -> str:
    return fold(node_bytes(node).decode("utf-8", "replace"))


def _strip_parens(node: tree_sitter.Node) -> tree_sitter.Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


_NOT_LITERAL = object()


def literal(node: tree_sitter.Node | None) -> object:
    """The value of a literal expression (JSON-like: None, bool, int, float, str, list, dict with string keys),
    else _NOT_LITERAL. f-strings and bytes are not literals here."""
    if node is None:
        return _NOT_LITERAL
    node = _strip_parens(node)
    kind = node.type
    if kind == "none":
        return None
    if kind == "true":
        return True
    if kind == "false":
        return False
    if kind in ("integer", "float"):
        text = node_bytes(node).decode("ascii", "replace")
        if len(text) > 64:
            return _NOT_LITERAL
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return _NOT_LITERAL
        return value if isinstance(value, (int, float)) and value == value and abs(value) != float("inf") \
            else _NOT_LITERAL
    if kind == "unary_operator" and node.child_count == 2 and node.children[0].type in ("-", "+"):
        value = literal(node.children[1])
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if node.children[0].type == "-" else value
        return _NOT_LITERAL
    if kind in ("string", "concatenated_string"):
        pieces = [node] if kind == "string" else [c for c in node.named_children if c.type == "string"]
        for piece in pieces:
            prefix = re.match(rb"[A-Za-z]*", node_bytes(piece)).group().lower()  # type: ignore[union-attr]  # matches any text
            if b"f" in prefix or b"b" in prefix or b"t" in prefix:
                return _NOT_LITERAL
        return "".join(_python.string_value(p) for p in pieces)
    if kind in ("list", "tuple", "set"):
        values = [literal(c) for c in node.named_children if c.type != "comment"]
        if any(v is _NOT_LITERAL for v in values):
            return _NOT_LITERAL
        return values
    if kind == "dictionary":
        found = {}
        for pair in node.named_children:
            if pair.type == "comment":
                continue
            if pair.type != "pair":
                return _NOT_LITERAL
            key, value = literal(pair.child_by_field_name("key")), literal(pair.child_by_field_name("value"))
            if not isinstance(key, str) or value is _NOT_LITERAL:
                return _NOT_LITERAL
            found[key] = value
        return found
    return _NOT_LITERAL


def _string(node: tree_sitter.Node | None) -> str | None:
    """A string literal's value, f-strings with their fields as written; None for anything else."""
    if node is None:
        return None
    node = _strip_parens(node)
    if node.type == "string":
        return _python.string_value(node)
    if node.type == "concatenated_string":
        return "".join(_python.string_value(c) for c in node.named_children if c.type == "string")
    return None


def _help(node: tree_sitter.Node | None) -> str:
    """Help text: a string, or the string parts of an expression that builds one (`"a" + "b"`, f-strings)."""
    if node is None:
        return ""
    value = _string(node)
    if value is not None:
        return fold(value.replace("%%", "%"), MAX_HELP)
    parts = [_python.string_value(n) for n in _walk(node) if n.type == "string"]
    return fold(" ".join(parts).replace("%%", "%"), MAX_HELP)


def _walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Every node under `node`, itself first, in source order (iteratively: no recursion on deep trees)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


@dataclass
class _Call:
    node: tree_sitter.Node
    name: str  # the callee's last identifier
    callee: str  # the callee as written
    positional: list[tree_sitter.Node]
    keywords: dict[str, tree_sitter.Node]
    splats: list[tree_sitter.Node]  # `**x`


def _call(node: tree_sitter.Node) -> _Call | None:
    if node.type != "call":
        return None
    function, arguments = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    if function is None or arguments is None or arguments.type != "argument_list":
        return None
    if function.type == "identifier":
        name = node_bytes(function).decode()
    elif function.type == "attribute":
        attribute = function.child_by_field_name("attribute")
        name = node_bytes(attribute).decode() if attribute is not None else ""
    else:
        name = ""
    positional, keywords, splats = [], {}, []
    for child in arguments.named_children:
        if child.type == "keyword_argument":
            key, value = child.child_by_field_name("name"), child.child_by_field_name("value")
            if key is not None and value is not None:
                keywords[node_bytes(key).decode()] = value
        elif child.type == "dictionary_splat":
            if child.named_child_count:
                splats.append(child.named_children[0])
        elif child.type not in ("comment", "list_splat"):
            positional.append(child)
    return _Call(node, name, _text(function), positional, keywords, splats)


@functools.cache
def _named_call_query(names: tuple[str, ...]) -> tree_sitter.Query:
    listed = " ".join(f'"{n}"' for n in names)
    return tree_sitter.Query(_python.LANGUAGE, f"""
        (call function: (identifier) @name (#any-of? @name {listed})) @call
        (call function: (attribute attribute: (identifier) @name) (#any-of? @name {listed})) @call""")


def _calls_named(root: tree_sitter.Node, names: tuple[str, ...]) -> Iterator[_Call]:
    """The calls of these callee names (the last part of a dotted one), in source order; the query's predicate
    picks them in tree-sitter, so the file's other calls never reach Python."""
    cursor = tree_sitter.QueryCursor(_named_call_query(names))
    for node in sorted(cursor.captures(root).get("call", []), key=lambda n: n.start_byte):
        found = _call(node)
        if found is not None:
            yield found


@functools.cache
def _query(kinds: tuple[str, ...]) -> tree_sitter.Query:
    return tree_sitter.Query(_python.LANGUAGE, "[" + " ".join(f"({k})" for k in kinds) + "] @n")


def _nodes(root: tree_sitter.Node, *kinds: str) -> list[tree_sitter.Node]:
    """The nodes of these types under `root`, in source order. A query finds them in tree-sitter's C code: a
    walk in Python over every node took 4.7 of 8.3 s on SGLang 0.5.23's files."""
    cursor = tree_sitter.QueryCursor(_query(kinds))
    cursor.set_byte_range(root.start_byte, root.end_byte)
    found = cursor.captures(root).get("n", [])
    return sorted((n for n in found if root.start_byte <= n.start_byte and n.end_byte <= root.end_byte),
                  key=lambda n: (n.start_byte, -n.end_byte))


def _calls(root: tree_sitter.Node, named=None) -> Iterator[_Call]:
    """The calls under `root`, in source order; with `named` (a test of the callee's last name), only those: the
    others are never made into `_Call`s (SGLang 0.5.23's files hold 167,000 calls, a handful of them wanted)."""
    for node in _nodes(root, "call"):
        if named is not None:
            function = node.child_by_field_name("function")
            if function is not None and function.type == "attribute":
                function = function.child_by_field_name("attribute")
            if function is None or function.type != "identifier" or not named(node_bytes(function).decode()):
                continue
        found = _call(node)
        if found is not None:
            yield found


# --- parsed files ---------------------------------------------------------------------------------------------

@dataclass
class _Field:
    name: str
    annotation: tree_sitter.Node | None
    default: tree_sitter.Node | None
    doc: str
    line: int
    path: str


@dataclass
class _Class:
    name: str
    path: str
    line: int
    fields: dict[str, _Field] = field(default_factory=dict)
    bases: tuple[str, ...] = ()
    assignments: dict[str, tuple[tree_sitter.Node, int]] = field(default_factory=dict)  # unannotated


class _Parsed:
    """The files of one kind, parsed once: their classes, module constants and module-level lists."""

    def __init__(self, files: dict[str, bytes], trees: dict | None = None) -> None:
        self.roots: dict[str, tree_sitter.Node] = {}
        self.classes: dict[str, list[_Class]] = {}
        self.constants: dict[str, tree_sitter.Node] = {}
        self.lists: dict[str, list[str]] = {}
        trees = trees if trees is not None else {}
        for path in sorted(files):
            if path not in trees:  # a file read for several kinds is parsed once
                trees[path] = _python.parse(files[path], path)
            root = trees[path].root_node
            self.roots[path] = root
            self._module(path, root)

    def _module(self, path: str, root: tree_sitter.Node) -> None:
        for statement in _statements(root):
            node = statement.child_by_field_name("definition") if statement.type == "decorated_definition" \
                else statement
            if node is not None and node.type == "class_definition":
                self._class(path, node)
            elif statement.type == "expression_statement" and statement.named_child_count == 1:
                assignment = statement.named_children[0]
                if assignment.type == "assignment":
                    left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
                    if left is not None and right is not None and left.type == "identifier":
                        name = node_bytes(left).decode()
                        self.constants.setdefault(name, right)
                        if right.type == "list" and all(c.type in ("identifier", "comment")
                                                        for c in right.named_children):
                            self.lists[name] = [node_bytes(c).decode() for c in right.named_children
                                                if c.type == "identifier"]

    def _class(self, path: str, node: tree_sitter.Node) -> None:
        name_node, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        superclasses = node.child_by_field_name("superclasses")
        bases = tuple(_text(c).rsplit(".", 1)[-1] for c in superclasses.named_children
                      if c.type in ("identifier", "attribute")) if superclasses is not None else ()
        found = _Class(node_bytes(name_node).decode(), path, node.start_point[0] + 1, bases=bases)
        statements = [c for c in body.named_children if c.type != "comment"]
        for index, statement in enumerate(statements):
            if statement.type != "expression_statement" or statement.named_child_count != 1:
                continue
            assignment = statement.named_children[0]
            if assignment.type != "assignment":
                continue
            left = assignment.child_by_field_name("left")
            if left is None or left.type != "identifier":
                continue
            annotation = assignment.child_by_field_name("type")
            right = assignment.child_by_field_name("right")
            name = node_bytes(left).decode()
            if annotation is None:
                if right is not None:
                    found.assignments.setdefault(name, (right, statement.start_point[0] + 1))
                continue
            doc = ""
            following = statements[index + 1] if index + 1 < len(statements) else None
            if following is not None and following.type == "expression_statement" \
                    and following.named_child_count == 1 and following.named_children[0].type == "string":
                doc = _python.string_value(following.named_children[0])
            found.fields.setdefault(name, _Field(name, annotation, right, fold(doc, MAX_HELP),
                                                 statement.start_point[0] + 1, path))
        self.classes.setdefault(found.name, []).append(found)

    def all_fields(self, cls: _Class) -> list[tuple[_Class, _Field]]:
        """The fields of a class and of the classes it derives from (those in these files), bases first, as a
        dataclass orders them; a field a subclass redefines takes the subclass's definition."""
        chain: list[_Class] = []
        todo = [cls]
        seen: set[str] = set()
        while todo:
            current = todo.pop()
            if current.name in seen or len(seen) > 32:
                continue
            seen.add(current.name)
            chain.append(current)
            todo.extend(c for c in (self.cls(b, current.path) for b in current.bases) if c is not None)
        found: dict[str, tuple[_Class, _Field]] = {}
        for owner in reversed(chain):
            for name, value in owner.fields.items():
                found.pop(name, None)
                found[name] = (owner, value)
        return list(found.values())

    def subclasses(self, cls: _Class) -> list[_Class]:
        return [c for classes in self.classes.values() for c in classes
                if c is not cls and any(base is cls for base in self._ancestors(c))]

    def _ancestors(self, cls: _Class) -> Iterator[_Class]:
        todo = list(cls.bases)
        seen: set[str] = set()
        while todo and len(seen) < 32:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            found = self.cls(name, cls.path)
            if found is not None:
                yield found
                todo.extend(found.bases)

    def cls(self, name: str, near: str | None = None) -> _Class | None:
        """The class named `name` (the last part of a dotted name); one in the file `near` first."""
        name = name.rsplit(".", 1)[-1]
        found = self.classes.get(name)
        if not found:
            return None
        for candidate in found:
            if candidate.path == near:
                return candidate
        return found[0]


def _statements(container: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The module's statements, those inside `if`/`try` blocks at module level too."""
    stack = list(reversed(container.named_children))
    while stack:
        node = stack.pop()
        if node.type in ("if_statement", "try_statement", "else_clause", "elif_clause", "except_clause",
                         "finally_clause", "block", "with_statement"):
            stack.extend(reversed([c for c in node.named_children]))
            continue
        yield node


# --- defaults -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Default:
    text: str | None  # as written (None: no default)
    value: object = NO_VALUE
    origin: str = ""  # the config field it comes from ("CacheConfig.gpu_memory_utilization")
    path: str = ""  # where that field is (or the constant): the line that gives the default
    line: int = 0


_NONE_DEFAULT = Default(None)


class _Resolver:
    def __init__(self, parsed: _Parsed) -> None:
        self.parsed = parsed
        self.kwargs_of: dict[str, _Class] = {}  # `kwargs = get_kwargs(Cls)` of the file being read

    def default(self, node: tree_sitter.Node | None, path: str, hops: int = 0) -> Default:
        """The default an expression stands for: a literal, a config field's default, a module constant; else the
        expression itself, computed."""
        if node is None:
            return _NONE_DEFAULT
        node = _strip_parens(node)
        value = literal(node)
        text = _text(node)
        if value is not _NOT_LITERAL:
            return Default(fold(text, MAX_DEFAULT), value if len(text) <= MAX_DEFAULT else NO_VALUE)
        if hops < MAX_HOPS:
            if node.type == "attribute":  # Cls.field; Enum.MEMBER.value
                obj, attribute = node.child_by_field_name("object"), node.child_by_field_name("attribute")
                if obj is not None and attribute is not None and obj.type in ("identifier", "attribute"):
                    name = node_bytes(attribute).decode()
                    if name == "value" and obj.type == "attribute":
                        member = self._enum_member(obj, path, hops)
                        if member is not None:
                            return Default(member.text, member.value, text)
                    cls = self.parsed.cls(node_bytes(obj).decode(), path) if obj.type == "identifier" else None
                    if cls is not None:
                        found = self.field_default(cls, name, hops + 1)
                        if found is not None:
                            return found
            if node.type == "subscript" and self.kwargs_of:  # kwargs["field"]["default"], kwargs = get_kwargs(Cls)
                inner, key = node.child_by_field_name("value"), _string(node.child_by_field_name("subscript"))
                if key == "default" and inner is not None and inner.type == "subscript":
                    base = inner.child_by_field_name("value")
                    field_name = _string(inner.child_by_field_name("subscript"))
                    cls = self.kwargs_of.get(_text(base)) if base is not None else None
                    if cls is not None and field_name is not None:
                        found = self.field_default(cls, field_name, hops + 1)
                        if found is not None:
                            return found
            if node.type == "identifier":
                constant = self.parsed.constants.get(node_bytes(node).decode())
                if constant is not None and constant is not node:
                    found = self.default(constant, path, hops + 1)
                    if not found.text or found.value is not NO_VALUE:
                        return Default(found.text, found.value, found.origin or text, found.path, found.line)
            call = _call(node)
            if call is not None:
                found = self._call_default(call, path, hops)
                if found is not None:
                    return found
        return Default(fold(text, MAX_DEFAULT))

    def _enum_member(self, node: tree_sitter.Node, path: str, hops: int) -> Default | None:
        """`Enum.MEMBER` of a class in these files whose `MEMBER = literal`: that literal."""
        obj, attribute = node.child_by_field_name("object"), node.child_by_field_name("attribute")
        if obj is None or attribute is None or obj.type != "identifier":
            return None
        cls = self.parsed.cls(node_bytes(obj).decode(), path)
        if cls is None or node_bytes(attribute).decode() not in cls.assignments:
            return None
        found = self.default(cls.assignments[node_bytes(attribute).decode()][0], cls.path, hops + 1)
        return found if found.value is not NO_VALUE else None

    def _call_default(self, call: _Call, path: str, hops: int) -> Default | None:
        if call.name == "cast" and len(call.positional) == 2:  # typing.cast(T, value) is value
            return self.default(call.positional[1], path, hops + 1)
        if call.name == "get_field" and len(call.positional) == 2:  # vLLM's get_field(Cls, "field")
            cls = self.parsed.cls(_text(call.positional[0]), path)
            name = _string(call.positional[1])
            if cls is not None and name is not None:
                return self.field_default(cls, name, hops + 1)
        if call.name in ("Field", "field") or call.callee.endswith(("dataclasses.field", "msgspec.field",
                                                                    "pydantic.Field")):
            if "default" in call.keywords:
                return self.default(call.keywords["default"], path, hops + 1)
            if call.name == "Field" and call.positional:
                return self.default(call.positional[0], path, hops + 1)
            factory = call.keywords.get("default_factory")
            if factory is not None:
                factory = _strip_parens(factory)
                simple: dict[str, tuple[object, str]] = {"list": ([], "[]"), "dict": ({}, "{}"), "set": ([], "set()"),
                                                         "tuple": ([], "()")}
                if factory.type == "identifier" and node_bytes(factory).decode() in simple:
                    value, text = simple[node_bytes(factory).decode()]
                    return Default(text, value)
                if factory.type == "lambda":
                    body = factory.child_by_field_name("body")
                    found = self.default(body, path, hops + 1) if body is not None else None
                    if found is not None and found.value is not NO_VALUE:
                        return found
                return Default(fold(f"{_text(factory)}()", MAX_DEFAULT))
            return _NONE_DEFAULT if call.name == "Field" else None
        # SGLang's `_declared_default("field")`: the declared default of a field, by name.
        if "default" in call.name.lower() and len(call.positional) == 1 and not call.keywords:
            name = _string(call.positional[0])
            if name is not None:
                for classes in self.parsed.classes.values():
                    for cls in classes:
                        if name in cls.fields:
                            found = self.field_default(cls, name, hops + 1)
                            if found is not None:
                                return found
        return None

    def field_default(self, cls: _Class, name: str, hops: int = 0) -> Default | None:
        found = cls.fields.get(name)
        if found is None:
            if name in cls.assignments:
                node, line = cls.assignments[name]
                found_default = self.default(node, cls.path, hops)
                return Default(found_default.text, found_default.value, found_default.origin,
                               found_default.path or cls.path, found_default.line or line)
            return None
        if found.default is None:
            return Default(None, NO_VALUE, f"{cls.name}.{name}", found.path, found.line)
        default = self.default(found.default, cls.path, hops)
        if default.path:  # followed further (EngineArgs.x = CacheConfig.x): the deepest place says it
            return Default(default.text, default.value, default.origin or f"{cls.name}.{name}", default.path,
                           default.line)
        return Default(default.text, default.value, default.origin or f"{cls.name}.{name}", found.path, found.line)


# --- flags ----------------------------------------------------------------------------------------------------

def _annotation_text(node: tree_sitter.Node | None) -> str:
    return _text(node) if node is not None else ""


def _literal_choices(annotation: tree_sitter.Node | None, parsed: _Parsed | None = None,
                     hops: int = 0) -> tuple[str, ...]:
    """The values of the `Literal[...]`s in a type annotation, through module-level aliases
    (`SchedulerPolicy = Literal["fcfs", "priority"]`)."""
    if annotation is None:
        return ()
    found: list[str] = []
    for node in _walk(annotation):
        if node.type == "identifier" and parsed is not None and hops < MAX_HOPS:
            alias = parsed.constants.get(node_bytes(node).decode())
            if alias is not None and alias is not node and b"Literal" in node_bytes(alias):
                found.extend(_literal_choices(alias, parsed, hops + 1))
        if node.type == "subscript":
            value = node.child_by_field_name("value")
            if value is not None and _text(value).rsplit(".", 1)[-1] == "Literal":
                for child in node.children_by_field_name("subscript"):
                    item = literal(child)
                    if item is not _NOT_LITERAL and item is not None:
                        found.append(str(item))
        elif node.type == "generic_type":  # tree-sitter's `Literal["a", "b"]` inside a `type`
            name = node.named_children[0] if node.named_children else None
            if name is not None and _text(name) == "Literal":
                for child in _walk(node):
                    if child.type == "string":
                        found.append(_python.string_value(child))
    return tuple(dict.fromkeys(found))


def _is_bool(annotation: tree_sitter.Node | None) -> bool:
    if annotation is None:
        return False
    names = {node_bytes(n).decode() for n in _walk(annotation) if n.type == "identifier"}
    return "bool" in names


def _annotated(annotation: tree_sitter.Node | None) -> tuple[tree_sitter.Node | None, list[tree_sitter.Node]] | None:
    """`A[T, meta...]` / `Annotated[T, meta...]`: (T, metas); None when the annotation is not one."""
    if annotation is None:
        return None
    node = annotation
    if node.type == "type" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type == "subscript":
        value = node.child_by_field_name("value")
        items = node.children_by_field_name("subscript")
    elif node.type == "generic_type":
        value = node.named_children[0] if node.named_children else None
        parameters = node.named_children[1] if node.named_child_count > 1 else None
        items = [c for c in parameters.named_children] if parameters is not None else []
        items = [c.named_children[0] if c.type == "type" and c.named_child_count == 1 else c for c in items]
    else:
        return None
    if value is None or _text(value).rsplit(".", 1)[-1] not in ("A", "Annotated") or not items:
        return None
    return items[0], items[1:]


class _Flags:
    """The flags of a release from its flag files."""

    def __init__(self, parsed: _Parsed) -> None:
        self.parsed = parsed
        self.resolve = _Resolver(parsed)
        self.items: list[Item] = []

    def run(self) -> list[Item]:
        for path, root in self.parsed.roots.items():
            kwargs_of = self.resolve.kwargs_of = self._kwargs_sources(root)
            merged = self._namespaces(root)
            for call in _calls(root):
                if call.name == "add_argument":
                    self._add_argument(call, path, kwargs_of)
                elif call.name == "add_cli_args_from_dataclass" and len(call.positional) >= 2:
                    cls = self.parsed.cls(_text(call.positional[1]), path)
                    if cls is not None:
                        self._from_dataclass(cls, merged, call)
        return self.items

    # vLLM: kwargs = get_kwargs(Cls)

    def _kwargs_sources(self, root: tree_sitter.Node) -> dict[str, _Class]:
        """`name -> Cls` for `name = get_kwargs(Cls)` assignments in the file."""
        found = {}
        for node in _nodes(root, "assignment"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            call = _call(right) if right is not None else None
            if left is not None and left.type == "identifier" and call is not None \
                    and call.name in ("get_kwargs", "_compute_kwargs") and call.positional:
                argument = _text(call.positional[0])
                cls = self.parsed.cls(argument) if argument != "cls" else _enclosing_class(node, self.parsed)
                if cls is not None:
                    found[node_bytes(left).decode()] = cls
        return found

    def _expanded(self, cls: _Class) -> list[_Class]:
        """The classes whose fields a loop over `get_kwargs(cls)` makes flags of: `cls`, or where the method is a
        classmethod of a base, the subclasses whose `add_cli_args` the files call."""
        called = {_text(f).rsplit(".", 1)[0] for root in self.parsed.roots.values() for c in _calls(root)
                  if c.name == "add_cli_args" and (f := c.node.child_by_field_name("function")) is not None}
        chosen = [c for c in [cls, *self.parsed.subclasses(cls)] if c.name in called]
        return chosen or [cls]

    def _overrides(self, scope: tree_sitter.Node, kwargs_name: str) -> dict[tuple[str, str], tree_sitter.Node]:
        """`kwargs["field"]["key"] = value` in the function around an `add_argument`: (field, key) -> value (once
        per function and name: vLLM's add_cli_args holds some 300 calls)."""
        cache = self.__dict__.setdefault("_override_cache", {})
        key = (scope.id, kwargs_name)
        if key not in cache:
            cache[key] = self._find_overrides(scope, kwargs_name)
        return cache[key]

    def _find_overrides(self, scope: tree_sitter.Node, kwargs_name: str) -> dict[tuple[str, str], tree_sitter.Node]:
        found = {}
        for node in _nodes(scope, "assignment"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is None or right is None or left.type != "subscript":
                continue
            inner = left.child_by_field_name("value")
            key = _string(left.child_by_field_name("subscript"))
            if inner is None or inner.type != "subscript" or key is None:
                continue
            base, name = inner.child_by_field_name("value"), _string(inner.child_by_field_name("subscript"))
            if base is not None and _text(base) == kwargs_name and name is not None:
                found[(name, key)] = right
        return found

    def _add_argument(self, call: _Call, path: str, kwargs_of: dict[str, _Class]) -> None:
        options = [None if _strip_parens(n).type == "string" and _is_fstring(_strip_parens(n)) else _string(n)
                   for n in call.positional]
        if not call.positional:
            return
        spread: tuple[_Class, str] | None = None
        spread_name = None
        splats = list(call.splats)
        for splat in call.splats:  # **{**kwargs["field"], "default": None}
            splat = _strip_parens(splat)
            if splat.type == "dictionary":
                for child in splat.named_children:
                    if child.type == "dictionary_splat" and child.named_child_count:
                        splats.append(child.named_children[0])
                    elif child.type == "pair":
                        key = _string(child.child_by_field_name("key"))
                        value = child.child_by_field_name("value")
                        if key is not None and value is not None:
                            call.keywords.setdefault(key, value)
        for splat in splats:
            splat = _strip_parens(splat)
            if splat.type == "subscript":
                base, key = splat.child_by_field_name("value"), _string(splat.child_by_field_name("subscript"))
                if base is not None and key is not None and _text(base) in kwargs_of:
                    spread, spread_name = (kwargs_of[_text(base)], key), _text(base)
            elif splat.type == "identifier":
                loop = _loop_over(call.node, node_bytes(splat).decode())
                if loop is not None and loop[1] in kwargs_of and len(options) == 1 and options[0] is None:
                    # for key, value in kwargs.items(): add_argument(f"--{key.replace('_', '-')}", **value)
                    scope = _enclosing_function(call.node)
                    overrides = self._overrides(scope, loop[1]) if scope is not None else {}
                    for cls in self._expanded(kwargs_of[loop[1]]):
                        for owner, found in self.parsed.all_fields(cls):
                            self._flag_from_field(owner, found.name, call, None, overrides, path, at_field=True)
                    return
        if any(o is None for o in options):
            return
        flags = [o for o in options if o is not None and o.startswith("-")]  # none is None (above)
        if not flags or len(flags) != len(options):
            return  # a positional argument (the model), or option strings the code computes
        if spread is not None:
            scope = _enclosing_function(call.node)
            overrides = self._overrides(scope, spread_name) if scope is not None and spread_name else {}
            self._flag_from_field(spread[0], spread[1], call, flags, overrides, path)
            return
        self._plain_flag(call, path, flags)

    def _plain_flag(self, call: _Call, path: str, flags: list[str], base: Default | None = None) -> None:
        kw = call.keywords
        action_node = kw.get("action")
        action = (_string(action_node) or _text(action_node)) if action_node is not None else ""
        if "default" in kw:
            default = self.resolve.default(kw["default"], path)
        elif base is not None:
            default = base
        elif action == "store_true":
            default = Default("False", False)
        elif action == "store_false":
            default = Default("True", True)
        else:
            default = Default("None", None) if not _true(kw.get("required")) else _NONE_DEFAULT
        aliases = list(flags[1:])
        if action.endswith("BooleanOptionalAction"):
            aliases += [f"--no-{f[2:]}" for f in flags if f.startswith("--")]
        choices: tuple[str, ...] = ()
        if "choices" in kw:
            value = literal(kw["choices"])
            choices = tuple(str(v) for v in value) if isinstance(value, list) else ()
        deprecated = _true(kw.get("deprecated")) or "deprecat" in action.lower() or \
            _help(kw.get("help")).lower().startswith(("[deprecated]", "deprecated"))
        detail = default.origin
        if "dest" in kw and _string(kw["dest"]):
            detail = detail or f"dest {_string(kw['dest'])}"
        self.items.append(_at_default(Item(FLAG, _primary(flags), default.text, default.value, tuple(aliases),
                                           choices, _help(kw.get("help")), detail, deprecated, path,
                                           call.node.start_point[0] + 1), default))

    def _flag_from_field(self, cls: _Class, name: str, call: _Call, flags: list[str] | None,
                         overrides: dict, path: str, at_field: bool = False) -> None:
        found = cls.fields.get(name)
        if found is None:
            return
        flags = flags or [f"--{name.replace('_', '-')}"]
        default = self.resolve.field_default(cls, name) or _NONE_DEFAULT
        if (name, "default") in overrides:
            default = self.resolve.default(overrides[(name, "default")], cls.path)
        kw = call.keywords
        if "default" in kw:
            default = self.resolve.default(kw["default"], path)
        aliases = list(flags[1:])
        action = _string(kw["action"]) if "action" in kw else None
        boolean = _is_bool(found.annotation) and action is None and (name, "action") not in overrides
        if boolean:
            aliases += [f"--no-{f[2:]}" for f in flags if f.startswith("--")]
        choices = _literal_choices(found.annotation, self.parsed)
        help_text = found.doc or _help(kw.get("help"))
        deprecated = _true(kw.get("deprecated")) or help_text.lower().startswith(("[deprecated]", "deprecated"))
        self.items.append(_at_default(Item(FLAG, _primary(flags), default.text, default.value, tuple(aliases),
                                           choices, help_text, default.origin or f"{cls.name}.{name}", deprecated,
                                           cls.path if at_field else path,
                                           found.line if at_field else call.node.start_point[0] + 1), default))

    # SGLang: add_cli_args_from_dataclass(parser, Cls)

    def _namespaces(self, root: tree_sitter.Node) -> list[_Class]:
        """The classes a module-level `collect_input_fields(LIST)` merges into the dataclass the file expands."""
        found: list[_Class] = []
        for statement in _statements(root):
            if statement.type in ("class_definition", "function_definition", "decorated_definition"):
                continue  # module level only: that is where ServerArgs is assembled
            for call in _calls(statement, "collect_input_fields".__eq__):
                if call.positional:
                    names = self.parsed.lists.get(_text(call.positional[0]), [])
                    found.extend(c for c in (self.parsed.cls(n) for n in names) if c is not None)
        return found

    def _from_dataclass(self, cls: _Class, merged: list[_Class], call: _Call) -> None:
        seen: set[str] = set()
        for owner in [cls, *merged]:
            for name, found in owner.fields.items():
                if name in seen:
                    continue
                seen.add(name)
                shape = _annotated(found.annotation)
                if shape is None:
                    continue
                inner, metas = shape
                help_text, meta = "", None
                for item in metas:
                    if _string(item) is not None:
                        help_text = _string(item) or ""
                    elif (c := _call(_strip_parens(item))) is not None and c.name == "Arg":
                        meta = c
                if meta is None and not help_text and not metas:
                    continue
                kw = meta.keywords if meta is not None else {}
                if _true(kw.get("no_cli")):
                    continue
                help_text = _help(kw["help"]) if "help" in kw else fold(help_text, MAX_HELP)
                cli_name = _string(kw["cli_name"]) if "cli_name" in kw else None
                flags = [cli_name or f"--{name.replace('_', '-')}"]
                aliases = literal(kw["aliases"]) if "aliases" in kw else []
                aliases = [str(a) for a in aliases] if isinstance(aliases, list) else []
                choices_value = literal(kw["choices"]) if "choices" in kw else _NOT_LITERAL
                choices = tuple(str(v) for v in choices_value) if isinstance(choices_value, list) \
                    else _literal_choices(inner, self.parsed)
                default = self.resolve.field_default(owner, name) or _NONE_DEFAULT
                if default.text is None and "fallback" in kw:
                    default = self.resolve.default(kw["fallback"], owner.path)
                action = kw.get("action")
                if action is None and inner is not None and _text(inner) == "bool" and default.text is None:
                    default = Default("False", False, default.origin)
                deprecated = help_text.lower().startswith(("[deprecated]", "deprecated"))
                self.items.append(Item(FLAG, flags[0], default.text, default.value, tuple(aliases), choices,
                                       help_text, f"{owner.name}.{name}", deprecated, owner.path, found.line))


def _at_default(item: Item, default: Default) -> Item:
    """The item with the place of its default, when that is not where the item is defined."""
    if default.path and (default.path, default.line) != (item.path, item.line):
        return replace(item, default_path=default.path, default_line=default.line)
    return item


def _is_fstring(node: tree_sitter.Node) -> bool:
    prefix = re.match(rb"[A-Za-z]*", node_bytes(node)).group().lower()  # type: ignore[union-attr]  # matches any text
    return b"f" in prefix or b"t" in prefix


def _true(node: tree_sitter.Node | None) -> bool:
    return node is not None and node.type == "true"


def _primary(flags: list[str]) -> str:
    """The flag's name: its first long option (`--tensor-parallel-size` of `-tp, --tensor-parallel-size`)."""
    for flag in flags:
        if flag.startswith("--"):
            return flag
    return flags[0]


def _enclosing_function(node: tree_sitter.Node) -> tree_sitter.Node | None:
    current = node.parent
    while current is not None and current.type != "function_definition":
        current = current.parent
    return current


def _enclosing_class(node: tree_sitter.Node, parsed: _Parsed) -> _Class | None:
    current = node.parent
    while current is not None and current.type != "class_definition":
        current = current.parent
    name = current.child_by_field_name("name") if current is not None else None
    return parsed.cls(node_bytes(name).decode()) if name is not None else None


def _loop_over(node: tree_sitter.Node, value_name: str) -> tuple[str, str] | None:
    """For `for key, value in kwargs.items(): ...` around `node`, where `value` is `value_name`: (key, kwargs)."""
    current = node.parent
    while current is not None:
        if current.type == "for_statement":
            left, right = current.child_by_field_name("left"), current.child_by_field_name("right")
            if left is not None and right is not None:
                names = [node_bytes(n).decode() for n in left.named_children if n.type == "identifier"]
                call = _call(right)
                if call is not None and call.name == "items" and len(names) == 2 and names[1] == value_name:
                    function = right.child_by_field_name("function")
                    obj = function.child_by_field_name("object") if function is not None else None
                    if obj is not None:
                        return names[0], _text(obj)
        current = current.parent
    return None


# --- environment variables ------------------------------------------------------------------------------------

class _Env:
    def __init__(self, parsed: _Parsed, primary: Iterable[str]) -> None:
        self.parsed = parsed
        self.resolve = _Resolver(parsed)
        self.primary = set(primary)
        self.found: dict[str, Item] = {}

    def run(self) -> list[Item]:
        # The registry files first (vLLM's envs.py, SGLang's environ.py), so that their definition wins.
        order = sorted(self.parsed.roots, key=lambda p: (p not in self.primary, p))
        classes_by_path: dict[str, list[_Class]] = {}
        for classes in self.parsed.classes.values():
            for cls in classes:
                classes_by_path.setdefault(cls.path, []).append(cls)
        for path in order:
            root = self.parsed.roots[path]
            self._table(path, root)
            self._env_classes(path, classes_by_path.get(path, []))
            for call in _calls_named(root, _ENV_READER_NAMES):
                self._read(call, path)
            if b"environ" in node_bytes(root):  # `"X" in os.environ`, `os.environ["X"]`
                for node in _nodes(root, "comparison_operator", "subscript"):
                    if node.type == "comparison_operator":
                        self._membership(node, path)
                    else:
                        self._subscript(node, path)
        return list(self.found.values())

    def _add(self, item: Item) -> None:
        if _ENV_NAME.fullmatch(item.name):
            self.found.setdefault(item.name, item)

    def _table(self, path: str, root: tree_sitter.Node) -> None:
        """vLLM's `environment_variables = {"NAME": lambda: os.getenv("NAME", default), ...}`: the help is the
        comments above each key."""
        for statement in _statements(root):
            if statement.type != "expression_statement" or statement.named_child_count != 1:
                continue
            assignment = statement.named_children[0]
            right = assignment.child_by_field_name("right") if assignment.type == "assignment" else None
            if right is None or right.type != "dictionary":
                continue
            comments: list[str] = []
            for child in right.named_children:
                if child.type == "comment":
                    comments.append(node_bytes(child).decode("utf-8", "replace").lstrip("#").strip())
                    continue
                if child.type != "pair":
                    comments = []
                    continue
                name = _string(child.child_by_field_name("key"))
                value = child.child_by_field_name("value")
                if name is None or value is None or not _ENV_NAME.fullmatch(name):
                    comments = []
                    continue
                default = self._default_in(value, name, path)
                if default is None:
                    default = Default(fold(_text(value), MAX_DEFAULT))
                self._add(Item(ENV, name, default.text, default.value, help=fold(" ".join(comments), MAX_HELP),
                               detail=fold(_text(value), MAX_DEFAULT), path=path, line=child.start_point[0] + 1))
                comments = []

    def _default_in(self, value: tree_sitter.Node, name: str, path: str) -> Default | None:
        """The default of `name` in the expression that reads it (None: the expression reads it otherwise)."""
        for call in _calls(value):
            if call.name in _ENV_READERS and call.positional and _string(call.positional[0]) == name:
                return self._call_default(call, path)
        for node in _nodes(value, "comparison_operator"):
            if _membership_name(node) == name:
                return Default("unset", False)
        return None

    def _call_default(self, call: _Call, path: str) -> Default:
        node = call.keywords.get("default")
        if node is None and len(call.positional) > 1:
            node = call.positional[1]
        if node is None:
            return Default("None", None) if call.name not in ("get_bool_env_var", "_get_bool_env_var") \
                else Default('"false"', "false")
        return self.resolve.default(node, path)

    def _read(self, call: _Call, path: str) -> None:
        if call.name not in _ENV_READERS or not call.positional:
            return
        if call.name == "get" and "environ" not in call.callee:
            return
        if call.name == "getenv" and call.callee not in ("os.getenv", "getenv"):
            return
        name = _string(call.positional[0])
        if name is None or name in self.found:
            return
        default = self._call_default(call, path)
        self._add(Item(ENV, name, default.text, default.value, detail=fold(_text(call.node), MAX_DEFAULT),
                       path=path, line=call.node.start_point[0] + 1))

    def _membership(self, node: tree_sitter.Node, path: str) -> None:
        name = _membership_name(node)
        if name is not None and name not in self.found:
            self._add(Item(ENV, name, "unset", False, detail=fold(_text(node), MAX_DEFAULT), path=path,
                           line=node.start_point[0] + 1))

    def _subscript(self, node: tree_sitter.Node, path: str) -> None:
        value = node.child_by_field_name("value")
        if value is None or _text(value) not in ("os.environ", "environ"):
            return
        name = _string(node.child_by_field_name("subscript"))
        parent = node.parent
        if name is None or name in self.found or parent is None:
            return
        if parent.type == "assignment" and parent.child_by_field_name("left") == node:
            return  # the engine sets it, for its own children
        self._add(Item(ENV, name, None, detail=fold(_text(node), MAX_DEFAULT), path=path,
                       line=node.start_point[0] + 1))

    def _env_classes(self, path: str, classes: list[_Class]) -> None:
        """SGLang's `class Envs: SGLANG_X = EnvBool(False)`: the classes of the file `path`."""
        for cls in classes:
            for name, (node, line) in sorted(cls.assignments.items(), key=lambda kv: kv[1][1]):
                call = _call(_strip_parens(node))
                if call is None or not _ENV_CLASSES.fullmatch(call.name) or not _ENV_NAME.fullmatch(name):
                    continue
                default = self._call_default_first(call, path)
                self._add(Item(ENV, name, default.text, default.value, detail=fold(_text(node), MAX_DEFAULT),
                               path=path, line=line))
            for name, found in cls.fields.items():
                call = _call(_strip_parens(found.default)) if found.default is not None else None
                if call is None or found.default is None or not _ENV_CLASSES.fullmatch(call.name) \
                        or not _ENV_NAME.fullmatch(name):
                    continue
                default = self._call_default_first(call, path)
                self._add(Item(ENV, name, default.text, default.value, help=found.doc,
                               detail=fold(_text(found.default), MAX_DEFAULT), path=path, line=found.line))

    def _call_default_first(self, call: _Call, path: str) -> Default:
        node = call.keywords.get("default") or (call.positional[0] if call.positional else None)
        return self.resolve.default(node, path) if node is not None else Default("None", None)


def _membership_name(node: tree_sitter.Node) -> str | None:
    """`"NAME" in os.environ` (or `not in`): NAME."""
    children = node.children
    if len(children) != 3 or children[1].type not in ("in", "not in"):
        return None
    if _text(children[2]) not in ("os.environ", "environ"):
        return None
    return _string(children[0])


# --- metrics and requests -------------------------------------------------------------------------------------

def _metrics(parsed: _Parsed) -> list[Item]:
    found: dict[str, Item] = {}
    def named(name: str) -> bool:
        return _METRIC_CALL.fullmatch(name.lstrip("_")) is not None

    for path, root in parsed.roots.items():
        for call in _calls(root, named):
            node = call.keywords.get("name") or (call.positional[0] if call.positional else None)
            name = _string(node) if node is not None else None
            if not name or " " in name:
                continue
            documentation = call.keywords.get("documentation") or (
                call.positional[1] if len(call.positional) > 1 else None)
            kind = _METRIC_CALL.fullmatch(call.name.lstrip("_")).group(1).lower()  # type: ignore[union-attr]  # named()
            labels = literal(call.keywords["labelnames"]) if "labelnames" in call.keywords else _NOT_LITERAL
            detail = kind + (f" ({', '.join(map(str, labels))})" if isinstance(labels, list) and labels else "")
            found.setdefault(name, Item(METRIC, name, help=_help(documentation), detail=detail, path=path,
                                        line=call.node.start_point[0] + 1))
    return list(found.values())


def _requests(parsed: _Parsed) -> list[Item]:
    resolve = _Resolver(parsed)
    found: dict[str, Item] = {}
    for classes in parsed.classes.values():
        for cls in classes:
            if not _REQUEST_CLASS.fullmatch(cls.name):
                continue
            for name, field_ in cls.fields.items():
                if name.startswith("_") or name == "model_config":
                    continue
                default = resolve.default(field_.default, cls.path) if field_.default is not None else _NONE_DEFAULT
                help_text = field_.doc
                call = _call(_strip_parens(field_.default)) if field_.default is not None else None
                if call is not None and call.name == "Field" and "description" in call.keywords:
                    help_text = help_text or _help(call.keywords["description"])
                deprecated = call is not None and call.name == "Field" and "deprecated" in call.keywords
                key = f"{cls.name}.{name}"
                found.setdefault(key, Item(REQUEST, key, default.text, default.value, help=help_text,
                                           detail=fold(_annotation_text(field_.annotation), MAX_DEFAULT),
                                           deprecated=deprecated, path=cls.path, line=field_.line))
    return list(found.values())


# --- the whole surface ----------------------------------------------------------------------------------------

#: Bytes that a file must contain to be worth parsing for a kind (a file without them has no such item).
PREFILTER = {FLAG: (b"add_argument", b"class "),
             ENV: (b"environ", b"getenv", b"_env_var", b"_with_choices(", b"_or_set_default("),
             METRIC: (b"Gauge(", b"Counter(", b"Histogram(", b"Summary(", b"_cls(", b"gauge(", b"counter(",
                      b"histogram("),
             REQUEST: (b"Request", b"ReqInput")}


def prefiltered(files: Mapping[str, bytes | None], kind: str, env_primary: Iterable[str],
                prefilter: dict[str, tuple[bytes, ...]]) -> dict[str, bytes]:
    """The files of one kind worth parsing: those holding one of the kind's `prefilter` byte strings, and, for
    variables, the `env_primary` files whatever they hold (both extractors, each with its own strings)."""
    primary = set(env_primary) if kind == ENV else set()
    return {p: d for p, d in files.items() if d is not None and (p in primary or any(b in d for b in prefilter[kind]))}


def extract(files_by_kind: dict[str, dict[str, bytes]], env_primary: Iterable[str] = ()) -> list[Item]:
    """Every item of a release, from its files by kind (`{kind: {path: bytes}}`), sorted by kind and name.

    A flag, variable, metric or field defined twice keeps its first definition (files in path order; for
    variables, the `env_primary` files first)."""
    items: list[Item] = []
    trees: dict = {}
    for kind, files in files_by_kind.items():
        wanted = prefiltered(files, kind, env_primary, PREFILTER)
        if not wanted:
            continue
        parsed = _Parsed(wanted, trees)
        if kind == FLAG:
            made = _Flags(parsed).run()
        elif kind == ENV:
            made = _Env(parsed, env_primary).run()
        elif kind == METRIC:
            made = _metrics(parsed)
        else:
            made = _requests(parsed)
        items.extend(made)
    unique: dict[tuple[str, str], Item] = {}
    for item in items:
        unique.setdefault(item.key, item)
    return sorted(unique.values(), key=lambda i: (i.kind, i.name))


__all__ = ["EXTRACTOR", "Default", "extract", "literal"]
