"""The members of a gzipped tar (an sdist), read in memory in one streaming pass, never extracted.

`read_tar_members` keeps only the wanted regular files. It is the verifier's own rather
than `tarfile`'s: measured faster on the engines' sdists (it inflates ahead in a thread,
with ISA-L where it has a wheel, and skips unwanted members without copying them), and
stricter (a bad header checksum, a malformed pax record or data after the end-of-archive
marker make the whole archive corrupt, never a partial listing). That is why this module
is over ~400 lines: it is one streaming pass, whose inflating thread, forward-only stream
and header parser share one stream and one rule for corruption, kept as it was measured.

What both archive readers share (`Members`, `ArchiveError`, the rules for member names)
is in `members.py`. Part of `verifier.sources.archive`, which re-exports its public names.
"""

from __future__ import annotations

import queue
import struct
import threading
import types
import zlib
from collections.abc import Callable, Collection, Iterator
from typing import Protocol

from ... import stats
from .. import MAX_FILE_BYTES
from .members import (
    MAX_MEMBERS,
    ArchiveError,
    Members,
    safe_member_name,
    without_top_folder,
)

# Either module, typed as a module: isal's stub types its `error` as an instance, not the exception class it is.
_gzip_inflate: types.ModuleType
try:  # Intel's ISA-L: the same gzip checks (CRC-32, length), about 2.5x faster than zlib at inflating an sdist
    from isal import isal_zlib as _gzip_inflate
except ImportError:  # a platform without its wheel: zlib, as fast as before
    _gzip_inflate = zlib

class Readable(Protocol):
    """What the tar reader reads from: a binary file, or a download as it grows (`sources.pypi.downloads.Growing`)."""

    def read(self, size: int = -1, /) -> bytes: ...


#: The most a tar may decompress to in one pass (the vLLM sdist is a few hundred MiB).
MAX_TAR_BYTES = 2 * 1024 ** 3


# -- tar ---------------------------------------------------------------------------------------------
#
# A minimal streaming tar reader, as tarfile's header parsing (a pax header before every member of a
# modern sdist) cost more than the gzip decompression itself. It reads what tarfile reads: ustar names
# with their prefix, GNU long names, pax `path` and `size` (the first extended header before a member
# wins), octal and base-256 numbers, unsigned or signed checksums, no data after a link, device,
# folder or fifo header, GNU sparse files (old and pax forms) skipped. But strictly: where tarfile
# silently ends the archive at a header with a bad checksum, a truncated header or a malformed pax
# record, or ignores what follows its end-of-archive block, this raises ArchiveError; so it does for
# an extended header with no member after it, and a global pax header that sets a path or a size.

_BLOCK = 512
_ZERO_BLOCK = bytes(_BLOCK)
#: Compressed bytes read at a time, and the most decompressed bytes held in one piece.
_READ_CHUNK = 1024 * 1024
_PIECE = 1024 * 1024
#: The largest GNU long name or pax header read (metadata: a few hundred bytes in practice).
_MAX_EXTENSION = 8 * 1024 * 1024

# Type flags, the byte at offset 156 of a header.
_AREGTYPE, _DIRTYPE = 0, ord("5")
_PLAIN_FILE = frozenset(b"\x0007")  # regular ("0", NUL) and contiguous ("7") files
_NO_DATA = frozenset(b"123456")  # hard and symbolic links, devices, folders, fifos: tarfile skips no data after them
_LONGNAME, _LONGLINK, _GNU_SPARSE, _GLOBAL = ord("L"), ord("K"), ord("S"), ord("g")
_PAX = frozenset(b"xX")  # a pax header for the next member ("X": Solaris)
_EXTENSIONS = _PAX | {_LONGNAME, _LONGLINK, _GLOBAL}  # headers that say something of the next one


