"""A git repository as a source: releases are tags, files are read from git objects.

`GitSource` takes a local repository (bare or not) or a URL. A URL is cloned
once into the cache as a bare, blobless partial clone: commits and trees come
with the clone, and git fetches each blob from the remote the first time it is
read. Later sources on the same URL fetch new tags into that clone.

Nothing is checked out. Every object is read through GitPython's persistent
`git cat-file --batch` and `--batch-check` processes, one pair per source,
shared by its snapshots; `close()` ends them. A source is not thread-safe.

What a snapshot hands out is what the commit's trees hold, never a file of the
local repository (`.git/config`, hooks, the work tree's uncommitted files). A
URL's credentials (`https://user:token@host/...`) are used to clone and fetch,
and never appear in a message: messages reach reports and CI logs.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from git import Repo
from git.exc import CommandError, GitError, NoSuchPathError
from git.objects.fun import tree_entries_from_data
from gitdb.exc import ODBError
from packaging.version import InvalidVersion, Version

from ..cache import cache_dir
from ..model import Release
from . import MAX_FILE_BYTES, Snapshot, Source, SourceUnavailable, check_repository_path

if TYPE_CHECKING:
    from ..kb import Engine

#: What GitPython raises when git fails; ValueError is how its cat-file wrapper answers "missing".
_GIT_ERRORS = (GitError, ODBError, ValueError, OSError)

_TREE_MODE = 0o040000
_SYMLINK_MODE = 0o120000
_SUBMODULE_MODE = 0o160000
_FILE_TYPE_BITS = 0o170000

# 40 digits only: a 64-digit identity is an archive's sha256 from the package index.
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
# A lazy blob fetch or a tag fetch must fail, not wait for a password on the terminal.
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0"}

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
        self.shown = _scrub(location)  # the location as messages name it
        self.include_prereleases = include_prereleases
        self.warning: str | None = None
        self._repo: Repo | None = None
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
            repo = self._repository()
            with _unavailable(f"{self.shown}: cannot list tags"):
                listing = repo.git.for_each_ref("refs/tags", format=_TAG_FORMAT)
            self._tags = {}
            for line in listing.splitlines():
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
        repo = self._repository()
        try:
            commit_sha, _, _ = repo.git.get_object_header(f"{tag_object}^{{commit}}")
            commit = repo.commit(commit_sha.decode())
            return commit.hexsha, commit.committed_date
        except _GIT_ERRORS:
            _restart_cat_file(repo)
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
        repo = self._repository()
        with _unavailable(f"{self.shown}: cannot read commit {commit}"):
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
        repo = self._repository()
        with _unavailable(f"{self.shown}: cannot list the commits that changed {', '.join(paths)}"):
            listing = repo.git.log("--format=%H", "--reverse", f"{start}..{end}", "--",
                                   *(f":(literal){each}" for each in paths))
        return listing.split()

    def renamed_from(self, path: str, older: Release, newer: Release) -> str | None:
        """The path that `newer`'s file `path` had in `older`, by git's rename detection between the two
        releases; None when git sees no rename of it."""
        problem = check_repository_path(path)
        if problem:
            raise SourceUnavailable(f"{path}: {problem}")
        with self.open(older) as before, self.open(newer) as after:
            start, end = before.commit, after.commit
        repo = self._repository()
        with _unavailable(f"{self.shown}: cannot compare {older.version} with {newer.version}"):
            listing = repo.git.diff("--no-ext-diff", "--no-textconv", "--name-status", "-z", "-M",
                                    "--diff-filter=R", start, end)
        fields = listing.split("\0")
        for i in range(0, len(fields) - 2, 3):  # R<score>, old path, new path
            if fields[i].startswith("R") and fields[i + 2] == path:
                return fields[i + 1]
        return None

    def commit_summary(self, sha: str) -> str:
        """The first line of a commit's message, for people."""
        repo = self._repository()
        with _unavailable(f"{self.shown}: cannot read commit {sha}"):
            return str(repo.commit(sha).summary)

    def _resolve_commit(self, revision: str, what: str) -> str:
        """The full sha of the commit a revision names.

        Asked of cat-file on its standard input, so that a revision that looks like
        an option is only ever a name that does not resolve.
        """
        repo = self._repository()
        try:
            sha, _, _ = repo.git.get_object_header(f"{revision}^{{commit}}")
        except _GIT_ERRORS:
            git_said = _restart_cat_file(repo)
            if git_said:
                raise SourceUnavailable(f"{self.shown}: cannot look up {what}: {git_said}") from None
            raise SourceUnavailable(f"{self.shown}: no {what}") from None
        return sha.decode()

    # -- the repository ------------------------------------------------------------------------

    def _repository(self) -> Repo:
        """The opened repository; a URL is cloned or updated on first use."""
        if self._closed:
            raise SourceUnavailable(f"{self.shown}: the git source is closed")
        if self._repo is None:
            if os.path.exists(self.location) or not _is_url(self.location):
                self._repo = _open_repo(Path(self.location))
            else:
                self._repo, self.warning = _cached_clone(self.location)
        return self._repo


