"""Reading the members of one archive file: an sdist's tar stream (while it downloads), a zip on disk, a
wheel by range requests (its members checked against its RECORD), each behind the member store."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast
from zipfile import ZipInfo

from .. import SourceUnavailable
from ..archive import (
    ZIP_TAIL,
    ArchiveError,
    Members,
    MemberStore,
    ZipReader,
    matches_record,
    parse_record,
    read_tar_members,
    record_path,
)
from .downloads import Growing, cache_path, intact, is_cached, local_copy
from .http import HttpClient, Progress, RangeNotSupported
from .index import ArchiveFile

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

#: A wheel is read by range requests for at most this many members at once; more, and it is downloaded whole.
RANGE_READ_MAX_MEMBERS = 64


class ArchiveReader:
    """Reads members of one archive file; subclasses know its format and where its bytes come from."""

    def __init__(self, archive: ArchiveFile, http: HttpClient, progress: Progress | None) -> None:
        self.archive = archive
        self.http = http
        self.progress = progress

    def read_members(self, wanted: set[str], on_member: Callable[[str, bytes], None] | None = None) -> Members:
        """The wanted members; a reader that can tells `on_member(member, data)` of each as soon as it has it."""
        raise NotImplementedError

    def locate(self, wanted: set[str]) -> tuple[frozenset[str], dict[str, str], dict[str, str]] | None:
        """(names, member -> sha256, refused) when the members can be read later one by one (`stored`)."""
        return None

    def stored(self, sha: str) -> bytes | None:
        return None


class _TarSdist(ArchiveReader):
    def read_members(self, wanted: set[str], on_member: Callable[[str, bytes], None] | None = None) -> Members:
        path = cache_path(self.archive)
        if path.is_file() and intact(path, self.archive):
            return self._read(path, wanted, on_member)
        return self._read_while_downloading(wanted, on_member)

    @staticmethod
    def _read(path: Path, wanted: set[str], on_member: Callable[[str, bytes], None] | None) -> Members:
        with open(path, "rb") as raw:
            if on_member is None:
                return read_tar_members(raw, wanted)
            return read_tar_members(raw, wanted, on_member=on_member)

    def _read_while_downloading(self, wanted: set[str], on_member: Callable[[str, bytes], None] | None) -> Members:
        """One pass over the sdist as it downloads, so that decompressing it hides behind the download.

        What the pass found counts only once the download is whole and has the
        index's sha256; until then `on_member` may have been told of files from an
        archive that turns out wrong (the caller discards them when this raises).
        If the download starts over (a retry) or the pass fails before the digest
        is known, the pass is made again over the downloaded file, which then has
        its digest checked.
        """
        growing = Growing()
        outcome: dict = {}

        def fetch() -> None:
            try:
                outcome["path"] = local_copy(self.archive, self.http, self.progress, growing)
            except BaseException as exc:  # noqa: BLE001 - raised in the reader, below
                outcome["error"] = exc
            finally:
                growing.finish()

        thread = threading.Thread(target=fetch, name=f"download {self.archive.filename}", daemon=True)
        thread.start()
        try:
            try:
                found = (read_tar_members(growing, wanted, on_member=on_member) if on_member is not None
                         else read_tar_members(growing, wanted))
            except ArchiveError:
                found = None  # a download that started over, or an archive that may be corrupt: see below
            thread.join()
        finally:
            growing.close()  # leaving early (an interruption) also stops the download, which cleans up
        if "error" in outcome:
            raise outcome["error"]
        if found is None:
            return self._read(outcome["path"], wanted, on_member)
        return found


class _LocalZip(ArchiveReader):
    """A zip sdist, or a wheel downloaded whole."""

    def read_members(self, wanted: set[str], on_member: Callable[[str, bytes], None] | None = None) -> Members:
        with open(local_copy(self.archive, self.http, self.progress), "rb") as raw:
            size = os.fstat(raw.fileno()).st_size
            return ZipReader(_file_range(raw), size, strip_top_folder=self.archive.kind == "sdist").read_members(wanted)


class _RemoteWheel(ArchiveReader):
    """A wheel read with range requests; downloaded whole when cached already or when the server cannot."""

    def __init__(self, archive: ArchiveFile, http: HttpClient, progress: Progress | None) -> None:
        super().__init__(archive, http, progress)
        self._zip: ZipReader | None = None
        self._record: dict[str, tuple[str, str]] | None = None
        self._whole: _LocalZip | None = _LocalZip(archive, http, progress) if is_cached(archive) else None
        self._received = 0

    def read_members(self, wanted: set[str], on_member: Callable[[str, bytes], None] | None = None) -> Members:
        if self._whole is None and len(wanted) > RANGE_READ_MAX_MEMBERS:
            # One request per member stops paying off: the whole file costs less, and gets its digest checked.
            self._whole = _LocalZip(self.archive, self.http, self.progress)
        if self._whole is None:
            try:
                return self._read_by_ranges(wanted)
            except RangeNotSupported:
                self._whole = _LocalZip(self.archive, self.http, self.progress)
        return self._whole.read_members(wanted)

    def _read_by_ranges(self, wanted: set[str]) -> Members:
        zip_file = self._remote_zip()
        record = self._manifest(zip_file)
        found = zip_file.read_members(wanted)
        for path, content in list(found.contents.items()):
            listed = record.get(path)
            if listed is None or not matches_record(content, listed):
                del found.contents[path]
                found.refused[path] = ("RECORD lists no sha256 for it, so it cannot be verified" if listed is None
                                       else "its sha256 is not the one RECORD lists (corrupt or tampered)")
        return found

    def _remote_zip(self) -> ZipReader:
        if self._zip is None:
            size = self.archive.size
            length = min(size, ZIP_TAIL) if size is not None else ZIP_TAIL
            tail = self._part(size - length if size is not None else None, length)
            # the tail's answer tells the size when the index did not: None only from a server that gives no total
            self._zip = ZipReader(self._part, self.archive.size, tail=tail)  # type: ignore[arg-type]
        return self._zip

    def _manifest(self, zip_file: ZipReader) -> dict[str, tuple[str, str]]:
        if self._record is None:
            path = record_path(zip_file.paths())
            if path is None:
                raise ArchiveError("a wheel without one *.dist-info/RECORD")
            self._record = parse_record(zip_file.read(cast(ZipInfo, zip_file.member(path))))  # one of paths()
        return self._record

    def _part(self, start: int | None, length: int) -> bytes:
        """Bytes of the wheel; the first answer tells its size when the index did not."""
        part = self.http.get_range(self.archive.url, start, length, what=self.archive.filename)
        if self.archive.size is None and part.total is not None:
            self.archive = replace(self.archive, size=part.total)
        if part.total != self.archive.size:
            raise SourceUnavailable(f"{self.archive.filename}: the server's file has {part.total} bytes, "
                                    f"the index says {self.archive.size}")
        self._received += len(part.body)
        if self.progress:
            self.progress(self._received, None, self.archive.filename)
        return part.body


class _Stored(ArchiveReader):
    """Answers from the member store what an earlier pass read; goes to the archive only for the rest."""

    def __init__(self, inner: ArchiveReader) -> None:
        super().__init__(inner.archive, inner.http, inner.progress)
        self.inner = inner
        self.store = MemberStore()

    def locate(self, wanted: set[str]) -> tuple[frozenset[str], dict[str, str], dict[str, str]] | None:
        return self.store.locate(self.archive.sha256, wanted, origin=self.archive.url)

    def stored(self, sha: str) -> bytes | None:
        return self.store.blob(sha)

    def read_members(self, wanted: set[str], on_member: Callable[[str, bytes], None] | None = None) -> Members:
        stored = self.store.answer(self.archive.sha256, wanted, origin=self.archive.url)
        if stored is not None:
            return stored
        found = self.inner.read_members(wanted, on_member) if on_member else self.inner.read_members(wanted)
        # Members of a wheel read by ranges were checked against its RECORD, never the archive's digest: kept for
        # this file's URL only, so that a mirror claiming another wheel's digest cannot answer for that wheel.
        by_ranges = isinstance(self.inner, _RemoteWheel) and self.inner._whole is None
        self.store.keep(self.archive.sha256, found, origin=self.archive.url if by_ranges else None)
        return found


def reader_for(archive: ArchiveFile, http: HttpClient, progress: Progress | None,
               member_store: bool = True) -> ArchiveReader:
    """The reader of `archive`, behind the member store unless `member_store` is false (benchmarks)."""
    if archive.kind == "wheel":
        reader: ArchiveReader = _RemoteWheel(archive, http, progress)
    elif archive.suffix == ".zip":
        reader = _LocalZip(archive, http, progress)
    else:
        reader = _TarSdist(archive, http, progress)
    return _Stored(reader) if member_store else reader


def _file_range(raw: BinaryIO):
    def read_range(start: int, length: int) -> bytes:
        raw.seek(start)
        return raw.read(length)
    return read_range
