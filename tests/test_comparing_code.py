"""FORMAT.md, "Comparing code": each equivalence is a row that must match, beside a near miss that must not.

Semgrep keeps its pattern semantics as pairs of a pattern and annotated code (tests/patterns/python); these
tables are ours: (fragment, source, matches). The source is a whole file; the check has no scope.
"""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.code import SourceFile
from verifier.evaluate import evaluate_source
from verifier.model import Form


def holds(fragment: str, source: str, matcher: str = "contains") -> bool:
    form = Form("vllm", "pkg/m.py", matcher, fragment)
    verdict = evaluate_source(form, SourceFile("pkg/m.py", textwrap.dedent(source).encode()))
    assert verdict.status in ("holds", "changed"), verdict
    return verdict.status == "holds"


LAYOUT = [
    ("f(a, b)", "f(\n    a,  # first\n    b\n)\n", True),
    ("x = 1", "x = \\\n    1\n", True),
    ("x = 1\ny = 2", "x = 1; y = 2\n", True),  # `;` separates statements like a line break
    ("x = 1\ny = 2", "x = 1\n# a comment\n\ny = 2\n", True),
    ("x = 1\ny = 2", "x = 1\nz = 0\ny = 2\n", False),
    ("x = 1\ny = 2", "if c:\n    x = 1\ny = 2\n", False),  # consecutive statements of one block only
]

PARENTHESES = [
    ("x = 0", "x = (0)\n", True),
    ("x = (0)", "x = 0\n", True),
    ("if a and b:\n    pass", "if (a and\n        b):\n    pass\n", True),
    ("for a, b in z:\n    pass", "for (a, b) in z:\n    pass\n", True),
    ("return a, b", "def f():\n    return (a, b)\n", True),
    ("x = a, b", "x = (a, b)\n", True),
    ("a.b", "(a).b\n", True),
    ("-a", "-(a)\n", True),
    ("x = a + b * c", "x = a + (b * c)\n", True),
    ("f(a if b else c)", "f((a if b else c))\n", True),
    ("x = ((y))", "x = y\n", True),
    ("2 ** 3 ** 4", "2 ** (3 ** 4)\n", True),
    ("x = a - b - c", "x = (a - b) - c\n", True),
    # Parentheses that group stay:
    ("a + b * c", "(a + b) * c\n", False),
    ("(a + b) * c", "(a + b) * c\n", True),
    ("f(a, b)", "f((a, b))\n", False),  # a tuple argument is not two arguments
    ("not a and b", "not (a and b)\n", False),
    ("a - b - c", "a - (b - c)\n", False),
    ("2 ** 3 ** 4", "(2 ** 3) ** 4\n", False),
    ("a < b < c", "a < (b < c)\n", False),
    ("(a + b).c", "a + b.c\n", False),
    ("lambda r: (r.a, r.b)", "lambda r: r.a, r.b\n", False),
    ("[x for x in a if b]", "[x for x in (a if b else c)]\n", False),  # grouped in a comprehension's `in`
    ("[x for x in (a if b else c)]", "[x for x in (a if b else c)]\n", True),
    # An assignment expression as the whole condition (black and ruff wrap it in parentheses when they break
    # the line); elsewhere its parentheses are often required, and kept.
    ("if n := f():\n    pass", "if (\n    n := f()\n):\n    pass\n", True),
    ("if (n := f()):\n    pass", "if n := f():\n    pass\n", True),
    ("while n := f():\n    pass", "while (n := f()):\n    pass\n", True),
    ("if a:\n    pass\nelif n := f():\n    pass", "if a:\n    pass\nelif (n := f()):\n    pass\n", True),
]

