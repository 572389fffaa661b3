"""`GitSource`: an engine's releases from the tags of a git repository, the commit queries, and the
repository its snapshots read through (`repository`, `snapshot_closed`). Part of `verifier.sources.git`.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from git import Repo
from packaging.version import InvalidVersion, Version

from ...model import Release
from .. import Source, SourceUnavailable, check_repository_path
from . import command
from .command import git_dir_args, remote_env, run_git, stream_git
from .errors import GIT_ERRORS, restart_cat_file, scrub, unavailable
from .repo import cached_clone, fetch_blobs, is_url, open_repo
from .snapshot import GitSnapshot

if TYPE_CHECKING:
    from ...kb import Engine

# 40 digits only: a 64-digit identity is an archive's sha256 from the package index.
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}")

#: The most tags a repository may have: vLLM has about 200, llama.cpp about 8,000 (a tag per build, `b1234`);
#: listing 100,000 tags with their commits' dates takes git about 2 s (a million, about 20 s). Counted first by
#: name alone (a million in about 1 s), so a repository past the bound costs no more than that.
MAX_TAGS = 100_000
#: The most bytes the listing of those tags may take (about 150 bytes a tag; a ref name has no length bound).
MAX_TAG_LISTING_BYTES = 64 << 20
#: The most commits a bisection lists between two commits: vLLM's whole history is about 20,000 commits.
MAX_COMMITS = 500_000
#: The most bytes of that list (41 bytes a commit).
MAX_COMMIT_LISTING_BYTES = 41 * MAX_COMMITS

# One line per tag: name, object type and id, then the same of the object an annotated tag points at.
_TAG_FORMAT = "\t".join((
    "%(refname:strip=2)",
    "%(objecttype)", "%(objectname)", "%(committerdate:unix)",
    "%(*objecttype)", "%(*objectname)", "%(*committerdate:unix)",
))


class GitSource(Source):
    """The releases of one engine, from the tags of a git repository.

    `location` is a path to a repository, or a URL to clone into the cache.
    After the first use, `warning` says why the releases may be out of date
    (fetching new tags into an existing clone failed), or is None.
    """

    def __init__(self, engine: Engine, location: str, include_prereleases: bool = False) -> None:
        self.engine = engine.key
        self.engine_spec = engine
        self.location = location
        self.shown = scrub(location)  # the location as messages name it
        self.include_prereleases = include_prereleases
        self.warning: str | None = None
        self._repo: Repo | None = None
        self._clone: Path | None = None  # the cache's clone, when the location is a URL
        self._tags: dict[str, tuple[str, ...]] | None = None
        self._closed = False
        self._batches = 0

    @contextmanager
    def batch(self) -> Iterator[None]:
        """While inside, closing a snapshot keeps the git processes for the next one (a run over many
        releases would otherwise start `git cat-file` again for each); they end when the batch does."""
        self._batches += 1
        try:
            yield
        finally:
            self._batches -= 1
            if not self._batches and self._repo is not None:
                self._repo.git.clear_cache()

    def __enter__(self) -> GitSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """End every git process of this source and its snapshots; the source cannot be used after."""
        self._closed = True
        if self._repo is not None:
            self._repo.close()
            self._repo = None

    def snapshot_closed(self) -> None:
        """A snapshot of this source is closed: its git processes end, unless a batch keeps them for the next
        snapshot (the next read starts them again)."""
        if self._repo is not None and not self._batches:
            self._repo.git.clear_cache()

    # -- releases ------------------------------------------------------------------------------

    def releases(self) -> list[Release]:
        """Tags that name a release, oldest version first (PEP 440 order).

        One release per version: when two tags spell the same version (v1.0, v1.0.0),
        the first tag in name order is kept.
        """
        by_version: dict[Version, Release] = {}
        for tag, version, text in sorted(self._release_tags(), key=lambda found: (found[1], found[0])):
            if version in by_version:
                continue
            target = self._tag_commit(tag)
            if target is not None:
                commit, timestamp = target
                by_version[version] = Release(self.engine, text, date=_iso_date(timestamp),
                                              identity=commit, url=self._tree_url(tag))
        return [by_version[v] for v in sorted(by_version)]

    def _release_tags(self) -> Iterator[tuple[str, Version, str]]:
        """(tag, version, version as written) of every tag matching the engine's pattern."""
        for tag in self._tag_targets():
            text = self.engine_spec.version_of_tag(tag)
            if text is None:
                continue
            try:
                version = Version(text)
            except InvalidVersion:
                continue
            if version.is_prerelease and not self.include_prereleases:
                continue
            yield tag, version, text

    def _tag_targets(self) -> dict[str, tuple[str, ...]]:
        """Every tag with what for-each-ref says of it, read once per source."""
        if self._tags is None:
            repo = self.repository()
            what = f"{self.shown}: cannot list tags"
            git_dir = git_dir_args(Path(repo.git_dir))
            # names alone first: git reads every tagged commit for the dates, before it writes the first line
            stream_git([*git_dir, "for-each-ref", "--format=%(refname)", "refs/tags"], what=what,
                       limit=MAX_TAGS, max_bytes=MAX_TAG_LISTING_BYTES, items="tags")
            listing = stream_git([*git_dir, "for-each-ref", f"--format={_TAG_FORMAT}", "refs/tags"], what=what,
                                 limit=MAX_TAGS, max_bytes=MAX_TAG_LISTING_BYTES, items="tags")
            self._tags = {}
            for line in listing:
                name, *fields = line.split("\t")
                self._tags[name] = tuple(fields)
        return self._tags

    def _tag_commit(self, tag: str) -> tuple[str, int] | None:
        """The commit a tag names and its committer timestamp; None for a tag on a tree or a blob."""
        kind, sha, timestamp, peeled_kind, peeled_sha, peeled_timestamp = self._tag_targets()[tag]
        if kind == "commit":
            return sha, int(timestamp)
        if kind == "tag" and peeled_kind == "commit":
            return peeled_sha, int(peeled_timestamp)
        if kind == "tag" and peeled_kind == "tag":
            return self._peel_nested_tag(sha)
        return None

    def _peel_nested_tag(self, tag_object: str) -> tuple[str, int] | None:
        """A tag of a tag (for-each-ref peels one level only): follow it to its commit, if any."""
        repo = self.repository()
        try:
            commit_sha, _, _ = repo.git.get_object_header(f"{tag_object}^{{commit}}")
            commit = repo.commit(commit_sha.decode())  # type: ignore[attr-defined]  # bytes, typed str by GitPython
            return commit.hexsha, commit.committed_date
        except GIT_ERRORS:
            restart_cat_file(repo)
            return None

    def _tree_url(self, ref: str) -> str:
        base = self.engine_spec.repository.rstrip("/").removesuffix(".git")
        return f"{base}/tree/{quote(ref, safe='/')}"

    # -- snapshots -----------------------------------------------------------------------------

    def open(self, release: Release) -> GitSnapshot:
        """The files of a release: its commit when `identity` is one, else its tag."""
        if release.identity and _COMMIT_SHA.fullmatch(release.identity):
            commit = self._resolve_commit(release.identity, f"commit {release.identity}")
        else:
            tag = self.engine_spec.tag(release.version)
            commit = self._resolve_commit(f"refs/tags/{tag}", f"tag {tag}")
        return GitSnapshot(self, release, commit)

    def open_commit(self, revision: str) -> GitSnapshot:
        """The files at any commit (a sha, abbreviated or not, or a tag): for bisecting."""
        commit = self._resolve_commit(revision, f"commit {revision}")
        repo = self.repository()
        with unavailable(f"{self.shown}: cannot read commit {commit}"):
            timestamp = repo.commit(commit).committed_date
        release = Release(self.engine, commit[:12], date=_iso_date(timestamp), identity=commit,
                          url=self._tree_url(commit))
        return GitSnapshot(self, release, commit)

    def commits_touching(self, path: str | list[str], from_commit: str, to_commit: str) -> list[str]:
        """Commits after `from_commit`, up to and including `to_commit`, that changed `path` (or any of a list
        of paths); oldest first."""
        paths = [path] if isinstance(path, str) else list(path)
        for each in paths:
            problem = check_repository_path(each)
            if problem:
                raise SourceUnavailable(f"{each}: {problem}")
        start = self._resolve_commit(from_commit, f"commit {from_commit}")
        end = self._resolve_commit(to_commit, f"commit {to_commit}")
        repo = self.repository()
        # newest first as git finds them (`--reverse` would walk the whole range before writing a line)
        listing = stream_git([*git_dir_args(Path(repo.git_dir)), "log", "--format=%H", f"{start}..{end}", "--",
                              *(f":(literal){each}" for each in paths)],
                             what=f"{self.shown}: cannot list the commits that changed {', '.join(paths)}",
                             limit=MAX_COMMITS, max_bytes=MAX_COMMIT_LISTING_BYTES, items="commits")
        return listing[::-1]

    def renamed_from(self, path: str, older: Release, newer: Release) -> str | None:
        """The path that `newer`'s file `path` had in `older`, by git's rename detection between the two
        releases; None when git sees no rename of it."""
        problem = check_repository_path(path)
        if problem:
            raise SourceUnavailable(f"{path}: {problem}")
        with self.open(older) as before, self.open(newer) as after:
            start, end = before.commit, after.commit
        repo = self.repository()
        what = f"{self.shown}: cannot compare {older.version} with {newer.version}"
        options = ("--no-ext-diff", "--no-textconv", "--name-status", "-z", "-M", "--diff-filter=R", start, end)
        if self._clone is not None:  # rename detection reads blobs, which a blobless clone fetches as it goes
            listing = run_git([*git_dir_args(self._clone), "diff", *options], what=what,
                              late=f"{what}: git fetch of {self.shown}", seconds=command.FETCH_SECONDS,
                              env=remote_env(self.location, lazy_fetch=True))
        else:
            with unavailable(what):
                listing = repo.git.diff(*options)
        fields = listing.split("\0")
        for i in range(0, len(fields) - 2, 3):  # R<score>, old path, new path
            if fields[i].startswith("R") and fields[i + 2] == path:
                return fields[i + 1]
        return None

    def commit_summary(self, sha: str) -> str:
        """The first line of a commit's message, for people."""
        repo = self.repository()
        with unavailable(f"{self.shown}: cannot read commit {sha}"):
            return str(repo.commit(sha).summary)

    def _resolve_commit(self, revision: str, what: str) -> str:
        """The full sha of the commit a revision names.

        Asked of cat-file on its standard input, so that a revision that looks like
        an option is only ever a name that does not resolve.
        """
        repo = self.repository()
        try:
            sha, _, _ = repo.git.get_object_header(f"{revision}^{{commit}}")
        except GIT_ERRORS:
            git_said = restart_cat_file(repo)
            if git_said:
                raise SourceUnavailable(f"{self.shown}: cannot look up {what}: {git_said}") from None
            raise SourceUnavailable(f"{self.shown}: no {what}") from None
        return sha.decode()  # type: ignore[attr-defined]  # bytes, typed str by GitPython

    # -- the repository ------------------------------------------------------------------------

    def fetch_blob(self, blob: str) -> bool:
        """Fetch a blob the cache's clone lacks from the URL, within the fetch deadline; False for a local
        repository (nothing is ever fetched into it); SourceUnavailable when the fetch fails."""
        self.repository()
        if self._clone is None:
            return False
        fetch_blobs(self._clone, self.location, [blob])
        return True

    def repository(self) -> Repo:
        """The opened repository; a URL is cloned or updated on first use."""
        if self._closed:
            raise SourceUnavailable(f"{self.shown}: the git source is closed")
        if self._repo is None:
            if os.path.exists(self.location) or not is_url(self.location):
                self._repo = open_repo(Path(self.location))
            else:
                self._repo, self.warning = cached_clone(self.location)
                self._clone = Path(self._repo.git_dir)
        return self._repo


def _iso_date(timestamp: int) -> str:
    """A committer timestamp as a UTC date, the same clock as the package index's upload times."""
    return _dt.datetime.fromtimestamp(timestamp, tz=_dt.timezone.utc).date().isoformat()