class GitSnapshot(Snapshot):
    """The files of one commit, read from git objects.

    A snapshot reads through its source's git processes; `close()` ends them (the
    next read by another snapshot of the source starts them again).
    """

    def __init__(self, source: GitSource, release: Release, commit: str) -> None:
        self.release = release
        self.commit = commit
        self._source = source
        self._trees: dict[str, dict[str, tuple[int, str]]] = {}  # folder -> name -> (mode, sha)
        self._digests: dict[str, str | None] = {}  # path -> digest(path), for the many checks on one file
        self._closed = False

    def close(self) -> None:
        self._closed = True
        self._trees.clear()
        self._digests.clear()
        if self._source._repo is not None and not self._source._batches:
            self._source._repo.git.clear_cache()

    def read(self, path: str) -> bytes | None:
        """The bytes of a file; None when the commit has no file at `path`."""
        blob = self.blob_id(path)
        if blob is None:
            return None
        git = self._repo().git
        with self._reading(path):
            _, kind, size = git.get_object_header(blob)
            if kind != b"blob":
                raise SourceUnavailable(f"{self._where(path)}: object {blob} is a {kind.decode()}, not a file")
            if size > MAX_FILE_BYTES:
                raise SourceUnavailable(f"{self._where(path)}: {size} bytes, over the {MAX_FILE_BYTES}-byte limit")
            _, _, _, data = git.get_object_data(blob)
        return data

    def digest(self, path: str) -> str | None:
        """An identity of the file's content read from its folder's tree, not from the file: its blob id."""
        found = self._digests.get(path, False)
        if found is False:
            blob = self.blob_id(path)
            found = self._digests[path] = f"git-blob:{blob}" if blob is not None else None
        return found

    def identities(self, paths) -> tuple | None:
        """Each file's blob id (None where the commit has no such file), from the trees; None when some
        path cannot be named so (a link, a submodule, an unreadable tree)."""
        try:
            return tuple(self.blob_id(path) for path in paths)
        except SourceUnavailable:
            return None

    def paths(self) -> list[str]:
        """The path of every regular file at this commit (symlinks and submodules left out)."""
        repo = self._repo()
        with self._reading("the file list"):
            listing = repo.git.ls_tree("-r", "-z", "--full-tree", self.commit)
        paths = []
        for record in listing.split("\0"):
            if not record:
                continue
            meta, _, path = record.partition("\t")
            mode = meta.split(" ", 1)[0]
            if mode in ("100644", "100755"):
                paths.append(path)
        return sorted(paths)

    def blob_id(self, path: str) -> str | None:
        """The git blob id of the file at `path` (a content hash), or None when there is no such file."""
        problem = check_repository_path(path)
        if problem:
            raise SourceUnavailable(f"{path}: {problem}")
        folder, _, name = path.rpartition("/")
        entries = self._tree(folder, path)
        entry = entries.get(name) if entries is not None else None
        if entry is None:
            return None
        mode, sha = entry
        kind = mode & _FILE_TYPE_BITS
        if kind == _TREE_MODE:
            return None
        self._refuse_links(kind, path, path)
        return sha

    def _tree(self, folder: str, path: str) -> dict[str, tuple[int, str]] | None:
        """The entries of a folder at this commit; None when there is no such folder."""
        if folder in self._trees:
            return self._trees[folder]
        if not folder:
            entries = self._tree_entries(f"{self.commit}^{{tree}}", path)
        else:
            parent, _, name = folder.rpartition("/")
            above = self._tree(parent, path)
            entry = above.get(name) if above is not None else None
            if entry is None:
                return None
            mode, sha = entry
            self._refuse_links(mode & _FILE_TYPE_BITS, folder, path)
            if mode & _FILE_TYPE_BITS != _TREE_MODE:
                return None
            entries = self._tree_entries(sha, path)
        self._trees[folder] = entries
        return entries

    def _tree_entries(self, tree: str, path: str) -> dict[str, tuple[int, str]]:
        with self._reading(path):
            _, kind, _, data = self._repo().git.get_object_data(tree)
            if kind != b"tree":
                raise SourceUnavailable(f"{self._where(path)}: object {tree} is a {kind.decode()}, not a folder")
            return {name: (mode, binsha.hex()) for binsha, mode, name in tree_entries_from_data(data)}

    def _refuse_links(self, kind: int, entry_path: str, path: str) -> None:
        """Symbolic links could point anywhere, and a submodule's files are in another repository."""
        if kind == _SYMLINK_MODE:
            raise SourceUnavailable(f"{self._where(path)}: {entry_path} is a symbolic link; checks read files only")
        if kind == _SUBMODULE_MODE:
            raise SourceUnavailable(f"{self._where(path)}: {entry_path} is a submodule, whose files are not "
                                    "in this repository")

    def _repo(self) -> Repo:
        if self._closed:
            raise SourceUnavailable(f"{self._source.shown}: the snapshot of {self.release.version} is closed")
        return self._source._repository()

    def _where(self, path: str) -> str:
        return f"{path} at {self.release.version} ({self.commit[:12]})"

    @contextmanager
    def _reading(self, path: str) -> Iterator[None]:
        try:
            yield
        except _GIT_ERRORS as exc:
            git_said = _restart_cat_file(self._source._repository()) or _reason(exc)
            raise SourceUnavailable(f"{self._where(path)}: git could not read it "
                                    f"(a corrupt repository, or a blob the remote did not send): {git_said}") from None


