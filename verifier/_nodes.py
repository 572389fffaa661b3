"""What tree-sitter types as optional on a node (its text, a field, its parent) where the verifier always has it.

Each is a `typing.cast` for the type checker: at run time it is the attribute itself, unchecked, so a node that
lacks it fails where it is used, as before."""

from __future__ import annotations

from typing import cast

import tree_sitter


def node_bytes(node: tree_sitter.Node) -> bytes:
    """`node.text`. tree-sitter types it `bytes | None` (None in a tree parsed from a read callback); the
    verifier parses bytes only, so every node has its text. A cast: nothing is checked at run time."""
    return cast(bytes, node.text)


def node_field(node: tree_sitter.Node, name: str) -> tree_sitter.Node:
    """`node.child_by_field_name(name)` where the grammar always gives the node that child (a function's
    `name`): typed `Node | None` by tree-sitter, a cast here as in `node_bytes`."""
    return cast(tree_sitter.Node, node.child_by_field_name(name))


def node_parent(node: tree_sitter.Node) -> tree_sitter.Node:
    """`node.parent` of a node that is not the root (a statement in its block): a cast as in `node_bytes`."""
    return cast(tree_sitter.Node, node.parent)