def read_tar_members(raw: Readable, wanted: Collection[str], *, max_total: int = MAX_TAR_BYTES,
                     max_member: int = MAX_FILE_BYTES,
                     on_member: Callable[[str, bytes], None] | None = None) -> Members:
    """The wanted members of a gzipped sdist, by their paths below its single top folder, in one pass.

    Nothing is returned unless the whole gzip stream decompresses and passes its CRC-32 check.
    `on_member(path, data)` is told of each wanted member as soon as it is read, before that
    check (and before a later member of the same name could replace it): a caller that acts on
    it early must wait for the result, and discard what it did if this raises.
    """
    stats.count("archive_passes")
    pieces = _ahead(_gunzip(raw, max_total))
    stream = _TarStream(pieces)
    names: set[str] = set()
    found = Members(frozenset())
    top: str | None = None
    try:
        for member_name, is_dir, is_plain_file, size in _tar_members(stream):
            name = safe_member_name(member_name)
            if name is None:
                continue
            if top is None:
                if "/" not in name and not is_dir:
                    continue  # an sdist holds everything below one folder
                top = name.partition("/")[0]
            path = without_top_folder(name, top)
            if path is None or not is_plain_file:
                continue
            names.add(path)
            if len(names) > MAX_MEMBERS:
                raise ArchiveError(f"more than {MAX_MEMBERS} members")
            if path in wanted:
                if size > max_member:
                    found.refused[path] = f"{size} bytes, over the {max_member}-byte limit"
                    continue
                data = stream.read(size)
                if len(data) != size:
                    raise ArchiveError(f"{path} ends after {len(data)} of its {size} bytes")
                found.contents[path] = data
                found.refused.pop(path, None)  # a later member of the same name replaces an earlier one
                if on_member is not None:
                    on_member(path, data)
        stream.read_zeros_to_end()  # to the end of the gzip stream, so that its CRC-32 vouches for what was read
    # a safety net: the reader raises ArchiveError itself
    except (ValueError, OSError, EOFError, zlib.error, _gzip_inflate.error) as exc:
        raise ArchiveError(f"corrupt archive: {exc}") from None
    finally:
        pieces.close()
    found.names = frozenset(names)
    return found


#: Decompressed pieces a decompressing thread may be ahead of the reader (memory: this many MiB).
_AHEAD = 8


class _ahead:
    """The items of `iterator`, produced by a thread of their own up to _AHEAD items ahead.

    zlib and ISA-L release the GIL while they inflate, so decompression runs on another core
    while this thread parses tar headers. An exception in the producer is raised
    here, where its item would have been; `close()` stops the producer.
    """

    _END = object()

    def __init__(self, iterator: Iterator[bytes]) -> None:
        self._queue: queue.Queue = queue.Queue(_AHEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(iterator,), name="gunzip", daemon=True)
        self._thread.start()

    def _produce(self, iterator: Iterator[bytes]) -> None:
        try:
            for item in iterator:
                if not self._put(item):
                    return
            self._put(self._END)
        except BaseException as exc:  # handed to the consumer, which raises it
            self._put(exc)

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> _ahead:
        return self

    def __next__(self) -> bytes:
        item = self._queue.get()
        if item is self._END:
            self._queue.put(item)  # still the end for a later call
            raise StopIteration
        if isinstance(item, BaseException):
            self._queue.put(self._END)
            raise item
        return item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _corrupt(why: str) -> ArchiveError:
    return ArchiveError(f"corrupt archive: {why}")


def _gunzip(raw: Readable, max_total: int) -> Iterator[bytes]:
    """The decompressed bytes of a gzip stream, in pieces of at most _PIECE bytes.

    Like gzip.GzipFile: concatenated gzip members make one stream, and zero bytes may pad the end of a
    member; zlib checks each member's CRC-32 and size. Raises ArchiveError on anything else: a stream
    that ends early, bytes after it that are not another member, more than `max_total` bytes out.
    """
    total = 0
    members = 0
    inflater = None  # None between two members
    data = b""
    at_end = False
    while True:
        if not data and not at_end:
            try:
                data = raw.read(_READ_CHUNK)
            except OSError as exc:
                raise _corrupt(str(exc)) from None
            at_end = not data
        if inflater is None:
            if members:
                data = data.lstrip(b"\0")
            if not data:
                if at_end:
                    return
                continue
            inflater = _gzip_inflate.decompressobj(16 + zlib.MAX_WBITS)
        try:
            piece = inflater.decompress(data, _PIECE)
        except _gzip_inflate.error as exc:
            raise _corrupt(f"gzip: {exc}") from None
        if inflater.eof:
            data = inflater.unused_data
            inflater = None
            members += 1
        else:
            data = inflater.unconsumed_tail
            if not piece and not data and at_end:
                raise _corrupt("the gzip stream ends before its end marker (truncated?)")
        if piece:
            total += len(piece)
            if total > max_total:
                raise ArchiveError(f"decompresses to more than {max_total} bytes (a decompression bomb?)")
            yield piece


