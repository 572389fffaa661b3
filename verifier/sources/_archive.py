"""Members of release archives, read in memory and never extracted by their own names.

Two readers, one result shape (`Members`):

- `read_tar_members`: a gzipped tar (an sdist) in one streaming pass, keeping
  only the wanted regular files.
- `ZipReader`: a zip file (a wheel, or an old zip sdist) through its central
  directory; its bytes come from a `read_range(start, length)` callable, so the
  same code reads a local file or a remote one with HTTP range requests.

What an archive says is not trusted: member names that are absolute, climb out
with `..` or are not plain files (links, devices, folders) are never returned;
a member over MAX_FILE_BYTES is refused; decompression is capped (per member
and, for tars, in total), and a zip member must decompress to exactly its
declared size and CRC-32. Problems with the archive as a whole raise
ArchiveError; problems with one member are kept in `Members.refused`.
"""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import io
import re
import struct
import tarfile
import zlib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import BinaryIO

from . import MAX_FILE_BYTES

#: The most a tar may decompress to in one pass (the vLLM sdist is a few hundred MiB).
MAX_TAR_BYTES = 2 * 1024 ** 3
#: The most members an archive may list.
MAX_MEMBERS = 500_000
#: The largest central directory read.
MAX_CENTRAL_DIRECTORY = 64 * 1024 * 1024
#: How much of a zip's end is read to find its end record (22 bytes, a comment up to 64 KiB, the zip64 locator).
ZIP_TAIL = 22 + 0xFFFF + 20

_DRAIN_CHUNK = 1024 * 1024


class ArchiveError(Exception):
    """The archive as a whole cannot be read; the message says why."""


@dataclass
class Members:
    """What one pass over an archive found."""

    names: frozenset[str]  # every plain file the archive holds, by its (stripped) path
    contents: dict[str, bytes] = field(default_factory=dict)  # the wanted ones
    refused: dict[str, str] = field(default_factory=dict)  # wanted ones that cannot be handed out, and why


def safe_member_name(name: str) -> str | None:
    """`name` as a plain relative path ('./' and trailing '/' dropped), or None when it is absolute,
    climbs out with '..', or holds backslashes, NULs or a drive letter."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name or re.match(r"[A-Za-z]:", name):
        return None
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def without_top_folder(name: str, top: str) -> str | None:
    """`name` inside the archive's single top folder `top` (an sdist's `vllm-0.30.0/`), or None outside it."""
    first, _, rest = name.partition("/")
    return rest if first == top and rest else None


# -- tar ---------------------------------------------------------------------------------------------

def read_tar_members(raw: BinaryIO, wanted: Collection[str], *, max_total: int = MAX_TAR_BYTES,
                     max_member: int = MAX_FILE_BYTES) -> Members:
    """The wanted members of a gzipped sdist, by their paths below its single top folder, in one pass.

    Nothing is returned unless the whole gzip stream decompresses and passes its CRC-32 check.
    """
    stream = _CappedReader(gzip.GzipFile(fileobj=raw, mode="rb"), max_total)
    names: set[str] = set()
    found = Members(frozenset())
    top: str | None = None
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                name = safe_member_name(member.name)
                if name is None:
                    continue
                if top is None:
                    if "/" not in name and not member.isdir():
                        continue  # an sdist holds everything below one folder
                    top = name.partition("/")[0]
                path = without_top_folder(name, top)
                if path is None or not member.isreg() or member.issparse():
                    continue
                names.add(path)
                if len(names) > MAX_MEMBERS:
                    raise ArchiveError(f"more than {MAX_MEMBERS} members")
                if path in wanted:
                    _keep_tar_member(tar, member, path, found, max_member)
            while stream.read(_DRAIN_CHUNK):
                pass  # to the end of the gzip stream, so that its CRC-32 vouches for what was read
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise ArchiveError(f"corrupt archive: {exc}") from None
    found.names = frozenset(names)
    return found


def _keep_tar_member(tar: tarfile.TarFile, member: tarfile.TarInfo, path: str, found: Members,
                     max_member: int) -> None:
    if member.size > max_member:
        found.refused[path] = f"{member.size} bytes, over the {max_member}-byte limit"
        return
    data = tar.extractfile(member).read(member.size)
    if len(data) != member.size:
        raise ArchiveError(f"{path} ends after {len(data)} of its {member.size} bytes")
    found.contents[path] = data
    found.refused.pop(path, None)  # a later member of the same name replaces an earlier one


class _CappedReader:
    """A read-only stream that raises ArchiveError once more than `limit` bytes have been read."""

    def __init__(self, inner: BinaryIO, limit: int) -> None:
        self.inner = inner
        self.limit = limit
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.inner.read(size)
        self.count += len(data)
        if self.count > self.limit:
            raise ArchiveError(f"decompresses to more than {self.limit} bytes (a decompression bomb?)")
        return data


# -- zip ---------------------------------------------------------------------------------------------

_END = struct.Struct("<4s4H2IH")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_END = struct.Struct("<4sQ2H2I4Q")
_CENTRAL = struct.Struct("<4s6H3I5H2I")
_LOCAL = struct.Struct("<4s5H3I2H")
_STORED, _DEFLATED = 0, 8


@dataclass(frozen=True)
class ZipMember:
    """One entry of a zip's central directory."""

    name: str
    raw_name: bytes
    flags: int
    method: int
    crc32: int
    compressed_size: int
    size: int
    header_offset: int

    @property
    def is_dir(self) -> bool:
        return self.name.endswith("/")


