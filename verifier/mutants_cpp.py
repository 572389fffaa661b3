"""The mutants of a C or C++ file (llama.cpp's, #30), made as text edits from tree-sitter-cpp's tree as the matchers
read it (`_cpp.parse`, which masks `PRId64`-style macros): `verifier.mutants` does the same for Python files, and
`verifier.mutate` runs the checks on both.

Meaning mutants, within the lines a holding verdict points at: a number or string literal changed (`true` and
`false` swapped, `4096` to `4097`, `1` to `0`, a string's text altered), a binary or comparison operator swapped
(`==`/`!=`, `<`/`>=`, `&&`/`||`, `+`/`-`, `/`/`*`), `!` dropped or put before a condition, the branches of `?:`
swapped, a call's name changed, an argument dropped, an initialized or assigned value that names something
(`= LLAMA_POOLING_TYPE_UNSPECIFIED`) renamed, a member access renamed, a statement deleted, two adjacent
statements swapped; for `absent`, the code it says is not there put into its scope; for `defines`, the definition
renamed. A meaning mutant with more ERROR or MISSING nodes than the original is dropped: its verdicts would judge
the parser, not the check.

Neutral mutants: comments between statements, and the file re-laid by clang-format (the `test` extra's wheel) in
several styles and the engine's own `.clang-format`. Only layout: every option that rewrites tokens is turned off
(`_LAYOUT_ONLY`: braces inserted or removed, qualifiers moved, includes and using-declarations sorted, string
literals split, parentheses, semicolons, digit separators), since the C++ comparison is documented not to ignore
those (CONTRIBUTING.md, "C and C++ files"); a verdict that changes on what is left is a bug of the matcher.
Where CONTRIBUTING.md documents that the comparison ignores them (`IGNORED`), also redundant parentheses around
initialized and assigned values (`x = (0);`, not around one that holds a comma) and a trailing comma before the `}`
of initializer and enumerator lists. Neutral mutants are kept even where they parse worse. Without clang-format,
the re-layouts are skipped, with a note (`CLANG_FORMAT_MISSING`).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import tree_sitter

from ._nodes import node_field, node_parent
from .code import _cpp
from .matchers import REGISTRY
from .model import Verdict
from .mutants import MEANING, NEUTRAL, Mutant, _apply, _distinct_mutants, _Edits, _line_bytes, _nodes_within, _walk

#: The note a report gets when no clang-format binary is found.
CLANG_FORMAT_MISSING = ("clang-format is not installed: the C and C++ files were not re-laid "
                        "(it is in the `test` extra: pip install -e '.[test]')")

_SWAPS = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "&&": "||", "||": "&&",
          "+": "-", "-": "+", "/": "*", "*": "/", "+=": "-=", "-=": "+="}
_OTHER_CALL = {"max": "min", "min": "max"}
# Where statements (or member declarations) follow one another: a statement is a named child of one of these.
_BLOCKS = ("compound_statement", "case_statement", "field_declaration_list", "declaration_list", "translation_unit")
# Of those, where a deleted statement leaves an empty statement `;` (elsewhere: nothing).
_STATEMENT_BLOCKS = ("compound_statement", "case_statement")
_NOT_STATEMENTS = ("comment", "access_specifier")
_CONDITIONS = ("if_statement", "while_statement", "do_statement", "for_statement", "conditional_expression")
_INT = re.compile(r"(-?)(0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*)([uUlLzZ]*)")
_FLOAT = re.compile(r"(-?)(\d[\d']*\.[\d']*|\.\d[\d']*)([fFlL]?)")


def parse_damage(data: bytes) -> int:
    """How many ERROR and MISSING nodes the tree of `data` has, as the matchers parse it."""
    return _damage(_cpp.parse(data).root_node)


def _damage(root: tree_sitter.Node) -> int:
    count, stack = 0, [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        if node.has_error:  # only where an error is: the rest of a large file is not walked
            stack.extend(node.children)
    return count


# --- meaning mutants ---------------------------------------------------------------------------------------

def meaning_mutants(form, verdict: Verdict, text: str) -> Iterator[Mutant]:
    """Mutants that change the meaning of the C or C++ code a holding verdict points at (its lines)."""
    if not verdict.lines:
        return
    data = text.encode("utf-8")
    tree = _cpp.parse(data)
    low, high = _line_bytes(data, verdict.lines)
    damage = _damage(tree.root_node)
    how = REGISTRY[form.matcher].mutate if form.matcher in REGISTRY else "code"
    if how == "absent":
        yield from _absent_mutants(form, data, tree.root_node, low, high, damage)
        return
    edits = _Edits(data)
    if how == "definition":
        _definition_edits(tree.root_node, low, high, data, edits)
    else:
        _expression_edits(tree.root_node, low, high, data, edits)
        _statement_edits(tree.root_node, low, high, data, edits, form)
    # a mutant that is not C++ as the original is (more parse damage) is dropped: no claim can be judged on it
    yield from _distinct_mutants(form.path, data, _interleaved(edits.found),
                                 lambda mutated: parse_damage(mutated) > damage)


def _interleaved(found: list) -> list:
    """The edits one operator after another (a literal, an operator, a call, ..., then the next literal...), each
    operator's in file order: when there are more than `MAX_MEANING`, every kind of change is still tried."""
    groups: dict[str, list] = {}
    for edit in found:
        groups.setdefault(edit[3], []).append(edit)
    out = []
    while any(groups.values()):
        for items in groups.values():
            if items:
                out.append(items.pop(0))
    return out


