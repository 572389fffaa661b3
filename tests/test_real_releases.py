"""Against real engine releases from the package index. Run on purpose: `pytest -m network`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from verifier import kb as kb_module
from verifier.entries import load_entry
from verifier.evaluate import evaluate
from verifier.sources.directory import DirectorySource
from verifier.sources.pypi import PyPISource

from .conftest import REPO

pytestmark = pytest.mark.network

SEED = "ops-kv-cache-full-preempts-and-recomputes"


@pytest.fixture(scope="module")
def kb():
    return kb_module.load(REPO)


@pytest.fixture(scope="module")
def seed():
    return load_entry(REPO / "gotchas" / f"{SEED}.md").entry


def release(source, version):
    return next(r for r in source.releases() if r.version == version)


def verdicts(checks, snapshot):
    return {c.id: evaluate(c, snapshot) for c in checks}


@pytest.fixture(scope="module")
def vllm_030_tree(kb, seed, tmp_path_factory):
    """The files the seed's vLLM checks read, from the real vLLM 0.30.0 sdist, in a directory."""
    source = PyPISource(kb.engines["vllm"])
    snapshot = source.open(release(source, "0.30.0"))
    tree = tmp_path_factory.mktemp("vllm-0.30.0")
    for path in {c.path for c in seed.checks if c.engine == "vllm"}:
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(snapshot.read(path))
    return tree


def dir_snapshot(tree: Path):
    source = DirectorySource("vllm", tree)
    return source.open(source.releases()[0])


def vllm_checks(seed):
    return [c for c in seed.checks if c.engine == "vllm"]


def test_seed_holds_in_vllm_030(seed, vllm_030_tree):
    found = verdicts(vllm_checks(seed), dir_snapshot(vllm_030_tree))
    assert {k: v.status for k, v in found.items()} == {c.id: "holds" for c in vllm_checks(seed)}
    assert found["recompute-from-zero"].symbol == "Scheduler._preempt_request"


def test_seed_still_holds_after_reformatting(seed, vllm_030_tree, tmp_path):
    for path in vllm_030_tree.rglob("*.py"):
        target = tmp_path / path.relative_to(vllm_030_tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        # ast.unparse re-lays every statement, drops comments and trailing commas, and requotes strings.
        target.write_text(ast.unparse(ast.parse(path.read_text())))
    assert (tmp_path / "vllm/v1/core/sched/scheduler.py").read_text() != (
        vllm_030_tree / "vllm/v1/core/sched/scheduler.py").read_text()
    found = verdicts(vllm_checks(seed), dir_snapshot(tmp_path))
    assert {k: v.status for k, v in found.items()} == {c.id: "holds" for c in vllm_checks(seed)}


def test_deleting_the_load_bearing_line_changes_the_right_check(seed, vllm_030_tree):
    scheduler = vllm_030_tree / "vllm/v1/core/sched/scheduler.py"
    original = scheduler.read_text()
    lines = original.split("\n")
    start = next(i for i, line in enumerate(lines) if "def _preempt_request(" in line)
    target = next(i for i in range(start, len(lines)) if lines[i].strip() == "request.num_computed_tokens = 0")
    del lines[target]
    scheduler.write_text("\n".join(lines))
    try:
        found = verdicts(vllm_checks(seed), dir_snapshot(vllm_030_tree))
    finally:
        scheduler.write_text(original)
    changed = {k: (v.status, v.reason) for k, v in found.items() if v.status != "holds"}
    assert changed == {"recompute-from-zero": ("changed", "not-found")}


def test_seed_holds_in_the_latest_sglang_wheel(kb, seed):
    source = PyPISource(kb.engines["sglang"])
    latest = source.releases()[-1]
    assert source.archive_of(latest).kind == "wheel"  # recent SGLang releases ship only wheels
    checks = [c for c in seed.checks if c.engine == "sglang"]
    found = verdicts(checks, source.open(latest))
    assert {k: v.status for k, v in found.items()} == {c.id: "holds" for c in checks}


def test_preempt_request_exists_from_0_12_0(kb, seed):
    source = PyPISource(kb.engines["vllm"])
    check = next(c for c in seed.checks if c.id == "recompute-from-zero")
    assert evaluate(check, source.open(release(source, "0.11.2"))).reason == "symbol-missing"
    assert evaluate(check, source.open(release(source, "0.12.0"))).status == "holds"
