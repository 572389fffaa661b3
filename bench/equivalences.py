"""Rewrite the code that each check reads, in the newest release of each Python engine, in ways that keep its
meaning, and in near ways that do not: count the verdicts each kind keeps (#31, docs/format.md, "Equivalences").

For each check that holds at the newest release with one Python form (a `contains` fragment that parses), the
lines where it matched are rewritten, one kind of rewrite at a time, every site of that kind in those lines:

- `commute`: `a < b` written `b > a` (and `<=`, `>`, `>=`); `x == 0` written `0 == x` (a literal on the right);
- `negate`: `a != b` written `not (a == b)`; `not in`, `is not` likewise;
- `fold`: an integer literal N >= 2 written as a product (`300` as `(2 * 150)`) or `(N - 1 + 1)`, and a plain
  string literal as two joined with `+`;
- `annotate`: an assignment `x = v` written `x: object = v`, a parameter `a` or `a=1` written `a: object`,
  `a: object = 1`, a `def` given `-> object`.

Each kind has a near miss that changes the meaning at its first site, which the check must catch:
`commute` swaps the operands and keeps the operator (`b < a`); `negate` writes `not (a != b)`; `fold` writes
N's product plus one; `annotate` annotates and changes the first number in the value by one (or the value to
`None`, or `None` to `0`).

    PYTHONPATH=. python bench/equivalences.py [--engine vllm] [--json out.json]

Reads releases through the verifier's own cache (the PyPI source, the default index). Run it with another
checkout's verifier first on PYTHONPATH to measure "before". Prints a Markdown table; exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

import tree_sitter  # noqa: E402

from verifier import code  # noqa: E402
from verifier import kb as kb_module  # noqa: E402
from verifier.code import _python  # noqa: E402
from verifier.entries import load_entry  # noqa: E402
from verifier.model import language_of  # noqa: E402
from verifier.mutants import _nodes_within as _nodes  # noqa: E402
from verifier.reading import FileCache, evaluate_check  # noqa: E402
from verifier.sources.pypi import PyPISource  # noqa: E402

KINDS = ("commute", "negate", "fold", "annotate")
_REVERSE = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_LITERALS = ("integer", "float", "string", "concatenated_string", "true", "false", "none")


class _Overlay:
    """A snapshot with one file's content replaced."""

    def __init__(self, snapshot, path: str, data: bytes) -> None:
        self._snapshot, self._path, self._data = snapshot, path, data
        self.release = snapshot.release

    def read(self, path: str) -> bytes | None:
        return self._data if path == self._path else self._snapshot.read(path)

    def __getattr__(self, name):
        return getattr(self._snapshot, name)


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace")


def _parts(node: tree_sitter.Node):
    operands = [c for c in node.children if c.is_named and c.type != "comment"]
    operators = [c for c in node.children if not c.is_named]
    return operands, operators


def _product(n: int) -> tuple[str, str]:
    """`n` as an expression of literals, and one whose value is n + 1."""
    factor = next((f for f in range(2, min(n, 1000)) if n % f == 0 and f * f <= n), None)
    if factor is None:
        return f"({n - 1} + 1)", f"({n} + 1)"
    return f"({factor} * {n // factor})", f"({factor} * {n // factor} + 1)"


def edits(kind: str, root: tree_sitter.Node, low: int, high: int) -> tuple[list, list]:
    """(equivalent edits, one near miss) of one kind within [low, high): each edit is (start, end, text)."""
    same, near = [], []
    for node in _nodes(root, low, high):
        t = node.type
        if kind == "commute" and t == "comparison_operator":
            (operands, operators) = _parts(node)
            if len(operands) != 2 or len(operators) != 1:
                continue
            left, right = _text(operands[0]), _text(operands[1])
            op = _text(operators[0])
            if op in _REVERSE:
                same.append((node.start_byte, node.end_byte, f"{right} {_REVERSE[op]} {left}"))
                near.append((node.start_byte, node.end_byte, f"{right} {op} {left}"))
            elif op in ("==", "!=") and operands[1].type in _LITERALS and operands[0].type not in _LITERALS:
                same.append((node.start_byte, node.end_byte, f"{right} {op} {left}"))
                near.append((node.start_byte, node.end_byte, f"{right} {'!=' if op == '==' else '=='} {left}"))
        elif kind == "negate" and t == "comparison_operator":
            (operands, operators) = _parts(node)
            op = " ".join(_text(o) for o in operators)
            if len(operands) != 2 or op not in ("!=", "not in", "is not"):
                continue
            positive = {"!=": "==", "not in": "in", "is not": "is"}[op]
            left, right = _text(operands[0]), _text(operands[1])
            same.append((node.start_byte, node.end_byte, f"not ({left} {positive} {right})"))
            near.append((node.start_byte, node.end_byte, f"not ({left} {op} {right})"))
        elif kind == "fold" and t == "integer":
            written = _text(node)
            if not written.isdigit() or (node.parent is not None and node.parent.type == "unary_operator"):
                continue
            value = int(written)
            if value < 2:
                continue
            product, off = _product(value)
            same.append((node.start_byte, node.end_byte, product))
            near.append((node.start_byte, node.end_byte, off))
        elif kind == "fold" and t == "string" and (node.parent is None or node.parent.type not in
                                                    ("concatenated_string", "expression_statement")):
            written = _text(node)
            quote = written[:1]
            if quote not in ("'", '"') or written[:3] in ("'''", '"""') or "\\" in written or "{" in written \
                    or len(written) < 4:
                continue
            middle = 1 + (len(written) - 2) // 2
            same.append((node.start_byte, node.end_byte, f"({written[:middle]}{quote} + {quote}{written[middle:]})"))
            near.append((node.start_byte, node.end_byte, f"({written[:middle]}{quote} + {quote}x{written[middle:]})"))
        elif kind == "annotate":
            if t == "assignment" and node.child_by_field_name("type") is None and node.parent is not None \
                    and node.parent.type == "expression_statement":
                target = node.child_by_field_name("left")
                value = node.child_by_field_name("right")
                if target is None or value is None or target.type not in ("identifier", "attribute") \
                        or _text(node)[len(_text(target)):].lstrip()[:1] != "=":
                    continue
                same.append((target.end_byte, target.end_byte, ": object"))
                number = next((n for n in _nodes(value, value.start_byte, value.end_byte) if n.type == "integer"
                               and _text(n).isdigit()), None)
                if number is not None:
                    near.append((number.start_byte, number.end_byte, str(int(_text(number)) + 1)))
                else:
                    near.append((value.start_byte, value.end_byte, "0" if _text(value) == "None" else "None"))
                near.append((target.end_byte, target.end_byte, ": object"))
            elif t == "identifier" and node.parent is not None and node.parent.type == "parameters" \
                    and _text(node) not in ("self", "cls"):
                same.append((node.end_byte, node.end_byte, ": object"))
            elif t == "default_parameter":
                name = node.child_by_field_name("name")
                if name is not None:
                    same.append((name.end_byte, node.child_by_field_name("value").start_byte, ": object = "))
            elif t == "function_definition" and node.child_by_field_name("return_type") is None:
                parameters = node.child_by_field_name("parameters")
                if parameters is not None and low <= parameters.end_byte <= high:
                    same.append((parameters.end_byte, parameters.end_byte, " -> object"))
    return same, near