COMMAS = [
    ("f(a, b)", "f(a, b,)\n", True),
    ("[1, 2]", "[\n    1,\n    2,\n]\n", True),
    ("{1: 2}", "{1: 2,}\n", True),
    ("from m import a, b", "from m import (\n    a,\n    b,\n)\n", True),
    ("def f(a, b):\n    pass", "def f(\n    a,\n    b,\n):\n    pass\n", True),
    ("with a as b, c as d:\n    pass", "with (\n    a as b,\n    c as d,\n):\n    pass\n", True),
    ("d[a, b]", "d[a, b,]\n", True),
    ("x = (1,)", "x = (1)\n", False),  # the comma of a one-element tuple stays
    ("x = 1,", "x = (1,)\n", True),
    ("d[k,]", "d[k]\n", False),
    ("x, = f()", "x = f()\n", False),
]

LITERALS = [
    ("x = 'a'", 'x = "a"\n', True),
    ("x = 'a'", "x = '''a'''\n", True),
    ('x = "a"', 'x = "\\x61"\n', True),
    ('x = "a"', 'x = u"a"\n', True),
    ('x = "ab"', 'x = ("a"\n     "b")\n', True),  # implicitly concatenated pieces, in parentheses
    ('x = r"\\n"', 'x = "\\n"\n', False),
    ('x = "a"', 'x = b"a"\n', False),
    ('f"{x}"', "f'{x}'\n", True),
    ('f"{x}"', '"{x}"\n', False),
    ("x = 0xAB", "x = 0xab\n", True),
    ("x = 0xAB", "x = 171\n", True),
    ("x = 1E5", "x = 1e5\n", True),
    ("x = 10_000", "x = 10000\n", True),
    ("x = 1", "x = 1.0\n", False),
    ("x = 0", "x = 00\n", True),
]

ARGUMENTS = [
    ("f(a=1, b=2)", "f(b=2, a=1)\n", True),
    ("f(x, a=1, b=2)", "f(x, b=2, a=1)\n", True),
    ("f(a, b)", "f(b, a)\n", False),  # positional order changes meaning
    ("f(a=1, $$$)", "f(b=0, a=1, c=2)\n", True),  # `$$$` takes what the fragment does not name
    ("f($$$, a=1)", "f(x, a=1)\n", True),
    ("f(a=1, $$$)", "f(a=2, b=0)\n", False),
    ("f(x, $$$)", "f(x)\n", True),
    ("f(x, $$$)", "f(x, y, z=1)\n", True),
    ("f(x, $$$)", "f(x.y)\n", False),  # a run of whole arguments, not the rest of one
    ("f(x, $$$)", "f(xy)\n", False),
    ("f($$$, y)", "f(a, b, y)\n", True),
    ("f(x, $$$, y)", "f(x, y)\n", True),
    ("f(x, $$$, y)", "f(x, a, y)\n", True),
    ("f(x, $$$, y)", "f(xy)\n", False),
    ("f($$$)", "f()\n", True),
    ("f($$$)", "f(a, b=1)\n", True),
    ("[a, $$$]", "[a, b, c]\n", True),
    ("[a, $$$]", "[a.b]\n", False),
    ("def f(self, $$$):\n    pass", "def f(self, a, *, b=1):\n    pass\n", True),
    ("len($$$.output_ids)", "len(self.reqs[i].output_ids)\n", True),  # elsewhere a balanced run, as before
]

METAVARIABLES = [
    ("$R.num_computed_tokens = 0", "preempted_req.num_computed_tokens = 0\n", True),
    ("$R.num_computed_tokens = 0", "self.reqs[i].num_computed_tokens = 0\n", True),  # one whole expression
    ("$R.num_computed_tokens = 0", "self.reqs[i].num_computed_tokens = 1\n", False),
    ("$A == $A", "x.y == x.y\n", True),  # consistently where it recurs
    ("$A == $A", "x.y == x.z\n", False),
    ("f($X)", "f(a + b)\n", True),
    ("f($X)", "f(a, b)\n", False),
    ("$X = f()", "x = y = f()\n", True),
    ("$$$.pop()", "self.running.pop()\n", True),
]

