"""verifier._yaml.load's fast path, libyaml composing in C, against `_load_checked`, the pure-Python path.

`_load_checked` is the loader `_yaml` always had (the path every problem takes; the corpus tests pin what
it reports). Every input must give the same nodes (values with their types, lines, columns, key lines, raw
text) or the same YAMLProblem (message, line, column, code) whichever path reads it: over the knowledge
base and the bad entries, hand-picked edge cases, and texts generated from the pieces YAML's grammar turns
on (where libyaml and PyYAML part, `_libyaml_may_parse` and `_convert` must send the text to the pure path).
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from verifier import _yaml
from verifier._yaml import Node, YAMLProblem

from .conftest import REPO


def dump(node: Node | None):
    """Everything about a node, with the types of values (1, 1.0 and True differ; NaN equals NaN)."""
    if node is None:
        return None
    if isinstance(node.value, dict):
        value = [(k, dump(v)) for k, v in node.value.items()]
    elif isinstance(node.value, list):
        value = [dump(v) for v in node.value]
    elif isinstance(node.value, float) and math.isnan(node.value):
        value = ("float", "nan")
    else:
        value = (type(node.value).__name__, repr(node.value))
    return (value, node.line, node.column, sorted(node.key_lines.items()), node.raw)


def outcome(load, text: str, first_line: int):
    try:
        return ("node", dump(load(text, first_line)))
    except YAMLProblem as exc:
        return ("problem", exc.message, exc.line, exc.column, exc.code)
    except Exception as exc:  # noqa: BLE001 - the same crash, if ever, counts as the same outcome
        return ("crash", type(exc).__name__)


def assert_same(text: str, first_line: int = 1) -> None:
    assert outcome(_yaml.load, text, first_line) == outcome(_yaml._load_checked, text, first_line), repr(text)


# -- inputs ----------------------------------------------------------------------------------------

def front_matter(text: str) -> tuple[str, int] | None:
    """As verifier.entries reads it: the lines between the first two '---' lines; starts on line 2."""
    lines = text.removeprefix("\ufeff").split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if close is None:
        return None
    return "\n".join(lines[1:close]), 2


def corpus() -> list[tuple[str, str, int]]:
    cases = []
    files = sorted((REPO / "gotchas").glob("*.md")) + sorted((REPO / "gotchas").glob("*.yaml"))
    files += sorted((REPO / "tests" / "corpus" / "bad-entries").iterdir())
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            text = path.read_bytes().decode("latin-1")
        name = path.relative_to(REPO).as_posix()
        if not text.startswith("---"):  # a text that starts with `---` takes the pure path, whichever it is
            cases.append((name + ":whole", text, 1))
        front = front_matter(text)
        if front is not None:
            cases.append((name + ":front", *front))
    return cases


CORPUS = corpus()
KB_FRONTS = [(name, text, line) for name, text, line in CORPUS
             if name.startswith("gotchas/") and name.endswith(".md:front")]


# Hand-picked edge cases: every kind of problem, and inputs where libyaml and PyYAML could part.
EDGE_CASES = [
    "", "\n", "# only a comment\n", "---\n", "---\n...\n", "...\n", "~", "null", "a", "'a'", "- a\n- b\n",
    "a: 1\nb: 1.5\nc: true\nd: ~\ne: 2024-01-02\nf: 2024-01-02T03:04:05Z\ng: 0x1F\nh: 0o17\ni: 1_000\nj: 1:20\n",
    "a: .nan\nb: -.inf\nc: 1e400\nd: yes\ne: No\nf: ''\ng: \"\"\nh: 0b101\ni: 1:2:3.5\n",
    "a: 2024-13-45\n", "a: 2024-01-02 03:04:05 +99:00\n", "a: 2024-02-30\n",
    "a: &x 1\nb: *x\n", "a: *x\n", "&x a: 1\n", "a: !!str 1\n", "a: !custom 1\n", "a: ! 12\n", "! a: 1\n",
    "a: !!binary aGk=\n", "!!map {a: 1}\n", "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
    "a: 1\na: 2\n", "a: 1\nb:\n  a: 1\n  a: 2\n", "1: a\n'1': b\n", "~: a\n", "null: a\n", "'': a\n", "? ''\n: a\n",
    "[a]: 1\n", "{a: 1}: 2\n", "? - a\n: 1\n", "? a\n", "<<: {a: 1}\n", "a: <<\n", "=: 1\n", "a: =\n",
    "a: 1\n---\nb: 2\n", "---\n---\n", "a\n---\n&x b\n", "a: 1\n--- !x\n", "a: 1\n...\n---\n[\n",
    "a: b: c\n", "a:\n\t- b\n", "a:\tb\n", "\ta: 1\n", "a: 'unclosed\n", 'a: "bad \\q escape"\n', "a: [1, 2\n",
    "a: {b: 1, c}\n", "- a\nb: 1\n", "a:\n  - b\n  c: 1\n", "a: |\n  x\n  y\n", "a: >-\n  x\n\n  y\n",
    "a: |2\n   x\n", "a: |0\n x\n", "a: @b\n", "a: `b\n", "a: %b\n", "%YAML 1.1\n---\na: 1\n", "%YAML 1.2\n---\na\n",
    "%YAML 2.0\n---\na\n", "%YAML 1.1\n%YAML 1.1\n---\na\n", "%FOO bar\n---\na\n", "a: \x01\n", "a: \x7f\n",
    "a: \x85b\n", "a\u2028b: 1\n", "a: \u2029\n", "a: 'x\u2028y'\n", "a: \r\nb: 2\r\n", "a: 1\rb: 2\r",
    "a: \U0001F600 x\n", "\U0001F600: \U0001F600\nb: [\U0001F600, 2]\n", "a: \ufeffb\n", "a: 1\n\ufeffb: 2\n",
    "a: \ud800\n", "a: 'x''y'\n", 'a: "\\u263A \\x41 \\/ \\t"\n', 'a: "\\U0001F600"\n', 'a: "\\ud800"\n',
    "a: x #c\nb: 'y' #c\n", "a: x#c\n", "- - - a\n", "[[[[a]]]]", "{a: [b, {c: d}]}", "a:\n- b\n- c\n",
    "a: -\n", "- -\n", "? \n", ": a\n", "-", "--- a\n... \n", "a: 'multi\n  line'\n", "a: multi\n  line\n",
    "a: \"multi\n\n  line\"\n", "k" * 1100 + ": v\n", "a: " + "x" * 5000 + "\n", "a:\n" + "  b: c\n" * 3,
    "x:\n" + "".join(f"  k{i}: {i}\n" for i in range(50)),
    # where libyaml and PyYAML part (found by fuzzing): these must not take libyaml's word
    "[a?b]", "{q: what?}", "[https://127.0.0.1/p?q=1]", "a: [x?]\nb: 1\n", "|#\n x\n", "|-#\n x\n", "a: >2#\n   x\n",
    "%YAML 1.1#c\n---\na\n", "? :key\n", "k:\n? m = max(a, 1)\n", "? a\n? b\n", "{? }", "[? ]", "{b: }", "[b: ,]",
    "[b::  ]", "{b: , c: 1}", "---", "--- #c\n", "\r---", "\u2029---", "\x85...", "a\r--- b", "!", "[!]", "{a: !}",
    "a: ! ''\n", "!%00 a", "a: !%00x b\n", "- !a%00 b\n", "a:\t1\n", "a: 1\n\ufeffb: 2\n", "- a\n-\tb\n",
    "a: |\t\n x\n", "a: 'x'\t\n",
    # anchors and tags, which libyaml's nodes show only where their node starts
    "a: x & y\nb:", "a: x ! y\nb: !", "{&a x: 1}", "[&a x, *a]", "a: !!str\n  b\n", "a: &x\n  b: 1\n", "a: &x\n- b\n",
    "- &x\n- *x\n", "a: &x b\nc: d\n", "a: [b, !c d]", "a: |\n  &x\n  !y\n", "a: \"&x\"\nb: '!y'\n", "a: x!y\nb: x&y\n",
    "&x [a]: 1\n", "!!str a: 1\n", "a: !<tag:yaml.org,2002:str> b\n", "a: &x !!str b\n", "[a: ]", "{a: b?}",
] + ["[" * n + "]" * n for n in (32, 33, 34, 40, 100, 700)] + [
    "".join("  " * i + f"k{i}:\n" for i in range(n)) + "  " * n + "v\n" for n in (32, 33, 40)
] + ["- " * n + "x\n" for n in (32, 33, 34, 200)]




@pytest.mark.parametrize("name,text,first_line", CORPUS, ids=[c[0] for c in CORPUS])
def test_the_same_as_the_pure_path_on_the_kb_and_the_bad_entries(name, text, first_line):
    assert_same(text, first_line)


@pytest.mark.parametrize("text", EDGE_CASES)
def test_the_same_as_the_pure_path_on_edge_cases(text):
    assert_same(text, 17)


# Texts made of the pieces YAML's grammar turns on, glued at random.
PIECES = [
    "a", "b", "key", "x y", "1", "-1", "0x1F", "1.5", "1e3", ".inf", ".nan", "~", "null", "true", "yes", "Off", "0",
    "2024-01-02", "2024-13-45", "2001-12-14t21:59:43.10-05:00", "12:30", "1_0", "0o7", "0b1", "<<", "=", "é",
    "\U0001F600", ":", ": ", ":\n", " ", "  ", "    ", "\n", "\n\n", "\n  ", "\r\n", "\r", "\t", "- ", "-", "? ", "?",
    "[", "]", "{", "}", ",", ", ", "&x ", "*x", "!t ", "!!str ", "!!int ", "! ", "!e!x ", "'", "''", '"', '\\"', "\\",
    "\\n", "\\x41", "#", " #c", "|", "|-", ">", ">+", "|2", "---", "--- ", "...", "%YAML 1.1", "%TAG ! !x", "@", "`",
    "%", "\x85", "\u2028", "\ufeff", "\x07",
]
YAMLISH = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def _data():
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                        st.text(max_size=12), st.sampled_from(["yes", "~", "1:2", "2024-01-02", "0x1", "a: b", "- x"]))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)


@st.composite
def dumped(draw):
    """Real YAML, as PyYAML writes data in some style, perhaps with a few lines dropped or duplicated."""
    text = yaml.dump(draw(_data()), Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),  # the C one: faster
                     default_flow_style=draw(st.sampled_from([False, True, None])),
                     default_style=draw(st.sampled_from([None, "", "'", '"', "|"])),
                     allow_unicode=draw(st.booleans()), width=draw(st.sampled_from([20, 80])))
    lines = text.split("\n")
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.integers(0, len(lines) - 1))
        if draw(st.booleans()):
            del lines[i]
        else:
            lines.insert(i, lines[i])
    return "\n".join(lines)


PROPERTY = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(YAMLISH, st.integers(1, 30))
@example("a: 1\n\ufeff", 1)
def test_the_same_as_the_pure_path_on_yamlish_texts(text, first_line):
    assert_same(text, first_line)


@settings(PROPERTY, max_examples=60)  # drawing nested data takes most of the time
@given(dumped())
def test_the_same_as_the_pure_path_on_dumped_data(text):
    assert_same(text, 2)


@PROPERTY
@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60))
def test_the_same_as_the_pure_path_on_any_text(text):
    assert_same(text, 1)


# Short texts of a few characters that matter, where parsers part most often.
TIGHT = st.one_of(*(st.lists(st.sampled_from(alphabet), max_size=16).map("".join) for alphabet in [
    list("ab :-?\n[]{},#'\"|>!&*%.~\\0\t\r") + ["  ", "\n  ", ": ", "- ", "? ", "---", "..."],
    list("a :-?\n#|>012+") + ["  ", "\n ", "\n  ", "? ", ": ", "- "],
    list("ab :,?[]{}\n#'\"-") + [": ", ", ", "? "],
    list("a:\r\x85\u2028\u2029 -.%") + ["---", "...", "\n"],
]))


@PROPERTY
@given(TIGHT)
@example("{b: }")
@example("[a?b]")
@example("\r---")
def test_the_same_as_the_pure_path_on_short_tight_texts(text):
    assert_same(text, 1)


# -- the fast path, and what it must refuse fast -----------------------------------------------------

def test_libyaml_is_the_fast_path_where_pyyaml_has_it():
    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml here")
    assert _yaml._libyaml_bounds_nesting()
    assert _yaml._FAST_LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("text, fast", [
    ("contains: 'n = a ? b : c;'\n", True),  # C++'s conditional inside a quoted scalar is text
    ("contains: |\n  x = a ? b : c;\n", True),
    ("? k\n: v\n", False),  # an explicit key: PyYAML's reading
    ("a:\n  ? k\n  : v\n", False),
])
def test_a_question_mark_leaves_the_fast_path_only_as_an_explicit_key(text, fast):
    if _yaml._FAST_LOADER is None:
        pytest.skip("PyYAML without libyaml here")
    assert _yaml._libyaml_may_parse(text) is fast


def test_the_kb_loads_on_the_fast_path_without_the_pure_one(monkeypatch):
    """The slow pure-Python path runs only for a problem: never for the knowledge base's own entries."""
    if _yaml._FAST_LOADER is None:
        pytest.skip("PyYAML without libyaml here")

    def fail(text, first_line):
        raise AssertionError("the pure path ran")

    monkeypatch.setattr(_yaml, "_load_checked", fail)
    for name, text, first_line in KB_FRONTS:
        assert _yaml.load(text, first_line) is not None, name
    assert len(KB_FRONTS) >= 20


