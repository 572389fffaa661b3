"""The helper process: the same verdicts as one process, and nothing lost when it fails in any way."""

from __future__ import annotations

import io
import os
import pickle
import sys

import pytest

from verifier import helper as helper_module
from verifier.evaluate import evaluate_source
from verifier.code import SourceFile
from verifier.entries import load_entry

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
    """The helper starts with the first file, and the run waits until it is ready (files this small are
    otherwise all done before it is): every run then hands it files."""
    monkeypatch.setattr(helper_module, "START_AFTER", 0)
    real_free = helper_module.Helper.free

    def free(self):
        while self._process is not None and not self._ready and not self._dead:
            self._take(self._replies.get(timeout=60))
        return real_free(self)

    monkeypatch.setattr(helper_module.Helper, "free", free)


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


#: Helpers that go wrong, as scripts in place of `python -m verifier.helper`.
BROKEN = {
    "exits at once": "import sys; sys.exit(3)",
    "exits with a file": "from verifier.helper import _write_frame, _read_frame, READY; import sys;"
                         " _write_frame(sys.stdout.buffer, READY); _read_frame(sys.stdin.buffer); sys.exit(1)",
    "answers garbage": "from verifier.helper import _write_frame, _read_frame, READY; import sys;"
                       " _write_frame(sys.stdout.buffer, READY); _read_frame(sys.stdin.buffer);"
                       " sys.stdout.buffer.write(b'\\xff' * 64); sys.stdout.buffer.flush(); sys.stdin.buffer.read()",
    "answers another task": "from verifier.helper import _write_frame, _read_frame, READY; import sys\n"
                            "_write_frame(sys.stdout.buffer, READY)\n"
                            "while (t := _read_frame(sys.stdin.buffer)) is not None:\n"
                            "    _write_frame(sys.stdout.buffer, (t[0] + 7, [], None))\n",
    "answers with the wrong things": "from verifier.helper import _write_frame, _read_frame, READY; import sys\n"
                                     "_write_frame(sys.stdout.buffer, READY)\n"
                                     "while (t := _read_frame(sys.stdin.buffer)) is not None:\n"
                                     "    _write_frame(sys.stdout.buffer, (t[0], ['holds'] * len(t[4]), None))\n",
    "answers too few verdicts": "from verifier.helper import _write_frame, _read_frame, READY; import sys\n"
                                "from verifier.model import Verdict\n"
                                "_write_frame(sys.stdout.buffer, READY)\n"
                                "while (t := _read_frame(sys.stdin.buffer)) is not None:\n"
                                "    _write_frame(sys.stdout.buffer, (t[0], [Verdict('holds', 'present')], None))\n",
    "fails on every file": "from verifier.helper import _write_frame, _read_frame, READY; import sys\n"
                           "_write_frame(sys.stdout.buffer, READY)\n"
                           "while (t := _read_frame(sys.stdin.buffer)) is not None:\n"
                           "    _write_frame(sys.stdout.buffer, (t[0], None, 'MemoryError'))\n",
    "answers with a huge frame": "from verifier.helper import _write_frame, _read_frame, READY; import sys, struct;"
                                 " _write_frame(sys.stdout.buffer, READY); _read_frame(sys.stdin.buffer);"
                                 " sys.stdout.buffer.write(struct.pack('<Q', 2 ** 40)); sys.stdout.buffer.flush();"
                                 " sys.stdin.buffer.read()",
}


@pytest.mark.parametrize("how", sorted(BROKEN) + ["cannot start"])
def test_a_helper_that_goes_wrong_changes_no_verdict(many, monkeypatch, capsys, tmp_path, start_at_once, how):
    alone, alone_evidence, _ = verify_with(many, monkeypatch, capsys, tmp_path, "alone", "1")
    if how == "cannot start":
        monkeypatch.setattr(helper_module, "_command", lambda: [str(tmp_path / "no-such-python")])
    else:
        monkeypatch.setattr(helper_module, "_command", lambda: [sys.executable, "-c", BROKEN[how]])
    handed = []
    real_submit = helper_module.Helper.submit
    monkeypatch.setattr(helper_module.Helper, "submit", lambda self, *a: handed.append(real_submit(self, *a)) or handed[-1])
    broken, broken_evidence, helped = verify_with(many, monkeypatch, capsys, tmp_path, "broken", "2")
    assert helped == 0
    if how not in ("cannot start", "exits at once"):
        assert True in handed  # it was given files, and they came back to the run
    assert broken == alone and broken_evidence == alone_evidence


