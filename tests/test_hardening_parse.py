"""Parsing bounded by depth and memory (issue #32): a release file that would cost tree-sitter gigabytes is refused
by a linear pre-scan, with a message that names it, as the check's `error unparsable` verdict; never a crash."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from verifier.code import SourceFile, _cpp, _limits, _python
from verifier.errors import GotchasError
from verifier.evaluate import evaluate_source
from verifier.model import ERROR, Check


def _verdict(path: str, data: bytes):
    return evaluate_source(Check(id="c", claim="", engine="vllm", path=path, matcher="contains", pattern="x = 1"),
                           SourceFile(path, data))


def _nested(depth: int, python: bool = True) -> bytes:
    body = b"(" * depth + b"1" + b")" * depth
    return b"x = 1\ny = " + body + b"\n" if python else b"int x = 1;\nint y = " + body + b";\n"


@pytest.mark.parametrize("path", ["pkg/mod.py", "src/server.cpp"])
def test_nesting_past_the_bound_is_an_unparsable_verdict_that_names_the_file(path):
    started = time.perf_counter()
    verdict = _verdict(path, _nested(_limits.MAX_DEPTH + 1, path.endswith(".py")))
    assert time.perf_counter() - started < 1
    assert (verdict.status, verdict.reason) == (ERROR, "unparsable"), verdict
    assert verdict.message == f"{path}: nesting deeper than 256 (257 levels); not parsed"


@pytest.mark.parametrize("path", ["pkg/mod.py", "src/server.cpp"])
def test_nesting_at_the_bound_parses(path):
    verdict = _verdict(path, _nested(_limits.MAX_DEPTH, path.endswith(".py")))
    assert verdict.status != ERROR, verdict


def test_too_many_tokens_is_refused_before_parsing():
    data = b"x = [" + b"1," * (_limits.MAX_TOKENS // 2 + 1) + b"]\n"
    started = time.perf_counter()
    verdict = _verdict("pkg/table.py", data)
    assert time.perf_counter() - started < 1.5
    assert (verdict.status, verdict.reason) == (ERROR, "unparsable"), verdict
    assert verdict.message.startswith("pkg/table.py: about 2,000,0")
    assert verdict.message.endswith("over the 2,000,000-token bound; not parsed")


def test_a_parse_outside_a_verdict_is_a_gotchas_error_not_a_traceback():
    for parse in (_python.parse, _cpp.parse):
        with pytest.raises(GotchasError, match="nesting deeper than 256"):
            parse(b"(" * 2000)


def test_the_bound_counts_tokens_of_non_ascii_words():
    # identifiers of non-ASCII letters are tokens too (`\w` of bytes is ASCII only)
    assert _limits.tokens("é é é".encode()) == 3
    assert _limits.tokens(b"a.b(c, 1)") == 8


_CHILD = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from verifier.code import SourceFile
    from verifier.evaluate import evaluate_source
    from verifier.model import Check
    n = 8 << 20
    data = b"x = " + b"[" * n + b"]" * n + b"\\n"
    verdict = evaluate_source(Check(id="c", claim="", engine="vllm", path="m.py", matcher="contains",
                                    pattern="x"), SourceFile("m.py", data))
    print(verdict.reason, verdict.message)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
""")


def test_sixteen_mib_of_nested_brackets_is_refused_in_bounded_memory():
    # Before: 5.8 GB to parse; under this 1 GiB limit, tree-sitter's parse crashed the process.
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    reason, peak = done.stdout.splitlines()
    assert reason.startswith("unparsable m.py: about "), reason
    assert int(peak) < 400, peak  # MB: the file, its text and the scan's copies


def test_masking_a_cpp_file_of_many_bare_macro_lines_is_linear():
    # Before: 40,000 lines of `FOO` between statements took 34 s (each line copied all that came before).
    data = b"FOO\nint x;\n" * 100_000
    started = time.perf_counter()
    masked = _cpp.masked(data)
    assert time.perf_counter() - started < 2
    assert masked == b"   \nint x;\n" * 100_000


def test_real_code_is_far_under_both_bounds():
    import pathlib

    import verifier

    files = sorted(pathlib.Path(verifier.__file__).parent.rglob("*.py"))
    assert len(files) > 100
    for file in files:
        data = file.read_bytes()
        _limits.check(data, str(file))  # never refused
        assert _limits.tokens(data) < _limits.MAX_TOKENS // 20 and _limits.depth(data) < _limits.MAX_DEPTH // 4, file


def test_the_query_child_is_given_no_file_past_the_bounds():
    """A tree-sitter query runs in a child process that parses the file again: the same pre-scan refuses a nest
    past the bound before the child starts, and one at the bound is still queried."""
    from verifier.code import _bounded

    deep = _nested(_limits.MAX_DEPTH + 1)
    with pytest.raises(_limits.ParseRefused, match="nesting deeper than"):
        _bounded.query_first("(identifier) @x", deep, [(0, len(deep))])
    fine = _nested(_limits.MAX_DEPTH)
    assert _bounded.query_first("(identifier) @x", fine, [(0, len(fine))]) is not None
