"""YAML from untrusted files, with the line of every value, and nothing that expands.

Anchors, aliases and explicit tags are refused (an alias can expand a few bytes
into gigabytes); duplicate keys are refused (PyYAML would keep the last one
silently); only plain data comes out: str, int, float, bool, None, dates,
lists and mappings with string keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor


@dataclass
class Node:
    """A YAML value and where it was written (1-based line and column in the file)."""

    value: Any  # scalar, list[Node], or dict[str, Node]
    line: int
    column: int = 1
    key_lines: dict[str, int] = field(default_factory=dict)  # for mappings: line of each key
    raw: str | None = None  # for scalars: the text as written, before YAML typed it

    @property
    def is_mapping(self) -> bool:
        return isinstance(self.value, dict)

    @property
    def is_sequence(self) -> bool:
        return isinstance(self.value, list)

    def plain(self) -> Any:
        """The value without positions."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


class YAMLProblem(Exception):
    def __init__(self, message: str, line: int, column: int = 1, code: str = "G103") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.code = code


_SCALARS = SafeConstructor()
_SAFE_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map",
}
_STR = "tag:yaml.org,2002:str"
_NODE_EVENTS = (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)
_NULL = "tag:yaml.org,2002:null"
_MAX_DEPTH = 32

#: The event parser of the single pass: libyaml's where PyYAML was built with it, else PyYAML's own.
_FAST_LOADER = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else None
#: Implicit tags as SafeLoader resolves them (an idle loader: only its resolver is used).
_RESOLVE = yaml.SafeLoader("").resolve


def load(text: str, first_line: int = 1) -> Node | None:
    """Parse one YAML document; `first_line` is the file line the text starts on.

    Raises YAMLProblem with the file line of the first problem.

    One pass over the parser's events builds the nodes: libyaml's events where
    PyYAML has libyaml and the text has nothing libyaml reads otherwise than
    PyYAML (`_libyaml_may_parse`), else PyYAML's own. Any problem at all, from a
    syntax error to a duplicate key, sends the text to `_load_checked`, the
    two-pass pure-Python loader, to be reported as it always was: libyaml's
    wording and error positions differ from PyYAML's.
    """
    loader = _FAST_LOADER if _FAST_LOADER is not None and _libyaml_may_parse(text) else yaml.SafeLoader
    try:
        return _load_events(text, first_line - 1, loader)
    except (_Refused, yaml.YAMLError, UnicodeError, RecursionError):
        return _load_checked(text, first_line)


# What libyaml (0.2.5 on) reads otherwise than PyYAML's own parser, whose reading is the rule here,
# found by fuzzing both (tests/test_yaml_fast.py): a tab, a byte order mark, a block scalar's header with
# a comment glued on (`|#`), a directive's value likewise (libyaml accepts them where PyYAML finds a
# syntax error); a document marker (`---`, `...`) and a `? ` that may start an explicit key (the empty
# value that may follow gets another position). A text with one of them is parsed by PyYAML. Two more
# are caught among libyaml's events: a plain scalar with a `?` in a flow collection (`[what?]`, an
# error for PyYAML) and a value left out in one (`{a: }`, another position).
_DOCUMENT_LINE = re.compile(r"[\n\r\x85\u2028\u2029](?:%|---|\.\.\.)")
_BLOCK_HEADER_COMMENT = re.compile(r"[|>][-+0-9]*#")
_KEY_INDICATOR = re.compile(r"(?:^|[\s\[\]{},])\?(?!\S)")


def _libyaml_may_parse(text: str) -> bool:
    """Whether libyaml's events for `text` can be taken for PyYAML's (the differential tests check it)."""
    if "\t" in text or "\ufeff" in text or text.startswith(("%", "---", "...")):
        return False
    if "?" in text and _KEY_INDICATOR.search(text):
        return False
    if "#" in text and _BLOCK_HEADER_COMMENT.search(text):
        return False
    return _DOCUMENT_LINE.search(text) is None


class _Refused(Exception):
    """The single pass met something it leaves to `_load_checked` to report."""


def _load_events(text: str, offset: int, loader_class: type) -> Node | None:
    """The nodes, built from the events of one pass; _Refused at anything `_load_checked` would report."""
    loader = loader_class(text)
    try:
        get_event = loader.get_event
        get_event()  # StreamStartEvent
        event = get_event()
        if isinstance(event, yaml.StreamEndEvent):
            return None
        root: Node | None = None
        # the open collections: [node, pending key or None, line of that key, flow style]; a mapping's
        # key is pending between its scalar and its value
        stack: list[list] = []
        flow = 0  # how many of them are flow collections ([...], {...})
        while True:
            event = get_event()
            kind = type(event)
            if kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                if stack.pop()[3]:
                    flow -= 1
                continue
            if kind is yaml.AliasEvent:
                raise _Refused
            if kind is yaml.DocumentEndEvent:  # the stream must end here (another document is an error)
                if not isinstance(get_event(), yaml.StreamEndEvent):
                    raise _Refused
                return root
            if event.anchor is not None or event.tag is not None:
                # a tag, even the non-specific `!`: libyaml cuts `!%00x` short to `!`, and says an empty
                # `!` node is not implicit; rare enough to leave to `_load_checked`
                raise _Refused
            if flow and kind is yaml.ScalarEvent and not event.style and (not event.value or "?" in event.value):
                # in a flow collection, PyYAML ends a plain scalar at a `?` (libyaml does not), and puts a
                # value left out (`{a: }`) elsewhere
                raise _Refused
            mark = event.start_mark
            line = mark.line + 1 + offset
            top = stack[-1] if stack else None
            if top is not None and top[1] is None and type(top[0].value) is dict:  # a mapping's key
                if kind is not yaml.ScalarEvent:
                    raise _Refused
                key = event.value
                if key in top[0].value or _RESOLVE(yaml.ScalarNode, key, event.implicit) == _NULL:
                    raise _Refused
                top[1] = key
                top[2] = line
                continue
            if len(stack) > _MAX_DEPTH:
                raise _Refused
            if kind is yaml.ScalarEvent:
                node = Node(_scalar(event), line, mark.column + 1, raw=event.value)
            else:  # a mapping or sequence starts: it is attached now, its items follow
                node = Node({} if kind is yaml.MappingStartEvent else [], line, mark.column + 1)
            if top is None:
                root = node
            elif type(top[0].value) is list:
                top[0].value.append(node)
            else:
                top[0].value[top[1]] = node
                top[0].key_lines[top[1]] = top[2]
                top[1] = None
            if kind is not yaml.ScalarEvent:
                stack.append([node, None, 0, event.flow_style])
                if event.flow_style:
                    flow += 1
    finally:
        loader.dispose()


