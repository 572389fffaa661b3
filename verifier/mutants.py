"""The mutants of a Python file, made as text edits from tree-sitter's tree: edits that change what the code a
check matched means, and rewrites of the whole file that change nothing (`verifier.mutate` runs the checks on them).
Those of a C or C++ file are `verifier.mutants_cpp`'s (`meaning_mutants` hands a C or C++ form to it).

Meaning mutants: the literal changed, the comparison negated, the call renamed, a keyword argument dropped, the
statement deleted, two statements swapped... within the lines a holding verdict points at. Neutral mutants: the
file re-laid by ruff format and black at several line lengths, redundant parentheses, trailing commas, the other
quotes, comments between statements. A mutant that does not parse as well as the original is dropped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import tree_sitter

from ._nodes import node_bytes, node_field
from .code import _python
from .matchers import REGISTRY
from .model import Verdict, language_of

MEANING, NEUTRAL = "meaning", "neutral"
#: Mutants made from one check's matched code, at most.
MAX_MEANING = 40


@dataclass(frozen=True)
class Mutant:
    id: str  # stable within a run: "<path>:<line>:<operator>:<n>"
    kind: str  # meaning | neutral
    path: str
    description: str
    text: str  # the whole mutated file
    line: int = 0  # where the edit is (meaning mutants)


# --- meaning mutants ---------------------------------------------------------------------------------------

_SWAPS = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "is": "is not", "in": "not in",
          "and": "or", "or": "and", "+": "-", "-": "+"}


class _Edits:
    """Text edits of one file, each a mutant: (start byte, end byte, replacement, operator, description)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.found: list[tuple[int, int, bytes, str, str]] = []

    def add(self, start: int, end: int, new: bytes | str, operator: str, description: str) -> None:
        if isinstance(new, str):
            new = new.encode("utf-8")
        if self.data[start:end] != new:
            self.found.append((start, end, new, operator, description))


def meaning_mutants(form, verdict: Verdict, text: str) -> Iterator[Mutant]:
    """Mutants that change the meaning of the code a holding verdict points at (its lines); those of a C or C++
    file are `mutants_cpp`'s."""
    if language_of(verdict.path or form.path) == "cpp":
        from .mutants_cpp import meaning_mutants as cpp_mutants  # it builds on this module

        yield from cpp_mutants(form, verdict, text)
        return
    data = text.encode("utf-8")
    tree = _python.parse(data)
    if not verdict.lines:
        return
    low, high = _line_bytes(data, verdict.lines)
    edits = _Edits(data)
    how = REGISTRY[form.matcher].mutate if form.matcher in REGISTRY else "code"
    if how == "absent":
        yield from _absent_mutants(form, text, data, tree, low, high)
        return
    if how == "definition":
        for node in _nodes_within(tree.root_node, low, high):
            if node.type in ("function_definition", "class_definition"):
                name = node_field(node, "name")
                edits.add(name.start_byte, name.end_byte, node_bytes(name).decode() + "_mutated", "rename",
                          f"rename the definition {node_bytes(name).decode()}")
                break
    else:
        _expression_edits(tree.root_node, low, high, edits)
        _statement_edits(tree.root_node, low, high, data, edits, form)
    original_errors = tree.root_node.has_error
    # a mutant that is not Python any more is dropped: no claim can be judged on it
    yield from _distinct_mutants(form.path, data, edits.found,
                                 lambda mutated: _python.parse(mutated).root_node.has_error and not original_errors)


def _line_bytes(data: bytes, lines: tuple[int, int]) -> tuple[int, int]:
    """The byte range of lines first..last (1-based, the last whole)."""
    starts = [0] + [m.end() for m in re.finditer(b"\n", data)]
    first, last = lines
    low = starts[first - 1] if first - 1 < len(starts) else len(data)
    high = starts[last] if last < len(starts) else len(data)
    return low, high


