"""The streaming tar reader of `read_tar_members`, against tarfile.

`tarfile_oracle` is the reader as it was, on Python's tarfile: on every archive tarfile writes (ustar,
GNU and pax formats, long and non-ASCII names, links, folders, devices, duplicates, members around
the 512-byte block size and over several of the reader's pieces, gzip streams of several members)
both must find the same names, contents and refusals. Where tarfile is lenient (a corrupt header ends
its archive silently; it ignores what follows the end-of-archive block), the new reader refuses the
archive; every corruption raises ArchiveError and nothing else.
"""

from __future__ import annotations

import gzip
import io
import random
import struct
import subprocess
import sys
import tarfile
import zlib
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from verifier.sources import MAX_FILE_BYTES
from verifier.sources.archive import (
    MAX_MEMBERS,
    MAX_TAR_BYTES,
    ArchiveError,
    Members,
    read_tar_members,
    safe_member_name,
    without_top_folder,
)
from verifier.sources.archive import members as _members
from verifier.sources.archive import tar as _archive

TOP = "pkg-1.0"
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

try:
    from isal import isal_zlib
except ImportError:  # the platform has no isal wheel: the reader inflates with zlib
    isal_zlib = None


@pytest.fixture(autouse=True, params=["isal", "zlib"])
def inflater(request, monkeypatch):
    """Every test with each gzip inflater the reader can have: ISA-L where installed, zlib without it."""
    if request.param == "isal":
        if isal_zlib is None:
            pytest.skip("isal is not installed")
        monkeypatch.setattr(_archive, "_gzip_inflate", isal_zlib)
    else:
        monkeypatch.setattr(_archive, "_gzip_inflate", zlib)
    return request.param


