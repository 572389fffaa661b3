"""Git sources against hostile repositories and servers (issue #32): a repository's own config runs nothing,
every network operation has a deadline, listings are bounded, and a URL's credentials are never stored.

Offline: repositories built in tmp_path, servers on 127.0.0.1."""

from __future__ import annotations

import functools
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from verifier.cache import cache_dir
from verifier.kb import Engine
from verifier.sources import SourceUnavailable
from verifier.sources.git import GitSource
from verifier.sources.git import command as git_command
from verifier.sources.git import snapshot as git_snapshot
from verifier.sources.git.repo import _clone_folder_name

from .gitrepo import GitRepo

ENGINE = Engine(key="vllm", name="vLLM", package="vllm", repository="https://github.com/vllm-project/vllm",
                tag_pattern="v{version}")

pytestmark = pytest.mark.usefixtures("isolated_git")


def upstream(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "upstream")
    repo.write("vllm/engine.py", "MAX = 1\n")
    repo.write("vllm/config.py", "class Config:\n    pass\n")
    repo.commit("first")
    repo.tag("v0.9.0")
    repo.move("vllm/config.py", "vllm/settings.py")
    repo.commit("second")
    repo.tag("v0.10.0")
    return repo


def release(source: GitSource, version: str):
    return next(r for r in source.releases() if r.version == version)


# -- 1. a repository's own config runs nothing ---------------------------------------------------

def test_a_repositorys_own_config_runs_no_command(tmp_path):
    origin = upstream(tmp_path)
    origin.allow_partial_clones()
    local = tmp_path / "local"
    GitRepo.existing(tmp_path).git("clone", "--quiet", "--filter=blob:none", "--no-checkout", origin.url, str(local))
    hostile = GitRepo.existing(local)
    marker = tmp_path / "marker"
    monitor = tmp_path / "fsmonitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marker}\n")
    monitor.chmod(0o755)
    hostile.git("config", "protocol.ext.allow", "always")
    hostile.git("config", "protocol.allow", "always")
    hostile.git("config", "remote.origin.url", f"ext::sh -c touch% {marker}")
    hostile.git("config", "core.fsmonitor", str(monitor))
    hostile.git("config", "credential.helper", f"!touch {marker}")

    with GitSource(ENGINE, str(local)) as source:
        assert [r.version for r in source.releases()] == ["0.9.0", "0.10.0"]
        snapshot = source.open(release(source, "0.9.0"))
        assert snapshot.paths() == ["vllm/config.py", "vllm/engine.py"]  # trees came with the clone
        with pytest.raises(SourceUnavailable, match=r"vllm/engine\.py at 0\.9\.0 .*could not read"):
            snapshot.read("vllm/engine.py")  # a blob the partial clone lacks: an error, never a lazy fetch
        source.commits_touching("vllm/engine.py", release(source, "0.9.0").identity,
                                release(source, "0.10.0").identity)
        assert source.renamed_from("vllm/settings.py", release(source, "0.9.0"),
                                   release(source, "0.10.0")) == "vllm/config.py"  # same blob: no content read
    assert not marker.exists()


# -- servers ------------------------------------------------------------------------------------

@contextmanager
def dumb_http(folder: Path) -> Iterator[tuple[str, threading.Event, list[socket.socket]]]:
    """A dumb-HTTP git server for the bare repositories in `folder`: (base URL, a switch that makes it silent
    (it accepts and never answers), the connections it held silent)."""
    silent = threading.Event()
    held: list[socket.socket] = []
    release_all = threading.Event()

    class Handler(SimpleHTTPRequestHandler):
        def handle(self) -> None:
            if silent.is_set():
                held.append(self.connection)
                release_all.wait(30)
                return
            super().handle()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", silent, held
    finally:
        release_all.set()
        server.shutdown()
        server.server_close()


def served_bare(tmp_path: Path) -> Path:
    """The bare repository `served/up.git`, readable over dumb HTTP."""
    origin = upstream(tmp_path)
    served = tmp_path / "served"
    served.mkdir()
    GitRepo.existing(tmp_path).git("clone", "--quiet", "--bare", str(origin.path), str(served / "up.git"))
    GitRepo.existing(served / "up.git").git("update-server-info")
    return served


def closed_by_peer(connection: socket.socket, seconds: float) -> bool:
    connection.settimeout(seconds)
    try:
        while connection.recv(65536):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