class _TarStream:
    """The decompressed tar, read forward from pieces of it; holds one piece (and what is asked for) at a time."""

    __slots__ = ("_buf", "_pieces", "_pos", "_start")

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self._pieces = pieces
        self._buf = b""
        self._pos = 0
        self._start = 0  # the offset of _buf in the stream

    def tell(self) -> int:
        return self._start + self._pos

    def read(self, size: int) -> bytes:
        """The next `size` bytes; fewer at the end of the stream."""
        pos = self._pos
        end = pos + size
        if end <= len(self._buf):
            self._pos = end
            return self._buf[pos:end]
        parts = [self._buf[pos:]]
        have = len(parts[0])
        while (piece := self._next_piece()) is not None:
            if have + len(piece) >= size:
                parts.append(piece[:size - have])
                self._pos = size - have
                return b"".join(parts)
            parts.append(piece)
            have += len(piece)
        return b"".join(parts)

    def skip(self, size: int) -> int:
        """Moves `size` bytes forward (fewer at the end of the stream); how many."""
        end = self._pos + size
        if end <= len(self._buf):
            self._pos = end
            return size
        have = len(self._buf) - self._pos
        while (piece := self._next_piece()) is not None:
            if have + len(piece) >= size:
                self._pos = size - have
                return size
            have += len(piece)
        return have

    def read_zeros_to_end(self) -> None:
        """The rest of the stream, which must be zero bytes (the end-of-archive blocks and record padding)."""
        rest = self._buf[self._pos:]
        while True:
            if rest.count(0) != len(rest):
                raise _corrupt("data after the end-of-archive marker")
            if (piece := self._next_piece()) is None:
                return
            rest = piece

    def _next_piece(self) -> bytes | None:
        """Moves to the next piece (past the whole current one); None, at an empty buffer, at the end."""
        self._start += len(self._buf)
        piece = next(self._pieces, None)
        self._buf = piece if piece is not None else b""
        self._pos = 0
        return piece


def _tar_members(stream: _TarStream) -> Iterator[tuple[str, bool, bool, int]]:
    """(name, is a folder, is a plain file, size) of each member, in order. A caller may read the
    member's data from `stream` before asking for the next one; what it leaves is skipped."""
    empty = True
    while True:
        name = size = None  # from a GNU long name or a pax header; the first of them wins, as in tarfile
        sparse = extended = False
        while True:
            block = stream.read(_BLOCK)
            if len(block) < _BLOCK:
                if extended:
                    raise _corrupt("the archive ends after an extended header")
                if block:
                    raise _corrupt("truncated header")
                if empty:
                    raise _corrupt("empty file")
                return  # the end of the stream, without end-of-archive blocks: tarfile takes it too
            empty = False
            if not _checksum_matches(block):
                if block != _ZERO_BLOCK:
                    raise _corrupt("bad checksum")
                if extended:
                    raise _corrupt("an extended header before the end of the archive")
                return
            kind = block[156]
            digits = block[124:135]
            if block[135] == 0 and digits.isdigit():  # the usual size field: 11 octal digits and a NUL
                stored = _octal(digits)
            else:
                stored = _number(block[124:136])
                if stored < 0:
                    raise _corrupt("negative size")
            if kind in _EXTENSIONS:
                extended = True
                if stored > _MAX_EXTENSION:
                    raise _corrupt(f"an extended header of {stored} bytes")
                padded = (stored + _BLOCK - 1) & -_BLOCK
                data = stream.read(padded)
                if len(data) != padded:
                    raise _corrupt("unexpected end of data")
                if kind in _PAX:
                    pax_name, pax_size, pax_sparse = _pax_fields(data, stored)
                    if name is None and pax_name is not None:
                        name = pax_name.decode("utf-8", "surrogateescape")
                    if size is None and pax_size is not None:
                        size = pax_size
                    sparse = sparse or pax_sparse
                elif kind == _LONGNAME:
                    if name is None:
                        name = _nts(data[:stored])
                elif kind == _GLOBAL and _pax_fields(data, stored) != (None, None, False):
                    raise _corrupt("a global pax header sets a path, a size or a sparse file")
                continue  # _LONGLINK: a link's target, of no use here
            if kind == _GNU_SPARSE:
                sparse = True
                more = block[482]
                while more:  # extension blocks of the sparse map
                    extra = stream.read(_BLOCK)
                    if len(extra) != _BLOCK:
                        raise _corrupt("unexpected end of data")
                    more = extra[504]
            break
        header_name = _nts(block[:100])
        if kind == _AREGTYPE and header_name[-1:] == "/":
            kind = _DIRTYPE  # an old-style folder
        if name is None:
            name = header_name
            if block[345] and kind != _GNU_SPARSE:  # ustar: a long name split into prefix "/" name
                name = _nts(block[345:500]) + "/" + name
        if size is None:
            size = stored
        end = stream.tell() + (0 if kind in _NO_DATA else (size + _BLOCK - 1) & -_BLOCK)
        yield name, kind == _DIRTYPE, kind in _PLAIN_FILE and not sparse, size
        left = end - stream.tell()
        if left > 0 and stream.skip(left) != left:
            raise _corrupt("unexpected end of data")