def test_the_reader_inflates_with_isal_where_it_is_installed():
    # The module's own choice, not the fixture's: in a fresh interpreter.
    chosen = subprocess.run([sys.executable, "-c", "from verifier.sources.archive import tar as _archive; "
                             "print(_archive._gzip_inflate.__name__)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert chosen == (isal_zlib or zlib).__name__


# -- the oracle: read_tar_members as it was, on tarfile -------------------------------------------------

def tarfile_oracle(raw, wanted, *, max_total=MAX_TAR_BYTES, max_member=MAX_FILE_BYTES) -> Members:
    stream = _CappedReader(gzip.GzipFile(fileobj=raw, mode="rb"), max_total)
    names: set[str] = set()
    found = Members(frozenset())
    top = None
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                name = safe_member_name(member.name)
                if name is None:
                    continue
                if top is None:
                    if "/" not in name and not member.isdir():
                        continue
                    top = name.partition("/")[0]
                path = without_top_folder(name, top)
                if path is None or not member.isreg() or member.issparse():
                    continue
                names.add(path)
                if len(names) > MAX_MEMBERS:
                    raise ArchiveError(f"more than {MAX_MEMBERS} members")
                if path in wanted:
                    if member.size > max_member:
                        found.refused[path] = f"{member.size} bytes, over the {max_member}-byte limit"
                        continue
                    data = tar.extractfile(member).read(member.size)
                    if len(data) != member.size:
                        raise ArchiveError(f"{path} ends after {len(data)} of its {member.size} bytes")
                    found.contents[path] = data
                    found.refused.pop(path, None)
            while stream.read(1024 * 1024):
                pass
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise ArchiveError(f"corrupt archive: {exc}") from None
    found.names = frozenset(names)
    return found


class _CappedReader:
    def __init__(self, inner, limit):
        self.inner, self.limit, self.count = inner, limit, 0

    def read(self, size=-1):
        data = self.inner.read(size)
        self.count += len(data)
        if self.count > self.limit:
            raise ArchiveError(f"decompresses to more than {self.limit} bytes (a decompression bomb?)")
        return data


# -- building archives ---------------------------------------------------------------------------------

FILE_KINDS = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE)
OTHER_KINDS = (tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE)
FORMATS = (tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT)


def make_tar(members, fmt=tarfile.PAX_FORMAT, pax_headers=None, mtime=1_700_000_000.25) -> bytes:
    """A tar of (name, type, content or link target) members, as tarfile writes it (a float mtime
    gives every pax member a pax header, as in a real sdist)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt, pax_headers=pax_headers or {}) as tar:
        for name, kind, content in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.mtime = mtime
            if kind in FILE_KINDS:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
            else:
                if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                    info.linkname = content.decode()
                tar.addfile(info)
    return out.getvalue()


def gz(data: bytes, pieces: int = 1, padding: int = 0) -> bytes:
    """`data` gzipped, as one gzip member or as `pieces` concatenated ones (with zero padding between)."""
    if pieces <= 1:
        return gzip.compress(data, mtime=0)
    step = -(-len(data) // pieces)
    parts = [gzip.compress(data[at:at + step], mtime=0) for at in range(0, len(data), step)]
    return (b"\0" * padding).join(parts)


def content(size: int, seed: int = 0) -> bytes:
    return bytes((i * 7 + seed) % 251 for i in range(size))


def both(archive: bytes, wanted, **limits):
    """(new, oracle) results, each a Members or the ArchiveError it raised."""
    results = []
    for reader in (read_tar_members, tarfile_oracle):
        try:
            results.append(reader(io.BytesIO(archive), wanted, **limits))
        except ArchiveError as exc:
            results.append(exc)
    return results


def same(new, old) -> None:
    assert isinstance(new, Members), new
    assert isinstance(old, Members), old
    assert new.names == old.names
    assert new.contents == old.contents
    assert new.refused == old.refused


@contextmanager
def small_pieces(read_chunk: int, piece: int):
    """The reader with tiny compressed reads and decompressed pieces, so that headers, pax records
    and data straddle pieces everywhere."""
    with mock.patch.multiple(_archive, _READ_CHUNK=read_chunk, _PIECE=piece):
        yield


def with_checksum(header: bytes, *, signed: bool = False, field: str = "%06o\0 ") -> bytes:
    header = bytearray(header[:148] + b" " * 8 + header[156:512])
    total = sum(struct.unpack("512b" if signed else "512B", header))
    header[148:156] = (field % total).encode().ljust(8, b"\0")
    assert len(header) == 512
    return bytes(header)


# -- differential: what tarfile writes, both readers read alike -----------------------------------------

LONG_DIR = "d" * 70
NAMES = [
    f"{TOP}/a.py", f"{TOP}/pkg/core.py", f"{TOP}/pkg/sub/deep.py", f"{TOP}/setup.py",
    f"{TOP}/{LONG_DIR}/{'f' * 40}.py",  # over 100 characters: ustar prefix, GNU long name, pax path
    f"{TOP}/{'x' * 120}/{'y' * 140}.py",  # over 255: GNU and pax only
    f"{TOP}/ünïcödé/naïve.py", f"{TOP}/日本/名前.py", f"{TOP}/caf\udce9.py",  # the last one not UTF-8
    f"./{TOP}/dotted.py", f"{TOP}//double.py", f"{TOP}/trailing.py/",
    "../evil.py", f"{TOP}/../../evil.py", "/tmp/evil.py", "README", "other-1.0/x.py", f"{TOP}\\win.py",
]
SIZES = [0, 1, 100, 511, 512, 513, 1023, 1024, 1025, 3000]

member_strategy = st.tuples(
    st.sampled_from(NAMES),
    st.sampled_from(FILE_KINDS * 3 + OTHER_KINDS),
    st.sampled_from(SIZES),
    st.integers(0, 250),
)


@SETTINGS
@given(members=st.lists(member_strategy, min_size=0, max_size=12),
       leading_dir=st.booleans(),
       fmt=st.sampled_from(FORMATS),
       gzip_pieces=st.sampled_from([1, 1, 2, 5]),
       padding=st.sampled_from([0, 3]),
       wanted_extra=st.lists(st.sampled_from(["a.py", "pkg/core.py", "missing.py", "ünïcödé/naïve.py"]), max_size=3),
       max_member=st.sampled_from([MAX_FILE_BYTES, 600, 0]),
       pieces=st.sampled_from([(1 << 20, 1 << 20), (97, 700), (1000, 512), (4096, 1300)]))
def test_same_as_tarfile(members, leading_dir, fmt, gzip_pieces, padding, wanted_extra, max_member, pieces):
    entries = [(TOP + "/", tarfile.DIRTYPE, b"")] if leading_dir else []
    for name, kind, size, seed in members:
        if kind == tarfile.AREGTYPE and name.endswith("/"):
            entries.append((name, kind, b""))  # an old-style folder: tarfile reads no data after it
        elif kind in FILE_KINDS:
            entries.append((name, kind, content(size, seed)))
        elif kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
            entries.append((name, kind, f"{TOP}/a.py".encode()))
        else:
            entries.append((name, kind, b""))
    try:
        tar = make_tar(entries, fmt)
    except (ValueError, UnicodeError):
        assume(False)  # a name the format cannot hold (ustar: over 255 characters)
    archive = gz(tar, gzip_pieces, padding)
    paths = {safe_member_name(n[len(TOP) + 1:]) or "" for n, *_ in entries if n.startswith(TOP + "/")}
    wanted = (paths | set(wanted_extra)) - {""}
    with small_pieces(*pieces):
        new, old = both(archive, wanted, max_member=max_member)
    same(new, old)


@pytest.mark.parametrize("fmt", FORMATS)
def test_members_of_several_mib_across_pieces(fmt):
    big = random.Random(0).randbytes(3 * 1024 * 1024 + 17)  # incompressible: several pieces, compressed or not
    files = [(f"{TOP}/big.bin", tarfile.REGTYPE, big), (f"{TOP}/small.py", tarfile.REGTYPE, b"x = 1\n"),
             (f"{TOP}/big2.bin", tarfile.REGTYPE, big[::-1]), (f"{TOP}/tail.py", tarfile.REGTYPE, b"y = 2\n")]
    archive = gz(make_tar(files, fmt))
    for wanted in ({"big.bin", "tail.py"}, {"small.py", "big2.bin"}, set()):
        new, old = both(archive, wanted)
        same(new, old)
        assert set(new.contents) == wanted
    new, old = both(archive, {"big.bin", "small.py"}, max_member=1024 * 1024)
    same(new, old)
    assert set(new.refused) == {"big.bin"} and set(new.contents) == {"small.py"}


def test_duplicates_replace_earlier_members_and_their_refusals():
    files = [(f"{TOP}/a.py", tarfile.REGTYPE, b"first"), (f"{TOP}/a.py", tarfile.REGTYPE, b"x" * 2000),
             (f"{TOP}/b.py", tarfile.REGTYPE, b"y" * 2000), (f"{TOP}/b.py", tarfile.REGTYPE, b"small")]
    new, old = both(gz(make_tar(files)), {"a.py", "b.py"}, max_member=1000)
    same(new, old)
    assert new.contents == {"a.py": b"first", "b.py": b"small"}
    assert new.refused == {"a.py": "2000 bytes, over the 1000-byte limit"}


def test_links_folders_and_devices_are_listed_nowhere():
    files = [(f"{TOP}/a.py", tarfile.REGTYPE, b"a"), (f"{TOP}/link.py", tarfile.SYMTYPE, b"/etc/passwd"),
             (f"{TOP}/hard.py", tarfile.LNKTYPE, f"{TOP}/a.py".encode()), (f"{TOP}/dir.py", tarfile.DIRTYPE, b""),
             (f"{TOP}/fifo.py", tarfile.FIFOTYPE, b""), (f"{TOP}/dev.py", tarfile.CHRTYPE, b""),
             (f"{TOP}/old-style-dir/", tarfile.AREGTYPE, b""), (f"{TOP}/contiguous.py", tarfile.CONTTYPE, b"c")]
    for fmt in FORMATS:
        wanted = {"a.py", "link.py", "hard.py", "dir.py", "fifo.py", "dev.py", "old-style-dir", "contiguous.py"}
        new, old = both(gz(make_tar(files, fmt)), wanted)
        same(new, old)
        assert new.names == {"a.py", "contiguous.py"}


def test_the_top_folder_comes_from_the_first_member_below_one():
    files = [("README", tarfile.REGTYPE, b"r"), ("../x/evil.py", tarfile.REGTYPE, b"e"),
             (f"{TOP}/a.py", tarfile.REGTYPE, b"a"), ("other-1.0/b.py", tarfile.REGTYPE, b"b")]
    new, old = both(gz(make_tar(files)), {"a.py", "b.py"})
    same(new, old)
    assert new.names == {"a.py"}


def test_gnu_sparse_members_are_skipped():
    """Old GNU sparse ("S") members and the pax ones of GNU tar's format 1.0, as tarfile reads them."""
    sparse = tarfile.TarInfo(f"{TOP}/old-sparse.py")
    sparse.size = 1000
    header = bytearray(sparse.tobuf(tarfile.GNU_FORMAT))
    header[156:157] = tarfile.GNUTYPE_SPARSE
    header[386:410] = b"%011o\0%011o\0" % (0, 1000)  # one sparse span: all of it
    header[483:495] = b"%011o\0" % 1000
    old_sparse = with_checksum(bytes(header)) + content(1000).ljust(1024, b"\0")
    pax_sparse = tarfile.TarInfo(f"{TOP}/GNUSparseFile.0/new-sparse.py")
    mapped = b"1\n0\n10\n".ljust(512, b"\0") + b"0123456789"
    pax_sparse.size = len(mapped)
    pax_sparse.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                              "GNU.sparse.name": f"{TOP}/new-sparse.py", "GNU.sparse.realsize": "10"}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(tarfile.TarInfo(f"{TOP}/"))
        tar.fileobj.write(old_sparse)
        tar.offset += len(old_sparse)
        tar.addfile(pax_sparse, io.BytesIO(mapped))
        after = tarfile.TarInfo(f"{TOP}/after.py")
        after.size = 5
        tar.addfile(after, io.BytesIO(b"after"))
    wanted = {"old-sparse.py", "new-sparse.py", "GNUSparseFile.0/new-sparse.py", "after.py"}
    new, old = both(gz(out.getvalue()), wanted)
    same(new, old)
    assert new.names == {"after.py"} and new.contents == {"after.py": b"after"}


