"""What an entry may ask of the verifier is bounded before it is paid: parsing its YAML, compiling its regular
expressions and queries, running them, the sum over its checks and over a run; and a check that runs to its
bound is its own error, kept, never the engine file's.

Where the unbounded version would not come back (or would take the machine's memory with it), the work runs
under a guard: a timer in this process for pure-Python work, a child process with limits for C code.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager

import pytest

from verifier import _yaml, lint
from verifier import kb as kb_module
from verifier.code import Fragment, SourceFile, _bounded
from verifier.entries import parse_entry
from verifier.evaluate import evaluate_source
from verifier.matchers import REGISTRY
from verifier.model import Form, Release, Verdict
from verifier.reading import evaluate
from verifier.verdicts import VerdictCache

from .conftest import VALID_ENTRY


class TooSlow(BaseException):  # not an Exception: nothing under test may catch it
    pass


@contextmanager
def within(seconds: float):
    """Fail, rather than hang, when the Python code in the block runs longer than `seconds`."""
    def expire(signum, frame):
        raise TooSlow(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def isolated(code: str, seconds: float = 60, memory: int = 1 << 30) -> dict:
    """Run `code` (which prints one JSON value) in a child Python with `memory` bytes of address space and
    `seconds` of wall time: work in C that would not stop, or would take the machine's memory, fails the test."""
    preamble = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
    try:
        done = subprocess.run([sys.executable, "-"], input=(preamble + textwrap.dedent(code)).encode(),
                              capture_output=True, timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {seconds} s")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return json.loads(done.stdout)


def run(source: str, path: str = "pkg/mod.py", **check) -> Verdict:
    matcher = next(k for k in REGISTRY if k in check)
    form = Form("vllm", path, matcher, check.pop(matcher), check.pop("in", None), check.pop("after", None))
    return evaluate_source(form, SourceFile(path, source.encode()))


EVALUATE = """\
import json, sys
from verifier.code import SourceFile
from verifier.evaluate import evaluate_source
from verifier.model import Form
form = Form("vllm", "pkg/mod.py", {matcher!r}, {pattern!r})
verdict = evaluate_source(form, SourceFile("pkg/mod.py", {source!r}.encode()))
print(json.dumps(verdict.to_json()))
"""


def lint_messages(kb_root, front: str) -> list[str]:
    """The diagnostics of VALID_ENTRY with its checks replaced by `front`'s."""
    text = (VALID_ENTRY.split("checks:\n")[0] + "checks:\n" + front + "severity: performance\n---"
            + VALID_ENTRY.split("\n---", 1)[1])
    loaded = parse_entry(text.encode(), "ops-example.md", "ops-example")
    return [f"{d.code} {d.message}" for d in lint.lint(loaded, kb_module.load(kb_root))]


# -- 1. regular expressions that are cheap to write and expensive to compile --------------------------------

COMPILE_BOMBS = [
    "(?:(?:(?:a{1000}){1000}){1000})",  # a billion nodes: all the memory there is
    "(?:a{1000}){1000}",  # a million: 270 MB and a second
    "[ab]{300000}",  # one repeat is unrolled too
    "(?x)(?:a{ 1 0 0 0 }){ 1 0 0 0 }",  # verbose: spaces inside the braces still count
    "(?:a{1000}b{1000}){300}",  # a sequence inside multiplies as a whole
    "x{4294967294}",  # the largest count `regex` takes
    "(?:(?:a{1000}){1000}){e<=1}",  # fuzzy: the same unrolling underneath
]


@pytest.mark.parametrize("pattern", COMPILE_BOMBS)
def test_a_regex_expensive_to_compile_is_an_error_of_the_check_and_costs_nothing(pattern):
    started = time.monotonic()
    verdict = isolated(EVALUATE.format(matcher="matches", pattern=pattern, source="x = 1\n"), seconds=60,
                       memory=400 << 20)
    assert time.monotonic() - started < 30
    assert (verdict["verdict"], verdict["reason"]) == ("error", "invalid")
    assert "counted repeats" in verdict["message"]


def test_a_regex_expensive_to_compile_is_a_lint_diagnostic(kb_root):
    found = isolated(f"""\
        import json
        from verifier.matchers import REGISTRY
        print(json.dumps(REGISTRY["matches"].validate({COMPILE_BOMBS[0]!r})))
        """, memory=400 << 20)
    assert found[0] == "G307" and "counted repeats" in found[1]
    front = f"  - id: bomb\n    claim: c\n    path: pkg/sched.py\n    matches: '{COMPILE_BOMBS[1]}'\n"
    assert [m for m in lint_messages(kb_root, front) if m.startswith("G307") and "counted repeats" in m]


def test_a_regex_longer_than_its_bound_is_refused_before_it_is_parsed():
    pattern = "|".join(f"w{i}" for i in range(200_000))  # a megabyte: parsing alone took half a minute
    with within(10):
        verdict = run("x = 1\n", matches=pattern)
    assert (verdict.status, verdict.reason) == ("error", "invalid")
    assert f"at most {_bounded.REGEX_MAX_LENGTH}" in verdict.message


@pytest.mark.parametrize("pattern,small", [
    ("(?:a{1000}){1000}", False),
    ("(?:a{0,1000}){1000}", True),  # only the minimum count is unrolled
    ("(?:a{1000}){0,1000}", True),
    ("\\s{1,100000}", True),
    ("[0-9a-f]{64}", True),
    ("(?:a{100}){101}", False),
    (r"self\.max_req_len\s*-\s*(input_len|len\(req\.origin_input_ids\))\s*-\s*1", True),
])
def test_the_expanded_size_multiplies_the_minimum_counts_of_nested_repeats(pattern, small):
    size = _bounded.regex_expansion(pattern, 10 ** 9)
    assert (size <= _bounded.REGEX_MAX_EXPANSION) == small, size


def test_the_kbs_regular_expressions_are_well_within_the_bounds():
    from verifier.entries import load_entry

    from .conftest import REPO

    entries = [load_entry(path).entry for path in sorted((REPO / "gotchas").glob("*.md"))]
    patterns = [form.pattern for entry in entries if entry for check in entry.checks for form in check.forms
                if form.matcher == "matches"]
    assert patterns
    for pattern in patterns:
        assert len(pattern) * 5 <= _bounded.REGEX_MAX_LENGTH
        assert _bounded.regex_expansion(pattern, 10 ** 9) * 10 <= _bounded.REGEX_MAX_EXPANSION
        _bounded.compile_regex(pattern)


# -- 2. deeply nested YAML -------------------------------------------------------------------------------------

_MEBIBYTE = 1024 * 1024
NESTINGS = {
    "flow sequences": lambda n: "[" * n + "]" * n,
    "flow mappings": lambda n: "{a: " * n + "1" + "}" * n,
    "both": lambda n: "[{a: " * (n // 2),
    "inside a key": lambda n: "{" + "[" * n + "]" * n + ": 1}",
}


@pytest.mark.parametrize("libyaml", [True, False], ids=["libyaml", "pure-python"])
@pytest.mark.parametrize("shape", sorted(NESTINGS))
def test_a_mebibyte_of_nesting_in_front_matter_is_refused_in_seconds(shape, libyaml, monkeypatch):
    if not libyaml:
        monkeypatch.setattr(_yaml, "_FAST_LOADER", None)
    head, tail = "---\nid: ops-example\ntitle: ", "\n---\n\n## Symptom\n\nx\n"
    data = head + NESTINGS[shape](_MEBIBYTE)[:_MEBIBYTE - len(head) - len(tail)] + tail
    assert len(data) == _MEBIBYTE
    with within(10):  # it took hours: PyYAML's scanner pays for every open level on every token
        loaded = parse_entry(data.encode(), "ops-example.md", "ops-example")
    [problem] = [d for d in loaded.diagnostics if d.code.startswith("G1")]
    assert (problem.code, problem.line, problem.message) == ("G103", 3, "YAML nests too deeply")
    assert problem.column > 33  # where the 33rd level opens, after `title: `


def test_nesting_is_reported_where_it_passes_the_bound_whatever_follows():
    text = "a: 1\nb:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 34)) + "  " * 34 + "v\nc: *alias\n"
    with pytest.raises(_yaml.YAMLProblem) as raised:
        _yaml.load(text, first_line=2)
    deepest = text.split("\n").index("  " * 33 + "k33:") + 1  # the mapping 33 levels down starts at its key
    assert (raised.value.message, raised.value.line) == ("YAML nests too deeply", deepest + 1)  # from line 2
    _yaml.load("a: " + "[" * 32 + "]" * 32 + "\n")  # 32 levels are fine



# -- 3. tree-sitter queries ----------------------------------------------------------------------------------

LARGE = "def f():\n" + "    x = (a, b, c, d, e, f, g)\n" * 5000
SLOW_QUERY = "(tuple " + " ".join(f"(_)? @a{i}" for i in range(7)) + ")"  # 70 characters; minutes on LARGE


def test_a_query_that_runs_long_is_stopped_at_its_cpu_bound():
    started = time.monotonic()
    verdict = isolated(EVALUATE.format(matcher="query", pattern=SLOW_QUERY, source=LARGE), seconds=90)
    assert time.monotonic() - started < 80
    assert (verdict["verdict"], verdict["reason"]) == ("error", "invalid")
    assert f"longer than {_bounded.QUERY_SECONDS:g} s of CPU" in verdict["message"]


def test_a_query_past_its_memory_is_an_error_of_the_check(monkeypatch):
    monkeypatch.setattr(_bounded, "QUERY_MEMORY", 4 << 20)
    # a match for each of 100,000 names: some 40 MB of matches, collected in C before anything returns
    verdict = run("x = (" + ", ".join(f"a{i}" for i in range(100_000)) + ")\n", query="(_) @a")
    assert (verdict.status, verdict.reason) == ("error", "invalid"), verdict
    assert "4 MiB" in verdict.message


@pytest.mark.parametrize("query,why", [
    ("(_) @a " * 300, "300 patterns"),
    ("(call " + " ".join(f"(_) @a{i}" for i in range(40)) + ")", "40 captures"),
    ("(identifier) @a " + ";" * 5000, "characters"),
])
def test_a_query_too_large_is_refused_at_lint_and_at_evaluation(query, why):
    problem = REGISTRY["query"].validate(query)
    assert problem is not None and problem[0] == "G308" and why in problem[1]
    started = time.monotonic()
    verdict = run(LARGE, query=query)
    assert time.monotonic() - started < 5  # refused before anything runs
    assert (verdict.status, verdict.reason) == ("error", "invalid") and why in verdict.message


def test_a_query_still_finds_the_first_match_in_source_order_and_its_scope():
    source = "class A:\n    def f(self):\n        x = 1\n\nclass B:\n    def f(self):\n        y = 2\n        z = 3\n"
    verdict = run(source, query="(assignment right: (integer) @v)", **{"in": "B.f"})
    assert (verdict.status, verdict.lines, verdict.symbol) == ("holds", (7, 7), "B.f")
    assert run(source, query="(assignment right: (integer) @v)").lines == (3, 3)


def test_a_query_whose_process_cannot_start_is_the_machinerys_error(monkeypatch):
    monkeypatch.setattr(_bounded.sys, "executable", "/nonexistent/python")
    verdict = run("x = 1\n", query="(identifier) @x")
    assert (verdict.status, verdict.reason) == ("error", "unavailable")


# -- 4. budgets over an entry and a run, and errors that are kept ---------------------------------------------

ENTRY = """\
---
id: {id}
title: t
scheme: ops
severity: performance
concepts: [kv-cache]
engines: [vllm]
references: [https://example.org/1]
history:
  - {{date: 2026-10-04, note: "Written."}}
checks:
{checks}---

## Symptom

x

## Root cause

x

## Workaround

x

## Notes

x
"""


def entries_and_tree(tmp_path):
    """Two entries of three checks each, over two files; all of them hold."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("def f():\n    return 1\n")
    (tree / "pkg" / "b.py").write_text("def g():\n    return 2\n")
    found = []
    for name in ("ops-first", "ops-second"):
        checks = "".join(f"  - id: c{i}\n    claim: c\n    path: pkg/{p}.py\n    contains: return {n}\n"
                         for i, (p, n) in enumerate([("a", 1), ("b", 2), ("a", 1)]))
        found.append(parse_entry(ENTRY.format(id=name, checks=checks).encode(), f"{name}.md", name).entry)
    return found, tree


def verify_under(budget, entries, tree, verdicts=None, helper=None):
    from verifier.sources.directory import DirectorySource
    from verifier.verify import selected_checks, verify_release

    pairs = list(selected_checks(entries, "vllm"))
    with budget.active():
        return verify_release(DirectorySource("vllm", tree), Release("vllm", "HEAD"), pairs, verdicts=verdicts,
                              helper=helper)


def test_an_entry_past_its_time_budget_has_its_other_checks_refused(tmp_path):
    from verifier.evaluate import Budget
    from verifier.verify import selected_checks

    entries, tree = entries_and_tree(tmp_path)
    budget = Budget(selected_checks(entries), entry_seconds=1e-9)  # spent by the first check of each entry
    verdicts = VerdictCache(tmp_path / "verdicts.sqlite3")
    results = verify_under(budget, entries, tree, verdicts)
    for entry in entries:
        mine = [r.verdict for r in results if r.entry == entry.id]
        assert [v.status for v in mine].count("holds") == 1
        refused = [v for v in mine if v.status == "error"]
        assert len(refused) == 2 and all(v.reason == "unavailable" for v in refused)
        assert all("time budget of the entry spent" in v.message for v in refused)
        assert budget.spent[entry.id] > 0
    # a refusal says nothing of the check: it is not kept, and the next run evaluates it
    again = verify_under(Budget(selected_checks(entries)), entries, tree, verdicts)
    assert {r.verdict.status for r in again} == {"holds"}


def test_a_run_past_its_time_budget_has_its_other_checks_refused(tmp_path):
    from verifier.evaluate import Budget
    from verifier.verify import selected_checks

    entries, tree = entries_and_tree(tmp_path)
    results = verify_under(Budget(selected_checks(entries), run_seconds=1e-9), entries, tree)
    assert [r.verdict.status for r in results].count("holds") == 1
    refused = [r.verdict for r in results if r.verdict.status == "error"]
    assert len(refused) == 5 and all("time budget of the run spent" in v.message for v in refused)


def test_the_helper_process_spends_the_runs_budget_and_the_run_counts_what_it_spent(tmp_path, monkeypatch):
    from verifier import helper as helper_module
    from verifier.evaluate import Budget
    from verifier.verify import selected_checks

    entries, _ = entries_and_tree(tmp_path)
    [entry] = entries[:1]
    forms = [c.own for c in entry.checks if c.path == "pkg/a.py"]
    budget = Budget(selected_checks([entry]), entry_seconds=1e-9)
    monkeypatch.setattr(helper_module, "START_AFTER", 0)
    helper = helper_module.Helper(enabled=True)
    try:
        with budget.active():
            helper.want()
            deadline = time.monotonic() + 60
            while not helper.free() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert helper.submit("file a", "pkg/a.py", b"def f():\n    return 1\n", "a" * 64, forms)
            [(token, verdicts)] = helper.wait()
    finally:
        helper.close()
    assert token == "file a" and helper.evaluated == 1
    assert [v.status for v in verdicts] == ["holds", "error"]  # the helper refused the second: the entry's is spent
    assert "time budget of the entry spent" in verdicts[1].message
    assert budget.spent[entry.id] > 0  # what the helper spent is counted here


CATASTROPHIC = r"(?:a|a?)+$"


def test_an_error_of_the_checks_own_pattern_is_kept_and_not_paid_again(tmp_path):
    from verifier.reading import FileCache
    from verifier.sources.directory import DirectorySource

    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "mod.py").write_text("x = '" + "a" * 5000 + "!'\n")
    snapshot = DirectorySource("vllm", tree).open(Release("vllm", "HEAD"))
    form = Form("vllm", "pkg/mod.py", "matches", CATASTROPHIC)
    verdicts = VerdictCache(tmp_path / "verdicts.sqlite3")
    first = evaluate(form, snapshot, FileCache(), verdicts)
    assert (first.status, first.reason) == ("error", "invalid") and "longer than" in first.message
    verdicts.close()
    verdicts = VerdictCache(tmp_path / "verdicts.sqlite3")  # the next run
    started = time.monotonic()
    second = evaluate(form, snapshot, FileCache(), verdicts)
    assert time.monotonic() - started < _bounded.REGEX_TIMEOUT / 2  # the regex did not run again
    assert second == first and verdicts.hits == 1


@pytest.mark.parametrize("reason", ["unavailable", "unparsable"])
def test_an_error_of_the_machinery_is_never_kept(tmp_path, reason):
    form = Form("vllm", "pkg/mod.py", "contains", "x")
    verdicts = VerdictCache(tmp_path / "verdicts.sqlite3")
    verdicts.put(form, Verdict("error", reason, path=form.path, message="m", file_sha="a" * 64))
    verdicts.put(form, Verdict("error", "invalid", path=form.path, message="m", file_sha="b" * 64))
    verdicts.close()
    verdicts = VerdictCache(tmp_path / "verdicts.sqlite3")
    assert verdicts.get(form, "a" * 64) is None
    assert verdicts.get(form, "b" * 64).reason == "invalid"


# -- 5. matching that recurses too deep is the check's fault ---------------------------------------------------

CALL = "def f():\n    g(" + ", ".join(f"a{i}" for i in range(3000)) + ")\n"


@pytest.mark.parametrize("key,fragment,why", [
    ("contains", "g(" + "$$$ " * 1500 + "a1)", "`$$$` and `$NAME`"),
    ("contains", "g(" + ", ".join(f"$A{i}" for i in range(1500)) + ")", "`$$$` and `$NAME`"),
    ("contains", "[" * 3000 + "]" * 3000, "nests too deeply"),
    ("absent", "(" * 3000 + ")" * 3000, "nests too deeply"),
    ("after", "g(" + "$$$ " * 1500 + "a1)", "`$$$` and `$NAME`"),
])
def test_a_fragment_that_recurses_too_deep_is_an_error_of_the_check_not_of_the_file(key, fragment, why):
    check = {"contains": "g($$$)", "after": fragment} if key == "after" else {key: fragment}
    with within(20):
        verdict = run(CALL, **check)
    assert (verdict.status, verdict.reason) == ("error", "invalid"), verdict
    assert why in verdict.message and "fragment" in verdict.message and "file" not in verdict.message
    if key == "after":
        assert "`after`" in verdict.message


def test_a_file_that_nests_too_deeply_is_still_the_files_fault():
    source = "def f():\n    x = " + " + ".join(["a"] * 5000) + "\n"
    verdict = run(source, contains="x = $X - 1")
    assert (verdict.status, verdict.reason) == ("error", "unparsable") and "file" in verdict.message


def test_a_fragment_too_deep_to_analyse_does_not_crash_lint(kb_root):
    assert Fragment("[" * 3000 + "]" * 3000).problem  # was a RecursionError out of the constructor
    front = "  - id: deep\n    claim: c\n    path: pkg/sched.py\n    contains: g($$$)\n    after: '" + "[" * 3000 \
            + "]" * 3000 + "'\n"
    lint_messages(kb_root, front)


def test_a_hint_for_a_long_fragment_on_long_lines_stays_cheap():
    source = "def f():\n    g(" + ", ".join(f"a{i}" for i in range(3000)) + ")\n"
    with within(10):  # difflib's ratio costs the product of both lengths: 30 s and more
        verdict = run(source, contains="g(" + "$X, " * 90 + "zzz)")
    assert (verdict.status, verdict.reason) == ("changed", "not-found")