class ZipReader:
    """A zip file of `size` bytes whose bytes come from `read_range(start, length)`.

    `tail`, when the caller already holds the file's last bytes, saves
    reading them again (the end record and often the central directory).
    `strip_top_folder` reads a zip sdist by the paths below its top folder.
    """

    def __init__(self, read_range: Callable[[int, int], bytes], size: int, *, tail: bytes | None = None,
                 strip_top_folder: bool = False, max_member: int = MAX_FILE_BYTES) -> None:
        self._read_range = read_range
        self.size = size
        self._tail = tail if tail is not None else b""
        self._strip = strip_top_folder
        self._max_member = max_member
        self._directory_start = size
        self._by_path: dict[str, ZipMember] | None = None
        self._ambiguous: set[str] = set()

    def paths(self) -> frozenset[str]:
        """Every plain file of the archive, by its (stripped) path."""
        return frozenset(self._members())

    def member(self, path: str) -> ZipMember | None:
        return self._members().get(path)

    def read_members(self, wanted: Collection[str]) -> Members:
        found = Members(self.paths())
        for path in sorted(set(wanted) & found.names):
            if path in self._ambiguous:
                found.refused[path] = "the archive lists it twice"
                continue
            member = self._members()[path]
            problem = self._refusal(member)
            if problem:
                found.refused[path] = problem
            else:
                found.contents[path] = self.read(member)
        return found

    def read(self, member: ZipMember) -> bytes:
        """The member's content, checked against its declared size and CRC-32."""
        problem = self._refusal(member)
        if problem:
            raise ArchiveError(f"{member.name}: {problem}")
        compressed = self._member_data(member)
        content = _inflate(compressed, member)
        if zlib.crc32(content) != member.crc32:
            raise ArchiveError(f"{member.name}: CRC-32 mismatch (the data is corrupt)")
        return content

    def _refusal(self, member: ZipMember) -> str | None:
        if member.flags & 0x1:
            return "encrypted"
        if member.method not in (_STORED, _DEFLATED):
            return f"compression method {member.method} is not supported (only stored and deflate)"
        if member.size > self._max_member:
            return f"{member.size} bytes, over the {self._max_member}-byte limit"
        if member.compressed_size > self._max_member + 65536:
            return f"{member.compressed_size} compressed bytes, over the limit"
        return None

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

    def _members(self) -> dict[str, ZipMember]:
        if self._by_path is None:
            start, size, count = self._directory_location()
            self._directory_start = start
            entries = _parse_central_directory(self._bytes(start, size), count)
            self._by_path = self._index(entries)
        return self._by_path

    def _index(self, entries: list[ZipMember]) -> dict[str, ZipMember]:
        names = [safe_member_name(e.name) if not e.is_dir else None for e in entries]
        top = None
        if self._strip:
            tops = {n.partition("/")[0] for n in names if n and "/" in n}
            top = tops.pop() if len(tops) == 1 else None
        by_path: dict[str, ZipMember] = {}
        for entry, name in zip(entries, names):
            if name is not None and top is not None:
                name = without_top_folder(name, top)
            if name is None:
                continue
            if name in by_path:
                self._ambiguous.add(name)
            by_path[name] = entry
        return by_path

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

    def _member_data(self, member: ZipMember) -> bytes:
        """The member's compressed bytes, after its local header (which must name the same file)."""
        limit = self._directory_start
        guess = min(_LOCAL.size + len(member.raw_name) + 1024 + member.compressed_size, limit - member.header_offset)
        block = self._bytes(member.header_offset, guess)
        if len(block) < _LOCAL.size or block[:4] != b"PK\x03\x04":
            raise ArchiveError(f"{member.name}: no local header where the central directory says")
        fields = _LOCAL.unpack_from(block)
        name_length, extra_length = fields[9], fields[10]
        if block[_LOCAL.size:_LOCAL.size + name_length] != member.raw_name:
            raise ArchiveError(f"{member.name}: the local header names another file")
        data_start = _LOCAL.size + name_length + extra_length
        data_end = data_start + member.compressed_size
        if member.header_offset + data_end > limit:
            raise ArchiveError(f"{member.name}: its data runs into the central directory")
        if data_end > len(block):
            block += self._bytes(member.header_offset + len(block), data_end - len(block))
        return block[data_start:data_end]