def apply(data: bytes, changes: list) -> bytes | None:
    """The data with non-overlapping edits applied (the outermost of overlapping ones), or None for none."""
    chosen, last = [], -1
    for start, end, text in sorted(changes, key=lambda c: (c[0], -c[1])):
        if start < last or (start == end and start == last and chosen and chosen[-1][0] == start):
            continue
        chosen.append((start, end, text))
        last = max(last, end)
    if not chosen:
        return None
    out = data
    for start, end, text in reversed(chosen):
        out = out[:start] + text.encode() + out[end:]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", action="append", help="only this engine (repeatable)")
    parser.add_argument("--json", help="write each check's outcome per kind here")
    args = parser.parse_args()
    kb = kb_module.load(REPO)
    entries = [loaded.entry for loaded in (load_entry(p) for p in kb.entry_files()) if loaded.entry]
    counts: dict[tuple[str, str], list[int]] = {}
    outcomes = []
    for engine in args.engine or ["vllm", "sglang"]:
        source = PyPISource(kb.engines[engine])
        release = source.releases()[-1]
        snapshot = source.open(release)
        cache = FileCache()
        for entry in entries:
            for check in entry.checks:
                if check.engine != engine:
                    continue
                forms = check.forms_at(release.version)
                if len(forms) != 1 or forms[0].matcher != "contains" or language_of(forms[0].path) != "python" \
                        or not code.fragment(forms[0].pattern).structural:
                    continue
                found = evaluate_check(check, snapshot, release.version, cache)
                if found is None or found[1].status != "holds" or not found[1].lines:
                    continue
                path, (first, last) = found[1].path, found[1].lines
                data = snapshot.read(path)
                root = _python.parse(data).root_node
                starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
                low, high = starts[first - 1], starts[last] if last < len(starts) else len(data)
                for kind in KINDS:
                    same, near = edits(kind, root, low, high)
                    changed = apply(data, same)
                    if changed is None or _python.parse(changed).root_node.has_error:
                        continue
                    kept = evaluate_check(check, _Overlay(snapshot, path, changed), release.version,
                                          FileCache())[1].status == "holds"
                    missed = None
                    wrong = apply(data, near[:2] if kind == "annotate" else near[:1])
                    if wrong is not None and not _python.parse(wrong).root_node.has_error:
                        missed = evaluate_check(check, _Overlay(snapshot, path, wrong), release.version,
                                                FileCache())[1].status == "holds"
                    row = counts.setdefault((engine, kind), [0, 0, 0, 0])
                    row[0] += 1
                    row[1] += kept
                    if missed is not None:
                        row[2] += 1
                        row[3] += missed
                    outcomes.append({"engine": engine, "check": f"{entry.id}/{check.id}", "kind": kind,
                                     "kept": kept, "near_miss_held": missed})
                    if sys.stderr.isatty():
                        print(f"\r{engine} {entry.id[:40]:40} {kind:9}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print("| engine | rewrite | checks rewritten | verdict kept | near misses | near misses unseen |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    totals = [0, 0, 0, 0]
    for (engine, kind), row in sorted(counts.items()):
        totals = [a + b for a, b in zip(totals, row)]
        print(f"| {engine} | {kind} | {row[0]} | {row[1]} | {row[2]} | {row[3]} |")
    print(f"| all | all | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} |")
    if args.json:
        Path(args.json).write_text(json.dumps(outcomes, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