def _distinct_mutants(path: str, data: bytes, found, damaged: Callable[[bytes], bool]) -> Iterator[Mutant]:
    """The meaning mutants of `data`, one per edit of `found` (start, end, new text, operator, description) in that
    order: a text already made, or one that `damaged` says no longer parses as the original does, is left out; at
    most `MAX_MEANING`. Python's and C/C++'s mutants differ only in the edits and in that test."""
    seen: set[bytes] = set()
    count = 0
    for start, end, new, operator, description in found:
        mutated = data[:start] + new + data[end:]
        if mutated in seen:
            continue
        seen.add(mutated)
        if damaged(mutated):
            continue
        line = data[:start].count(b"\n") + 1
        yield Mutant(f"{path}:{line}:{operator}:{count}", MEANING, path, description,
                     mutated.decode("utf-8", "replace"), line)
        count += 1
        if count >= MAX_MEANING:
            return


def _nodes_within(node: tree_sitter.Node, low: int, high: int) -> Iterator[tree_sitter.Node]:
    """Nodes that lie within [low, high), outermost first."""
    if node.end_byte <= low or node.start_byte >= high:
        return
    if node.start_byte >= low and node.end_byte <= high:
        yield node
    for child in node.children:
        yield from _nodes_within(child, low, high)


def _expression_edits(root: tree_sitter.Node, low: int, high: int, edits: _Edits) -> None:
    for node in _nodes_within(root, low, high):
        kind = node.type
        text = node_bytes(node).decode("utf-8", "replace")
        if kind == "integer":
            value = _int(text)
            if value is not None:
                edits.add(node.start_byte, node.end_byte, str(value + 1 if value != 1 else 0), "literal",
                          f"change the number {text} to {value + 1 if value != 1 else 0}")
        elif kind == "float":
            edits.add(node.start_byte, node.end_byte, text + "5" if "e" not in text.lower() else "2.0", "literal",
                      f"change the number {text}")
        elif kind in ("true", "false"):
            edits.add(node.start_byte, node.end_byte, "False" if kind == "true" else "True", "literal",
                      f"flip {text}")
        elif kind == "none":
            edits.add(node.start_byte, node.end_byte, "0", "literal", "change None to 0")
        elif kind == "string" and node.parent is not None and node.parent.type != "concatenated_string":
            content = [c for c in node.named_children if c.type == "string_content"]
            if content:  # in the middle of its text, where a claim about part of it most likely looks
                piece = content[len(content) // 2]
                middle = node_bytes(piece).decode("utf-8", "replace")
                at = piece.start_byte + len(middle[:len(middle) // 2].encode("utf-8"))
                edits.add(at, at, "_mutated_", "literal", f"change the string {text[:40]}")
        elif kind in ("comparison_operator", "boolean_operator", "binary_operator"):
            for child in node.children:
                op = child.type if not child.is_named else None
                if op in _SWAPS and (kind != "binary_operator" or op in ("+", "-")):
                    edits.add(child.start_byte, child.end_byte, _SWAPS[op], "operator",
                              f"swap `{op}` for `{_SWAPS[op]}`")
            if kind == "comparison_operator":  # `is not` / `not in` are two tokens
                ops = [c for c in node.children if not c.is_named]
                for a, b in zip(ops, ops[1:]):
                    pair = f"{a.type} {b.type}"
                    if pair in ("is not", "not in"):
                        edits.add(a.start_byte, b.end_byte, "is" if pair == "is not" else "in", "operator",
                                  f"swap `{pair}` for `{'is' if pair == 'is not' else 'in'}`")
        elif kind == "not_operator":
            argument = node.child_by_field_name("argument")
            if argument is not None:
                edits.add(node.start_byte, node.end_byte, node_bytes(argument), "operator", "drop `not`")
        elif kind == "call":
            function = node.child_by_field_name("function")
            target = function.child_by_field_name("attribute") if function is not None and \
                function.type == "attribute" else function
            if target is not None and target.type == "identifier":
                name = node_bytes(target).decode("utf-8", "replace")
                other = {"max": "min", "min": "max"}.get(name, name + "_mutated")
                edits.add(target.start_byte, target.end_byte, other, "call", f"call {other} instead of {name}")
            arguments = node.child_by_field_name("arguments")
            if arguments is not None and arguments.type == "argument_list":
                for argument in arguments.named_children:
                    if argument.type == "keyword_argument":
                        start, end = _with_comma(argument)
                        edits.add(start, end, "", "keyword",
                                  f"drop the keyword argument {node_bytes(argument).decode('utf-8', 'replace')[:40]}")
        elif kind == "attribute" and (node.parent is None or node.parent.type != "call"
                                      or node.parent.child_by_field_name("function") != node):
            attribute = node.child_by_field_name("attribute")
            if attribute is not None:
                name = node_bytes(attribute).decode("utf-8", "replace")
                edits.add(attribute.start_byte, attribute.end_byte, name + "_mutated", "attribute",
                          f"read .{name}_mutated instead of .{name}")


def _with_comma(node: tree_sitter.Node) -> tuple[int, int]:
    """The byte range of an argument with the comma that separates it from the next (or the previous)."""
    following = node.next_sibling
    if following is not None and following.type == ",":
        return node.start_byte, following.end_byte
    preceding = node.prev_sibling
    if preceding is not None and preceding.type == ",":
        return preceding.start_byte, node.end_byte
    return node.start_byte, node.end_byte


def _statement_edits(root: tree_sitter.Node, low: int, high: int, data: bytes, edits: _Edits, form) -> None:
    statements = []
    for node in _nodes_within(root, low, high):
        if node.parent is not None and node.parent.type in ("block", "module") and node.is_named \
                and node.type != "comment":
            statements.append(node)
    if not statements:  # the match is inside one statement: that statement
        statement = _python.statement_at(root, low + (len(data[low:high]) - len(data[low:high].lstrip())))
        statements = [statement] if statement is not None else []
    for statement in statements:
        edits.add(statement.start_byte, statement.end_byte, "pass", "delete", "delete the statement "
                  + node_bytes(statement).decode("utf-8", "replace").split("\n")[0][:60])
    if form.after is not None and statements:  # the order the check claims: swap it with the statement before
        first = statements[0]
        previous = first.prev_named_sibling
        while previous is not None and previous.type == "comment":
            previous = previous.prev_named_sibling
        if previous is not None:
            statements = [previous, *statements]
    for a, b in zip(statements, statements[1:]):
        if a.parent is not None and b.parent is not None and a.parent.id == b.parent.id and a.end_byte <= b.start_byte:
            between = data[a.end_byte:b.start_byte]
            edits.add(a.start_byte, b.end_byte, node_bytes(b) + between + node_bytes(a), "swap",
                      "swap two statements: " + node_bytes(a).decode("utf-8", "replace").split("\n")[0][:40])


def _absent_mutants(form, text: str, data: bytes, tree, low: int, high: int) -> Iterator[Mutant]:
    """For `absent`: the code it says is not there, put at the start of its scope's body."""
    scope = None
    for node in _nodes_within(tree.root_node, low, high):
        if node.type in ("function_definition", "class_definition"):
            scope = node.child_by_field_name("body")
            break
    if scope is None or not scope.named_children:
        return
    first = scope.named_children[0]
    indent = data[data.rfind(b"\n", 0, first.start_byte) + 1:first.start_byte]
    if indent.strip():
        return
    line = f"{form.pattern.replace('$$$', '').strip()}\n".encode()
    mutated = data[:first.start_byte] + line + indent + data[first.start_byte:]
    if _python.parse(mutated).root_node.has_error and not tree.root_node.has_error:
        line = f"_ = {form.pattern.replace('$$$', '').strip()}\n".encode()
        mutated = data[:first.start_byte] + line + indent + data[first.start_byte:]
        if _python.parse(mutated).root_node.has_error:
            return
    line_number = data[:first.start_byte].count(b"\n") + 1
    yield Mutant(f"{form.path}:{line_number}:insert:0", MEANING, form.path,
                 "put the code the check says is absent into its scope", mutated.decode("utf-8", "replace"),
                 line_number)


def _int(text: str) -> int | None:
    try:
        return int(text.replace("_", ""), 0)
    except ValueError:
        return None


# --- neutral mutants ---------------------------------------------------------------------------------------

def default_formatters() -> dict[str, list[str]]:
    """ruff format and black at several line lengths, where they are installed (the `test` extra has both)."""
    found: dict[str, list[str]] = {}
    for name, module, args in (("ruff", "ruff", ["format", "--quiet"]), ("black", "black", ["--quiet"])):
        try:
            ok = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ok.returncode != 0:
            continue
        for length in (40, 88, 200):
            found[f"{name} --line-length {length}"] = [sys.executable, "-m", module, *args, "--line-length",
                                                       str(length)]
        if name == "ruff":
            found["ruff --line-length 40, skip-magic-trailing-comma"] = [
                sys.executable, "-m", "ruff", "format", "--quiet", "--line-length", "40", "--config",
                "format.skip-magic-trailing-comma = true"]
    return found


def neutral_mutants(path: str, text: str, formatters: dict[str, list[str]] | None = None) -> Iterator[Mutant]:
    """The file re-laid, with redundant parentheses, trailing commas, the other quotes, and comments between its
    statements: nothing that changes what it says."""
    data = text.encode("utf-8")
    tree = _python.parse(data)
    had_error = tree.root_node.has_error
    for description, mutated in _rewrites(tree.root_node, data):
        if mutated != data and (had_error or not _python.parse(mutated).root_node.has_error):
            yield Mutant(f"{path}:{description}", NEUTRAL, path, description, mutated.decode("utf-8", "replace"))
    for name, command in (formatters if formatters is not None else default_formatters()).items():
        relaid = _format(command, text)
        if relaid is not None and relaid != text:
            yield Mutant(f"{path}:{name}", NEUTRAL, path, f"re-laid by {name}", relaid)


def _rewrites(root: tree_sitter.Node, data: bytes) -> Iterator[tuple[str, bytes]]:
    parens, commas, quotes, comments = [], [], [], []
    for node in _walk(root, into=lambda n: n.type != "string"):  # an f-string's fields are its text, not code
        kind = node.type
        if kind == "assignment":
            right = node.child_by_field_name("right")
            if right is not None and right.type not in ("expression_list", "tuple", "assignment", "yield",
                                                        "parenthesized_expression", "pattern_list"):
                parens.append((right.start_byte, right.start_byte, b"("))
                parens.append((right.end_byte, right.end_byte, b")"))
        elif kind == "argument_list" and node.named_child_count and node.children[-1].type == ")":
            last = node.children[-2] if node.child_count >= 2 else None
            if last is not None and last.type != "," and last.type not in ("comment",) \
                    and not any(c.type == "generator_expression" for c in node.named_children):
                commas.append((last.end_byte, last.end_byte, b","))
        elif kind == "string" and node.parent is not None and node.parent.type != "concatenated_string":
            raw = node_bytes(node)
            if raw[:1] in (b"'", b'"') and raw[-1:] == raw[:1] and not raw.startswith((b"'''", b'"""')):
                body = raw[1:-1]
                other = b'"' if raw[:1] == b"'" else b"'"
                if other not in body and b"\\" not in body:
                    quotes.append((node.start_byte, node.end_byte, other + body + other))
        elif kind == "block":
            for statement in node.named_children:
                if statement.type == "comment":
                    continue
                start = data.rfind(b"\n", 0, statement.start_byte) + 1
                indent = data[start:statement.start_byte]
                if not indent.strip():
                    comments.append((start, start, indent + b"# a comment that changes nothing\n"))
    for description, edits in (("redundant parentheses around every assigned value", parens),
                               ("a trailing comma in every call", commas),
                               ("the other quotes on every simple string", quotes),
                               ("a comment before every statement of every block", comments)):
        if edits:
            yield description, _apply(data, edits)


def _walk(node: tree_sitter.Node, into: Callable[[tree_sitter.Node], bool] = lambda n: True
          ) -> Iterator[tree_sitter.Node]:
    """Every node under `node` in source order, not below those that `into` refuses (themselves included)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if into(current):
            stack.extend(reversed(current.children))


def _apply(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out, at = [], 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < at:
            continue
        out.append(data[at:start])
        out.append(new)
        at = end
    out.append(data[at:])
    return b"".join(out)


def _format(command: list[str], text: str) -> str | None:
    folder = Path(tempfile.mkdtemp(prefix="gotchas-mutate-"))
    try:
        target = folder / "module.py"
        target.write_text(text, encoding="utf-8")
        done = subprocess.run([*command, str(target)], capture_output=True, timeout=120)
        return target.read_text(encoding="utf-8") if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
