"""A check's `contains`/`absent`/`after` fragment in the canonical layout (`_canonical`), made once per text.

`$NAME` and `$$$` are put in the code as placeholder names, and
the fragment is parsed; when it parses without errors it is laid out the same
way (a *structural* fragment: `$NAME` binds an expression, `$$$` a run of
arguments, elements or statements). A fragment that is not Python as written
(`] = False`, `and self.flag`) is tokenized as before, with its strings and
numbers by value and trailing commas left out, and compared with the scope's
tokens without the marks; there `$NAME` binds one token.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import cast

import tree_sitter

from . import _cpp_parens, _cpp_tokens, _fragments, _python, _tokens
from ._canonical import (
    _META_PREFIX,
    _RUN_NAME,
    _SKIP,
    INDENT,
    MARK,
    RUNS,
    _Emitter,
    _is_run,
    number_key,
    string_key,
)
from ._file import fold_whitespace
from ._tokens import ELLIPSIS_META, NUMBER, STRING, Token, tokenize

#: The tokens of a comparison, or of a `not`, that the canonical layout may turn around or fold in.
_ORDERED = frozenset({"<", "<=", ">", ">=", "==", "!=", "in", "is", "not"})
_META_SOURCE = re.compile(r"\$\$\$|\$([A-Za-z_][A-Za-z0-9_]*)")


@functools.lru_cache(maxsize=4096)
def fragment(code: str) -> Fragment:
    """The tokenized fragment of `code`, shared by every check and release that uses it."""
    return Fragment(code)


class Fragment:
    """A `contains`/`absent`/`after` fragment in the canonical layout (`_canonical`), made once.

    A fragment that cannot be matched within bounds (it nests too deeply to lay out, or has more `$$$` and
    `$NAME` than matching may recurse for) has no tokens and says why in `problem` ("the fragment " + problem):
    the check's fault, never the file's.
    """

    def __init__(self, code: str) -> None:
        self.code = code
        self.problem: str | None = None
        try:
            canonical = fragment_tokens(code)
        except RecursionError:
            canonical = CanonicalFragment((), False)
            self.problem = "nests too deeply to analyse (brackets or blocks within one another)"
        variables = sum(1 for t in canonical.tokens if t.kind in RUNS or t.kind == _tokens.META)
        if variables > _fragments.MAX_VARIABLES:
            canonical = CanonicalFragment((), False)
            self.problem = (f"has {variables} `$$$` and `$NAME`, too many to match (matching recurses for each); "
                            f"at most {_fragments.MAX_VARIABLES}")
        self.tokens = list(canonical.tokens)
        #: Parsed as Python: compared with the statement marks, its `$NAME` binding a whole expression.
        #: Otherwise (`] = False`) compared with the scope's tokens without marks, `$NAME` binding one token.
        self.structural = canonical.structural
        self.folded = fold_whitespace(code)

    @functools.cached_property
    def written_order(self) -> list[Token] | None:
        """The structural fragment with its comparisons in their written order, where it has a comparison or a
        `not` (a part of an operand, `b >= c`, matches `a.b >= c` so): the matcher tries it where the canonical
        tokens find nothing (docs/format.md, "Equivalences"). None where there is nothing to try."""
        if not self.structural or self.problem is not None \
                or not any(t.text in _ORDERED for t in self.tokens if t.kind != STRING):
            return None
        try:
            return list(fragment_tokens(self.code, reorder=False).tokens)
        except RecursionError:
            return None

    @functools.cached_property
    def cpp_tokens(self) -> list[Token]:
        """The fragment as C/C++ tokens (`_cpp_tokens`), for a C or C++ file: `$NAME` binds one token."""
        if self.problem is not None:
            return []
        tokens = _cpp_tokens.tokenize(self.code, fragment=True)
        variables = sum(1 for t in tokens if t.kind in RUNS or t.kind == _tokens.META)
        if variables > _fragments.MAX_VARIABLES:
            self.problem = (f"has {variables} `$$$` and `$NAME`, too many to match (matching recurses for each); "
                            f"at most {_fragments.MAX_VARIABLES}")
            return []
        return tokens

    @functools.cached_property
    def cpp_canonical(self) -> list[Token]:
        """`cpp_tokens` without the parentheses that group nothing and the commas before a `}` (`_cpp_parens`),
        as a C or C++ scope is compared once it is read the same way."""
        tokens = self.cpp_tokens
        return _cpp_parens.canonical(tokens, _cpp_parens.fragment_dropped(self.code, tokens)) if tokens else []

    @property
    def is_empty(self) -> bool:
        """True when the fragment has no token that must be present (a fragment with a problem is not empty)."""
        return self.problem is None and all(t.kind in RUNS for t in self.tokens)



@dataclass(frozen=True)
class CanonicalFragment:
    tokens: tuple[Token, ...]
    structural: bool  # parsed as Python: compared with the marks, `$NAME` binding an expression


def fragment_tokens(code: str, reorder: bool = True) -> CanonicalFragment:
    """A `contains`/`absent`/`after` fragment in the canonical layout (see the module's docstring); without
    `reorder`, its comparisons in their written order (`_canonical._Emitter.reorder`)."""
    placed = _dedent(_META_SOURCE.sub(lambda m: _RUN_NAME if m.group(1) is None else _META_PREFIX + m.group(1),
                                      code))
    if placed.strip():
        tokens = _parsed(placed, reorder)
        if tokens is None:
            tokens = _header(placed, reorder)
        if tokens:
            return CanonicalFragment(tuple(tokens), True)
    return CanonicalFragment(tuple(_plain(code)), False)


def _parsed(text: str, reorder: bool = True) -> list[Token] | None:
    tree = _python.parse(text.encode("utf-8"))
    return None if tree.root_node.has_error else _structural(tree.root_node, text, reorder)


#: The header of a compound statement written without its colon (`if x is None`), as authors often write an
#: `after` fragment: how to complete it into Python (before, after), and where its own tokens begin.
_HEADERS = {"if": ("", ""), "while": ("", ""), "for": ("", ""), "with": ("", ""), "def": ("", ""),
            "class": ("", ""), "async": ("", ""), "elif": ("if True:\n    pass\n", ""),
            "else": ("if True:\n    pass\n", ""), "except": ("try:\n    pass\n", ""),
            "finally": ("try:\n    pass\n", "")}


def _header(text: str, reorder: bool = True) -> list[Token] | None:
    """A clause that only parses after another (`elif x:`, `except E:` with their bodies), or a compound
    statement's header without its colon and body (`if a and b`): laid out as such, without what was added
    to parse it. A header without its colon still matches the start of a longer condition, as its tokens did."""
    first = cast("re.Match[str]", re.match(r"\s*([A-Za-z_]*)", text)).group(1)  # it always matches, maybe nothing
    if first not in _HEADERS:
        return None
    before, _ = _HEADERS[first]
    alone = "\n" not in text.strip()
    colon = text.rstrip().endswith(":")
    if alone:  # a header alone, with or without its colon: a body is added to parse it, then left out
        tokens = _parsed(f"{before}{text.rstrip()}{'' if colon else ':'}\n    {_RUN_NAME}\n", reorder)
    else:
        tokens = _parsed(f"{before}{text}\n", reorder)
    if tokens is None:
        return None
    start = next((i for i, t in enumerate(tokens) if t.text == first and i >= (1 if before else 0)
                  and (not before or tokens[i - 1].kind == MARK)), None)
    if start is None:
        return None
    if alone:
        if len(tokens) < start + 3 or [t.text for t in tokens[-3:]] != [":", INDENT, "$$$"]:
            return None
        return tokens[start:-2 if colon else -3]  # without the body added to parse it (and the colon, if added)
    return tokens[start:]


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code).strip("\n")


def _structural(root: tree_sitter.Node, text: str, reorder: bool = True) -> list[Token]:
    statements = [c for c in root.named_children if c.type not in _SKIP]
    emitter = _Emitter(_char_of(text), fragment=True, reorder=reorder)
    if len(statements) == 1 and statements[0].type == "expression_statement" and not _is_run(statements[0]):
        expression = statements[0]
        only = [c for c in expression.named_children if c.type not in _SKIP]
        if len(only) == 1:
            emitter.node(only[0], expression, 0)  # one expression: it may stand anywhere, as before
        else:
            emitter.node(expression, root)
    else:
        emitter.block(root, indent=False)
    tokens = emitter.out
    while tokens and tokens[-1].kind == MARK:  # a fragment ends where its code ends: what follows is free
        tokens.pop()
    while tokens and tokens[0].kind == MARK:
        tokens.pop(0)
    return tokens


def _char_of(text: str):
    encoded = text.encode("utf-8")
    if len(encoded) == len(text):
        return None  # ASCII: a byte offset is a character offset
    return lambda byte: len(encoded[:byte].decode("utf-8", errors="ignore"))


def _plain(code: str) -> list[Token]:
    """A fragment that is not Python, tokenized as before: strings and numbers by value, and no trailing commas."""
    tokens = tokenize(code, fragment=True)
    out: list[Token] = []
    for i, token in enumerate(tokens):
        if token.kind == STRING:
            token = token._replace(text=_string_token_key(token.text))
        elif token.kind == NUMBER:
            token = token._replace(text=number_key(token.text))
        elif token.text == "," and _closes(tokens, i + 1):
            continue  # a trailing comma (`f(a,)`, or `f(a, $$$)` written for one): the scope has none
        out.append(token)
    return out


def _closes(tokens: list[Token], i: int) -> bool:
    """Whether tokens[i:] starts with a closing bracket, or with `$$$` and then one."""
    if i < len(tokens) and tokens[i].kind == ELLIPSIS_META:
        i += 1
    return i < len(tokens) and tokens[i].text in (")", "]", "}")


def _string_token_key(text: str) -> str:
    tree = _python.parse(text.encode("utf-8"))
    node = tree.root_node
    while node.named_child_count and node.type not in ("string", "concatenated_string"):
        node = node.named_children[0]
    return string_key(node) if node.type in ("string", "concatenated_string") else text
