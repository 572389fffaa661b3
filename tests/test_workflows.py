"""The workflows the repository ships: valid (actionlint), least-privilege, pinned, no untrusted input in shell."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str | None:
    found = Path(sys.executable).parent / "actionlint"
    return str(found) if found.is_file() else shutil.which("actionlint")


def test_there_are_the_three_workflows():
    assert {p.name for p in WORKFLOWS} == {"pull-request.yml", "verify-releases.yml", "publish-site.yml"}


def test_actionlint_passes_and_catches_a_broken_workflow(tmp_path):
    binary = actionlint()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("actionlint is missing; it comes with the test extras")
        pytest.skip("actionlint is not installed")
    done = subprocess.run([binary, *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.evnt.title }}\n")
    done = subprocess.run([binary, str(broken)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_least_privilege_and_pinned_actions(path):
    data = yaml.safe_load(path.read_text())
    assert data["permissions"] == {"contents": "read"}, "the default token is read-only; jobs ask for more"
    text = path.read_text()
    for action in re.findall(r"uses:\s*(\S+)", text):
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), f"{action} is not pinned to a commit"
    for job in data["jobs"].values():
        for step in job.get("steps", []):
            if "run" in step:
                assert "${{" not in step["run"], f"expression in a shell script: {step['run']!r}; pass it by env"
        if "pull_request" in (data.get(True) or data.get("on") or {}):
            assert job.get("permissions") in (None, {"contents": "read"})


def test_pre_commit_hook_runs_the_offline_check():
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "gotchas-check")
    assert hook["entry"].startswith("gotchas check --offline")
    assert re.search(hook["files"], "gotchas/ops-example.md")
    assert not re.search(hook["files"], "README.md")