MEANING = [
    ("if x:\n    pass", "if not x:\n    pass\n", False),
    ("y = f()", "y = await f()\n", False),
    ("x = a < b", "x = a <= b\n", False),
    ("x = a", "x = b\n", False),
    ("@cache\ndef f():\n    pass", "def f():\n    pass\n", False),
    ("def f():\n    pass", "@cache\ndef f():\n    pass\n", True),  # a fragment may leave out what comes before
]

#: docs/format.md, "Equivalences": each row that matches beside the near miss that must not.
EQUIVALENCES = [
    # Comparisons read in one direction.
    ("if a < b:\n    pass", "if b > a:\n    pass\n", True),
    ("if b > a:\n    pass", "if a < b:\n    pass\n", True),
    ("x = n >= limit", "x = limit <= n\n", True),
    ("x = n >= limit", "x = limit < n\n", False),  # the strictness is kept
    ("x = n >= limit", "x = n <= limit\n", False),  # the direction is kept
    ("x = a > b > c", "x = c < b < a\n", True),
    ("x = a > b > c", "x = c < b > a\n", False),  # a chain that turns is compared as written
    ("x = a < b > c", "x = c < b > a\n", False),
    ("x = $X > 0", "x = len(queue) > 0\n", True),
    ("x = $X > 0", "x = 0 < len(queue)\n", True),
    ("x = $X > 0", "x = 0 > len(queue)\n", False),
    ("if x == 0:\n    pass", "if 0 == x:\n    pass\n", True),
    ("if x != None:\n    pass", "if None != x:\n    pass\n", True),
    ("if x == 0:\n    pass", "if 0 != x:\n    pass\n", False),
    ("x = a == b", "x = b == a\n", False),  # neither is a literal: as written
    ("x = a in b", "x = b in a\n", False),  # `in` and `is` are not turned
    # `not` of a comparison that has a complement.
    ("if a != b:\n    pass", "if not (a == b):\n    pass\n", True),
    ("if not a == b:\n    pass", "if a != b:\n    pass\n", True),
    ("x = k not in d", "x = not (k in d)\n", True),
    ("x = v is not None", "x = not v is None\n", True),
    ("x = v is not None", "x = not v is not None\n", False),
    ("x = a >= b", "x = not (a < b)\n", False),  # not for orderings: a set, or a NaN, is neither
    ("if a != b:\n    pass", "if not (a != b):\n    pass\n", False),
    # Constants by value, where the value is exact.
    ("timeout = 300", "timeout = 5 * 60\n", True),
    ("timeout = 5 * 60", "timeout = 300\n", True),
    ("timeout = 5 * 60", "timeout = 5 * 61\n", False),
    ("size = 1 << 20", "size = 1024 * 1024\n", True),
    ("size = 2 ** 20", "size = 1048576\n", True),
    ("mask = (1 << 10) - 1", "mask = 1023\n", True),
    ("x = -1", "x = 0 - 1\n", True),
    ("x = -300", "x = -(5 * 60)\n", True),
    ("x = -300", "x = 300\n", False),
    ("y = 5 * x", "y = (2 + 3) * x\n", True),
    ("ratio = 2.0", "ratio = 0.5 * 4\n", True),
    ("ratio = 0.3", "ratio = 0.1 * 3\n", False),  # 0.1 * 3 is not exactly 0.3: not folded
    ("ratio = 2", "ratio = 0.5 * 4\n", False),  # an int is not a float
    ("x = 0.5", "x = 1 / 2\n", True),
    ("x = 0", "x = 1 // 2\n", True),
    ("x = 1 / 0", "x = 1 / 0\n", True),  # not foldable: compared as written
    ("x = 1 / 0", "x = 2 / 0\n", False),
    ("x = 2 ** 200", "x = 2 ** 200\n", True),  # too large to fold: compared as written
    ("name = 'a' 'b'", "name = 'a' + 'b'\n", True),
    ("name = 'ab'", "name = 'a' + \"b\"\n", True),
    ("name = 'ab'", "name = b'a' + b'b'\n", False),  # bytes are not str
    ("name = f'{x}b'", "name = f'{x}' + 'b'\n", False),  # an f-string is no constant
    ("timeout = 5 * 60", "timeout = 5 * sixty\n", False),  # only literals
    # Annotations: optional where the fragment has none.
    ("x = 5", "x: int = 5\n", True),
    ("x: int = 5", "x = 5\n", False),
    ("x: int = 5", "x: str = 5\n", False),
    ("x: int = 5", "x: int = 5\n", True),
    ("x = 5", "x: int = 6\n", False),
    ("def f(a, b=1):\n    return a", "def f(a: int, b: int = 1) -> int:\n    return a\n", True),
    ("def f(a: int, b=1):\n    return a", "def f(a: int, b: int = 1) -> int:\n    return a\n", True),
    ("def f(a: int, b=1):\n    return a", "def f(a, b: int = 1) -> int:\n    return a\n", False),
    ("def f(a, b=1):\n    return a", "def f(a: int, b: int = 2) -> int:\n    return a\n", False),
    ("def f(a) -> int:\n    $$$", "def f(a: int) -> str:\n    pass\n", False),
    ("def f(*args, **kwargs):\n    $$$", "def f(*args: int, **kwargs: str) -> None:\n    pass\n", True),
    ("def f($$$) -> $T:\n    $$$", "def f(a: int) -> str:\n    pass\n", True),
    ("x: $T = 5", "x: Optional[int] = 5\n", True),
    ("x: $T = 5", "x = 5\n", False),
]

