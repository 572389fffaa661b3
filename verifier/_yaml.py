"""YAML from untrusted files, with the line of every value, and nothing that expands.

Anchors, aliases and explicit tags are refused (an alias can expand a few bytes
into gigabytes); duplicate keys are refused (PyYAML would keep the last one
silently); only plain data comes out: str, int, float, bool, None, dates,
lists and mappings with string keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, cast

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


def _place(event: yaml.Event, offset: int) -> tuple[int, int]:
    """(line, column), from 1, where a parsed event starts (the parser marks every event it makes)."""
    mark = cast(yaml.Mark, event.start_mark)
    return mark.line + 1 + offset, mark.column + 1


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
_NULL = "tag:yaml.org,2002:null"
_NODE_EVENTS = (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)
_MAX_DEPTH = 32
_PROPERTIES = ("&", "!")  # what an anchor and a tag start with


def _libyaml_bounds_nesting() -> bool:
    """Whether libyaml refuses nesting past 1000 levels itself (0.2.6, in PyYAML 6.0.4's wheel, does).

    PyYAML's composer on libyaml recurses in C, one call per level, which no Python recursion limit stops:
    1 MiB of `[` would overflow the C stack. Past its bound, libyaml raises a ScannerError instead, at
    once. Within it the deepest text nests about 2000 nodes (a flow `[a: ` or a `- k:` line is two), which
    took under 1 MiB of C stack (measured in threads of set stack sizes); the main thread has 8. A libyaml
    without the bound is not used at all. Scanning tokens, as here, does not recurse.
    """
    try:
        yaml.CSafeLoader("[" * 1001).raw_scan()
    except yaml.YAMLError as exc:
        return "nesting depth" in str(getattr(exc, "problem", ""))
    return False


#: The fast path's loader: libyaml's, composing in C, where PyYAML was built with a libyaml that bounds nesting.
_FAST_LOADER = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) and _libyaml_bounds_nesting() else None


def load(text: str, first_line: int = 1) -> Node | None:
    """Parse one YAML document; `first_line` is the file line the text starts on.

    Raises YAMLProblem with the file line of the first problem.

    The fast path: libyaml composes the nodes in C (`compose` on `CSafeLoader`) and `_convert` reads them,
    where the text has nothing libyaml reads otherwise than PyYAML (`_libyaml_may_parse`). Any problem at
    all, from a syntax error to a duplicate key, and any anchor or tag (which libyaml's nodes do not keep,
    see `_convert`) sends the text to `_load_checked`, the pure-Python loader, to be reported as it always
    was: libyaml's wording and error positions differ from PyYAML's. Without libyaml, every text takes
    `_load_checked` (PyYAML's own composer would read a deep text before any bound could stop it).
    On the whole KB this takes 1.2-1.5x the time of the hand-written pass over libyaml's events it replaced
    (medians, 110 against 90 ms) and a sixteenth of the pure-Python path's: #19 took that for the code
    it retired.
    """
    if _FAST_LOADER is not None and _libyaml_may_parse(text):
        try:
            node = _FAST_LOADER(text).get_single_node()
            # an anchor or a tag leaves no trace in libyaml's nodes but where its node starts
            return None if node is None else _convert(node, first_line - 1, 0,
                                                      text if "&" in text or "!" in text else "")
        except (_Refused, YAMLProblem, yaml.YAMLError, UnicodeError, RecursionError):
            pass
    return _load_checked(text, first_line)


# What libyaml (0.2.5 on) reads otherwise than PyYAML's own parser, whose reading is the rule here,
# found by fuzzing both (tests/test_yaml_fast.py): a tab, a byte order mark, a block scalar's header with
# a comment glued on (`|#`), a directive's value likewise (libyaml accepts them where PyYAML finds a
# syntax error); a document marker (`---`, `...`) and a `? ` that may start an explicit key (the empty
# value that may follow gets another position). A text with one of them is parsed by PyYAML. Two more
# are caught in libyaml's nodes (`_convert`): a plain scalar with a `?` in a flow collection (`[what?]`,
# an error for PyYAML) and a value left out in one (`{a: }`, another position).
_DOCUMENT_LINE = re.compile(r"[\n\r\x85\u2028\u2029](?:%|---|\.\.\.)")
_BLOCK_HEADER_COMMENT = re.compile(r"[|>][-+0-9]*#")
_KEY_INDICATOR = re.compile(r"(?:^|[\s\[\]{},])\?(?!\S)")


def _libyaml_may_parse(text: str) -> bool:
    """Whether libyaml's nodes for `text` can be taken for PyYAML's (the differential tests check it)."""
    if "\t" in text or "\ufeff" in text or text.startswith(("%", "---", "...")):
        return False
    if "?" in text and _KEY_INDICATOR.search(text) and _explicit_key(text):
        return False
    if "#" in text and _BLOCK_HEADER_COMMENT.search(text):
        return False
    return _DOCUMENT_LINE.search(text) is None


def _explicit_key(text: str) -> bool:
    """Whether libyaml's scanner reads an explicit key (`? `) in `text`, or cannot scan it: a `? ` inside a quoted
    or block scalar (C++'s `a ? b : c` in a check) is text, which both parsers read alike. Only a text where
    `_KEY_INDICATOR` finds a candidate pays for this scan (C, a few ms on an entry)."""
    try:
        for token in yaml.scan(text, Loader=cast("type[yaml.CSafeLoader]", _FAST_LOADER)):  # only libyaml's path asks
            if isinstance(token, yaml.KeyToken) and text[token.start_mark.index:token.start_mark.index + 1] == "?":
                return True
    except (yaml.YAMLError, UnicodeError, RecursionError):
        return True
    return False


class _Refused(Exception):
    """The fast path met something it leaves to `_load_checked` to report."""


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
                raise YAMLProblem("anchors and aliases (&, *) are not allowed", *_place(event, offset), "G104")
            tag = getattr(event, "tag", None)
            if tag is not None and tag != "!":
                raise YAMLProblem(f"explicit YAML tags ({tag}) are not allowed", *_place(event, offset), "G104")
            if kind in _NODE_EVENTS:
                key = bool(open_collections) and open_collections[-1]
                if open_collections and open_collections[-1] is not None:
                    open_collections[-1] = not key
                if not key and len(open_collections) > _MAX_DEPTH:
                    raise YAMLProblem("YAML nests too deeply", *_place(event, offset))
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


def _convert(node: yaml.Node, offset: int, depth: int, fast: str | None = None) -> Node:
    """Our nodes from PyYAML's; `fast` on the fast path: the text if it has a `&` or `!`, else "".

    On the fast path, a node that starts at `&` or `!` (an anchor or a tag: nothing else starts there) and
    a plain scalar libyaml reads otherwise in a flow collection are _Refused. Nodes are read in the
    document's order, so an anchor is refused before any alias of it is read twice (an alias is its
    anchor's node again: `a: &a [..]`, `b: [*a, *a, ..]` would expand).
    """
    mark = node.start_mark
    line = mark.line + 1 + offset
    column = mark.column + 1
    if depth > _MAX_DEPTH:
        raise YAMLProblem("YAML nests too deeply", line, column)
    if fast and fast.startswith(_PROPERTIES, mark.index):
        raise _Refused
    tag = node.tag
    if tag not in _SAFE_TAGS:
        raise YAMLProblem(f"unsupported YAML tag {tag}", line, column, "G104")
    if type(node) is yaml.MappingNode:
        if fast is not None and node.flow_style and _libyaml_reads_otherwise(node.value, True):
            raise _Refused
        values: dict[str, Node] = {}
        key_lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            key_mark = key_node.start_mark
            key_line = key_mark.line + 1 + offset
            if fast and fast.startswith(_PROPERTIES, key_mark.index):
                raise _Refused
            if type(key_node) is not yaml.ScalarNode or key_node.tag == _NULL:
                raise YAMLProblem("mapping keys must be plain words", key_line, key_mark.column + 1, "G203")
            key = str(key_node.value)
            if key in values:
                raise YAMLProblem(f"duplicate key {key!r} (first at line {key_lines[key]})", key_line,
                                  key_mark.column + 1, "G106")
            values[key] = _convert(value_node, offset, depth + 1, fast)
            key_lines[key] = key_line
        return Node(values, line, column, key_lines)
    if type(node) is yaml.SequenceNode:
        if fast is not None and node.flow_style and _libyaml_reads_otherwise(node.value, False):
            raise _Refused
        return Node([_convert(item, offset, depth + 1, fast) for item in node.value], line, column)
    if tag == _STR:
        return Node(node.value, line, column, raw=node.value)
    try:
        # the constructor itself: `construct_object` would keep every node it saw in `_SCALARS`, for good
        value = _SCALARS.yaml_constructors[tag](_SCALARS, node)
    except (yaml.constructor.ConstructorError, ValueError, OverflowError) as exc:
        raise YAMLProblem(f"bad value: {exc}", line, column, "G203") from None
    return Node(value, line, column, raw=node.value)


def _libyaml_reads_otherwise(items: list, pairs: bool) -> bool:
    """In a flow collection, PyYAML ends a plain scalar at a `?` (libyaml does not), and puts a value left
    out (`{a: }`) elsewhere."""
    for item in items:
        for node in item if pairs else (item,):
            if type(node) is yaml.ScalarNode and node.style == "" and (not node.value or "?" in node.value):
                return True
    return False
