"""The helper process: the same verdicts as one process, and nothing lost when it fails in any way."""

from __future__ import annotations

import os

import pytest

from verifier import helper as helper_module
from verifier.code import SourceFile
from verifier.entries import load_entry
from verifier.evaluate import evaluate_source

from .conftest import run_cli
from .index_server import IndexServer, make_sdist
from .test_verify import without_timestamps

MODULES = 8
RELEASES = ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]


def module(j: int, release: int) -> str:
    """pkg/mod{j}.py at a release: its limit changes at some releases, its function moves at others."""
    limit = 16 if (j + release) % 3 else 32
    body = f"    return x * {limit}\n" if (j + release) % 4 else f"    y = x\n    return y * {limit}\n"
    return (f'NAME = "metric_{j}"\n\n\nclass Engine{j}:\n    def handle(self, x):\n{body}\n\n'
            f"def helper_{j}(a, b):\n    return a + b\n")


def entry(j: int) -> str:
    return f"""\
---
id: ops-mod-{j}
title: Module {j} keeps its limit
scheme: ops
severity: performance
concepts: [kv-cache]
engines: [vllm]
references:
  - https://example.org/issue/{j}
history:
  - {{date: 2026-10-04, note: "Written."}}
checks:
  - id: limit
    claim: The limit is 16.
    path: pkg/mod{j}.py
    in: Engine{j}.handle
    contains: return x * 16
  - id: name
    claim: The metric is named.
    path: pkg/mod{j}.py
    string: "metric_{j}"
  - id: helper
    claim: The helper adds.
    path: pkg/mod{j}.py
    in: helper_{j}
    contains: return a + b
---

## Symptom

Latency climbs.

## Root cause

The limit.

## Workaround

Raise it.

## Notes

None.
"""


@pytest.fixture
def many(kb_root, monkeypatch, tmp_path):
    """A KB of MODULES entries (3 checks each, one file each) and an index of 4 releases of those files."""
    for j in range(MODULES):
        (kb_root / "gotchas" / f"ops-mod-{j}.md").write_text(entry(j))
    monkeypatch.chdir(kb_root)
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as server:
        for r, version in enumerate(RELEASES):
            files = {f"pkg/mod{j}.py": module(j, r).encode() for j in range(MODULES)}
            server.add("vllm", f"vllm-{version}.tar.gz", make_sdist({**files, "setup.py": b""}, top=f"vllm-{version}"),
                       upload_time=f"2024-0{r + 1}-01T00:00:00Z")
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        yield kb_root


def verify_with(kb, monkeypatch, capsys, tmp_path, name: str, processes: str) -> tuple[str, str, int]:
    """`gotchas verify` with its own cache and ledger: (ledger without timestamps, evidence, helper's files)."""
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / f"cache-{name}"))
    monkeypatch.setenv("GOTCHAS_PROCESSES", processes)
    helped = []
    real_close = helper_module.Helper.close

    def close(self):
        helped.append(self.evaluated)
        real_close(self)

    monkeypatch.setattr(helper_module.Helper, "close", close)
    ledger = tmp_path / f"ledger-{name}"
    code, out, err = run_cli(capsys, "verify", "--engine", "vllm", "--ledger", str(ledger))
    assert code in (0, 1), out + err
    evidence = "".join(p.read_text() for p in sorted((ledger / "evidence").glob("*.json")))
    return without_timestamps((ledger / "vllm.json").read_text()), evidence, sum(helped)


@pytest.fixture
def start_at_once(monkeypatch):
    """The pool starts with the first file (files this small are otherwise all done before it is): every run
    then hands it files."""
    monkeypatch.setattr(helper_module, "START_AFTER", 0)


def test_the_helper_gives_the_verdicts_one_process_gives(many, monkeypatch, capsys, tmp_path, start_at_once):
    alone, alone_evidence, alone_helped = verify_with(many, monkeypatch, capsys, tmp_path, "alone", "1")
    shared, shared_evidence, helped = verify_with(many, monkeypatch, capsys, tmp_path, "shared", "2")
    assert alone_helped == 0 and helped > 0  # the helper took files
    assert shared == alone and shared_evidence == alone_evidence
    assert '"verdict": "changed"' in alone and '"verdict": "holds"' in alone and '"error"' not in alone