def _scalar(event: yaml.ScalarEvent) -> Any:
    tag = _RESOLVE(yaml.ScalarNode, event.value, event.implicit)
    if tag == _STR:
        return event.value
    if tag not in _SAFE_TAGS:
        raise _Refused
    try:
        return _SCALARS.yaml_constructors[tag](
            _SCALARS, yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style))
    except (yaml.constructor.ConstructorError, ValueError, OverflowError):
        raise _Refused from None


def _load_checked(text: str, first_line: int) -> Node | None:
    """The pure-Python loader, two passes: it reports every problem, with the lines users see.

    The first pass also refuses nesting deeper than _MAX_DEPTH where it starts, as `_convert` would, without
    reading further: PyYAML's scanner costs time in proportion to the nesting on every token (1 MiB of `[`
    took hours), and the nodes of the second pass would nest as deep as the text.
    """
    offset = first_line - 1
    try:
        # per open collection: None for a sequence; for a mapping, whether its next node is a key (a key is
        # not counted a level deeper, as in `_convert`)
        open_collections: list[bool | None] = []
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            kind = type(event)
            if kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
                open_collections.pop()
                continue
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise YAMLProblem("anchors and aliases (&, *) are not allowed",
                                  event.start_mark.line + 1 + offset, event.start_mark.column + 1, "G104")
            tag = getattr(event, "tag", None)
            if tag is not None and tag != "!":
                raise YAMLProblem(f"explicit YAML tags ({tag}) are not allowed",
                                  event.start_mark.line + 1 + offset, event.start_mark.column + 1, "G104")
            if kind in _NODE_EVENTS:
                key = bool(open_collections) and open_collections[-1]
                if open_collections and open_collections[-1] is not None:
                    open_collections[-1] = not key
                if not key and len(open_collections) > _MAX_DEPTH:
                    raise YAMLProblem("YAML nests too deeply", event.start_mark.line + 1 + offset,
                                      event.start_mark.column + 1)
                if kind is yaml.MappingStartEvent:
                    open_collections.append(True)
                elif kind is yaml.SequenceStartEvent:
                    open_collections.append(None)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 + offset if mark else first_line
        column = mark.column + 1 if mark else 1
        message = f"YAML syntax: {exc.problem or exc.context}"
        if exc.context and exc.context_mark and exc.problem_mark and exc.context_mark.line != exc.problem_mark.line:
            message += f" ({exc.context} that starts at line {exc.context_mark.line + 1 + offset})"
        raise YAMLProblem(message, line, column) from None
    except yaml.YAMLError as exc:
        raise YAMLProblem(f"YAML: {exc}", first_line) from None
    except RecursionError:
        raise YAMLProblem("YAML nests too deeply", first_line) from None
    if node is None:
        return None
    return _convert(node, offset, 0)


def _convert(node: yaml.Node, offset: int, depth: int) -> Node:
    line = node.start_mark.line + 1 + offset
    column = node.start_mark.column + 1
    if depth > _MAX_DEPTH:
        raise YAMLProblem("YAML nests too deeply", line, column)
    if node.tag not in _SAFE_TAGS:
        raise YAMLProblem(f"unsupported YAML tag {node.tag}", line, column, "G104")
    if isinstance(node, yaml.MappingNode):
        values: dict[str, Node] = {}
        key_lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1 + offset
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:null":
                raise YAMLProblem("mapping keys must be plain words", key_line, key_node.start_mark.column + 1, "G203")
            key = str(key_node.value)
            if key in values:
                raise YAMLProblem(f"duplicate key {key!r} (first at line {key_lines[key]})", key_line,
                                  key_node.start_mark.column + 1, "G106")
            values[key] = _convert(value_node, offset, depth + 1)
            key_lines[key] = key_line
        return Node(values, line, column, key_lines)
    if isinstance(node, yaml.SequenceNode):
        return Node([_convert(item, offset, depth + 1) for item in node.value], line, column)
    try:
        value = _SCALARS.construct_object(node, deep=True)
    except (yaml.constructor.ConstructorError, ValueError, OverflowError) as exc:
        raise YAMLProblem(f"bad value: {exc}", line, column, "G203") from None
    return Node(value, line, column, raw=node.value)