def test_base_256_sizes_signed_checksums_and_other_checksum_layouts():
    info = tarfile.TarInfo(f"{TOP}/é.py")  # a non-ASCII byte in the header: signed and unsigned sums differ
    data = content(700)
    info.size = len(data)
    header = bytearray(info.tobuf(tarfile.GNU_FORMAT, "utf-8"))
    header[124:136] = b"\x80" + len(data).to_bytes(11, "big")
    body = data.ljust(1024, b"\0")
    for variant in (with_checksum(bytes(header)), with_checksum(bytes(header), signed=True),
                    with_checksum(bytes(header), field="%07o\0"), with_checksum(bytes(header), field=" %06o "),
                    with_checksum(bytes(header), field="%o\0")):
        archive = gz(variant + body + bytes(1024))
        new, old = both(archive, {"é.py"})
        same(new, old)
        assert new.contents == {"é.py": data}


def test_a_global_pax_header_and_an_empty_archive():
    files = [(f"{TOP}/a.py", tarfile.REGTYPE, b"a")]
    new, old = both(gz(make_tar(files, pax_headers={"comment": "0123abcd"})), {"a.py"})  # as git archive writes
    same(new, old)
    assert new.contents == {"a.py": b"a"}
    new, old = both(gz(make_tar([])), {"a.py"})  # only the end-of-archive blocks
    same(new, old)
    assert new.names == frozenset()