def test_a_small_run_does_not_start_the_helper(kb, monkeypatch, capsys, tmp_path):
    from .test_verify import sdist

    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as server:
        server.add("vllm", "vllm-0.1.0.tar.gz", sdist("0.1.0"))
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        started = []
        monkeypatch.setattr(helper_module.Helper, "_start", lambda self: started.append(1))
        _, _, helped = verify_with(kb, monkeypatch, capsys, tmp_path, "small", "2")
    assert started == [] and helped == 0  # two files, at most START_AFTER: not worth a process


#: Workers that go wrong, as functions in place of `helper.evaluate_file` (run in the workers: this module is
#: imported there).
def exits(path, data, sha256, checks, budget=None):
    os._exit(3)


def answers_garbage(path, data, sha256, checks, budget=None):
    return b"\xff" * 64


def answers_another_file(path, data, sha256, checks, budget=None):
    return [], None


def answers_with_the_wrong_things(path, data, sha256, checks, budget=None):
    return ["holds"] * len(checks), None


def answers_too_few_verdicts(path, data, sha256, checks, budget=None):
    from verifier.model import Verdict

    return [Verdict("holds", "present")], None


def fails(path, data, sha256, checks, budget=None):
    raise MemoryError


def cannot_be_sent(path, data, sha256, checks, budget=None):
    return (lambda: None), None


def gives_up(path, data, sha256, checks, budget=None):
    return None, "MemoryError"


_calls = []


def dies_on_the_third_file(path, data, sha256, checks, budget=None):
    _calls.append(path)
    if len(_calls) == 3:
        os._exit(1)
    return helper_module.evaluate_file(path, data, sha256, checks, budget)


def starts_and_exits():
    os._exit(3)


BROKEN = {
    "exits at once": starts_and_exits,
    "exits with a file": exits,
    "answers garbage": answers_garbage,
    "answers another file": answers_another_file,
    "answers with the wrong things": answers_with_the_wrong_things,
    "answers too few verdicts": answers_too_few_verdicts,
    "fails on every file": fails,
    "gives up on every file": gives_up,
    "answers what cannot be sent": cannot_be_sent,
}


@pytest.mark.parametrize("how", sorted(BROKEN) + ["cannot start"])
def test_a_helper_that_goes_wrong_changes_no_verdict(many, monkeypatch, capsys, tmp_path, start_at_once, how):
    alone, alone_evidence, _ = verify_with(many, monkeypatch, capsys, tmp_path, "alone", "1")
    if how == "cannot start":
        def cannot(*args, **kwargs):
            raise OSError("no processes here")

        monkeypatch.setattr(helper_module, "ProcessPoolExecutor", cannot)
    elif how == "exits at once":
        monkeypatch.setattr(helper_module, "start_worker", BROKEN[how])
    else:
        monkeypatch.setattr(helper_module, "evaluate_file", BROKEN[how])
    handed = []
    real_submit = helper_module.Helper.submit
    monkeypatch.setattr(helper_module.Helper, "submit", lambda self, *a: handed.append(real_submit(self, *a)) or handed[-1])
    broken, broken_evidence, helped = verify_with(many, monkeypatch, capsys, tmp_path, "broken", "2")
    assert helped == 0
    if how not in ("cannot start", "exits at once"):
        assert True in handed  # it was given files, and they came back to the run
    assert broken == alone and broken_evidence == alone_evidence


def test_the_helper_dying_halfway_leaves_the_rest_to_the_run(many, monkeypatch, capsys, tmp_path, start_at_once):
    """The real worker, killed after it has answered some files: the run finishes them itself."""
    alone, _, _ = verify_with(many, monkeypatch, capsys, tmp_path, "alone", "1")
    monkeypatch.setattr(helper_module, "evaluate_file", dies_on_the_third_file)
    halfway, _, helped = verify_with(many, monkeypatch, capsys, tmp_path, "halfway", "2")
    assert helped == 2
    assert halfway == alone


