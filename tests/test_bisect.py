"""`gotchas bisect` finds the commit at which a check flipped, testing only commits that touched its file."""

from __future__ import annotations

import pytest

from verifier.cli import main

from .conftest import METRICS_PY, SCHED_PY
from .gitrepo import GitRepo

BROKEN = SCHED_PY.replace("request.num_computed_tokens = 0", "request.num_computed_tokens -= 1")


@pytest.fixture
def repo(tmp_path, isolated_git):
    repo = GitRepo(tmp_path / "engine")
    repo.write("pkg/sched.py", SCHED_PY)
    repo.write("pkg/metrics.py", METRICS_PY)
    repo.commit("initial")
    repo.tag("v0.1.0")
    repo.write("README", "docs\n")
    repo.commit("docs only")
    repo.write("pkg/sched.py", SCHED_PY.replace("    def preempt", "    # preemption\n    def preempt"))
    repo.commit("comment the scheduler")
    repo.write("pkg/sched.py", BROKEN)
    breaking = repo.commit("keep computed tokens on preemption")
    repo.write("pkg/metrics.py", METRICS_PY + "# more\n")
    repo.commit("metrics tweak")
    repo.write("pkg/sched.py", BROKEN + "\n# trailing\n")
    repo.commit("tidy")
    repo.tag("v0.2.0", message="release 0.2.0")
    repo.breaking = breaking
    return repo


def test_bisect_finds_the_breaking_commit(kb, repo, capsys):
    code = main(["bisect", "ops-example", "zero", "--source", f"git:{repo.path}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "holds in 0.1.0, changed in 0.2.0" in out
    assert "3 commits touched pkg/sched.py" in out  # the docs and metrics commits are never candidates
    assert f"first commit where it is changed: {repo.breaking} keep computed tokens on preemption" in out
    assert f"/commit/{repo.breaking}" in out


def test_bisect_between_named_releases(kb, repo, capsys):
    code = main(["bisect", "ops-example", "zero", "--source", f"git:{repo.path}", "--between", "0.1.0", "0.2.0"])
    assert code == 0 and repo.breaking in capsys.readouterr().out


def test_bisect_of_a_check_that_never_flips(kb, repo, capsys):
    code = main(["bisect", "ops-example", "metric", "--source", f"git:{repo.path}"])
    assert code == 1 and "same status in every release" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["bisect", "ops-example", "nope", "--source", "git:x"], "no well-formed check 'nope'"),
    (["bisect", "ops-example", "zero", "--source", "dir:x"], "needs a git source"),
])
def test_bisect_usage_errors(kb, capsys, argv, message):
    assert main(argv) == 2 and message in capsys.readouterr().err


def test_locate_through_a_git_source(kb, repo, capsys):
    code = main(["locate", "vllm", "Scheduler.preempt", "--source", f"git:{repo.path}", "--release", "0.1.0"])
    out = capsys.readouterr().out
    assert code == 0
    assert "vLLM 0.1.0: 2 Python files" in out
    assert "pkg/sched.py:2-4 in Scheduler.preempt" in out