FALLBACK = [
    # Fragments that are not Python as written keep working as before: token by token, parentheses and keyword
    # arguments as written, without the statement marks; only strings, numbers and trailing commas are free.
    ("] = False", "x[k] = False\n", True),
    ("] = False", "x[k] = True\n", False),
    ("] = False", "x[k] = (False)\n", False),
    ("and self.flag", "if a and self.flag:\n    pass\n", True),
    ("] = 'a'", 'x[k] = "a"\n', True),
    (", b)", "f(a, b,)\n", True),
    ("b=2, a=1)", "f(b=2, a=1)\n", True),  # keyword arguments in the order written
    ("running.pop()", "self.running.pop()\n", True),  # a structural fragment may still match a run
]


@pytest.mark.parametrize("fragment,source,matches", LAYOUT + PARENTHESES + COMMAS + LITERALS + ARGUMENTS
                         + METAVARIABLES + MEANING + FALLBACK + EQUIVALENCES)
def test_comparing_code(fragment, source, matches):
    assert holds(fragment, source) is matches


@pytest.mark.parametrize("fragment,source,matches", EQUIVALENCES)
def test_absent_reads_the_equivalences_too(fragment, source, matches):
    assert holds(fragment, source, "absent") is not matches


@pytest.mark.parametrize("fragment,source,lines", [
    ("x = $X > 0", "a = 1\nx = (\n    0\n    < len(q)\n)\n", (2, 4)),
    ("timeout = 300", "a = 1\ntimeout = 5 * \\\n    60\n", (2, 3)),
    ("x = 5", "a = 1\nx: int = \\\n    5\n", (2, 3)),
])
def test_a_match_laid_out_in_another_order_keeps_its_lines(fragment, source, lines):
    """`0 < len(q)` is laid out `len(q) > 0`... the other way round: the match still spans the code's lines."""
    from verifier.code import fragment as make

    found = SourceFile("pkg/m.py", source.encode())
    spans = found.find(make(fragment), found.whole())
    assert [found.lines_of(span) for span in spans] == [lines]


def test_a_name_bound_through_an_equivalence_is_the_code_as_written():
    from verifier.code import fragment as make

    found = SourceFile("pkg/m.py", b"if 0 < len(queue):\n    timeout: float = 5 * 60\n")
    [(span, names)] = found.find_bound(make("if $N > 0:\n    timeout = $T"), found.whole())
    assert names == {"N": "len(queue)", "T": "300"}  # by value, as it is compared