def _find_end_record(tail: bytes) -> int | None:
    """Where the end of central directory record starts in `tail` (the file's last bytes)."""
    at = len(tail)
    while (at := tail.rfind(b"PK\x05\x06", 0, at)) >= 0:
        if at + _END.size <= len(tail) and at + _END.size + _END.unpack_from(tail, at)[7] == len(tail):
            return at
    return None


def _parse_central_directory(data: bytes, count: int) -> list[ZipMember]:
    entries, at = [], 0
    for _ in range(count):
        if at + _CENTRAL.size > len(data) or data[at:at + 4] != b"PK\x01\x02":
            raise ArchiveError("corrupt central directory")
        (_, _, _, flags, method, _, _, crc, compressed, size,
         name_length, extra_length, comment_length, _, _, _, offset) = _CENTRAL.unpack_from(data, at)
        if at + _CENTRAL.size + name_length + extra_length + comment_length > len(data):
            raise ArchiveError("corrupt central directory")
        raw_name = data[at + _CENTRAL.size:at + _CENTRAL.size + name_length]
        extra = data[at + _CENTRAL.size + name_length:at + _CENTRAL.size + name_length + extra_length]
        size, compressed, offset = _zip64_sizes(extra, size, compressed, offset)
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        entries.append(ZipMember(name, raw_name, flags, method, crc, compressed, size, offset))
        at += _CENTRAL.size + name_length + extra_length + comment_length
    return entries


def _zip64_sizes(extra: bytes, size: int, compressed: int, offset: int) -> tuple[int, int, int]:
    """The real sizes and offset, from the zip64 extra field for those that overflowed 32 bits."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, at)
        if kind == 0x0001:
            values = iter(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            try:
                size = next(values) if size == 0xFFFFFFFF else size
                compressed = next(values) if compressed == 0xFFFFFFFF else compressed
                offset = next(values) if offset == 0xFFFFFFFF else offset
            except StopIteration:
                raise ArchiveError("corrupt zip64 extra field") from None
            break
        at += 4 + length
    return size, compressed, offset


def _inflate(compressed: bytes, member: ZipMember) -> bytes:
    if member.method == _STORED:
        content = compressed
    else:
        inflater = zlib.decompressobj(-15)
        try:
            content = inflater.decompress(compressed, member.size + 1)
        except zlib.error as exc:
            raise ArchiveError(f"{member.name}: corrupt deflate data ({exc})") from None
        if len(content) > member.size or inflater.unconsumed_tail:
            raise ArchiveError(f"{member.name}: decompresses to more than its declared {member.size} bytes")
        if not inflater.eof:
            raise ArchiveError(f"{member.name}: its deflate data ends early")
    if len(content) != member.size:
        raise ArchiveError(f"{member.name}: {len(content)} bytes, the central directory says {member.size}")
    return content


# -- wheel RECORD ------------------------------------------------------------------------------------

def record_path(paths: Collection[str]) -> str | None:
    """The wheel's `*.dist-info/RECORD`, or None when there is not exactly one."""
    found = [p for p in paths if re.fullmatch(r"[^/]+\.dist-info/RECORD", p)]
    return found[0] if len(found) == 1 else None


def parse_record(data: bytes) -> dict[str, tuple[str, str]]:
    """The digests a wheel's RECORD lists: path -> (algorithm, urlsafe-base64 digest without padding)."""
    digests = {}
    try:
        rows = csv.reader(io.StringIO(data.decode("utf-8")))
        for row in rows:
            if len(row) >= 2 and "=" in row[1]:
                algorithm, _, value = row[1].partition("=")
                digests[row[0]] = (algorithm, value)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ArchiveError(f"unreadable RECORD: {exc}") from None
    return digests


def matches_record(content: bytes, listed: tuple[str, str]) -> bool:
    """Whether `content` has the digest RECORD lists; only sha256 (or stronger) counts."""
    algorithm, value = listed
    if algorithm not in ("sha256", "sha384", "sha512"):
        return False
    digest = base64.urlsafe_b64encode(hashlib.new(algorithm, content).digest()).rstrip(b"=").decode("ascii")
    return digest == value
