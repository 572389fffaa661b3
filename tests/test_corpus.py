"""The corpus of bad entries (tests/corpus/bad-entries): each gets its rule code at its line, with no traceback,
both through the library and through `gotchas check --offline` in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from verifier import kb as kb_module
from verifier import lint
from verifier.entries import load_entry

from .conftest import REPO

CORPUS = Path(__file__).parent / "corpus" / "bad-entries"
EXPECTED = yaml.safe_load((CORPUS / "EXPECTED.yaml").read_text())


def test_the_corpus_has_at_least_fifty_entries_covering_every_rule():
    assert len(EXPECTED) >= 50
    # G501-G505 read the ledger and its surface files: tests/test_surface.py, tests/test_prose.py
    assert {case["code"] for case in EXPECTED} == set(lint.RULES) - {"G501", "G502", "G503", "G504", "G505"}
    assert {case["file"] for case in EXPECTED} == {p.name for p in CORPUS.glob("*.md")}


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_bad_entry_gets_its_code_at_its_line(case):
    loaded = load_entry(CORPUS / case["file"], display=case["file"])
    found = {(d.code, d.line) for d in lint.lint(loaded, kb_module.load(REPO))}
    assert (case["code"], case["line"]) in found, found


def test_the_whole_corpus_through_the_command(kb_root):
    shutil.copy(REPO / "gotchas" / "engines.yaml", kb_root / "gotchas" / "engines.yaml")  # with its release floors
    for path in CORPUS.glob("*.md"):
        shutil.copy(path, kb_root / "gotchas" / path.name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "verifier", "check", "--offline", "--format", "github"], cwd=kb_root,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    for case in EXPECTED:
        marker = f"::error file=gotchas/{case['file']},line={case['line']},"
        assert any(line.startswith(marker) and f"title={case['code']}::" in line for line in done.stdout.splitlines()), case