@pytest.mark.parametrize("fragment,source,matches", PARENTHESES + COMMAS + LITERALS)
def test_absent_compares_the_same_way(fragment, source, matches):
    assert holds(fragment, source, "absent") is not matches


def test_a_trailing_comma_before_a_closing_run_is_optional_in_a_fragment_that_is_not_python():
    fragment = 'x = [ "a", $$$ "b", $$$ ]'  # not Python as written: `$$$ "b"`
    assert holds(fragment, 'x = [\n    "a",\n    "z",\n    "b",\n]\n')
    assert holds(fragment, 'x = ["a", "b"]\n')
    assert holds(fragment, 'x = ["a", "z", "b", "c"]\n')
    assert not holds(fragment, 'x = ["a", "c"]\n')


def test_a_parenthesized_assignment_target_is_not_a_tuple():
    assert holds("a = b = f()", "a = (\n    b\n) = f()\n")
    assert not holds("a = b = f()", "a = (b,) = f()\n")


@pytest.mark.parametrize("fragment,source,matches", [
    ("def f(self, $$$):", "def f(\n    self,\n    a,\n):\n    pass\n", True),
    ("if x is None:", "if (x is None):\n    y = 1\n", True),
    ("if x is None:", "if x is None and z:\n    y = 1\n", False),  # with its colon the condition is whole
    ("if x is None", "if x is None and z:\n    y = 1\n", True),  # without, the start of a longer one
    ("elif b:", "if a:\n    pass\nelif (b):\n    pass\n", True),
])
def test_a_header_alone_is_python(fragment, source, matches):
    from verifier.code import fragment as make

    assert make(fragment).structural
    assert holds(fragment, source) is matches


@pytest.mark.parametrize("fragment,source,matches", [
    ("x: $T = 128", "x: Optional[int] = 128\n", True),  # an annotation is an expression $NAME may stand for
    ("x: $T = 128", "x: int | None = 128\n", True),
    ("x: $T = 128", "x: Optional[int] = 256\n", False),
    ("def f(a: $T = 1):\n    pass", "def f(a: list[int] = 1):\n    pass\n", True),
])
def test_a_metavariable_binds_a_type(fragment, source, matches):
    assert holds(fragment, source) is matches


SCHEDULER = '''\
class Scheduler:
    @staticmethod
    @cached(maxsize=2)
    def budget(n):
        return n * rare_limit

    def schedule(self):
        # a comment between statements
        prepared = []
        while self.waiting:
            request = self.waiting.pop()
            # past rare_limit, stop (the longest name in a comment of its own line: no statement to run from)
            if len(prepared) >= self.rare_limit:
                self.waiting.append(request)
                break
            elif request.rare_flag:
                continue
            else:
                prepared.append(request)
            request.status = RUNNING
        for r in prepared:
            r.rare_count = 0; r.started = True
        return prepared
'''