def in_thread(call, seconds: float):
    """`call()` in a thread: (finished within `seconds`, its exception or None)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return bool(outcome), (outcome[0] if outcome else None)


# -- 2. deadlines ------------------------------------------------------------------------------

def test_a_silent_server_cannot_hold_a_clone(tmp_path, monkeypatch):
    monkeypatch.setattr(git_command, "CLONE_SECONDS", 1)
    with dumb_http(tmp_path) as (base, silent, held):
        silent.set()
        url = f"{base}/up.git"
        started = time.monotonic()
        finished, error = in_thread(lambda: GitSource(ENGINE, url).releases(), 8)
        took = time.monotonic() - started
        assert finished, "the clone is still waiting for the server"
        assert isinstance(error, SourceUnavailable)
        assert f"git clone of {url} did not finish in 1 s" in str(error)
        assert took < 5
        assert held and all(closed_by_peer(connection, 2) for connection in held)  # remote-http killed too
    assert list(cache_dir("git").iterdir()) == []


def test_a_silent_server_cannot_hold_a_fetch_of_new_tags(tmp_path, monkeypatch):
    monkeypatch.setattr(git_command, "FETCH_SECONDS", 1)
    served = served_bare(tmp_path)
    with dumb_http(served) as (base, silent, held):
        url = f"{base}/up.git"
        with GitSource(ENGINE, url) as source:
            assert [r.version for r in source.releases()] == ["0.9.0", "0.10.0"]
        silent.set()
        again = GitSource(ENGINE, url)
        finished, error = in_thread(again.releases, 8)
        assert finished and error is None
        assert again.warning and f"git fetch of {url} did not finish in 1 s" in again.warning
        assert again.open(release(again, "0.9.0")).read("vllm/engine.py") == b"MAX = 1\n"
        again.close()


# -- 3. bounded listings -------------------------------------------------------------------------

def wide_tree_repository(tmp_path: Path, entries: int, folders: int = 0) -> GitRepo:
    """A commit tagged v0.9.0 whose root lists `entries` files (one blob reused), or, with `folders`, that
    many folders of `entries` files each (one tree reused)."""
    repo = GitRepo(tmp_path / "wide")
    blob = _blob(repo)
    listing = "".join(f"100644 blob {blob}\tf{i}.py\n" for i in range(entries))
    tree = _mktree(repo, listing)
    if folders:
        tree = _mktree(repo, "".join(f"040000 tree {tree}\td{i}\n" for i in range(folders)))
    commit = _git_input(repo, ["commit-tree", tree, "-m", "wide"], "")
    repo.tag("v0.9.0", commit)
    return repo


def _git_input(repo: GitRepo, args: list[str], text: str) -> str:
    import subprocess

    from .gitrepo import ISOLATED_GIT_ENV

    done = subprocess.run(["git", *args], cwd=repo.path, input=text, capture_output=True, text=True, check=True,
                          env={**os.environ, **ISOLATED_GIT_ENV})
    return done.stdout.strip()


def _blob(repo: GitRepo) -> str:
    return _git_input(repo, ["hash-object", "-w", "--stdin"], "x = 1\n")


def _mktree(repo: GitRepo, listing: str) -> str:
    return _git_input(repo, ["mktree"], listing)


def test_a_tree_listing_more_paths_than_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(git_snapshot, "MAX_PATHS", 100)
    repo = wide_tree_repository(tmp_path, entries=101)
    with GitSource(ENGINE, str(repo.path)) as source:
        snapshot = source.open(release(source, "0.9.0"))
        with pytest.raises(SourceUnavailable, match=r"the file list at 0\.9\.0 .*more than 100 paths"):
            snapshot.paths()
        with pytest.raises(SourceUnavailable, match=r"f1\.py at 0\.9\.0 .*a folder of 101 entries"):
            snapshot.read("f1.py")


def test_shared_trees_listing_more_paths_than_the_bound_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(git_snapshot, "MAX_PATHS", 100)
    repo = wide_tree_repository(tmp_path, entries=10, folders=11)  # 110 paths from 2 trees
    with GitSource(ENGINE, str(repo.path)) as source:
        snapshot = source.open(release(source, "0.9.0"))
        with pytest.raises(SourceUnavailable, match=r"at 0\.9\.0 .*more than 100 paths"):
            snapshot.paths()
        assert snapshot.read("d3/f4.py") == b"x = 1\n"  # each folder is within the bound


def test_a_listing_within_the_bound_is_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(git_snapshot, "MAX_PATHS", 100)
    repo = wide_tree_repository(tmp_path, entries=10, folders=10)
    with GitSource(ENGINE, str(repo.path)) as source:
        assert len(source.open(release(source, "0.9.0")).paths()) == 100


# -- 4. credentials are never stored ---------------------------------------------------------------

def files_containing(folder: Path, needle: bytes) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and needle in path.read_bytes()]


def test_a_urls_token_is_never_stored_and_the_clone_is_private(tmp_path):
    served = served_bare(tmp_path)
    with dumb_http(served) as (base, _, _):
        url = base.replace("http://", "http://user:s3cr3t-token@") + "/up.git"
        with GitSource(ENGINE, url) as source:
            assert source.open(release(source, "0.9.0")).read("vllm/engine.py") == b"MAX = 1\n"
        with GitSource(ENGINE, url) as again:  # a fetch of new tags into the clone
            assert [r.version for r in again.releases()] == ["0.9.0", "0.10.0"]
            assert again.warning is None
        (clone,) = cache_dir("git").iterdir()
        assert files_containing(cache_dir("git"), b"s3cr3t-token") == []
        assert stat.S_IMODE(clone.stat().st_mode) == 0o700


def test_a_clone_made_before_is_made_private_and_forgets_the_token(tmp_path):
    served = served_bare(tmp_path)
    with dumb_http(served) as (base, _, _):
        url = base.replace("http://", "http://user:s3cr3t-token@") + "/up.git"
        clone = cache_dir("git") / _clone_folder_name(url)
        clone.parent.mkdir(parents=True, exist_ok=True)
        GitRepo.existing(tmp_path).git("clone", "--quiet", "--bare", url, str(clone))  # as earlier versions left it
        clone.chmod(0o755)
        assert files_containing(clone, b"s3cr3t-token")
        with GitSource(ENGINE, url) as source:
            assert source.open(release(source, "0.10.0")).read("vllm/settings.py")
            assert source.warning is None
        assert files_containing(cache_dir("git"), b"s3cr3t-token") == []
        assert stat.S_IMODE(clone.stat().st_mode) == 0o700