def _reloaded(monkeypatch):
    """A fresh copy of verifier._yaml, imported under whatever `yaml` looks like now."""
    name = "verifier_yaml_reloaded"
    spec = importlib.util.spec_from_file_location(name, _yaml.__file__)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_without_libyaml_every_text_takes_the_pure_path(monkeypatch):
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    module = _reloaded(monkeypatch)
    assert module._FAST_LOADER is None
    assert module.load("a: [1, b]\n", 2).plain() == {"a": [1, "b"]}
    with pytest.raises(module.YAMLProblem) as info:
        module.load("a: &x 1\n", 2)
    assert (info.value.code, info.value.line, info.value.column) == ("G104", 2, 4)


def test_a_libyaml_that_does_not_bound_nesting_is_not_used(monkeypatch):
    """libyaml composes in C, one call per level: without its bound, 1 MiB of `[` would end the process."""
    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml here")

    class Unbounded(yaml.CSafeLoader):
        def raw_scan(self):
            return 1

    monkeypatch.setattr(yaml, "CSafeLoader", Unbounded)
    assert _reloaded(monkeypatch)._FAST_LOADER is None


_MEBIBYTE = 1024 * 1024
DEEP = {
    "flow": "[" * _MEBIBYTE,
    "flow pairs": "[a: " * (_MEBIBYTE // 4),
    "block sequences": "- " * (_MEBIBYTE // 2),
    "block mappings": "".join(" " * i + "k:\n" for i in range(1440)),
    "block pairs": "".join("  " * i + "- k:\n" for i in range(1000)),
}


@pytest.mark.parametrize("shape", sorted(DEEP))
def test_deep_nesting_is_refused_fast_as_the_pure_path_refuses_it(shape):
    text = DEEP[shape]
    started = time.perf_counter()
    fast = outcome(_yaml.load, text, 2)
    assert time.perf_counter() - started < 10
    assert fast == outcome(_yaml._load_checked, text, 2)
    assert fast[:2] == ("problem", "YAML nests too deeply")


def test_an_alias_bomb_is_refused_before_anything_expands():
    text = "a: &a [" + ", ".join(["lol"] * 9) + "]\n" + "".join(
        f"{b}: &{b} [" + ", ".join([f"*{a}"] * 9) + "]\n" for a, b in zip("abcdefgh", "bcdefghi"))
    started = time.perf_counter()
    with pytest.raises(YAMLProblem) as info:
        _yaml.load(text, 2)  # 9 ** 9 lols, were the aliases followed
    assert (info.value.code, info.value.line, info.value.column) == ("G104", 2, 4)
    assert time.perf_counter() - started < 2
    assert_same(text, 2)


@pytest.mark.parametrize("text", ["a: &x 1\n", "a: 1\nb: !!str 2\n", "{&k a: 1}", "- !!str\n  x\n", "a: ! 1\n",
                                  "a: x & y\nb: !x\n", "a: x ! y\nb: &x\n", "[a, &x b, *x]", "a: &x\n  b: 1\n"])
def test_anchors_and_tags_leave_the_fast_path(text, monkeypatch):
    """libyaml's nodes show an anchor or a tag only where their node starts: `_convert` must look there."""
    if _yaml._FAST_LOADER is None:
        pytest.skip("PyYAML without libyaml here")
    seen = []
    checked = _yaml._load_checked
    monkeypatch.setattr(_yaml, "_load_checked", lambda text, first_line: seen.append(text) or checked(text, 1))
    outcome(_yaml.load, text, 1)
    assert seen == [text]


def test_the_constructor_keeps_no_node():
    _yaml.load("a: 1\nb: [2024-01-02, x]\n")
    _yaml._load_checked("a: 1.5\n", 1)
    assert not _yaml._SCALARS.constructed_objects


def test_problems_are_still_reported_with_their_lines():
    with pytest.raises(YAMLProblem) as info:
        _yaml.load("a: 1\nb: [1,\n", first_line=2)
    assert info.value.code == "G103" and info.value.line == 4
    with pytest.raises(YAMLProblem) as info:
        _yaml.load("a: 1\nb:\n  c: 1\n  c: 2\n", first_line=2)
    assert (info.value.code, info.value.line, info.value.column) == ("G106", 5, 3)
    assert "first at line 4" in info.value.message