def _nts(field: bytes) -> str:
    """A NUL-terminated name field, as tarfile decodes it (UTF-8, undecodable bytes kept as surrogates)."""
    return field.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _checksum_matches(block: bytes) -> bool:
    """Whether the header's checksum field holds the sum of its bytes (the field itself counted as
    spaces), unsigned or, as some old tars wrote it, signed."""
    field = block[148:156]
    # The sum of the bytes, from their Adler-32: its low half is 1 + that sum modulo 65521, exact for
    # ASCII bytes (512 * 127 < 65521) and for each half of any block (256 * 255 < 65521).
    if block.isascii():
        total = (zlib.adler32(block) & 0xFFFF) - 1
    else:
        total = (zlib.adler32(block[:256]) & 0xFFFF) + (zlib.adler32(block[256:]) & 0xFFFF) - 2
    unsigned = total - ((zlib.adler32(field) & 0xFFFF) - 1) + 8 * 32
    if field == b"%06o\0 " % unsigned:  # as tarfile and GNU tar write it
        return True
    try:
        expected = _number(field)
    except ArchiveError:
        return False
    return expected == unsigned or expected == 8 * 32 + sum(struct.unpack_from("148b8x356b", block))


def _octal(digits: bytes) -> int:
    try:
        return int(digits, 8)
    except ValueError:
        raise _corrupt("invalid number in a header") from None


def _number(field: bytes) -> int:
    """A numeric header field: base-256 (a first byte of 0x80, or 0xFF for a negative number) or
    octal digits, maybe between spaces, ended by a NUL or the field's end."""
    if field[0] in (0x80, 0xFF):
        value = int.from_bytes(field[1:], "big")
        return value - 256 ** (len(field) - 1) if field[0] == 0xFF else value
    end = field.find(0)
    if end >= 0:
        field = field[:end]
    field = field.strip()
    if not field:
        return 0
    if not field.isdigit():
        raise _corrupt("invalid number in a header")
    return _octal(field)


def _pax_fields(data: bytes, length: int) -> tuple[bytes | None, int | None, bool]:
    """From the records of a pax header (its first `length` bytes of `data`), each
    "<length> <keyword>=<value>\\n" (the length counts it all): the path (or GNU.sparse.name), the size,
    and whether they describe a GNU sparse file."""
    path = size = None
    sparse = False
    pos = 0
    while pos < length and data[pos]:  # NUL padding may follow the records
        space = data.find(b" ", pos, pos + 21)
        digits = data[pos:space]
        if space < 0 or not digits.isdigit():
            raise _corrupt("invalid pax header")
        end = pos + int(digits)
        if end - pos < 5 or end > length or data[end - 1] != 0x0A:
            raise _corrupt("invalid pax header")
        keyword, equals, value = data[space + 1:end - 1].partition(b"=")
        if not keyword or not equals:
            raise _corrupt("invalid pax header")
        if keyword == b"path":
            path = value
        elif keyword == b"size":
            if not value.isdigit():
                raise _corrupt("invalid size in a pax header")
            size = int(value)
        elif keyword.startswith(b"GNU.sparse."):
            sparse = True  # one of GNU tar's pax forms of a sparse file: its records, its real name
            if keyword == b"GNU.sparse.name":
                path = value
        pos = end
    return path, size, sparse
