"""The download cache: archives downloaded whole into `archives/` under the cache directory, named by their
sha256, which is checked over the whole file as it streams in (a mismatch deletes the file); a cached
copy is used after checking its size, and its sha256 once per process. A reader may follow a download
as it is written (`Growing`)."""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import threading
from pathlib import Path

from ... import stats
from ...cache import cache_dir
from .. import SourceUnavailable
from .http import HttpClient, Progress
from .index import ArchiveFile

#: The largest archive downloaded.
MAX_ARCHIVE_BYTES = 4 * 1024 ** 3

#: Cached files whose sha256 this process has checked, by (path, size, mtime, inode).
_VERIFIED: set[tuple[str, int, int, int]] = set()


def cache_path(archive: ArchiveFile) -> Path:
    return cache_dir("archives") / f"{archive.sha256}{archive.suffix}"


def is_cached(archive: ArchiveFile) -> bool:
    return cache_path(archive).is_file()


def local_copy(archive: ArchiveFile, http: HttpClient, progress: Progress | None,
                growing: Growing | None = None) -> Path:
    """The archive in the cache, downloaded and checked against its digest when it is not there or not intact.

    With `growing`, a reader follows the download as it is written."""
    path = cache_path(archive)
    if path.is_file() and intact(path, archive):
        return path
    path.unlink(missing_ok=True)
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=".partial-", suffix=archive.suffix)
    os.close(fd)
    try:
        if growing is not None:
            growing.follow(partial)
        stats.count("downloads")
        digest = http.download(archive.url, partial, what=archive.filename, size=archive.size,
                               limit=MAX_ARCHIVE_BYTES, progress=progress,
                               on_write=growing.wrote if growing is not None else None)
        if digest != archive.sha256:
            raise SourceUnavailable(f"{archive.filename}: digest mismatch: the index lists sha256 {archive.sha256}, "
                                    f"the file downloaded has {digest}")
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    _VERIFIED.add(_stamp(path))
    return path


class _Interrupted(OSError):
    """The file being read stopped being the one downloaded (the download started over, or failed)."""


class _Cancelled(BaseException):
    """The reader gave up: the download stops (and removes its partial file)."""


class Growing:
    """A file being downloaded, read as it grows (a BinaryIO for the tar reader).

    `read` waits for bytes the download has not written yet, and ends when the
    download does. A download that starts over (a retry empties the file) or
    fails makes `read` raise _Interrupted, an OSError, which the tar reader
    reports as a corrupt archive; the caller then reads the finished file.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._file: io.FileIO | None = None  # the partial file, once the download has created it
        self._attempt: int | None = None
        self._written = 0
        self._position = 0
        self._ended = False
        self._broken = False
        self._closed = False

    # -- the download's side

    def follow(self, partial: str) -> None:
        with self._changed:
            if self._closed:
                raise _Cancelled()
            self._file = open(partial, "rb", buffering=0)  # noqa: SIM115 - closed by close()
            self._changed.notify_all()

    def wrote(self, attempt: int, written: int) -> None:
        with self._changed:
            if self._closed:
                raise _Cancelled()
            if self._attempt is None:
                self._attempt = attempt
            elif attempt != self._attempt:
                self._broken = True  # the bytes read so far may not be the file's any more
            self._written = written
            self._changed.notify_all()

    def finish(self) -> None:
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    # -- the reader's side

    def read(self, size: int = -1) -> bytes:
        with self._changed:
            while not (self._broken or self._ended or self._closed) and (
                    self._file is None or self._written - self._position < max(size, 1)):
                self._changed.wait()
            if self._broken or self._closed or self._file is None:
                raise _Interrupted("the download started over or stopped")
            available = self._written - self._position
        want = available if size < 0 else min(size, available)
        pieces, got = [], 0
        while got < want:
            piece = self._file.read(want - got)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        self._position += got
        return b"".join(pieces)

    def close(self) -> None:
        with self._changed:
            self._closed = True
            if self._file is not None:
                self._file.close()
            self._changed.notify_all()


def forget_verified() -> None:
    """Check every cached archive's sha256 again when next used, as a new process would (benchmarks)."""
    _VERIFIED.clear()


def intact(path: Path, archive: ArchiveFile) -> bool:
    """Whether a cached copy has the archive's size, and (checked once per process) its sha256."""
    stamp = _stamp(path)
    if archive.size is not None and stamp[1] != archive.size:
        return False
    if stamp not in _VERIFIED:
        if _sha256_of(path) != archive.sha256:
            return False
        _VERIFIED.add(stamp)
    return True


def _stamp(path: Path) -> tuple[str, int, int, int]:
    status = path.stat()
    return str(path), status.st_size, status.st_mtime_ns, status.st_ino


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as raw:
        while chunk := raw.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()