# -- a worker's side ---------------------------------------------------------------------------------------

def test_evaluate_file_gives_the_verdicts_of_evaluate_source(kb):
    checks = load_entry(str(kb / "gotchas" / "ops-example.md")).entry.checks
    from .conftest import METRICS_PY, SCHED_PY

    sched = SCHED_PY.encode()
    on_sched = [c for c in checks if c.path == "pkg/sched.py"]
    first = helper_module.evaluate_file("pkg/sched.py", sched, "a" * 64, on_sched)
    second = helper_module.evaluate_file("pkg/metrics.py", METRICS_PY.encode(), "b" * 64,
                                         [c for c in checks if c.path == "pkg/metrics.py"])
    third = helper_module.evaluate_file("pkg/sched.py", sched, "c" * 64, ["not a check"])
    source = SourceFile("pkg/sched.py", sched, "a" * 64)
    assert first == ([evaluate_source(c, source) for c in on_sched], None)
    assert first[0][0].status == "holds" and first[0][0].file_sha == "a" * 64
    assert second[0][0].status == "holds"
    assert third[0] is None and "AttributeError" in third[1]  # the run evaluates it itself


@pytest.mark.parametrize("value, cores, expected", [
    ("", 2, 2), ("", 1, 1), ("", None, 1), ("", 8, 8), ("1", 8, 1), ("3", 1, 3), ("0", 4, 1), ("many", 4, 1),
    (" 2 ", 1, 2),
])
def test_how_many_processes(monkeypatch, value, cores, expected):
    monkeypatch.setenv("GOTCHAS_PROCESSES", value)
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert helper_module.processes() == expected
    helper = helper_module.Helper()
    assert helper.enabled == (expected > 1 and helper_module.SAFE_PATH)
    assert helper.workers == max(1, expected - 1)


@pytest.mark.parametrize("processes", ["1", "2"])
def test_each_file_is_read_once_per_release_whatever_the_checks_on_it(many, monkeypatch, tmp_path, processes,
                                                                       start_at_once):
    from collections import Counter

    from verifier.model import Release
    from verifier.sources.directory import DirectorySnapshot, DirectorySource
    from verifier.verdicts import VerdictCache
    from verifier.verify import selected_checks, verify_release

    monkeypatch.setenv("GOTCHAS_PROCESSES", processes)
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    for j in range(MODULES):
        (tree / "pkg" / f"mod{j}.py").write_text(module(j, 0))
    reads = Counter()
    real_read = DirectorySnapshot.read
    monkeypatch.setattr(DirectorySnapshot, "read", lambda self, path: reads.update([path]) or real_read(self, path))
    entries = [load_entry(str(p)).entry for p in sorted((many / "gotchas").glob("ops-mod-*.md"))]
    pairs = list(selected_checks(entries, "vllm"))
    helper = helper_module.Helper()
    try:
        results = verify_release(DirectorySource("vllm", tree), Release("vllm", "HEAD"), pairs,
                                 verdicts=VerdictCache(tmp_path / "verdicts.sqlite3"), helper=helper)
    finally:
        helper.close()
    assert len(results) == 3 * MODULES and all(r.verdict.status in ("holds", "changed") for r in results)
    assert reads == Counter({f"pkg/mod{j}.py": 1 for j in range(MODULES)})  # 3 checks on each, 1 read


def test_the_helper_is_this_package_whatever_the_working_folder_holds(many, monkeypatch, capsys, tmp_path,
                                                                       start_at_once):
    """Workers start with `python -c`, which looks in the working folder first; a KB checkout with a `verifier/` or
    a `multiprocessing.py` of its own is not run."""
    marker = tmp_path / "ran"
    rogue = many / "verifier"
    rogue.mkdir()
    (rogue / "__init__.py").write_text("")
    (rogue / "helper.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (many / "multiprocessing.py").write_text(f"open({str(marker)!r}, 'w').close()\n")  # what workers start with
    _, _, helped = verify_with(many, monkeypatch, capsys, tmp_path, "rogue", "2")
    assert helped > 0 and not marker.exists()
