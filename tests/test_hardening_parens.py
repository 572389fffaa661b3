"""`_cpp_parens.redundant` on deep nests of parentheses (verifier/code/_cpp_parens.py): its cost grows about
linearly with the nesting depth (the walk by `Node.parent` it replaced cost more than the square of it: 1,000
levels took seconds), and which pairs of a nest it leaves out stays what it was."""

from __future__ import annotations

import gc
import time

from verifier.code._cpp import masked, parse, parser
from verifier.code._cpp_parens import redundant


def _cost(code: str, budget: float = 1.0) -> float:
    """The least of five timings of `redundant` over `code`'s whole tree, parsed past `_limits`' depth bound (as
    the bound would refuse it); stops at the first run over `budget` seconds."""
    data = code.encode()
    root = parser().parse(masked(data)).root_node
    assert not root.has_error
    redundant(root, 0, len(data))  # warm up
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            began = time.perf_counter()
            redundant(root, 0, len(data))
            best = min(best, time.perf_counter() - began)
            if best > budget:
                break
    finally:
        gc.enable()
    return best


def _nest(depth: int, opening: str) -> str:
    return "int x = " + opening * depth + "a" + ")" * depth + ";"


def test_cost_grows_about_linearly_with_depth():
    for opening in ("(", "a + ("):
        small = _cost(_nest(1000, opening))
        assert small < 0.5, f"{opening!r} nested 1,000 deep took {small:.2f} s"
        large = _cost(_nest(4000, opening), budget=8 * small + 0.05)
        # 4 times as deep: about 4 times the cost; the square would be 16
        assert large / small < 8, f"{opening!r}: 1,000 deep {small:.4f} s, 4,000 deep {large:.4f} s"


def left(code: str, start: int = 0, end: int | None = None, runs: tuple[int, ...] = ()) -> str:
    """`code` without the pairs `redundant` leaves out within [start, end)."""
    data = code.encode()
    root = parse(data).root_node
    assert not root.has_error
    dropped = redundant(root, start, len(data) if end is None else end, runs)
    assert all(data[i] in b"()" for i in dropped)
    return bytes(b for i, b in enumerate(data) if i not in dropped).decode()


def test_every_pair_of_a_nest_around_a_name_is_left_out():
    assert left("int x = ((((a))));") == "int x = a;"
    assert left("void f() { x = ((((a)))); }") == "void f() { x = a; }"
    assert left("void f() { g(((x))); }") == "void f() { g(x); }"
    assert left("void f() { if ((((a && b)))) g(); }") == "void f() { if (a && b) g(); }"


def test_a_pair_that_groups_something_is_kept():
    assert left("int y = (a + b) * c;") == "int y = (a + b) * c;"
    assert left("int w = a - (b - c);") == "int w = a - (b - c);"
    assert left("int v = !(a && b);") == "int v = !(a && b);"


def test_a_nest_keeps_its_outermost_pair_where_that_one_groups_something():
    # the inner pairs stand where the outer one stood, and what they hold is judged there
    assert left("int v = a * (((b + c)));") == "int v = a * (b + c);"
    assert left("int w = a - ((b - c));") == "int w = a - (b - c);"
    assert left("int u = ((a - b)) - c;") == "int u = a - b - c;"
    assert left("int z = (((a + b)) * ((c)));") == "int z = (a + b) * c;"


def test_template_arguments_and_sizeof_keep_their_pairs():
    assert left("S<((1))> s;") == "S<((1))> s;"
    assert left("int n = sizeof(a);") == "int n = sizeof(a);"
    assert left("int n = sizeof(((a)));") == "int n = sizeof(a);"


def test_a_range_and_a_run_keep_the_pairs_outside_and_around_them():
    code = "int x = ((((a))));"
    assert left(code, start=code.index("((a")) == "int x = ((a));"  # the two outer pairs are outside the range
    assert left(code, runs=(code.index("a"),)) == code  # each pair holds the `$$$`
    code = "int y = ((b)) + ((a));"
    assert left(code, runs=(code.index("a"),)) == "int y = b + ((a));"