@pytest.mark.parametrize("code", [
    "if len(prepared) >= self.rare_limit:\n    self.waiting.append(request)\n    break",
    "if $X >= self.rare_limit:\n    break",  # a prefix of the body does not match
    "request = self.waiting.pop()\nif len(prepared) >= self.rare_limit:\n    $$$",
    "request = self.waiting.pop()\n$$$\nrequest.status = RUNNING",
    "if $C:\n    $$$\nelif request.rare_flag:\n    continue",
    "if $C:\n    $$$\nelse:\n    prepared.append(request)\nrequest.status = RUNNING",
    "while self.waiting:\n    request = self.waiting.pop()\n    if len(prepared) >= self.rare_limit:\n        $$$",
    "prepared.append(request)\nrequest.status = RUNNING",  # two blocks apart: no match
    "r.rare_count = 0\nr.started = True",
    "r.started = True\nr.rare_count = 0",  # the other order: no match
    "for r in prepared:\n    r.rare_count = 0\nreturn prepared",
    "@cached(maxsize=2)\ndef budget(n):\n    return n * rare_limit",
    "@staticmethod\n@cached(maxsize=2)\ndef budget(n):\n    $$$",
    "prepared = []\nwhile self.waiting:\n    request = self.waiting.pop()",
    "self.waiting.append(request)\nbreak",
    "self.waiting.append(request)\nrequest.status = RUNNING",  # across a block's end: no match
])
def test_laying_out_only_the_statements_around_a_name_finds_what_the_whole_scope_finds(code, monkeypatch):
    """A fragment is compared only with the statements around each place its longest name is written
    (`SourceFile._regions`); it must find exactly what comparing it with the whole scope finds."""
    from verifier.code import fragment as make

    piece = make(code)
    assert piece.structural
    source = SourceFile("pkg/m.py", SCHEDULER.encode())
    scope = source.scopes("Scheduler")[0]
    regions = source._regions(piece, scope)
    found = source.find(piece, scope)
    monkeypatch.setattr(SourceFile, "_regions", lambda self, fragment, scope: [scope])
    assert found == SourceFile("pkg/m.py", SCHEDULER.encode()).find(piece, scope)
    assert regions != [scope]  # and the shortcut was taken: not the whole scope


def test_the_statements_around_a_name_in_the_fragment_find_both_matches_and_misses():
    found = [holds(code, SCHEDULER) for code in (
        "if $X >= self.rare_limit:\n    self.waiting.append(request)\n    break",
        "r.rare_count = 0\nr.started = True",
        "r.started = True\nr.rare_count = 0",
        "self.waiting.append(request)\nrequest.status = RUNNING",
    )]
    assert found == [True, True, False, False]


_ints = st.integers(min_value=0, max_value=10 ** 6)
_expressions = st.recursive(
    _ints.map(str),
    lambda inner: st.tuples(inner, st.sampled_from(["+", "-", "*", "//", "%", "<<", "|", "&", "^"]), inner)
    .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    max_leaves=6)


def _within_bound(expression: str):
    """The value Python computes, or None where it fails or any step leaves the folding bound (128 bits)."""
    import ast
    import operator

    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.LShift: operator.lshift, ast.BitOr: operator.or_, ast.BitAnd: operator.and_,
           ast.BitXor: operator.xor}

    def value(node):
        if isinstance(node, ast.Constant):
            return node.value
        left, right = value(node.left), value(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.LShift) and (right < 0 or right + left.bit_length() > 128):
            return None
        try:
            found = ops[type(node.op)](left, right)
        except (ArithmeticError, ValueError):
            return None
        return found if found.bit_length() <= 128 else None

    return value(ast.parse(expression, mode="eval").body)


@settings(max_examples=60, deadline=None)
@given(_expressions)
def test_an_integer_arithmetic_of_literals_matches_its_value_and_no_other(expression):
    """`x = <expression>` matches the fragment `x = <its value>` where every step stays within the folding
    bound, and never `x = <its value + 1>`; the value written with a sign as the layout writes `-1`."""
    value = _within_bound(expression)
    if value is None:
        return  # compared as written
    source = f"x = {expression}\n"
    assert holds(f"x = {value}", source)
    assert not holds(f"x = {value + 1}", source)


@pytest.mark.parametrize("fragment,source,matches", [
    # A fragment that names part of an operand still matches as it did before comparisons were turned around.
    ("grammar_wait_ct >= self.LIMIT", "if (\n    self.queue[i].grammar_wait_ct\n    >= self.LIMIT\n):\n    pass\n",
     True),
    ("grammar_wait_ct >= self.LIMIT", "if self.LIMIT <= self.queue[i].grammar_wait_ct:\n    pass\n", False),
    ("b > 0 and c", "x = a.b > 0 and c\n", True),
    ("a == b", "x = not (a == b)\n", True),  # as written: part of the `not`
    ("a == b", "x = a != b\n", False),
])
def test_part_of_an_operand_matches_as_written(fragment, source, matches):
    assert holds(fragment, source) is matches
