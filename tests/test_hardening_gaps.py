"""The smaller gaps of issue #32 (hardening round 3): the verdict cache's SQLite file is never opened through a
link (nor a FIFO or a folder) planted in the cache; a git repository's tags and the commits a bisection lists are
bounded, read as a stream and stopped there. (The query child's pre-scan is tested in test_hardening_parse.)

Everything is offline: indexes on 127.0.0.1, git repositories built in tmp_path.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from verifier.kb import Engine
from verifier.sources import SourceUnavailable
from verifier.sources.git import GitSource
from verifier.sources.git import source as git_source

from . import test_hardening_cache
from .conftest import run_cli
from .gitrepo import ISOLATED_GIT_ENV, GitRepo
from .index_server import IndexServer
from .test_hardening_cache import sdist_index

ENGINE = Engine(key="vllm", name="vLLM", package="vllm", repository="https://github.com/vllm-project/vllm",
                tag_pattern="v{version}")


local = test_hardening_cache.local  # the cache in tmp_path and no proxy for 127.0.0.1 (autouse there and here)


# -- 1. the verdict cache's file is never opened through a link ----------------------------------------

@pytest.mark.parametrize("planted", ["verdicts.sqlite3", "verdicts.sqlite3-wal", "verdicts.sqlite3-journal"])
def test_a_link_planted_at_the_verdict_cache_is_never_written_through(kb, tmp_path, local, monkeypatch, capsys,
                                                                     planted):
    outside = tmp_path / "outside.sqlite3"
    outside.write_bytes(b"")
    local.mkdir(parents=True)
    (local / planted).symlink_to(outside)
    with IndexServer() as index:
        sdist_index(index, monkeypatch)
        code, _, err = run_cli(capsys, "verify", "--source", "pypi")
    assert outside.read_bytes() == b""
    assert code == 3 and "Traceback" not in err, err
    assert f"cache file {local / planted}" in err and "symbolic link" in err and "GOTCHAS_CACHE_DIR" in err


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_verdict_cache_that_is_not_a_regular_file_is_a_clear_error(kb, local, monkeypatch, capsys, kind):
    local.mkdir(parents=True)
    target = local / "verdicts.sqlite3"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    with IndexServer() as index:
        sdist_index(index, monkeypatch)
        code, _, err = run_cli(capsys, "verify", "--source", "pypi")
    assert code == 3 and "Traceback" not in err, err
    assert f"cache file {target}" in err and "not a regular file" in err and "GOTCHAS_CACHE_DIR" in err


def test_the_verdict_cache_still_works_in_a_real_file(kb, local, monkeypatch, capsys):
    with IndexServer() as index:
        sdist_index(index, monkeypatch)
        assert run_cli(capsys, "verify", "--source", "pypi")[0] == 0
    with sqlite3.connect(local / "verdicts.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM verdicts").fetchone()[0] > 0


# -- 2. a repository's tags and commits are bounded --------------------------------------------------

def _fast_import(repo: GitRepo, stream: str) -> None:
    done = subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, input=stream.encode(),
                          env={**os.environ, **ISOLATED_GIT_ENV}, capture_output=True)
    assert done.returncode == 0, done.stderr


def one_commit_repository(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "many")
    repo.write("vllm/engine.py", "MAX = 1\n")
    return repo, repo.commit("first")


@pytest.mark.usefixtures("isolated_git")
def test_a_repository_of_a_million_tags_is_refused_in_bounded_time(tmp_path):
    repo, commit = one_commit_repository(tmp_path)
    line = f"{commit} refs/tags/v0.%07d\n"
    with open(repo.path / ".git" / "packed-refs", "w") as refs:  # a million tags, all on one commit
        refs.write("# pack-refs with: peeled fully-peeled sorted \n")
        refs.writelines(line % i for i in range(1_000_000))
    started = time.monotonic()
    with GitSource(ENGINE, str(repo.path)) as source, \
            pytest.raises(SourceUnavailable, match=r"cannot list tags: more than 100,000 tags"):
        source.releases()
    # refused on the names' count (about 1 s idle), not after the listing with dates (about 20 s idle); loose, so
    # a loaded machine does not fail it: the message above is what the old code never gave
    assert time.monotonic() - started < 60


@pytest.mark.usefixtures("isolated_git")
def test_tags_within_the_bound_are_all_listed(tmp_path, monkeypatch):
    monkeypatch.setattr(git_source, "MAX_TAGS", 3)
    repo, _ = one_commit_repository(tmp_path)
    for version in ("v0.1.0", "v0.2.0", "v0.3.0"):
        repo.tag(version)
    with GitSource(ENGINE, str(repo.path)) as source:
        assert [r.version for r in source.releases()] == ["0.1.0", "0.2.0", "0.3.0"]
    repo.tag("v0.4.0")
    with GitSource(ENGINE, str(repo.path)) as source, pytest.raises(SourceUnavailable, match="more than 3 tags"):
        source.releases()


@pytest.mark.usefixtures("isolated_git")
def test_the_commits_a_bisection_lists_are_bounded_and_still_oldest_first(tmp_path, monkeypatch):
    repo, first = one_commit_repository(tmp_path)
    _fast_import(repo, "".join(
        f"commit refs/heads/main\ncommitter T <t@e> {1700000000 + n} +0000\ndata 2\nc\n"
        + ("from refs/heads/main^0\n" if n == 1 else "")
        + f"M 100644 inline vllm/engine.py\ndata {len(str(n)) + 8}\nMAX = {n}0\n\n" for n in range(1, 301)))
    last = repo.rev("main")
    with GitSource(ENGINE, str(repo.path)) as source:
        commits = source.commits_touching("vllm/engine.py", first, last)
        assert len(commits) == 300 and commits[-1] == last and commits[0] == repo.rev("main~299")
        monkeypatch.setattr(git_source, "MAX_COMMITS", 299)
        with pytest.raises(SourceUnavailable, match=r"changed vllm/engine\.py: more than 299 commits"):
            source.commits_touching("vllm/engine.py", first, last)
