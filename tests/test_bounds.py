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
from contextlib import contextmanager

import pytest

from verifier import _yaml, lint
from verifier import kb as kb_module
from verifier.code import SourceFile
from verifier.entries import parse_entry
from verifier.evaluate import evaluate_source
from verifier.matchers import REGISTRY
from verifier.model import Form, Verdict

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
    text = VALID_ENTRY.split("checks:\n")[0] + "checks:\n" + front + "---" + VALID_ENTRY.split("\n---", 1)[1]
    loaded = parse_entry(text.encode(), "ops-example.md", "ops-example")
    return [f"{d.code} {d.message}" for d in lint.lint(loaded, kb_module.load(kb_root))]


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
