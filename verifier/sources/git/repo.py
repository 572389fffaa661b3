"""The repository a git source reads: a local one opened, or a URL's clone in the cache (bare and
blobless), cloned on first use and given the remote's new tags after."""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from git import Repo
from git.exc import GitError, NoSuchPathError

from ...cache import cache_dir
from .. import SourceUnavailable
from .errors import reason, scrub, unavailable

# A lazy blob fetch or a tag fetch must fail, not wait for a password on the terminal.
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0"}


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
    # Blobs missing from a partial clone are fetched by whichever git command needs them.
    repo.git.update_environment(**_NO_PROMPT)
    return repo


def cached_clone(url: str) -> tuple[Repo, str | None]:
    """The cache's clone of `url`, cloned now or updated with new tags, and a warning when updating failed."""
    clone = cache_dir("git") / _clone_folder_name(url)
    if not clone.exists():
        _clone(url, clone)
        return open_repo(clone), None
    repo = open_repo(clone, f" (the cache's clone of {scrub(url)}: delete it to clone afresh)")
    return repo, _fetch_tags(repo, url)


def _clone_folder_name(url: str) -> str:
    """A readable, collision-free folder name: the repository's name and a hash of the URL."""
    name = scrub(url).rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:40].lstrip(".") or "repository"
    return f"{readable}-{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"


def _clone(url: str, clone: Path) -> None:
    """Clone into a temporary folder and rename it into place, so that a failed or
    concurrent clone never leaves a half-made clone where the next run would use it."""
    partial = Path(tempfile.mkdtemp(prefix=".clone-", dir=clone.parent))
    try:
        with unavailable(f"{scrub(url)}: cannot clone"):
            Repo.clone_from(url, partial, bare=True, filter="blob:none", env=_NO_PROMPT).close()
        try:
            partial.rename(clone)
        except OSError:
            if not clone.exists():  # another run that cloned first is fine; anything else is not
                raise SourceUnavailable(f"{scrub(url)}: cannot move the clone into {clone}") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _fetch_tags(repo: Repo, url: str) -> str | None:
    """Fetch new and moved tags; on failure, a warning (the clone still answers with what it has)."""
    try:
        repo.git.fetch("--tags", "--force", "--no-write-fetch-head", "origin")
    except GitError as exc:
        return f"{scrub(url)}: could not fetch new tags ({reason(exc)}); releases may be out of date"
    return None
