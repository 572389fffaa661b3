"""YAML from untrusted files, with the line of every value, and nothing that expands.

Anchors, aliases and explicit tags are refused (an alias can expand a few bytes
into gigabytes); duplicate keys are refused (PyYAML would keep the last one
silently); only plain data comes out: str, int, float, bool, None, dates,
lists and mappings with string keys.
"""

from __future__ import annotations

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


def load(text: str, first_line: int = 1) -> Node | None:
    """Parse one YAML document; `first_line` is the file line the text starts on.

    Raises YAMLProblem with the file line of the first problem.
    """
    offset = first_line - 1
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise YAMLProblem("anchors and aliases (&, *) are not allowed",
                                  event.start_mark.line + 1 + offset, event.start_mark.column + 1, "G104")
            tag = getattr(event, "tag", None)
            if tag is not None and tag != "!":
                raise YAMLProblem(f"explicit YAML tags ({tag}) are not allowed",
                                  event.start_mark.line + 1 + offset, event.start_mark.column + 1, "G104")
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


_MAX_DEPTH = 32


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
