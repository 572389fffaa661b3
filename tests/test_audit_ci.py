"""How deployment repositories run `gotchas audit`: the composite Action (action.yml) and the pre-commit hook."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from .conftest import REPO

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())

#: `gotchas ARGS...` as an installed wheel runs it: `verifier.cli.main` with the KB the wheel ships (its
#: kb.json: compiled.load_packaged) — here this checkout's KB, compiled once for the run (conftest's
#: real_kb_file, which compiled.write made as setup.py makes kb.json) instead of at each of the five audits below
#: (some 6 s each). The checkout compiled on the fly is tests/test_audit.py's test_the_kb_of_a_checkout.
GOTCHAS = """\
import sys
from verifier import compiled
data = compiled.read(sys.argv.pop(1))
compiled.load_packaged = lambda: data
from verifier.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def gotchas(real_kb_file) -> list[str]:
    """The command line that runs `gotchas` from this checkout with its compiled KB (arguments follow)."""
    return [sys.executable, "-c", GOTCHAS, str(real_kb_file)]


def test_the_action_is_composite_and_passes_inputs_only_through_the_environment():
    assert ACTION["runs"]["using"] == "composite"
    steps = ACTION["runs"]["steps"]
    for step in steps:
        assert "${{" not in step["run"], f"expression in a shell script: {step['name']}; pass it by env"
        assert step["shell"] == "bash"
    audit = next(s for s in steps if s.get("id") == "audit")
    passed = {re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", v).group(1) for v in audit["env"].values()}
    assert passed == set(ACTION["inputs"])


def test_the_action_audits_writes_sarif_and_a_summary_and_exits_with_the_audit_code(tmp_path, gotchas):
    """The audit step's own script, run by bash as the runner would, with gotchas from this checkout."""
    work = tmp_path / "repo"
    work.mkdir()
    (work / "uv.lock").write_text('version = 1\n\n[[package]]\nname = "vllm"\nversion = "0.10.0"\n')
    wrapper = tmp_path / "gotchas"
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(word) for word in gotchas) + ' "$@"\n')
    wrapper.chmod(0o755)
    script = next(s for s in ACTION["runs"]["steps"] if s.get("id") == "audit")["run"]
    env = {**os.environ, "GOTCHAS_BIN": str(wrapper), "PYTHONPATH": str(REPO),
           "INPUT_FILES": "uv.lock", "INPUT_ENGINE": "", "INPUT_IGNORE": "config-default-seed-zero-repeats-samples-across-replicas",
           "INPUT_SERVE": "vllm serve 'a $(touch pwned) b' --scheduling-policy priority", "INPUT_SERVE_LOG": "",
           "INPUT_FAIL_ON": "holds", "INPUT_SARIF": "out.sarif", "INPUT_SITE_URL": "https://gotchas.example",
           "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert not (work / "pwned").exists()
    assert "config-request-priority-ignored-under-fcfs (vllm 0.10.0): --scheduling-policy is priority" in done.stdout
    assert "ignored (--ignore): config-default-seed-zero-repeats-samples-across-replicas" in done.stdout
    sarif = json.loads((work / "out.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert results and {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {"uv.lock"}
    assert "config-request-priority-ignored-under-fcfs" not in {r["ruleId"] for r in results}
    assert (tmp_path / "output").read_text() == "exit-code=1\n"
    assert (tmp_path / "summary.md").read_text().startswith("# Gotchas that apply to this deployment")


def test_the_pre_commit_hook_audits_the_lock_files_a_commit_touches(tmp_path, gotchas):
    hook = next(h for h in HOOKS if h["id"] == "gotchas-audit")
    assert hook["entry"] == "gotchas audit --nothing-ok" and hook["pass_filenames"] is True
    for name in ("uv.lock", "poetry.lock", "pylock.toml", "pylock.prod.toml", "requirements.txt",
                 "deploy/requirements-gpu.txt", "pyproject.toml", "docker/Dockerfile", "compose.yaml"):
        assert re.search(hook["files"], name), name
    for name in ("README.md", "gotchas/ops-x.md", "uv.lock.bak", "src/requirements.py"):
        assert not re.search(hook["files"], name), name
    # What pre-commit runs: the entry with the touched files as arguments.
    (tmp_path / "requirements.txt").write_text("vllm==0.10.0\n")
    (tmp_path / "poetry.lock").write_text('[[package]]\nname = "sglang"\nversion = "0.5.10"\n')
    done = subprocess.run([*gotchas, *hook["entry"].split()[1:], "requirements.txt",
                           "poetry.lock", "--format", "json"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert done.returncode == 1, done.stderr
    targets = json.loads(done.stdout)["targets"]
    assert [(t["engine"], t["version"], t["origin"]) for t in targets] == [
        ("vllm", "0.10.0", "requirements.txt:1"), ("sglang", "0.5.10", "poetry.lock:2")]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["numpy"]\n')
    done = subprocess.run([*gotchas, *hook["entry"].split()[1:], "pyproject.toml"],
                          cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                          timeout=300)
    assert done.returncode == 0 and "nothing audited" in done.stdout  # a commit with no engine passes the hook
