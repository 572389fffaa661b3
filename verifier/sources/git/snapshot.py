"""The files of one commit of a git source, read from its trees and blobs through the source's git processes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from git.objects.fun import tree_entries_from_data

from .. import MAX_FILE_BYTES, Snapshot, SourceUnavailable, check_repository_path
from ..archive import MAX_MEMBERS
from .errors import GIT_ERRORS, reason, restart_cat_file

if TYPE_CHECKING:
    from git import Repo

    from ...model import Release


class SnapshotSource(Protocol):
    """What a snapshot asks of the source that opened it (`GitSource`): never more, never its private state."""

    shown: str  # the source's location as messages name it (without credentials)

    def repository(self) -> Repo:
        """The opened repository, whose git processes the snapshot reads through."""
        ...

    def snapshot_closed(self) -> None:
        """A snapshot is done: its git processes may end (unless the source keeps them for the next one)."""
        ...

    def fetch_blob(self, blob: str) -> bool:
        """Fetch a blob the repository lacks (False: nothing to fetch from); SourceUnavailable when it fails."""
        ...


#: The most paths a commit's file list may hold, and the most entries of one folder: an sdist's member bound.
#: (Trees are shared, so a tiny repository can list millions of paths.)
MAX_PATHS = MAX_MEMBERS
#: The largest tree object (one folder's listing) read.
MAX_TREE_BYTES = MAX_FILE_BYTES


_TREE_MODE = 0o040000
_SYMLINK_MODE = 0o120000
_SUBMODULE_MODE = 0o160000
_FILE_TYPE_BITS = 0o170000


class GitSnapshot(Snapshot):
    """The files of one commit, read from git objects.

    A snapshot reads through its source's git processes; `close()` ends them (the
    next read by another snapshot of the source starts them again).
    """

    def __init__(self, source: SnapshotSource, release: Release, commit: str) -> None:
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
        self._source.snapshot_closed()

    def read(self, path: str) -> bytes | None:
        """The bytes of a file; None when the commit has no file at `path`."""
        blob = self.blob_id(path)
        if blob is None:
            return None
        try:
            return self._read_blob(blob, path)
        except _Unreadable as unreadable:
            try:  # a blob a blobless clone has not fetched yet: fetched from the URL, never by git on its own
                fetched = self._source.fetch_blob(blob)
            except SourceUnavailable as exc:
                raise SourceUnavailable(f"{unreadable}: {exc}") from None
            if not fetched:
                raise SourceUnavailable(f"{unreadable}: {unreadable.git_said}") from None
        try:
            return self._read_blob(blob, path)
        except _Unreadable as unreadable:
            raise SourceUnavailable(f"{unreadable}: {unreadable.git_said}") from None

    def _read_blob(self, blob: str, path: str) -> bytes:
        git = self._repo().git
        with self._reading(path, unreadable=_Unreadable):
            _, kind, size = git.get_object_header(blob)
            if kind != b"blob":
                raise SourceUnavailable(  # kind: bytes, typed str by GitPython
                    f"{self._where(path)}: object {blob} is a {kind.decode()}, not a file")  # type: ignore[attr-defined]
            if size > MAX_FILE_BYTES:
                raise SourceUnavailable(f"{self._where(path)}: {size} bytes, over the {MAX_FILE_BYTES}-byte limit")
            _, _, _, data = git.get_object_data(blob)
        return data

    def digest(self, path: str) -> str | None:
        """An identity of the file's content read from its folder's tree, not from the file: its blob id."""
        if path in self._digests:
            return self._digests[path]
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
        paths: list[str] = []
        with self._reading("the file list"):
            process = repo.git.ls_tree("-r", "-z", "--full-tree", self.commit, as_process=True)
            proc = process.proc
            try:
                listed, rest = 0, b""
                while chunk := proc.stdout.read(1 << 16):
                    records = (rest + chunk).split(b"\0")
                    rest = records.pop()
                    listed += len(records)
                    if listed > MAX_PATHS:
                        raise SourceUnavailable(f"{self._where('the file list')}: more than {MAX_PATHS} paths")
                    for record in records:
                        meta, _, path = record.partition(b"\t")
                        if meta.split(b" ", 1)[0] in (b"100644", b"100755"):
                            paths.append(path.decode("utf-8", "surrogateescape"))
                process.wait()  # raises what git said when it failed
            finally:
                if proc.poll() is None:  # stopped at the bound: git need not list the rest
                    proc.kill()
                    proc.wait()
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
        git = self._repo().git
        with self._reading(path):
            _, kind, size = git.get_object_header(tree)
            if kind != b"tree":
                raise SourceUnavailable(  # kind: bytes, typed str by GitPython
                    f"{self._where(path)}: object {tree} is a {kind.decode()}, not a folder")  # type: ignore[attr-defined]
            if size > MAX_TREE_BYTES:
                raise SourceUnavailable(f"{self._where(path)}: a folder's listing of {size} bytes, over the "
                                        f"{MAX_TREE_BYTES}-byte limit")
            _, _, _, data = git.get_object_data(tree)
            entries = tree_entries_from_data(data)
            if len(entries) > MAX_PATHS:
                raise SourceUnavailable(f"{self._where(path)}: a folder of {len(entries)} entries, over the "
                                        f"{MAX_PATHS}-entry limit")
            return {name: (mode, binsha.hex()) for binsha, mode, name in entries}

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
        return self._source.repository()

    def _where(self, path: str) -> str:
        return f"{path} at {self.release.version} ({self.commit[:12]})"

    @contextmanager
    def _reading(self, path: str, unreadable: type[_Unreadable] | None = None) -> Iterator[None]:
        try:
            yield
        except GIT_ERRORS as exc:
            git_said = restart_cat_file(self._source.repository()) or reason(exc)
            what = (f"{self._where(path)}: git could not read it "
                    "(a corrupt repository, or a blob the remote did not send)")
            if unreadable is not None:
                raise unreadable(what, git_said) from None
            raise SourceUnavailable(f"{what}: {git_said}") from None


class _Unreadable(Exception):
    """A blob git could not read (missing from a blobless clone, or corrupt): `str()` says where, `git_said` why."""

    def __init__(self, where: str, git_said: str) -> None:
        super().__init__(where)
        self.git_said = git_said