def _source(data: bytes, node: tree_sitter.Node) -> str:
    """A node's text in the file as written (`_cpp.parse` reads a masked copy: `node.text` may differ)."""
    return data[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _expression_edits(root: tree_sitter.Node, low: int, high: int, data: bytes, edits: _Edits) -> None:
    for node in _nodes_within(root, low, high):
        kind = node.type
        if kind == "number_literal":
            _number_edit(node, data, edits)
        elif kind in ("true", "false"):
            edits.add(node.start_byte, node.end_byte, "false" if kind == "true" else "true", "literal",
                      f"flip {kind}")
        elif kind in ("string_literal", "raw_string_literal") and node.parent is not None \
                and node.parent.type != "concatenated_string":
            _string_edit(node, data, edits)
        elif kind == "concatenated_string":
            piece = _middle_piece(node, data)
            if piece is not None:
                _string_edit(piece, data, edits, _source(data, node))
        elif kind in ("binary_expression", "assignment_expression"):
            operator = node.child_by_field_name("operator")
            op = operator.type if operator is not None else None
            if operator is not None and op in _SWAPS and (kind == "binary_expression" or op in ("+=", "-=")):
                edits.add(operator.start_byte, operator.end_byte, _SWAPS[op], "operator",
                          f"swap `{op}` for `{_SWAPS[op]}`")
            if kind == "assignment_expression":
                _value_edit(node.child_by_field_name("right"), data, edits)
        elif kind == "unary_expression":
            operator = node.child_by_field_name("operator")
            argument = node.child_by_field_name("argument")
            if operator is not None and operator.type in ("!", "not") and argument is not None:
                edits.add(node.start_byte, node.end_byte, _source(data, argument), "operator", "drop `!`")
        elif kind == "call_expression":
            _call_edits(node, data, edits)
        elif kind == "field_expression":
            parent = node.parent
            field = node.child_by_field_name("field")
            called = parent is not None and parent.type == "call_expression" \
                and parent.child_by_field_name("function") == node
            if field is not None and field.type == "field_identifier" and not called:
                name = _source(data, field)
                edits.add(field.start_byte, field.end_byte, name + "_mutated", "member",
                          f"read .{name}_mutated instead of .{name}")
        elif kind in ("field_declaration", "init_declarator"):
            _value_edit(node.child_by_field_name("default_value" if kind == "field_declaration" else "value"),
                        data, edits)
        elif kind == "conditional_expression":
            yes, no = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
            if yes is not None and no is not None:
                edits.add(yes.start_byte, no.end_byte, _source(data, no) + data[yes.end_byte:no.start_byte].decode(
                    "utf-8", "replace") + _source(data, yes), "branches", "swap the two branches of `?:`")
        if kind in _CONDITIONS:
            _negate_condition(node, data, edits)


def _number_edit(node: tree_sitter.Node, data: bytes, edits: _Edits) -> None:
    text = _source(data, node)
    whole = _INT.fullmatch(text)
    if whole is not None:
        sign, digits, suffix = whole.groups()
        try:
            value = int(sign + digits.replace("'", ""), 0)
        except ValueError:  # 0755: octal, which int(.., 0) refuses
            value = int(sign + digits.replace("'", ""), 8)
        other = value + 1 if value != 1 else 0
        edits.add(node.start_byte, node.end_byte, f"{other}{suffix}", "literal",
                  f"change the number {text} to {other}{suffix}")
        return
    point = _FLOAT.fullmatch(text)
    new = f"{point.group(1)}{point.group(2)}5{point.group(3)}" if point is not None else "2.0"
    edits.add(node.start_byte, node.end_byte, new, "literal", f"change the number {text} to {new}")


def _middle_piece(node: tree_sitter.Node, data: bytes) -> tree_sitter.Node | None:
    """The literal of adjacent ones (`"a %" PRId64 " b"`) that holds the middle of their joined text, where a
    claim about part of it most likely looks; a format macro (masked by `_cpp.parse`) is never one."""
    pieces = [p for p in node.named_children if p.type.endswith("string_literal")
              and data[p.start_byte:p.end_byte] == p.text]
    if not pieces:
        return None
    half = sum(p.end_byte - p.start_byte for p in pieces) // 2
    for piece in pieces:
        half -= piece.end_byte - piece.start_byte
        if half < 0:
            return piece
    return pieces[-1]


def _string_edit(node: tree_sitter.Node, data: bytes, edits: _Edits, whole: str | None = None) -> None:
    """`_mutated_` in the middle of the literal's text (after its opening quote when it has none)."""
    if data[node.start_byte:node.end_byte] != node.text:
        return  # a format macro that `_cpp.parse` reads as a literal: not a string of the file
    kinds = ("raw_string_content",) if node.type == "raw_string_literal" else ("string_content",)
    content = [c for c in node.named_children if c.type in kinds]
    if content:
        piece = content[len(content) // 2]
        middle = _source(data, piece)
        at = piece.start_byte + len(middle[:len(middle) // 2].encode("utf-8"))
    elif node.type == "string_literal" and node.children and node.children[0].type == '"':
        at = node.children[0].end_byte
    else:
        return
    shown = (whole if whole is not None else _source(data, node))[:40]
    edits.add(at, at, "_mutated_", "literal", f"change the string {shown}")


def _call_edits(node: tree_sitter.Node, data: bytes, edits: _Edits) -> None:
    target = _called_name(node.child_by_field_name("function"))
    if target is not None:
        name = _source(data, target)
        other = _OTHER_CALL.get(name, name + "_mutated")
        edits.add(target.start_byte, target.end_byte, other, "call", f"call {other} instead of {name}")
    arguments = node.child_by_field_name("arguments")
    if arguments is not None and arguments.type == "argument_list":
        for argument in arguments.named_children:
            if argument.type != "comment":
                start, end = _with_comma(argument, data)
                shown = " ".join(_source(data, argument).split())[:40]
                edits.add(start, end, "", "argument", f"drop the argument {shown}")


def _called_name(function: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The identifier a call names: `f`, `std::min`'s `min`, `a.b`'s or `a->b`'s `b`, `g<int>`'s `g`."""
    node = function
    while node is not None:
        if node.type in ("identifier", "field_identifier"):
            return node
        if node.type == "qualified_identifier":
            node = node.child_by_field_name("name")
        elif node.type == "field_expression":
            node = node.child_by_field_name("field")
        elif node.type == "template_function" or node.type == "template_method":
            node = node.child_by_field_name("name")
        else:
            return None
    return None


def _with_comma(node: tree_sitter.Node, data: bytes) -> tuple[int, int]:
    """The byte range of an argument with the comma that separates it from the next (or the previous)."""
    following = node.next_sibling
    while following is not None and following.type == "comment":
        following = following.next_sibling
    if following is not None and following.type == ",":
        end = following.end_byte
        while end < len(data) and data[end:end + 1] in (b" ", b"\t"):
            end += 1  # `f(a, b)` without `a, ` is `f(b)`
        return node.start_byte, end
    preceding = node.prev_sibling
    while preceding is not None and preceding.type == "comment":
        preceding = preceding.prev_sibling
    if preceding is not None and preceding.type == ",":
        return preceding.start_byte, node.end_byte
    return node.start_byte, node.end_byte


def _value_edit(value: tree_sitter.Node | None, data: bytes, edits: _Edits) -> None:
    """An initialized or assigned value that names something (`= LLAMA_POOLING_TYPE_UNSPECIFIED`,
    `= SLOT_STATE_IDLE`, `= common_speculative_type::NONE`): another name. Literals change as literals, calls as
    calls."""
    if value is None:
        return
    node = value
    while node.type == "qualified_identifier" and node.child_by_field_name("name") is not None:
        node = node_field(node, "name")
    if node.type == "identifier":
        name = _source(data, node)
        edits.add(node.start_byte, node.end_byte, name + "_mutated", "value",
                  f"give {name}_mutated instead of {name}")


def _negate_condition(node: tree_sitter.Node, data: bytes, edits: _Edits) -> None:
    """`!` before the condition of an `if`, a loop or a `?:` (not where one is already: dropping it is the
    mutant)."""
    condition = node.child_by_field_name("condition")
    if condition is not None and condition.type == "condition_clause":
        condition = condition.child_by_field_name("value")
    if condition is None or not condition.type.endswith("expression") and condition.type not in (
            "identifier", "call_expression", "field_expression", "qualified_identifier"):
        return  # a declaration (`if (auto x = f())`), or no condition (`for (;;)`)
    if condition.type == "unary_expression" and condition.child(0) is not None and condition.child(0).type == "!":
        return
    edits.add(condition.start_byte, condition.end_byte, f"!({_source(data, condition)})", "negate",
              f"negate the condition {' '.join(_source(data, condition).split())[:40]}")


def _statement_edits(root: tree_sitter.Node, low: int, high: int, data: bytes, edits: _Edits, form) -> None:
    statements = [node for node in _nodes_within(root, low, high) if _is_statement(node)]
    if not statements:  # the match is inside one statement: that statement
        at = low + (len(data[low:high]) - len(data[low:high].lstrip()))
        statement = _statement_at(root, at)
        statements = [statement] if statement is not None else []
    for statement in statements:
        gone = ";" if node_parent(statement).type in _STATEMENT_BLOCKS else ""
        edits.add(statement.start_byte, statement.end_byte, gone, "delete",
                  "delete the statement " + _source(data, statement).split("\n")[0][:60])
    if form.after is not None and statements:  # the order the check claims: swap it with the statement before
        previous = statements[0].prev_named_sibling
        while previous is not None and not _is_statement(previous):
            previous = previous.prev_named_sibling
        if previous is not None:
            statements = [previous, *statements]
    for a, b in zip(statements, statements[1:]):
        if node_parent(a).id == node_parent(b).id and a.end_byte <= b.start_byte:
            between = data[a.end_byte:b.start_byte]
            edits.add(a.start_byte, b.end_byte, data[b.start_byte:b.end_byte] + between
                      + data[a.start_byte:a.end_byte], "swap",
                      "swap two statements: " + _source(data, a).split("\n")[0][:40])


def _is_statement(node: tree_sitter.Node) -> bool:
    parent = node.parent
    if parent is None or parent.type not in _BLOCKS or not node.is_named or node.type in _NOT_STATEMENTS:
        return False
    return not (parent.type == "case_statement" and parent.child_by_field_name("value") == node)


def _statement_at(root: tree_sitter.Node, byte: int) -> tree_sitter.Node | None:
    """The innermost statement (or member declaration) holding `byte`."""
    node = root.descendant_for_byte_range(byte, byte + 1)
    while node is not None and not _is_statement(node):
        node = node.parent
    return node


def _definition_edits(root: tree_sitter.Node, low: int, high: int, data: bytes, edits: _Edits) -> None:
    """For `defines`: the first definition in the lines renamed."""
    for node in _nodes_within(root, low, high):
        name = _defined_name(node)
        if name is not None:
            text = _source(data, name)
            edits.add(name.start_byte, name.end_byte, text + "_mutated", "rename", f"rename the definition {text}")
            return


def _defined_name(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The name node of what a definition defines (its last part, for `server_context::update_slots`)."""
    if node.type in _cpp.CONTAINERS or node.type in ("enumerator", "alias_declaration", "type_definition"):
        name = node.child_by_field_name("name")
    elif node.type in ("function_definition", "field_declaration", "declaration"):
        name = node.child_by_field_name("declarator")
    else:
        return None
    while name is not None and name.type not in ("identifier", "field_identifier", "type_identifier",
                                                 "namespace_identifier", "destructor_name", "operator_name"):
        if name.type in ("qualified_identifier", "template_function", "template_type"):
            name = name.child_by_field_name("name")
        elif name.type == "function_declarator" or name.type in _cpp._WRAPPERS:
            name = name.child_by_field_name("declarator") or next(
                (c for c in name.named_children if c.type.endswith(("declarator", "identifier"))), None)
        else:
            return None
    return name


_META = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _absent_mutants(form, data: bytes, root: tree_sitter.Node, low: int, high: int, damage: int
                    ) -> Iterator[Mutant]:
    """For `absent`: the code it says is not there, put at the start of its scope's body (a function's or a
    class's); each `$NAME` written as a name (it binds any one token), `$$$` left out."""
    body = None
    for node in _nodes_within(root, low, high):
        if node.type == "function_definition" or node.type in _cpp.CONTAINERS:
            body = node.child_by_field_name("body")
            if body is not None and body.children and body.children[0].type == "{":
                break
            body = None
    if body is None:
        return
    code = _META.sub(lambda m: "mutated_" + m.group(1).lower(), form.pattern.replace("$$$", "")).strip()
    at = body.children[0].end_byte
    for written in (code, code + ";"):
        mutated = data[:at] + b"\n" + written.encode("utf-8") + b"\n" + data[at:]
        if parse_damage(mutated) <= damage:
            line = data[:at].count(b"\n") + 2
            yield Mutant(f"{form.path}:{line}:insert:0", MEANING, form.path,
                         "put the code the check says is absent into its scope", mutated.decode("utf-8", "replace"),
                         line)
            return


# --- neutral mutants ---------------------------------------------------------------------------------------

#: clang-format options that rewrite tokens rather than lay them out, each turned off: the C++ comparison does not
#: ignore what they change (braces, the place of `const`, the order of includes and using-declarations, a string
#: split into adjacent literals, parentheses, semicolons, digit separators).
_LAYOUT_ONLY = {"InsertBraces": "false", "RemoveBracesLLVM": "false", "QualifierAlignment": "Leave",
                "SortIncludes": "Never", "SortUsingDeclarations": "Never", "BreakStringLiterals": "false",
                "RemoveParentheses": "Leave", "RemoveSemicolon": "false",
                "IntegerLiteralSeparator": "{Binary: 0, Decimal: 0, Hex: 0}"}
#: The styles a C or C++ file is re-laid in: clang-format's own, narrow and wide.
STYLES = {"LLVM": {}, "Google": {}, "Chromium": {}, "Mozilla": {}, "WebKit": {},
          "LLVM, ColumnLimit 40": {"ColumnLimit": "40"}, "LLVM, ColumnLimit 200": {"ColumnLimit": "200"},
          "Google, ColumnLimit 40": {"ColumnLimit": "40"}}
#: The name of the re-layout in the engine's own style file.
OWN_STYLE = "the engine's .clang-format"


@functools.lru_cache(maxsize=1)
def clang_format() -> str | None:
    """The clang-format binary: next to the interpreter (where the `test` extra's wheel installs it), the
    `clang_format` package's, or on the PATH; None when none runs."""
    candidates = [str(Path(sys.executable).with_name("clang-format"))]
    try:
        import clang_format as package
    except ImportError:
        package = None
    if package is not None and hasattr(package, "get_executable"):
        candidates.append(package.get_executable("clang-format"))
    candidates.append(shutil.which("clang-format") or "")
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            try:
                done = subprocess.run([candidate, "--version"], capture_output=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                return candidate
    return None


def style(based_on: str, options: dict[str, str]) -> str:
    """A `--style` value: a predefined style with `options` and every token-rewriting option off."""
    settings = {**options, **_LAYOUT_ONLY}
    return "{" + ", ".join([f"BasedOnStyle: {based_on}", *(f"{k}: {v}" for k, v in settings.items())]) + "}"


def default_formatters() -> dict[str, list[str]]:
    """clang-format in `STYLES`, layout only (`_LAYOUT_ONLY`); empty when clang-format is not installed."""
    binary = clang_format()
    if binary is None:
        return {}
    return {f"clang-format {name}": [binary, f"--style={style(name.split(',')[0], options)}", "--sort-includes=false"]
            for name, options in STYLES.items()}


def layout_only_style_file(text: str) -> str:
    """A `.clang-format` file's text with every token-rewriting option (`_LAYOUT_ONLY`) off: each written one is
    left out (with its nested lines), and the off values are put at the start of every document."""
    lines = text.splitlines()
    key = re.compile(r"(" + "|".join(_LAYOUT_ONLY) + r")\s*:")
    kept: list[str] = []
    skipping = False
    for line in lines:
        if skipping and (line[:1].isspace() or line[:1] == "-") and line.strip():
            continue  # a nested line of a left-out option
        skipping = bool(key.match(line))
        if not skipping:
            kept.append(line)
    overrides = [f"{k}: {v}" for k, v in _LAYOUT_ONLY.items()]
    out: list[str] = []
    if not kept or kept[0].strip() != "---":
        out.extend(overrides)
    for line in kept:
        out.append(line)
        if line.strip() == "---":
            out.extend(overrides)
    return "\n".join(out) + "\n"


def neutral_mutants(path: str, text: str, formatters: dict[str, list[str]] | None = None,
                    style_file: str | None = None) -> Iterator[Mutant]:
    """The file with a comment before each of its statements, and re-laid by each formatter (and in the engine's
    own `style_file`, the text of its `.clang-format`, when given and clang-format is installed)."""
    data = text.encode("utf-8")
    # Kept even where they parse worse than the original (unlike meaning mutants): a comment is valid C++
    # between any two statements, and what clang-format writes is as valid as what it read; if the matchers'
    # parse reads one worse (`_cpp.masked`'s macros), a verdict it changes is the matcher's to answer for.
    for description, mutated in _rewrites(_cpp.parse(data).root_node, data):
        if mutated != data:
            yield Mutant(f"{path}:{description}", NEUTRAL, path, description, mutated.decode("utf-8", "replace"))
    commands = dict(formatters if formatters is not None else default_formatters())
    binary = clang_format()
    folder = None
    try:
        if style_file is not None and binary is not None:
            folder = Path(tempfile.mkdtemp(prefix="gotchas-mutate-"))
            (folder / "style").write_text(layout_only_style_file(style_file), encoding="utf-8")
            commands[f"clang-format, {OWN_STYLE}"] = [binary, f"--style=file:{folder / 'style'}",
                                                      "--sort-includes=false"]
        for name, command in commands.items():
            relaid = _format(command, path, data)
            if relaid is not None and relaid != data:
                yield Mutant(f"{path}:{name}", NEUTRAL, path, f"re-laid by {name}", relaid.decode("utf-8", "replace"))
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


#: What the C++ comparison ignores beyond layout and comments, as CONTRIBUTING.md documents it (the table of what
#: the comparison of C and C++ code ignores): the rewrite of each is a neutral mutant only while it is documented.
IGNORED = {"parentheses": True, "trailing commas": True}
# The values a pair around which groups nothing, as the table documents it: names, literals, calls, members and
# operators (not a lambda, a `T{...}`, an initializer list or a constructor's `(...)`, where it says nothing); and
# none that holds a comma anywhere in its text, whose pair is kept (a macro's argument would split there).
_PAREN_VALUES = frozenset("""identifier qualified_identifier field_expression subscript_expression call_expression
    template_function number_literal string_literal concatenated_string raw_string_literal char_literal true false
    null nullptr this unary_expression pointer_expression binary_expression conditional_expression cast_expression
    sizeof_expression update_expression""".split())


def _rewrites(root: tree_sitter.Node, data: bytes) -> Iterator[tuple[str, bytes]]:
    """Comments before every statement of every block, on a line of their own and inside the line; and, where
    the comparison ignores them (`IGNORED`), redundant parentheses around every initialized or assigned value and a
    trailing comma before the `}` of every initializer and enumerator list."""
    lines, inline, parens, commas = [], [], [], []
    for node in _walk(root, into=lambda n: not n.type.endswith("string_literal")):
        if node.type in ("init_declarator", "field_declaration", "assignment_expression"):
            value = node.child_by_field_name({"init_declarator": "value", "field_declaration": "default_value",
                                              "assignment_expression": "right"}[node.type])
            declarator = node.child_by_field_name("declarator")
            if value is not None and value.type in _PAREN_VALUES and not value.has_error \
                    and b"," not in data[value.start_byte:value.end_byte] \
                    and (declarator is None or declarator.type != "array_declarator"):  # `char s[] = ("x")`: no
                parens += [(value.start_byte, value.start_byte, b"("), (value.end_byte, value.end_byte, b")")]
        elif node.type in ("initializer_list", "enumerator_list") and node.named_child_count:
            last = node.children[-2] if node.child_count >= 3 and node.children[-1].type == "}" else None
            if last is not None and last.type not in (",", "comment", "{") and not node.has_error:
                commas.append((last.end_byte, last.end_byte, b","))
        if not _is_statement(node) or node_parent(node).type == "translation_unit":
            continue
        start = data.rfind(b"\n", 0, node.start_byte) + 1
        indent = data[start:node.start_byte]
        if not indent.strip() and not data[:start].rstrip().endswith(b"\\"):  # not inside a macro's lines
            lines.append((start, start, indent + b"// a comment that changes nothing\n"))
        inline.append((node.start_byte, node.start_byte, b"/* a comment */ "))
    rewrites = [("a comment line before every statement of every block", lines),
                ("a comment before every statement of every block, on its line", inline)]
    if IGNORED["parentheses"]:
        rewrites.append(("redundant parentheses around every initialized and assigned value", parens))
    if IGNORED["trailing commas"]:
        rewrites.append(("a trailing comma in every initializer and enumerator list", commas))
    for description, edits in rewrites:
        if edits:
            yield description, _apply(data, edits)


def _format(command: list[str], path: str, data: bytes) -> bytes | None:
    try:
        done = subprocess.run([*command, f"--assume-filename={path}"], input=data, capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 and done.stdout else None
