"""A zip file (a wheel, or an old zip sdist) read by `zipfile` over a small range-backed file object.

Its bytes come from a `read_range(start, length)` callable, so the same code reads
a local file or a remote one with HTTP range requests. `zipfile` does the parsing
(end records, zip64, the central directory, local headers, inflating, CRC-32); it
was measured as fast as the hand-written reader it replaced (#19, bench/RESULTS.md),
and it is the parser the rest of the ecosystem fuzzes. What stays here is policy,
checked before `zipfile` is handed anything it would trust:

- the end record is located in the file's last bytes and must put the central
  directory right before it (no data before the zip, one disk), at most
  MAX_CENTRAL_DIRECTORY bytes and MAX_MEMBERS entries (counted by their
  signatures before `zipfile` builds an object for each);
- member names that are absolute, climb out with `..`, or are folders are never
  handed out; a name listed twice is refused;
- a member that is encrypted, compressed otherwise than stored or deflate, or
  larger than `max_member` is refused without reading it; one that is read must
  inflate to exactly its declared size and CRC-32, within the bytes before the
  central directory;
- the members read from one archive add up to at most `max_total` bytes
  (MAX_ZIP_TOTAL), counted by their declared sizes before any is read (which
  reading then holds them to): past it the archive is an ArchiveError, so that
  many members of 16 MiB each, inflated from a small zip, cannot fill memory.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable, Collection

from .. import MAX_FILE_BYTES
from .members import (
    MAX_MEMBERS,
    ArchiveError,
    Members,
    safe_member_name,
    without_top_folder,
)

#: The largest central directory read.
MAX_CENTRAL_DIRECTORY = 64 * 1024 * 1024
#: The most bytes of members read (inflated) from one zip, in all: the source files of a real wheel are tens of MiB.
MAX_ZIP_TOTAL = 512 * 1024 * 1024
#: How much of a zip's end is read to find its end record (22 bytes, a comment up to 64 KiB, the zip64 locator).
ZIP_TAIL = 22 + 0xFFFF + 20

_END = struct.Struct("<4s4H2IH")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_END = struct.Struct("<4sQ2H2I4Q")
_LOCAL_HEADER = 30
#: Read with a member's header, so that its name and extra field come in the same request.
_HEADER_SLACK = 1024
#: Errors of `zipfile` (and of the decoders it calls) on a malformed archive.
_MALFORMED = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, UnicodeDecodeError, ValueError,
              EOFError, struct.error, RuntimeError)


class _RangeFile(io.RawIOBase):
    """A read-only, seekable file of `size` bytes that come from `read_range`: the file's last bytes (`tail`)
    kept, and one block more at a time.

    A read outside them asks for exactly what is read (zipfile reads a member's
    compressed data in one call); `fetch` asks for a span in one request ahead of the
    reads that will need it. Nothing past `limit` is read.
    """

    def __init__(self, read_range: Callable[[int, int], bytes], size: int, tail: bytes) -> None:
        super().__init__()
        self._read_range, self.size, self.limit = read_range, size, size
        self._tail_start, self._tail = size - len(tail), tail
        self._block_start, self._block = size, b""
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError("a seek before the start of the file")
        self._position = base + offset
        return self._position

    def fetch(self, start: int, length: int) -> bytes:
        """Bytes `start`..`start + length` (cut at `limit`), read in one request unless held already."""
        length = max(0, min(length, self.limit - start))
        if start >= self._tail_start:
            return self._tail[start - self._tail_start:start - self._tail_start + length]
        if not self._holds(start, length):
            self._block, self._block_start = self._get(start, length), start
        return self._block[start - self._block_start:start - self._block_start + length]

    def read(self, size: int | None = -1) -> bytes:
        start = self._position
        end = self.size if size is None or size < 0 else min(self.size, start + size)
        if end > self.limit:
            raise ArchiveError("a member's data runs into the central directory")
        if end <= start:
            return b""
        data = self.fetch(start, end - start)
        self._position = end
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def _holds(self, start: int, length: int) -> bool:
        return self._block_start <= start and start + length <= self._block_start + len(self._block)

    def _get(self, start: int, length: int) -> bytes:
        data = self._read_range(start, length)
        if len(data) != length:
            raise ArchiveError(f"asked for {length} bytes at {start}, got {len(data)}")
        return data


class ZipReader:
    """A zip file of `size` bytes whose bytes come from `read_range(start, length)`.

    `tail`, when the caller already holds the file's last bytes, saves
    reading them again (the end record and often the central directory).
    `strip_top_folder` reads a zip sdist by the paths below its top folder.
    `max_total` (default MAX_ZIP_TOTAL) bounds the bytes of all the members it reads.
    """

    def __init__(self, read_range: Callable[[int, int], bytes], size: int, *, tail: bytes | None = None,
                 strip_top_folder: bool = False, max_member: int = MAX_FILE_BYTES,
                 max_total: int | None = None) -> None:
        self._read_range = read_range
        self.size = size
        self._tail = tail if tail is not None else b""
        self._strip = strip_top_folder
        self._max_member = max_member
        self._max_total = MAX_ZIP_TOTAL if max_total is None else max_total
        self._total = 0  # bytes of members read so far
        self._file: _RangeFile | None = None
        self._zip: zipfile.ZipFile | None = None
        self._by_path: dict[str, zipfile.ZipInfo] | None = None
        self._ambiguous: set[str] = set()

    def paths(self) -> frozenset[str]:
        """Every plain file of the archive, by its (stripped) path."""
        return frozenset(self._members())

    def member(self, path: str) -> zipfile.ZipInfo | None:
        return self._members().get(path)

    def read_members(self, wanted: Collection[str]) -> Members:
        found = Members(self.paths())
        to_read = []
        for path in sorted(set(wanted) & found.names):
            if path in self._ambiguous:
                found.refused[path] = "the archive lists it twice"
                continue
            member = self._members()[path]
            problem = self._refusal(member)
            if problem:
                found.refused[path] = problem
            else:
                to_read.append((path, member))
        self._within_total(sum(member.file_size for _, member in to_read))  # before reading any of them
        for path, member in to_read:
            found.contents[path] = self.read(member)
        return found

    def _within_total(self, more: int) -> None:
        """ArchiveError when `more` bytes of members would take what this archive's reads total past the bound."""
        if self._total + more > self._max_total:
            raise ArchiveError(f"its members to read add up to more than {self._max_total} bytes "
                               f"({self._total + more} in total; at most {self._max_member} each)")

    def read(self, member: zipfile.ZipInfo) -> bytes:
        """The member's content, checked against its declared size and CRC-32 (zipfile checks the CRC)."""
        problem = self._refusal(member)
        if problem:
            raise ArchiveError(f"{member.filename}: {problem}")
        self._within_total(member.file_size)
        self._members()
        assert self._zip is not None and self._file is not None
        self._file.fetch(member.header_offset, _LOCAL_HEADER + len(member.orig_filename.encode("utf-8", "replace"))
                         + _HEADER_SLACK + member.compress_size)
        try:
            with self._zip.open(member) as stream:
                content = stream.read(member.file_size + 1)
        except _MALFORMED as exc:
            raise ArchiveError(f"{member.filename}: {exc}") from None
        if len(content) != member.file_size:
            raise ArchiveError(f"{member.filename}: {len(content)} bytes, the central directory says "
                               f"{member.file_size}")
        self._total += len(content)
        return content

    def _refusal(self, member: zipfile.ZipInfo) -> str | None:
        if member.flag_bits & 0x1:
            return "encrypted"
        if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            return f"compression method {member.compress_type} is not supported (only stored and deflate)"
        if member.file_size > self._max_member:
            return f"{member.file_size} bytes, over the {self._max_member}-byte limit"
        if member.compress_size > self._max_member + 65536:
            return f"{member.compress_size} compressed bytes, over the limit"
        return None

    def _members(self) -> dict[str, zipfile.ZipInfo]:
        if self._by_path is None:
            start, size, count = self._directory_location()
            self._file = _RangeFile(self._read_range, self.size, self._tail)
            if self._file.fetch(start, size).count(b"PK\x01\x02") > MAX_MEMBERS:
                raise ArchiveError(f"the central directory is too large ({size} bytes, over {MAX_MEMBERS} entries)")
            try:
                self._zip = zipfile.ZipFile(self._file)
            except _MALFORMED as exc:
                raise ArchiveError(f"not a readable zip file ({exc})") from None
            self._file.limit = start  # members are read from the bytes before the central directory only
            self._by_path = self._index(self._zip.infolist())
        return self._by_path

    def _index(self, entries: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
        names = [safe_member_name(e.filename) if not e.is_dir() else None for e in entries]
        top = None
        if self._strip:
            tops = {n.partition("/")[0] for n in names if n and "/" in n}
            top = tops.pop() if len(tops) == 1 else None
        by_path: dict[str, zipfile.ZipInfo] = {}
        for entry, name in zip(entries, names):
            if name is not None and top is not None:
                name = without_top_folder(name, top)
            if name is None:
                continue
            if name in by_path:
                self._ambiguous.add(name)
            by_path[name] = entry
        return by_path

    def _bytes(self, start: int, length: int) -> bytes:
        if start < 0 or length < 0 or start + length > self.size:
            raise ArchiveError(f"a record points outside the file (bytes {start}..{start + length} of {self.size})")
        tail_start = self.size - len(self._tail)
        if start >= tail_start:
            return self._tail[start - tail_start:start - tail_start + length]
        data = self._read_range(start, length)
        if len(data) != length:
            raise ArchiveError(f"asked for {length} bytes at {start}, got {len(data)}")
        return data

    def _directory_location(self) -> tuple[int, int, int]:
        """Start, size and entry count of the central directory, from the end record (zip64 too)."""
        if len(self._tail) < min(self.size, ZIP_TAIL):
            self._tail = self._read_range(self.size - min(self.size, ZIP_TAIL), min(self.size, ZIP_TAIL))
        end_at = _find_end_record(self._tail)
        if end_at is None:
            raise ArchiveError("not a zip file (no end of central directory record)")
        _, disk, _, _, count, size, start, _ = _END.unpack_from(self._tail, end_at)
        end_offset = self.size - len(self._tail) + end_at
        directory_end = end_offset
        if end_at >= _ZIP64_LOCATOR.size and self._tail[end_at - 20:end_at - 16] == b"PK\x06\x07":
            _, _, zip64_end_offset, _ = _ZIP64_LOCATOR.unpack_from(self._tail, end_at - 20)
            record = self._bytes(zip64_end_offset, _ZIP64_END.size)
            signature, _, _, _, disk, _, _, count, size, start = _ZIP64_END.unpack(record)
            if signature != b"PK\x06\x06":
                raise ArchiveError("broken zip64 end record")
            directory_end = zip64_end_offset
        if disk != 0:
            raise ArchiveError("multi-disk zip files are not supported")
        if start + size != directory_end:
            raise ArchiveError("the central directory is not where the end record says (data before the zip?)")
        if size > MAX_CENTRAL_DIRECTORY or count > MAX_MEMBERS:
            raise ArchiveError(f"the central directory is too large ({size} bytes, {count} entries)")
        return start, size, count


def _find_end_record(tail: bytes) -> int | None:
    """Where the end of central directory record starts in `tail` (the file's last bytes)."""
    at = len(tail)
    while (at := tail.rfind(b"PK\x05\x06", 0, at)) >= 0:
        if at + _END.size <= len(tail) and at + _END.size + _END.unpack_from(tail, at)[7] == len(tail):
            return at
    return None
