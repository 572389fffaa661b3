"""Against real engine releases from the package index. Run on purpose: `pytest -m network`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from verifier import kb as kb_module
from verifier.entries import load_entry
from verifier.ledger import Ledger
from verifier.reading import evaluate, evaluate_check
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


def verdicts(checks, snapshot, version=None):
    """The verdict of each check that has a form at `version` (by default the snapshot's release)."""
    found = {c.id: evaluate_check(c, snapshot, version) for c in checks}
    return {k: v[1] for k, v in found.items() if v is not None}


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


def at_030(seed):
    """The seed's vLLM checks that have a form in 0.30.0 (a claim bounded to older releases has none)."""
    return [c for c in vllm_checks(seed) if c.forms_at("0.30.0")]


def test_seed_holds_in_vllm_030(seed, vllm_030_tree):
    found = verdicts(vllm_checks(seed), dir_snapshot(vllm_030_tree), "0.30.0")
    assert {k: v.status for k, v in found.items()} == {c.id: "holds" for c in at_030(seed)}
    assert found["recompute-from-zero"].symbol == "Scheduler._preempt_request"


def test_seed_still_holds_after_reformatting(seed, vllm_030_tree, tmp_path):
    for path in vllm_030_tree.rglob("*.py"):
        target = tmp_path / path.relative_to(vllm_030_tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        # ast.unparse re-lays every statement, drops comments and trailing commas, and requotes strings.
        target.write_text(ast.unparse(ast.parse(path.read_text())))
    assert (tmp_path / "vllm/v1/core/sched/scheduler.py").read_text() != (
        vllm_030_tree / "vllm/v1/core/sched/scheduler.py").read_text()
    found = verdicts(vllm_checks(seed), dir_snapshot(tmp_path), "0.30.0")
    assert {k: v.status for k, v in found.items()} == {c.id: "holds" for c in at_030(seed)}


def test_deleting_the_load_bearing_line_changes_the_right_check(seed, vllm_030_tree):
    scheduler = vllm_030_tree / "vllm/v1/core/sched/scheduler.py"
    original = scheduler.read_text()
    lines = original.split("\n")
    start = next(i for i, line in enumerate(lines) if "def _preempt_request(" in line)
    target = next(i for i in range(start, len(lines)) if lines[i].strip() == "request.num_computed_tokens = 0")
    del lines[target]
    scheduler.write_text("\n".join(lines))
    try:
        found = verdicts(vllm_checks(seed), dir_snapshot(vllm_030_tree), "0.30.0")
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
    # every check with a form at the latest release holds there (one pins a log line of releases before 0.5.7)
    assert {k: v.status for k, v in found.items()} == {c.id: "holds" for c in checks if c.forms_at(latest.version)}
    assert len(found) >= 7


def test_preempt_request_exists_from_0_12_0(kb, seed):
    source = PyPISource(kb.engines["vllm"])
    check = next(c for c in seed.checks if c.id == "recompute-from-zero")
    assert evaluate(check, source.open(release(source, "0.11.2"))).reason == "symbol-missing"
    assert evaluate(check, source.open(release(source, "0.12.0"))).status == "holds"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_seed_holds_in_every_tracked_release(kb, seed, engine, tmp_path, monkeypatch, capsys):
    """With its earlier forms, the seed holds in every release the KB tracks (it sets no `introduced`: the
    gotcha is older than vLLM 0.8.0 and SGLang 0.4.0), each claim in the form its release has."""
    from verifier.cli import main

    monkeypatch.chdir(REPO)
    assert main(["verify", SEED, "--engine", engine, "--ledger", str(tmp_path)]) in (0, 1)
    capsys.readouterr()
    ledger = Ledger(tmp_path).load(engine)
    oldest = kb.engines[engine].oldest
    tracked = [r.version for r in PyPISource(kb.engines[engine]).releases()]
    tracked = tracked[tracked.index(oldest):]
    statuses = {v: ledger.entry(v, SEED).status for v in ledger.versions()}
    assert list(statuses) == tracked
    assert set(statuses.values()) == {"holds"}, {v: s for v, s in statuses.items() if s != "holds"}
    forms = {ledger.entry(v, SEED).checks["recompute-from-zero"].form for v in ledger.versions()} if engine == "vllm" \
        else {ledger.entry(v, SEED).checks["conservativeness-advice"].form for v in ledger.versions()}
    assert forms == {0, 1, 2}  # three layouts of the same claim


# --- the release surface, read from real releases (#25) -------------------------------------------------------------

def _surface_of(kb, engine: str, version: str):
    import datetime

    from verifier.surface.read import SurfaceSpec, read_surface

    source = PyPISource(kb.engines[engine])
    snapshot = source.open(release(source, version))
    try:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return read_surface(snapshot, SurfaceSpec.of(kb.engines[engine]), release(source, version), now, "test") \
            .surface(engine)
    finally:
        snapshot.close()
        source.close()


def _line(kb, engine, version, path):
    source = PyPISource(kb.engines[engine])
    snapshot = source.open(release(source, version))
    try:
        return snapshot.read(path).decode().split("\n")
    finally:
        snapshot.close()
        source.close()


@pytest.mark.parametrize("version, value", [("0.10.2", 0.9), ("0.12.0", 0.9), ("0.20.0", 0.92)])
def test_gpu_memory_utilization_default_is_the_config_fields_of_each_release(kb, version, value):
    item = _surface_of(kb, "vllm", version).flag("--gpu-memory-utilization")
    assert item.value == value and item.detail == "CacheConfig.gpu_memory_utilization"
    # the line the surface names says that default
    line = _line(kb, "vllm", version, item.default_path)[item.default_line - 1]
    assert "gpu_memory_utilization" in line and repr(value) in line


def test_the_stored_surface_is_what_the_release_gives_now(kb):
    """The committed surface of one release equals a fresh extraction from the index (nothing stale on file)."""
    fresh = _surface_of(kb, "sglang", "0.5.10")
    stored = Ledger(REPO / "ledger").load_surfaces("sglang").surface("0.5.10")
    assert {i.key: i.to_json() for i in fresh.items.values()} == {i.key: i.to_json() for i in stored.items.values()}
    env = {i.name: i for i in stored.of_kind("env")}
    assert env["SGLANG_ENABLE_TORCH_COMPILE"].value is False


def test_follow_restores_the_moves_vllm_0_33_0_made(kb):
    """Every check whose authored form changed at vLLM 0.33.0 only by its place, given only the form that held at
    0.32.0: `follow`'s best proposal is that move, to the place the author wrote, for at least nine in ten."""
    from dataclasses import replace as copy

    from verifier import follow

    ledger = Ledger(REPO / "ledger").load("vllm")
    source = PyPISource(kb.engines["vllm"])
    held, new = release(source, "0.32.0"), release(source, "0.33.0")
    reader = follow.Reader(source)
    moves = restored = 0
    try:
        for path in kb.entry_files():
            entry = load_entry(path).entry
            for check in entry.checks:
                at_p, at_r = ledger.entry("0.32.0", entry.id), ledger.entry("0.33.0", entry.id)
                a = at_p.checks.get(check.id) if at_p else None
                b = at_r.checks.get(check.id) if at_r else None
                if check.engine != "vllm" or not a or not b or "holds" != a.verdict or b.verdict != "holds" \
                        or a.form == b.form:
                    continue
                old, authored = check.forms[a.form], check.forms[b.form]
                alone = copy(check, path=old.path, scope=old.scope, matcher=old.matcher, pattern=old.pattern,
                             after=old.after, adjacent=old.adjacent, since=None, until=None, earlier=())
                found = follow.follow_check(entry, alone, held, new, reader, mutants=False)
                best = found.best if found else None
                if (old.matcher, old.pattern, old.after) == (authored.matcher, authored.pattern, authored.after):
                    moves += 1
                    restored += bool(best and best.kind == "move" and (best.form.path, best.form.scope) ==
                                     (authored.path, authored.scope))
    finally:
        reader.close()
    assert moves >= 15 and restored / moves >= 0.9, (restored, moves)


# --- llama.cpp, vendored in llama-cpp-python's sdists (#30) ------------------------------------------------------

@pytest.mark.parametrize("version, commit", [
    # The gitlinks of llama-cpp-python's own tags v0.3.0 and v0.3.17 (`git ls-tree vX vendor/llama.cpp`): an
    # independent record of what each release vendors.
    ("0.3.0", "ea9c32be71b91b42ecc538bd902e93cbb5fb36cb"),
    ("0.3.17", "49bfddeca18e62fa3d39114a23e9fcbdf8a22388"),
])
def test_a_llama_cpp_release_names_the_commit_its_tag_vendors(kb, version, commit):
    source = PyPISource(kb.engines["llama-cpp"])
    snapshot = source.open(release(source, version))
    try:
        assert snapshot.vendored_commit() == commit
        assert snapshot.read("common/arg.cpp") is not None  # llama.cpp's own path, under vendor/llama.cpp/
        paths = snapshot.paths()  # llama.cpp's own tree (it has a vendor/ folder of its own), not the outer package's
        assert "tools/server/server.cpp" in paths or "examples/server/server.cpp" in paths
        assert not any(p.startswith(("llama_cpp/", "vendor/llama.cpp/")) for p in paths)  # llama_cpp/: the outer one
    finally:
        snapshot.close()
        source.close()