# -- limits ---------------------------------------------------------------------------------------------

def test_the_decompression_cap_counts_the_whole_stream():
    archive = gz(make_tar([(f"{TOP}/zeros.py", tarfile.REGTYPE, bytes(3_000_000))]))
    for reader in (read_tar_members, tarfile_oracle):
        with pytest.raises(ArchiveError, match=r"decompresses to more than 1000000 bytes \(a decompression bomb\?\)"):
            reader(io.BytesIO(archive), set(), max_total=1_000_000)
    tar = make_tar([(f"{TOP}/a.py", tarfile.REGTYPE, b"a")])
    assert read_tar_members(io.BytesIO(gz(tar)), set(), max_total=len(tar)).names == {"a.py"}
    with pytest.raises(ArchiveError, match="decompression bomb"):
        read_tar_members(io.BytesIO(gz(tar)), set(), max_total=len(tar) - 1)


def test_more_than_max_members():
    files = [(f"{TOP}/m{i}.py", tarfile.REGTYPE, b"") for i in range(6)]
    with mock.patch.object(_archive, "MAX_MEMBERS", 5), pytest.raises(ArchiveError, match="more than 5 members"):
        read_tar_members(io.BytesIO(gz(make_tar(files))), set())
    with mock.patch.object(_archive, "MAX_MEMBERS", 6):
        assert len(read_tar_members(io.BytesIO(gz(make_tar(files))), set()).names) == 6


def test_an_oversized_extended_header_is_refused():
    info = tarfile.TarInfo("././@LongLink")
    info.type = tarfile.GNUTYPE_LONGNAME
    info.size = _archive._MAX_EXTENSION + 1
    with pytest.raises(ArchiveError, match="corrupt archive: an extended header of"):
        read_tar_members(io.BytesIO(gz(info.tobuf(tarfile.GNU_FORMAT) + bytes(4096))), set())


