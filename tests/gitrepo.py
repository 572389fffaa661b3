"""Build small git repositories for tests with the git command line.

`ISOLATED_GIT_ENV` keeps the machine's git configuration out of the tests; set
it in the environment (monkeypatch) so that the code under test sees it too.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ISOLATED_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_TERMINAL_PROMPT": "0",
}


class GitRepo:
    """A repository with a work tree, written to and committed from tests."""

    def __init__(self, path: Path) -> None:
        """A new, empty repository at `path`."""
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "--quiet", "--initial-branch=main", "--template=")  # no sample hooks to copy around

    @classmethod
    def existing(cls, path: Path) -> GitRepo:
        repo = cls.__new__(cls)
        repo.path = path
        return repo

    @property
    def url(self) -> str:
        return self.path.resolve().as_uri()

    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(["git", *args], cwd=self.path, env={**os.environ, **ISOLATED_GIT_ENV, **(env or {})},
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout.strip()

    def write(self, path: str, content: str | bytes) -> None:
        target = self.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        target.write_bytes(content)

    def move(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)

    def symlink(self, path: str, target: str) -> None:
        (self.path / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, self.path / path)

    def embedded_repository(self, path: str) -> GitRepo:
        """A repository inside the work tree, which the next commit records as a submodule (a gitlink)."""
        inner = GitRepo(self.path / path)
        inner.write("setup.py", "")
        inner.commit("inner")
        return inner

    def commit(self, message: str, date: str = "2024-01-01T12:00:00+00:00") -> str:
        """Commit everything in the work tree; `date` is the author and committer date."""
        self.git("add", "--all")
        self.git("commit", "--quiet", "--allow-empty", "-m", message,
                 env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        return self.rev("HEAD")

    def tag(self, name: str, target: str = "HEAD", message: str | None = None) -> None:
        """A lightweight tag, or an annotated one when there is a message."""
        if message is None:
            self.git("tag", name, target)
        else:
            self.git("tag", "-a", name, target, "-m", message)

    def rev(self, revision: str) -> str:
        return self.git("rev-parse", "--verify", revision)

    def allow_partial_clones(self) -> None:
        """Serve `--filter` clones over file:// (upload-pack refuses filters unless told)."""
        self.git("config", "uploadpack.allowFilter", "true")
        self.git("config", "uploadpack.allowAnySHA1InWant", "true")

    def object_file(self, sha: str) -> Path:
        """Where a loose object is stored (objects are loose until git packs them)."""
        return self.path / ".git" / "objects" / sha[:2] / sha[2:]