# -- opening, cloning and fetching ------------------------------------------------------------

def _is_url(location: str) -> bool:
    """A URL git can clone from: scheme://..., or the scp-like user@host:path."""
    return "://" in location or re.match(r"[\w.-]+@[\w.-]+:", location) is not None


def _open_repo(path: Path, hint: str = "") -> Repo:
    try:
        repo = Repo(path)
    except NoSuchPathError:
        raise SourceUnavailable(f"{path}: no such directory{hint}") from None
    except GitError:
        raise SourceUnavailable(f"{path}: not a git repository{hint}") from None
    # Blobs missing from a partial clone are fetched by whichever git command needs them.
    repo.git.update_environment(**_NO_PROMPT)
    return repo


def _cached_clone(url: str) -> tuple[Repo, str | None]:
    """The cache's clone of `url`, cloned now or updated with new tags, and a warning when updating failed."""
    clone = cache_dir("git") / _clone_folder_name(url)
    if not clone.exists():
        _clone(url, clone)
        return _open_repo(clone), None
    repo = _open_repo(clone, f" (the cache's clone of {_scrub(url)}: delete it to clone afresh)")
    return repo, _fetch_tags(repo, url)


def _clone_folder_name(url: str) -> str:
    """A readable, collision-free folder name: the repository's name and a hash of the URL."""
    name = _scrub(url).rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:40].lstrip(".") or "repository"
    return f"{readable}-{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"


def _clone(url: str, clone: Path) -> None:
    """Clone into a temporary folder and rename it into place, so that a failed or
    concurrent clone never leaves a half-made clone where the next run would use it."""
    partial = Path(tempfile.mkdtemp(prefix=".clone-", dir=clone.parent))
    try:
        with _unavailable(f"{_scrub(url)}: cannot clone"):
            Repo.clone_from(url, partial, bare=True, filter="blob:none", env=_NO_PROMPT).close()
        try:
            partial.rename(clone)
        except OSError:
            if not clone.exists():  # another run that cloned first is fine; anything else is not
                raise SourceUnavailable(f"{_scrub(url)}: cannot move the clone into {clone}") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _fetch_tags(repo: Repo, url: str) -> str | None:
    """Fetch new and moved tags; on failure, a warning (the clone still answers with what it has)."""
    try:
        repo.git.fetch("--tags", "--force", "--no-write-fetch-head", "origin")
    except GitError as exc:
        return f"{_scrub(url)}: could not fetch new tags ({_reason(exc)}); releases may be out of date"
    return None


# -- small helpers -----------------------------------------------------------------------------

@contextmanager
def _unavailable(what: str) -> Iterator[None]:
    try:
        yield
    except _GIT_ERRORS as exc:
        raise SourceUnavailable(f"{what}: {_reason(exc)}") from None


def _restart_cat_file(repo: Repo) -> str | None:
    """End the persistent cat-file processes, so that the next request starts them afresh and
    in step (a failed request may leave an answer half read); and say what git said if one died.

    GitPython reports a cat-file that died only as an empty answer, with a guess about
    directory ownership; git's own last words are on the dead process's stderr. A process
    that is still fine ends cleanly when its input closes.
    """
    last_words = None
    for command in (repo.git.cat_file_all, repo.git.cat_file_header):
        process = getattr(command, "proc", None)
        if process is None:
            continue
        with suppress(OSError):
            process.stdin.close()
        try:
            status = process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            continue  # clear_cache kills it
        if status != 0 and process.stderr:
            said = [line.strip() for line in process.stderr.read().decode(errors="replace").splitlines()]
            last_words = next((line for line in reversed(said) if line), last_words)
    repo.git.clear_cache()
    return _scrub(last_words) if last_words else last_words


def _reason(exc: BaseException) -> str:
    """What git said, without GitPython's wrapping (a command line, or bytes reprs), nor credentials."""
    if isinstance(exc, CommandError):
        said = exc.stderr.removeprefix("\n  stderr: '").removesuffix("'")
        lines = [line.strip() for line in said.splitlines() if line.strip()]
        if lines:
            return _scrub(lines[-1])
    missing = re.search(r"git returned: b?'(\S+) missing'", str(exc))
    if missing:
        return f"git has no object {missing.group(1)}"
    return _scrub(str(exc)) or type(exc).__name__


#: The user information of a URL (`user:token@`), wherever a URL appears in a text.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")


def _scrub(text: str) -> str:
    """`text` without the credentials a URL in it may carry (a token may be the user name alone)."""
    return _USERINFO.sub(r"\1", text)


def _iso_date(timestamp: int) -> str:
    """A committer timestamp as a UTC date, the same clock as the package index's upload times."""
    return _dt.datetime.fromtimestamp(timestamp, tz=_dt.timezone.utc).date().isoformat()