# -- corruption: ArchiveError and nothing else ----------------------------------------------------------

SAMPLE_FILES = [(f"{TOP}/", tarfile.DIRTYPE, b""), (f"{TOP}/a.py", tarfile.REGTYPE, content(700, 1)),
                (f"{TOP}/{LONG_DIR}/{'f' * 40}.py", tarfile.REGTYPE, content(513, 2)),
                (f"{TOP}/empty.py", tarfile.REGTYPE, b""), (f"{TOP}/link.py", tarfile.SYMTYPE, b"a.py"),
                (f"{TOP}/b.py", tarfile.REGTYPE, content(1024, 3))]
SAMPLE_WANTED = {"a.py", f"{LONG_DIR}/{'f' * 40}.py", "empty.py", "b.py"}


def member_starts(tar: bytes) -> tuple[set[int], int]:
    """Where each member's first header starts, and where the end-of-archive block starts."""
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        starts = {member.offset for member in archive.getmembers()}
        return starts, archive.offset


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_tar_cut_anywhere_is_refused_unless_cut_between_members(fmt):
    tar = make_tar(SAMPLE_FILES, fmt)
    starts, end = member_starts(tar)
    cuts = sorted({at + delta for at in range(0, end + 1024, 512) for delta in (0, 1, 100, 511)} | {end + 700})
    accepted = 0
    for cut in cuts:
        archive = gz(tar[:cut])
        new, old = both(archive, SAMPLE_WANTED)
        if (cut in starts and cut > 0) or cut == end or cut >= end + _archive._BLOCK:
            same(new, old)  # the archive ends between two members (or after its end-of-archive block)
            accepted += 1
        else:
            assert isinstance(new, ArchiveError), cut  # mid-header, mid-data, mid-padding, after an extended header
    assert accepted >= 5


def test_a_gzip_stream_cut_anywhere_is_refused():
    archive = gz(make_tar(SAMPLE_FILES))
    for cut in list(range(0, len(archive) - 1, 7)) + [len(archive) - 4, len(archive) - 1]:
        new, old = both(archive[:cut], SAMPLE_WANTED)
        assert isinstance(new, ArchiveError) and isinstance(old, ArchiveError), cut
        assert str(new).startswith("corrupt archive: "), str(new)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_changed_byte_in_any_header_is_a_bad_checksum(fmt):
    tar = make_tar(SAMPLE_FILES, fmt)
    _, end = member_starts(tar)
    headers = [at for at in range(0, end, 512) if tar[at + 257:at + 262] == b"ustar"]
    assert len(headers) >= len(SAMPLE_FILES)
    for at in headers:
        for field in (0, 100, 124, 148, 150, 156, 300):  # name, mode, size, the checksum itself, type, uname
            broken = bytearray(tar)
            broken[at + field] ^= 0x01
            with pytest.raises(ArchiveError, match="corrupt archive: bad checksum"):
                read_tar_members(io.BytesIO(gz(bytes(broken))), SAMPLE_WANTED)


def test_garbage_after_the_end():
    tar = make_tar(SAMPLE_FILES)
    good = gz(tar)
    expected = read_tar_members(io.BytesIO(good), SAMPLE_WANTED)
    same(read_tar_members(io.BytesIO(good + bytes(100)), SAMPLE_WANTED), expected)  # zero padding: as gzip
    same(read_tar_members(io.BytesIO(gz(tar, 3, padding=10)), SAMPLE_WANTED), expected)
    for archive in (good + b"garbage", good + b"\x1f", good + b"\x1f\x8b", good + bytes(10) + b"x",
                    good + gzip.compress(b"more")[:-3]):
        new, old = both(archive, SAMPLE_WANTED)
        assert isinstance(new, ArchiveError) and isinstance(old, ArchiveError)
    # Inside the tar, after its end-of-archive block: tarfile reads no further, this refuses it.
    _, end = member_starts(tar)
    for archive in (gz(tar + b"x" * 512), gz(tar[:end + 512] + tar), gz(tar + make_tar(SAMPLE_FILES[:2]))):
        with pytest.raises(ArchiveError, match="corrupt archive: data after the end-of-archive marker"):
            read_tar_members(io.BytesIO(archive), SAMPLE_WANTED)


