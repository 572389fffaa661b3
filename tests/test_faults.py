"""Faults during a run: a disk that fills up, a run killed at random points. The ledger is exactly as before or
exactly as after, never half-written."""

from __future__ import annotations

import errno
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from verifier.cli import main

from .conftest import VALID_ENTRY
from .index_server import Faults, IndexServer
from .test_verify import OLD_SCHED, sdist


def strip_times(text: str) -> str:
    return re.sub(r'"verified_at": "[^"]*"', '"verified_at": ""', text)


@pytest.fixture
def kb(kb_root, monkeypatch, tmp_path):
    (kb_root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    monkeypatch.chdir(kb_root)
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    return kb_root


def test_a_full_disk_leaves_the_ledger_unchanged(kb, capsys, monkeypatch):
    with IndexServer() as index:
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        index.add("vllm", "vllm-0.1.0.tar.gz", sdist("0.1.0", OLD_SCHED))
        index.add("vllm", "vllm-0.2.0.tar.gz", sdist("0.2.0"))
        assert main(["verify", "--release", "0.1.0"]) in (0, 1)
        before = (kb / "ledger" / "vllm.json").read_bytes()
        real_write, full = os.write, []

        def into_the_ledger(fd: int) -> bool:  # the temporary file beside vllm.json, which the write goes to
            return any(os.path.samestat(os.fstat(fd), p.stat()) for p in (kb / "ledger").glob(".vllm.*.tmp"))

        def full_disk(fd, data):
            """The disk fills up while the ledger is written: part of it lands, then no space is left."""
            if not into_the_ledger(fd):
                return real_write(fd, data)
            if os.fstat(fd).st_size:
                full.append(fd)
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(fd, data[:len(data) // 2])

        monkeypatch.setattr(os, "write", full_disk)
        capsys.readouterr()
        code = main(["verify"])
    err = capsys.readouterr().err
    assert full  # the fault was met, past the first bytes
    assert code == 3 and "No space left on device" in err and "unchanged" in err
    assert (kb / "ledger" / "vllm.json").read_bytes() == before
    assert [p.name for p in (kb / "ledger").iterdir() if p.name.endswith(".tmp")] == []


def test_a_run_killed_at_random_points_never_corrupts_the_ledger(kb, tmp_path, monkeypatch):
    with IndexServer() as index:
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        for version, sched in (("0.1.0", OLD_SCHED), ("0.2.0", None), ("0.3.0", None), ("0.4.0", None)):
            index.add("vllm", f"vllm-{version}.tar.gz", sdist(version, sched or OLD_SCHED.replace("-= 1", "= 0")),
                      faults=Faults(delay=0.15))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        command = [sys.executable, "-m", "verifier", "verify", "--ledger"]

        def run_to_end(folder):
            return subprocess.run(command + [str(folder)], env=env, cwd=kb, capture_output=True, timeout=120)

        baseline = tmp_path / "baseline"
        subprocess.run(command + [str(baseline), "--release", "0.1.0"], env=env, cwd=kb, capture_output=True,
                       timeout=120, check=False)
        finished = tmp_path / "finished"
        shutil.copytree(baseline, finished)
        started = time.monotonic()
        run_to_end(finished)
        duration = time.monotonic() - started
        before = strip_times((baseline / "vllm.json").read_text())
        after = strip_times((finished / "vllm.json").read_text())
        assert before != after

        rng = random.Random(20261129)
        outcomes = []
        for attempt in range(8):
            folder = tmp_path / f"attempt{attempt}"
            shutil.copytree(baseline, folder)
            process = subprocess.Popen(command + [str(folder)], env=env, cwd=kb, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, duration * 1.1))
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            text = (folder / "vllm.json").read_text()
            json.loads(text)  # never half-written
            state = strip_times(text)
            assert state in (before, after), f"attempt {attempt}: the ledger is neither as before nor as after"
            outcomes.append("after" if state == after else "before")
        assert "before" in outcomes  # the kills did land mid-run