def test_the_helper_dying_halfway_leaves_the_rest_to_the_run(many, monkeypatch, capsys, tmp_path, start_at_once):
    """The real helper, killed after it has answered some files: the run finishes them itself."""
    alone, _, _ = verify_with(many, monkeypatch, capsys, tmp_path, "alone", "1")
    real_take = helper_module.Helper._take

    def take(self, reply):
        real_take(self, reply)
        if self.evaluated == 2 and self._process is not None and self._process.poll() is None:
            self._process.kill()

    monkeypatch.setattr(helper_module.Helper, "_take", take)
    halfway, _, helped = verify_with(many, monkeypatch, capsys, tmp_path, "halfway", "2")
    assert helped == 2
    assert halfway == alone


# -- the protocol ------------------------------------------------------------------------------------------

def frames(*payloads) -> io.BytesIO:
    out = io.BytesIO()
    for payload in payloads:
        helper_module._write_frame(out, payload)
    out.seek(0)
    return out


def read_all(stream) -> list:
    found = []
    while (item := helper_module._read_frame(stream)) is not None:
        found.append(item)
    return found


def test_serve_answers_each_task_with_the_verdicts_of_evaluate_source(kb):
    checks = load_entry(str(kb / "gotchas" / "ops-example.md")).entry.checks
    from .conftest import METRICS_PY, SCHED_PY

    sched = SCHED_PY.encode()
    tasks = [(1, "pkg/sched.py", sched, "a" * 64, [c for c in checks if c.path == "pkg/sched.py"]),
             (2, "pkg/metrics.py", METRICS_PY.encode(), "b" * 64, [c for c in checks if c.path == "pkg/metrics.py"]),
             (3, "pkg/sched.py", sched, "c" * 64, ["not a check"])]
    out = io.BytesIO()
    helper_module.serve(frames(*tasks), out)
    out.seek(0)
    ready, first, second, third = read_all(out)
    assert ready == helper_module.READY
    source = SourceFile("pkg/sched.py", sched, "a" * 64)
    assert first == (1, [evaluate_source(c, source) for c in tasks[0][4]], None)
    assert first[1][0].status == "holds" and first[1][0].file_sha == "a" * 64
    assert second[0] == 2 and second[1][0].status == "holds"
    assert third[0] == 3 and third[1] is None and "AttributeError" in third[2]  # the run evaluates it itself


def test_frames_that_are_cut_or_too_large_are_refused():
    whole = frames(("x", 1)).getvalue()
    for cut in (3, 8, len(whole) - 1):
        with pytest.raises(ValueError):
            helper_module._read_frame(io.BytesIO(whole[:cut]))
    with pytest.raises(ValueError, match="a frame of"):
        helper_module._read_frame(io.BytesIO((helper_module.MAX_FRAME + 1).to_bytes(8, "little")))
    assert helper_module._read_frame(io.BytesIO(b"")) is None
    assert pickle.loads(whole[8:]) == ("x", 1)


@pytest.mark.parametrize("value, cores, expected", [
    ("", 2, 2), ("", 1, 1), ("", None, 1), ("1", 8, 1), ("3", 1, 3), ("0", 4, 1), ("many", 4, 1), (" 2 ", 1, 2),
])
def test_how_many_processes(monkeypatch, value, cores, expected):
    monkeypatch.setenv("GOTCHAS_PROCESSES", value)
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert helper_module.processes() == expected
    assert helper_module.Helper().enabled == (expected > 1)


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
    """`python -m` looks in the working folder first; a KB checkout with a `verifier/` of its own is not run."""
    marker = tmp_path / "ran"
    rogue = many / "verifier"
    rogue.mkdir()
    (rogue / "__init__.py").write_text("")
    (rogue / "helper.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    _, _, helped = verify_with(many, monkeypatch, capsys, tmp_path, "rogue", "2")
    assert helped > 0 and not marker.exists()
