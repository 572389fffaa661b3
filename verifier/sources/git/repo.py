"""The repository a git source reads: a local one opened, or a URL's clone in the cache (bare and
blobless), cloned on first use and given the remote's new tags after.

Every git process runs locked down (`command`). A clone's folder is private (0700) and holds no
credentials: its config names no URL at all; each fetch gets the URL, credentials included, from its
environment (`command.remote_env`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from git import Repo
from git.exc import GitError, NoSuchPathError

from ...cache import cache_dir
from .. import SourceUnavailable
from . import command
from .command import CONFIG_OPTIONS, git_dir_args, locked_env, remote_env, run_git
from .errors import scrub

#: What a clone's config says: a bare, blobless partial clone of the remote `origin`, whose URL it does not hold.
_CLONE_CONFIG = (
    ("core.repositoryformatversion", "1"),
    ("extensions.partialClone", "origin"),
    ("remote.origin.promisor", "true"),
    ("remote.origin.partialclonefilter", "blob:none"),
)
_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")


def is_url(location: str) -> bool:
    """A URL git can clone from: scheme://..., or the scp-like user@host:path."""
    return "://" in location or re.match(r"[\w.-]+@[\w.-]+:", location) is not None


def open_repo(path: Path, hint: str = "") -> Repo:
    try:
        repo = Repo(path)
    except NoSuchPathError:
        raise SourceUnavailable(f"{path}: no such directory{hint}") from None
    except GitError:
        raise SourceUnavailable(f"{path}: not a git repository{hint}") from None
    # Every git process GitPython starts for this repository (cat-file included) runs locked down.
    repo.git.update_environment(**locked_env())
    repo.git.set_persistent_git_options(c=list(CONFIG_OPTIONS))
    return repo


def cached_clone(url: str) -> tuple[Repo, str | None]:
    """The cache's clone of `url`, cloned now or updated with new tags, and a warning when updating failed."""
    clone = cache_dir("git") / _clone_folder_name(url)
    if not clone.exists():
        _clone(url, clone)
        return open_repo(clone), None
    hint = f" (the cache's clone of {scrub(url)}: delete it to clone afresh)"
    if clone.is_dir() and not clone.is_symlink():
        _seal(clone, url, hint)
    repo = open_repo(clone, hint)
    return repo, _fetch_tags(clone, url)


def fetch_blobs(clone: Path, url: str, blobs: list[str]) -> None:
    """Fetch blobs the clone lacks from `url` (within the fetch deadline); SourceUnavailable says why not."""
    run_git([*git_dir_args(clone), "-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags",
             "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "origin", *blobs],
            what=f"git fetch of {scrub(url)}", seconds=command.FETCH_SECONDS, env=remote_env(url))


def _clone_folder_name(url: str) -> str:
    """A readable, collision-free folder name: the repository's name and a hash of the URL."""
    name = scrub(url).rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:40].lstrip(".") or "repository"
    return f"{readable}-{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"


def _clone(url: str, clone: Path) -> None:
    """Clone into a private temporary folder and rename it into place, so that a failed or concurrent
    clone never leaves a half-made clone where the next run would use it.

    The clone is `git init` and one fetch, not `git clone`, which would write the URL (and its
    credentials) into the clone's config.
    """
    partial = Path(tempfile.mkdtemp(prefix=".clone-", dir=clone.parent))  # mode 0700
    what, late = f"{scrub(url)}: cannot clone", f"git clone of {scrub(url)}"
    try:
        run_git(["init", "--quiet", "--bare", "--template=", str(partial)], what=what)
        for key, value in _CLONE_CONFIG:
            run_git([*git_dir_args(partial), "config", key, value], what=what)
        run_git([*git_dir_args(partial), "fetch", "--quiet", "--no-write-fetch-head", "--filter=blob:none",
                 "origin", *_REFSPECS], what=what, late=late, seconds=command.CLONE_SECONDS, env=remote_env(url))
        os.chmod(partial, 0o700)
        try:
            partial.rename(clone)
        except OSError:
            if not clone.exists():  # another run that cloned first is fine; anything else is not
                raise SourceUnavailable(f"{scrub(url)}: cannot move the clone into {clone}") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _seal(clone: Path, url: str, hint: str) -> None:
    """Make a clone from before this version like a new one: private, and without the URL in its config."""
    try:
        os.chmod(clone, 0o700)
    except OSError as exc:
        raise SourceUnavailable(f"{clone}: cannot make the clone private ({exc.strerror or exc}){hint}") from None
    try:
        run_git([*git_dir_args(clone), "config", "--unset-all", "remote.origin.url"], what=f"{clone}")
    except SourceUnavailable:
        pass  # exit status 5: no URL there, as it should be; anything worse shows when the clone is read


def _fetch_tags(clone: Path, url: str) -> str | None:
    """Fetch new and moved tags; on failure, a warning (the clone still answers with what it has)."""
    try:
        run_git([*git_dir_args(clone), "fetch", "--quiet", "--force", "--no-write-fetch-head", "--filter=blob:none",
                 "origin", "+refs/tags/*:refs/tags/*"],
                what=f"git fetch of {scrub(url)}", seconds=command.FETCH_SECONDS, env=remote_env(url))
    except SourceUnavailable as exc:
        return f"{scrub(url)}: could not fetch new tags ({exc}); releases may be out of date"
    return None