def test_a_bad_crc_or_length_or_deflate_stream():
    good = gz(make_tar(SAMPLE_FILES))
    for at in (len(good) - 8, len(good) - 5, len(good) - 4, len(good) - 1, 20, len(good) // 2):
        broken = bytearray(good)
        broken[at] ^= 0x40
        new, old = both(bytes(broken), SAMPLE_WANTED)
        assert isinstance(new, ArchiveError) and isinstance(old, ArchiveError), at
        assert str(new).startswith("corrupt archive: ")
    for archive in (b"", b"not a gzip stream", gzip.compress(b""), gzip.compress(b"x" * 100), gzip.compress(b"x" * 600)):
        new, old = both(archive, set())
        assert isinstance(new, ArchiveError) and isinstance(old, ArchiveError), archive


def test_extended_headers_must_have_their_member():
    for fmt, name in ((tarfile.GNU_FORMAT, f"{TOP}/{'l' * 150}.py"), (tarfile.PAX_FORMAT, f"{TOP}/ä.py")):
        tar = make_tar([(name, tarfile.REGTYPE, b"x")], fmt)
        with pytest.raises(ArchiveError, match="corrupt archive: an extended header before the end"):
            read_tar_members(io.BytesIO(gz(tar[:1024] + bytes(1024))), set())
        with pytest.raises(ArchiveError, match="corrupt archive: the archive ends after an extended header"):
            read_tar_members(io.BytesIO(gz(tar[:1024])), set())


def test_malformed_pax_records_and_numbers():
    def pax_member(records: bytes, size_field: bytes | None = None) -> bytes:
        info = tarfile.TarInfo("././@PaxHeader")
        info.type = tarfile.XHDTYPE
        info.size = len(records)
        header = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
        if size_field is not None:
            header[124:136] = size_field
        member = tarfile.TarInfo(f"{TOP}/a.py")
        member.size = 1
        return (with_checksum(bytes(header)) + records.ljust(512, b"\0") + member.tobuf(tarfile.USTAR_FORMAT)
                + b"a".ljust(512, b"\0") + bytes(1024))

    assert read_tar_members(io.BytesIO(gz(pax_member(b"15 comment=abc\n"))), {"a.py"}).contents == {"a.py": b"a"}
    assert read_tar_members(io.BytesIO(gz(pax_member(b"15 path=b/c.py\n"))), {"c.py"}).contents == {"c.py": b"a"}
    for records in (b"17 comment=abc\n", b"15 comment=abc\r", b"x5 comment=abc\n", b"15 commentXabc\n", b"4 =\n",
                    b"99999999999999999999999 a=b\n", b"11 size=-1\n", b"11 size=x1\n"):
        with pytest.raises(ArchiveError, match="corrupt archive: invalid"):
            read_tar_members(io.BytesIO(gz(pax_member(records))), {"a.py"})
    for size_field in (b"0000000001x\0", b"\xff" * 12):
        with pytest.raises(ArchiveError, match="corrupt archive: (invalid number|negative size)"):
            read_tar_members(io.BytesIO(gz(pax_member(b"15 comment=abc\n", size_field))), {"a.py"})
    global_path = make_tar([(f"{TOP}/a.py", tarfile.REGTYPE, b"a")], pax_headers={"path": "x"})
    with pytest.raises(ArchiveError, match="corrupt archive: a global pax header sets a path"):
        read_tar_members(io.BytesIO(gz(global_path)), {"a.py"})


@settings(max_examples=150, deadline=None)
@given(changes=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 10_000)),
       fmt=st.sampled_from(FORMATS))
def test_any_damaged_tar_gives_members_or_archive_error(changes, cut, fmt):
    tar = bytearray(make_tar(SAMPLE_FILES, fmt))
    for at, value in changes:
        tar[at % len(tar)] = value
    tar = bytes(tar if cut is None else tar[:cut])
    with small_pieces(300, 700):
        try:
            found = read_tar_members(io.BytesIO(gz(tar)), SAMPLE_WANTED)
        except ArchiveError:
            return
    assert isinstance(found, Members)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=3000))
def test_any_bytes_give_members_or_archive_error(data):
    for archive in (data, gzip.compress(data, mtime=0)):
        try:
            read_tar_members(io.BytesIO(archive), {"a.py"})
        except ArchiveError:
            pass


# -- safe_member_name's fast path -------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet="ab./\\:\x00Cé1", max_size=12))
def test_safe_member_name_fast_path(name):
    assert safe_member_name(name) == _members._plain_path(name)  # the shortcut changes nothing
