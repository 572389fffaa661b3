"""The pypi source against a real HTTP index on 127.0.0.1 (tests/index_server.py), offline."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import shutil
import tarfile
import time
from pathlib import Path

import pytest

from verifier.kb import Engine
from verifier.sources import MAX_FILE_BYTES, SourceUnavailable
from verifier.sources.archive import ArchiveError, read_tar_members
from verifier.sources.archive import store as _store
from verifier.sources.pypi import HttpClient, PyPISource, configured_index_url
from verifier.sources.pypi import downloads as _downloads
from verifier.sources.pypi import readers as _readers

from .index_server import Faults, IndexServer, make_sdist, make_wheel, tar_member

TOY = Engine(key="toy", name="Toy", package="toy", repository="https://git.invalid/toy/toy", tag_pattern="v{version}")
# Laid out like SGLang: the package lives under python/ in git, at the root of its archives.
SPLIT = Engine(key="split", name="Split", package="split", repository="https://git.invalid/split/split",
               tag_pattern="v{version}", archive_root="python/")

CORE = b"def schedule(queue):\n    return queue.pop()\n"
FAST = HttpClient(timeout=2.0, attempts=3, backoff=0.01)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("no_proxy", "NO_PROXY"):  # the test index is local, whatever proxy the machine has
        monkeypatch.setenv(name, "127.0.0.1")
    return tmp_path / "cache" / "archives"


@pytest.fixture
def index():
    with IndexServer() as server:
        yield server


def source(index: IndexServer, engine: Engine = TOY, **options) -> PyPISource:
    return PyPISource(engine, index_url=index.url, http=options.pop("http", FAST), **options)


def only_release(src: PyPISource):
    [release] = src.releases()
    return release


def cached_files(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def sdist(version: str = "1.0", files: dict[str, bytes] | None = None, **kw) -> bytes:
    return make_sdist(files or {"toy/core.py": CORE, "PKG-INFO": b"Name: toy\n"}, top=f"toy-{version}", **kw)


# -- releases ------------------------------------------------------------------------------------------

def test_releases_in_pep440_order_leaving_out_prereleases_and_yanked_files(index):
    wheel = make_wheel({"toy/core.py": CORE}, "toy", "1.0")
    index.add("toy", "toy-0.9.0.tar.gz", sdist("0.9.0"), upload_time="2024-01-02T03:04:05.678Z")
    index.add("toy", "toy-0.10.0.tar.gz", sdist("0.10.0"), upload_time=None)
    index.add("toy", "toy-0.11.0rc1.tar.gz", sdist("0.11.0rc1"))
    index.add("toy", "toy-0.11.0.dev2.tar.gz", sdist("0.11.0.dev2"))
    index.add("toy", "toy-0.8.0.tar.gz", sdist("0.8.0"), yanked="broken")
    index.add("toy", "toy-0.12.0.tar.gz", sdist("0.12.0"), yanked=True)  # only its wheel remains
    index.add("toy", "toy-0.12.0-py3-none-any.whl", wheel)
    index.add("toy", "toy-0.13.0-cp311-cp311-manylinux_2_34_x86_64.whl", wheel + b"1")
    index.add("toy", "toy-0.13.0-py3-none-any.whl", wheel + b"2")
    index.add("toy", "toy-0.13.0.tar.gz", sdist("0.13.0"), upload_time="2025-12-31T23:59:59Z")
    index.add("toy", "toy-0.14.0-cp312-cp312-manylinux_2_34_x86_64.whl", wheel + b"3")
    index.add("toy", "toy-0.14.0-cp311-cp311-manylinux_2_34_x86_64.whl", wheel + b"4")
    index.add("toy", "toy-0.14.0-cp311-cp311-manylinux_2_34_aarch64.whl", wheel + b"5")
    index.add("toy", "toy-0.15.0.exe", b"not an archive")
    index.add("toy", "other-0.16.0.tar.gz", b"another package's file")

    src = source(index)
    releases = src.releases()

    assert [r.version for r in releases] == ["0.9.0", "0.10.0", "0.12.0", "0.13.0", "0.14.0"]
    chosen = {r.version: src.archive_of(r).filename for r in releases}
    assert chosen["0.12.0"] == "toy-0.12.0-py3-none-any.whl"
    assert chosen["0.13.0"] == "toy-0.13.0.tar.gz"
    assert chosen["0.14.0"] == "toy-0.14.0-cp311-cp311-manylinux_2_34_aarch64.whl"  # first by file name
    first = releases[0]
    assert first.engine == "toy"
    assert first.date == "2024-01-02"
    assert releases[1].date is None
    assert releases[3].date == "2025-12-31"
    assert first.url == "https://git.invalid/toy/toy/tree/v0.9.0"
    assert first.identity == "sha256:" + hashlib.sha256(index.files["toy-0.9.0.tar.gz"].content).hexdigest()


def test_prereleases_when_asked_for(index):
    for version in ("1.0", "1.1rc1", "1.1.dev3", "1.1", "1.0.post1"):
        index.add("toy", f"toy-{version}.tar.gz", sdist(version))
    assert [r.version for r in source(index, include_prereleases=True).releases()] == [
        "1.0", "1.0.post1", "1.1.dev3", "1.1rc1", "1.1"]
    assert [r.version for r in source(index).releases()] == ["1.0", "1.0.post1", "1.1"]


def test_an_index_without_the_json_api_is_reported(index):
    index.json_api = False
    index.add("toy", "toy-1.0.tar.gz", sdist())
    with pytest.raises(SourceUnavailable, match="PEP 691"):
        source(index).releases()


def test_an_unknown_package_is_reported(index):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    with pytest.raises(SourceUnavailable, match="404"):
        PyPISource(SPLIT, index_url=index.url, http=FAST).releases()


def test_a_refused_connection_is_reported_after_retries():
    with IndexServer() as closed:
        url = closed.url
    start = time.monotonic()
    with pytest.raises(SourceUnavailable, match=r"cannot connect.*tried 3 times"):
        PyPISource(TOY, index_url=url, http=FAST).releases()
    assert time.monotonic() - start < 2


# -- which index ---------------------------------------------------------------------------------------

def test_the_index_comes_from_pip_index_url(index, monkeypatch):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    monkeypatch.setenv("PIP_INDEX_URL", index.url + "/")
    src = PyPISource(TOY, http=FAST)
    assert src.index_url == index.url
    assert [r.version for r in src.releases()] == ["1.0"]


def test_the_index_comes_from_pip_configuration_files(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # away from the user's own pip configuration
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = http://127.0.0.1:9/mirror/simple\n"
                      "extra-index-url = http://127.0.0.1:9/extra/simple\n")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert configured_index_url() == "http://127.0.0.1:9/mirror/simple"


def test_without_settings_the_index_is_pips_default(monkeypatch):
    from pip._internal.models.index import PyPI

    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # pip then reads no configuration file
    assert configured_index_url() == PyPI.simple_url


# -- sdists --------------------------------------------------------------------------------------------

def test_sdist_members_are_read_by_their_path_below_the_top_folder(index, cache):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    snapshot = source(index).open(only_release(source(index)))
    assert snapshot.read("toy/core.py") == CORE
    assert snapshot.read("PKG-INFO") == b"Name: toy\n"
    assert snapshot.read("toy/missing.py") is None
    assert snapshot.read("toy") is None  # a folder is not a file
    assert snapshot.read("toy-1.0/toy/core.py") is None
    with pytest.raises(SourceUnavailable, match="climbs out"):
        snapshot.read("../toy/core.py")
    assert cached_files(cache) == [only_release(source(index)).identity.removeprefix("sha256:") + ".tar.gz"]


def test_repository_paths_map_to_archive_paths_through_archive_root(index):
    index.add("split", "split-1.0.tar.gz", make_sdist({"split/x.py": CORE}, top="split-1.0"))
    src = PyPISource(SPLIT, index_url=index.url, http=FAST)
    snapshot = src.open(only_release(src))
    assert snapshot.read("python/split/x.py") == CORE
    assert snapshot.read("python/split/y.py") is None
    with pytest.raises(SourceUnavailable, match="never ship"):
        snapshot.read("split/x.py")
    with pytest.raises(SourceUnavailable, match="never ship"):
        snapshot.read("docs/index.md")


def test_prefetch_reads_every_path_in_one_pass(index, monkeypatch):
    index.add("toy", "toy-1.0.tar.gz", sdist(files={"toy/a.py": b"a", "toy/b.py": b"b", "toy/c.py": b"c"}))
    passes = []
    real = _readers.read_tar_members
    monkeypatch.setattr(_readers, "read_tar_members", lambda raw, wanted: passes.append(set(wanted)) or real(raw, wanted))
    snapshot = source(index).open(only_release(source(index)))
    snapshot.prefetch(["toy/a.py", "toy/b.py", "toy/none.py", "../bad", ""])
    assert [snapshot.read(p) for p in ("toy/a.py", "toy/b.py", "toy/none.py")] == [b"a", b"b", None]
    assert passes == [{"toy/a.py", "toy/b.py", "toy/none.py"}]
    assert snapshot.read("toy/c.py") == b"c"  # not prefetched: one more pass
    assert len(passes) == 2


def test_hostile_tar_members_are_never_returned_nor_written(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    evil = b"import os; os.system('boom')\n"
    hostile = [
        (tar_member("../evil.py"), evil),
        (tar_member("toy-1.0/../../evil.py"), evil),
        (tar_member("/tmp/evil.py"), evil),
        (tar_member("toy-1.0/toy/link.py", tarfile.SYMTYPE, "/etc/passwd"), None),
        (tar_member("toy-1.0/toy/alias.py", tarfile.SYMTYPE, "core.py"), None),
        (tar_member("toy-1.0/toy/hard.py", tarfile.LNKTYPE, "toy-1.0/toy/core.py"), None),
        (tar_member("toy-1.0/toy/dev.py", tarfile.CHRTYPE), None),
        (tar_member("toy-1.0/toy/fifo.py", tarfile.FIFOTYPE), None),
    ]
    index.add("toy", "toy-1.0.tar.gz", sdist(extra_members=hostile))
    snapshot = source(index).open(only_release(source(index)))
    snapshot.prefetch(["toy/core.py", "toy/link.py", "toy/alias.py", "toy/hard.py", "toy/dev.py", "evil.py"])
    assert snapshot.read("toy/core.py") == CORE
    for path in ("toy/link.py", "toy/alias.py", "toy/hard.py", "toy/dev.py", "toy/fifo.py", "evil.py", "tmp/evil.py"):
        assert snapshot.read(path) is None, path
    # The member store names what it keeps by content hash, never by a name from the archive.
    store = tmp_path / "cache" / "members"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".gz" and store not in p.parents]
    assert written == []
    assert all(re.fullmatch(r"[0-9a-f]{64}(\.json\.z)?", p.name) for p in store.rglob("*") if p.is_file())
    assert not Path("/tmp/evil.py").exists()


def test_members_over_the_size_limit_are_refused(index):
    index.add("toy", "toy-1.0.tar.gz", sdist(files={"toy/big.py": b"#" * (MAX_FILE_BYTES + 1), "toy/small.py": b"ok"}))
    snapshot = source(index).open(only_release(source(index)))
    with pytest.raises(SourceUnavailable, match=f"toy/big.py: toy-1.0.tar.gz: .*over the {MAX_FILE_BYTES}-byte limit"):
        snapshot.read("toy/big.py")
    assert snapshot.read("toy/small.py") == b"ok"


def test_a_decompression_bomb_stops_at_the_cap():
    bomb = make_sdist({"toy/zeros.py": bytes(10_000_000)}, top="toy-1.0")
    assert len(bomb) < 20_000
    with pytest.raises(ArchiveError, match="decompression bomb"):
        read_tar_members(io.BytesIO(bomb), {"toy/zeros.py"}, max_total=1_000_000)


def test_a_corrupt_sdist_is_unavailable_not_missing(index):
    good = sdist()
    index.add("toy", "toy-1.0.tar.gz", good[:100] + bytes(len(good) - 100))
    snapshot = source(index).open(only_release(source(index)))
    with pytest.raises(SourceUnavailable, match="toy-1.0.tar.gz: corrupt archive"):
        snapshot.read("toy/core.py")


# -- downloads: digests, faults, retries, the cache ----------------------------------------------------

def test_a_lying_digest_is_refused_and_nothing_is_cached(index, cache):
    index.add("toy", "toy-1.0.tar.gz", sdist(), faults=Faults(lying_digest=True))
    snapshot = source(index).open(only_release(source(index)))
    with pytest.raises(SourceUnavailable, match="toy-1.0.tar.gz: digest mismatch"):
        snapshot.read("toy/core.py")
    assert cached_files(cache) == []
    with pytest.raises(SourceUnavailable, match="digest mismatch"):  # every later read says so, without downloading
        snapshot.read("toy/core.py")
    assert len(index.answers_for("toy-1.0.tar.gz")) == 1


@pytest.mark.parametrize("fault", [Faults(truncated=True), Faults(lying_size=True)], ids=["truncated", "lying-size"])
def test_a_file_of_another_size_than_the_index_says_is_refused(index, cache, fault):
    index.add("toy", "toy-1.0.tar.gz", sdist(), faults=fault)
    snapshot = source(index).open(only_release(source(index)))
    with pytest.raises(SourceUnavailable, match=r"toy-1.0.tar.gz: the server sends \d+ bytes, the index says \d+"):
        snapshot.read("toy/core.py")
    assert cached_files(cache) == []


def test_a_connection_dropped_every_time_is_reported(index, cache):
    index.add("toy", "toy-1.0.tar.gz", sdist(), faults=Faults(drop_mid_body=99))
    snapshot = source(index).open(only_release(source(index)))
    with pytest.raises(SourceUnavailable, match=r"toy-1.0.tar.gz: .*closed.*\(tried 3 times\)"):
        snapshot.read("toy/core.py")
    assert len(index.answers_for("toy-1.0.tar.gz")) == 3
    assert cached_files(cache) == []


def test_a_connection_dropped_once_is_retried(index):
    index.add("toy", "toy-1.0.tar.gz", sdist(), faults=Faults(drop_mid_body=1))
    assert source(index).open(only_release(source(index))).read("toy/core.py") == CORE
    assert len(index.answers_for("toy-1.0.tar.gz")) == 2


def test_http_500_then_success_is_retried(index):
    index.add("toy", "toy-1.0.tar.gz", sdist(), faults=Faults(errors_500=2))
    assert source(index).open(only_release(source(index))).read("toy/core.py") == CORE
    assert [a.status for a in index.answers_for("toy-1.0.tar.gz")] == [500, 500, 200]


def test_http_500_every_time_is_reported(index):
    index.add("toy", "toy-1.0.tar.gz", sdist(), faults=Faults(errors_500=99))
    with pytest.raises(SourceUnavailable, match=r"toy-1.0.tar.gz: HTTP 500 .*\(tried 3 times\)"):
        source(index).open(only_release(source(index))).read("toy/core.py")


def test_a_slow_server_times_out_instead_of_hanging(index):
    index.add("toy", "toy-1.0.tar.gz", sdist(), faults=Faults(delay=1.0))
    slow = HttpClient(timeout=0.2, attempts=2, backoff=0.01)
    start = time.monotonic()
    with pytest.raises(SourceUnavailable, match="toy-1.0.tar.gz: .*timed out"):
        source(index, http=slow).open(only_release(source(index))).read("toy/core.py")
    assert time.monotonic() - start < 1.5


def big_sdist(version: str = "1.0") -> bytes:
    """toy/core.py first, then 4 MiB that do not compress: the first file is read long before the end."""
    filler = os.urandom(4 * 1024 * 1024)
    return sdist(version, {"toy/core.py": CORE, "toy/data.bin": filler, "toy/last.py": b"LAST = 1\n"})


def test_an_sdist_is_read_while_it_downloads(index, cache):
    """The server holds back the second half of the file until the pass has handed out toy/core.py."""
    import threading

    hold = threading.Event()
    faults = Faults(hold_mid_body=hold)
    index.add("toy", "toy-1.0.tar.gz", big_sdist(), faults=faults)
    snapshot = source(index).open(only_release(source(index)))
    handed = []
    for path in snapshot.files(["toy/core.py", "toy/last.py"]):
        handed.append(path)
        hold.set()  # the download goes on only now
    assert faults.released is True  # released in time: the pass had the first file before the download ended
    assert handed == ["toy/core.py", "toy/last.py"]
    assert snapshot.read("toy/core.py") == CORE and snapshot.read("toy/last.py") == b"LAST = 1\n"
    assert len(cached_files(cache)) == 1  # the download is kept, digest checked
    assert len(index.answers_for("toy-1.0.tar.gz")) == 1


def test_a_download_that_starts_over_is_read_again_whole(index, cache, monkeypatch):
    """Cut mid-body after the pass handed a file out: the retry's file is read again, from its start."""
    index.add("toy", "toy-1.0.tar.gz", big_sdist(), faults=Faults(drop_mid_body=1))
    handed = []
    real = _readers.read_tar_members

    def noting(raw, wanted, on_member=None, **kwargs):
        def seen(member, data):
            handed.append((type(raw).__name__, member))
            on_member(member, data)
        return real(raw, wanted, on_member=seen, **kwargs)

    monkeypatch.setattr(_readers, "read_tar_members", noting)
    snapshot = source(index).open(only_release(source(index)))
    assert set(snapshot.files(["toy/core.py", "toy/last.py"])) == {"toy/core.py", "toy/last.py"}
    # toy/core.py came first from the growing file, then again from the finished one, with toy/last.py
    assert handed[0] == ("Growing", "toy/core.py")
    assert ("Growing", "toy/last.py") not in handed
    assert [m for kind, m in handed if kind != "Growing"] == ["toy/core.py", "toy/last.py"]
    assert snapshot.read("toy/core.py") == CORE and snapshot.read("toy/last.py") == b"LAST = 1\n"
    assert len(index.answers_for("toy-1.0.tar.gz")) == 2 and len(cached_files(cache)) == 1


def test_files_read_from_a_download_with_a_wrong_digest_count_for_nothing(index, cache):
    index.add("toy", "toy-1.0.tar.gz", big_sdist(), faults=Faults(lying_digest=True))
    snapshot = source(index).open(only_release(source(index)))
    handed = []
    with pytest.raises(SourceUnavailable, match="digest mismatch"):
        for path in snapshot.files(["toy/core.py", "toy/last.py"]):
            handed.append(path)
    assert handed  # handed out as read, before the digest was known: the caller drops what it did with them
    assert cached_files(cache) == []
    assert not list((cache.parent / "members").glob("*.json.z")) if (cache.parent / "members").exists() else True


def test_a_reader_that_gives_up_stops_the_download_and_leaves_no_partial_file(index, cache, monkeypatch):
    """An unexpected failure in the pass: the download stops at its next piece and removes its partial file."""
    import threading

    hold = threading.Event()
    faults = Faults(hold_mid_body=hold)
    index.add("toy", "toy-1.0.tar.gz", big_sdist(), faults=faults)

    def failing(raw, wanted, on_member=None, **kwargs):
        raw.read(1024)
        raise RuntimeError("the pass broke")

    monkeypatch.setattr(_readers, "read_tar_members", failing)
    snapshot = source(index).open(only_release(source(index)))
    with pytest.raises(RuntimeError, match="the pass broke"):
        snapshot.read("toy/core.py")
    hold.set()
    deadline = time.monotonic() + 10
    while list(cache.glob(".partial-*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(cache.glob(".partial-*")) == [] and cached_files(cache) == []


def test_a_growing_file_waits_for_bytes_and_notices_a_new_attempt(tmp_path):
    import threading

    partial = tmp_path / "partial"
    partial.write_bytes(b"")
    growing = _downloads.Growing()
    got = []
    reader = threading.Thread(target=lambda: got.append(growing.read(6)))
    reader.start()
    growing.follow(str(partial))
    partial.write_bytes(b"abc")
    growing.wrote(1, 3)
    time.sleep(0.05)
    assert got == []  # 3 bytes of the 6 asked for: still waiting
    partial.write_bytes(b"abcdefgh")
    growing.wrote(1, 8)
    reader.join(5)
    assert got == [b"abcdef"]
    growing.wrote(2, 1)  # a retry emptied the file and wrote again
    with pytest.raises(OSError, match="started over"):
        growing.read(1)
    growing.close()
    with pytest.raises(_downloads._Cancelled):
        growing.wrote(2, 2)


def test_a_growing_file_ends_with_its_download(tmp_path):
    partial = tmp_path / "partial"
    partial.write_bytes(b"abcdefgh")
    growing = _downloads.Growing()
    growing.follow(str(partial))
    growing.wrote(1, 8)
    assert growing.read(5) == b"abcde"
    growing.finish()
    assert growing.read(100) == b"fgh"  # what is left, once the download has ended
    assert growing.read(100) == b""
    never = _downloads.Growing()
    never.finish()  # the download failed before it created its file
    with pytest.raises(OSError):
        never.read(10)


def test_a_second_open_is_served_from_the_cache(index, cache):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    assert source(index).open(only_release(source(index))).read("toy/core.py") == CORE
    assert source(index).open(only_release(source(index))).read("toy/core.py") == CORE
    assert len(index.answers_for("toy-1.0.tar.gz")) == 1


def test_a_damaged_cached_file_is_downloaded_again(index, cache):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    source(index).open(only_release(source(index))).read("toy/core.py")
    [cached] = cache.iterdir()
    cached.write_bytes(bytes(cached.stat().st_size))  # same size, other bytes
    shutil.rmtree(cache.parent / "members")  # so that the member must come from the archive again
    assert source(index).open(only_release(source(index))).read("toy/core.py") == CORE
    assert len(index.answers_for("toy-1.0.tar.gz")) == 2
    assert cached.read_bytes() == index.files["toy-1.0.tar.gz"].content


def test_progress_is_reported_for_downloads(index):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    seen = []
    src = source(index, progress=lambda done, total, label: seen.append((done, total, label)))
    src.open(only_release(src)).read("toy/core.py")
    size = len(index.files["toy-1.0.tar.gz"].content)
    assert seen[-1] == (size, size, "toy-1.0.tar.gz")


# -- wheels --------------------------------------------------------------------------------------------

def wheel_only_release(index: IndexServer, **wheel_options) -> bytes:
    """A split-layout wheel with a large incompressible member, so that reading all of it would show."""
    files = {"split/srt/x.py": CORE, "split/srt/other.py": b"pass\n", "split/blob.bin": os.urandom(400_000)}
    wheel = make_wheel(files, "split", "2.0", **wheel_options)
    index.add("split", "split-2.0-cp311-cp311-manylinux_2_34_x86_64.whl", wheel)
    return wheel


def open_split(index: IndexServer):
    src = PyPISource(SPLIT, index_url=index.url, http=FAST)
    return src.open(only_release(src))


def test_a_wheel_is_read_with_range_requests_only(index, cache):
    wheel = wheel_only_release(index)
    snapshot = open_split(index)
    assert snapshot.read("python/split/srt/x.py") == CORE
    assert snapshot.read("python/split/srt/gone.py") is None
    answers = index.answers_for("split-2.0-cp311-cp311-manylinux_2_34_x86_64.whl")
    assert answers and all(a.range and a.status == 206 for a in answers)
    assert sum(a.sent for a in answers) < len(wheel) // 4
    assert cached_files(cache) == []


@pytest.mark.parametrize("zip64", [False, True])
def test_a_wheel_with_zip64_records_is_read(index, zip64):
    wheel_only_release(index, zip64=zip64, compression=0)
    assert open_split(index).read("python/split/srt/x.py") == CORE


def test_a_wheel_member_that_does_not_match_record_is_refused(index):
    wheel_only_release(index, lie_in_record=["split/srt/x.py"])
    snapshot = open_split(index)
    with pytest.raises(SourceUnavailable, match="RECORD"):
        snapshot.read("python/split/srt/x.py")
    assert snapshot.read("python/split/srt/other.py") == b"pass\n"


def test_a_wheel_whose_server_ignores_ranges_is_downloaded_whole_and_verified(index, cache):
    index.range_support = False
    wheel = wheel_only_release(index)
    snapshot = open_split(index)
    assert snapshot.read("python/split/srt/x.py") == CORE
    [cached] = cache.iterdir()
    assert cached.read_bytes() == wheel and cached.suffix == ".whl"
    filename = "split-2.0-cp311-cp311-manylinux_2_34_x86_64.whl"
    assert index.answers_for(filename)[-1].range is None
    # once cached, the wheel is read from the cache even when the server could answer ranges
    index.range_support = True
    before = len(index.answers_for(filename))
    assert open_split(index).read("python/split/srt/other.py") == b"pass\n"
    assert len(index.answers_for(filename)) == before


def test_a_truncated_wheel_is_refused(index):
    wheel_only_release(index)
    index.files["split-2.0-cp311-cp311-manylinux_2_34_x86_64.whl"].faults.truncated = True
    with pytest.raises(SourceUnavailable, match="HTTP 416 .*shorter than the bytes asked for"):
        open_split(index).read("python/split/srt/x.py")


def test_a_wheel_of_another_size_than_the_index_says_is_refused(index):
    wheel = wheel_only_release(index)
    index.files["split-2.0-cp311-cp311-manylinux_2_34_x86_64.whl"].faults.lying_size = True
    with pytest.raises(SourceUnavailable, match=f"has {len(wheel)} bytes, the index says {len(wheel) + 1000}"):
        open_split(index).read("python/split/srt/x.py")


def test_hostile_wheel_member_names_are_never_returned(index):
    files = {"../split/srt/x.py": b"evil", "/split/srt/y.py": b"evil", "split\\srt\\z.py": b"evil",
             "split/srt/ok.py": b"ok"}
    index.add("split", "split-2.0-py3-none-any.whl", make_wheel(files, "split", "2.0"))
    snapshot = open_split(index)
    assert [snapshot.read(f"python/split/srt/{name}") for name in ("x.py", "y.py", "z.py", "ok.py")] == [
        None, None, None, b"ok"]


def test_a_wheel_that_lists_a_member_twice_is_refused_for_it(index):
    with pytest.warns(UserWarning, match="Duplicate name"):
        wheel = make_wheel({"split/srt/x.py": CORE, "split/srt/ok.py": b"ok"}, "split", "2.0",
                           duplicate=("split/srt/x.py", b"x = 'the other one'\n"))
    index.add("split", "split-2.0-py3-none-any.whl", wheel)
    snapshot = open_split(index)
    with pytest.raises(SourceUnavailable, match="lists it twice"):
        snapshot.read("python/split/srt/x.py")
    assert snapshot.read("python/split/srt/ok.py") == b"ok"


# -- the member store ----------------------------------------------------------------------------------

def test_members_read_once_are_answered_from_the_store(index, monkeypatch):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    source(index).open(only_release(source(index))).read("toy/core.py")

    def no_archive(*args, **kwargs):
        raise AssertionError("the archive was read again")

    monkeypatch.setattr(_readers, "read_tar_members", no_archive)
    snapshot = source(index).open(only_release(source(index)))
    assert snapshot.read("toy/core.py") == CORE
    assert snapshot.read("toy/absent.py") is None  # the manifest knows every member name
    assert "toy/core.py" in snapshot.paths()


def test_a_damaged_stored_member_is_read_from_the_archive_again(index, cache):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    source(index).open(only_release(source(index))).read("toy/core.py")
    [blob] = [p for p in (cache.parent / "members" / "blobs").rglob("*") if p.is_file()]
    blob.write_bytes(b"not zlib")
    assert source(index).open(only_release(source(index))).read("toy/core.py") == CORE


def test_a_new_member_goes_back_to_the_archive(index, monkeypatch):
    index.add("toy", "toy-1.0.tar.gz", sdist(files={"toy/core.py": CORE, "toy/extra.py": b"x = 2\n"}))
    source(index).open(only_release(source(index))).read("toy/core.py")
    snapshot = source(index).open(only_release(source(index)))
    assert snapshot.read("toy/extra.py") == b"x = 2\n"


def test_a_wheel_is_downloaded_whole_when_many_members_are_wanted(index):
    files = {f"toy/m{i}.py": f"x = {i}\n".encode() for i in range(_readers.RANGE_READ_MAX_MEMBERS + 1)}
    index.add("toy", "toy-1.0-py3-none-any.whl", make_wheel(files, "toy", "1.0"))
    snapshot = source(index).open(only_release(source(index)))
    snapshot.prefetch(list(files))
    assert snapshot.read("toy/m3.py") == b"x = 3\n"
    answers = index.answers_for("toy-1.0-py3-none-any.whl")
    assert [a.range for a in answers] == [None]  # one whole download, its digest checked


def test_a_stored_member_is_named_by_its_digest_without_being_read(index, monkeypatch):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    source(index).open(only_release(source(index))).read("toy/core.py")
    reads = []
    real_blob = _store.MemberStore.blob
    monkeypatch.setattr(_store.MemberStore, "blob", lambda self, sha: reads.append(sha) or real_blob(self, sha))
    snapshot = source(index).open(only_release(source(index)))
    snapshot.prefetch(["toy/core.py"])
    assert snapshot.digest("toy/core.py") == "sha256:" + hashlib.sha256(CORE).hexdigest()
    assert snapshot.digest("toy/absent.py") is None
    assert reads == []  # the manifest names the content; nothing was decompressed
    assert snapshot.read("toy/core.py") == CORE and len(reads) == 1


def test_a_stored_member_gone_since_it_was_located_is_read_from_the_archive(index, cache):
    index.add("toy", "toy-1.0.tar.gz", sdist())
    source(index).open(only_release(source(index))).read("toy/core.py")
    snapshot = source(index).open(only_release(source(index)))
    assert snapshot.digest("toy/core.py")  # located in the store, not read yet
    [blob] = [p for p in (cache.parent / "members" / "blobs").rglob("*") if p.is_file()]
    blob.write_bytes(b"not zlib")
    assert snapshot.read("toy/core.py") == CORE


# -- the HTTP client: keep-alive, redirects, credentials, proxies --------------------------------------------

SECRET = "s3cr3t-t0ken"


def files_url(index: IndexServer, path: str, host: str = "127.0.0.1", userinfo: str = "") -> str:
    return f"http://{userinfo}{host}:{index._server.server_address[1]}{path}"


def client(attempts: int = 1) -> HttpClient:
    return HttpClient(timeout=2.0, attempts=attempts, backoff=0.01)


def test_requests_to_one_host_share_one_kept_alive_connection(index):
    content = make_wheel({"toy/core.py": CORE}, "toy", "1.0")
    index.add("toy", "toy-1.0-py3-none-any.whl", content)
    http, url = client(), files_url(index, "/files/toy-1.0-py3-none-any.whl")
    parts = [http.get_range(url, n, 10, what="toy") for n in range(20)]
    assert [p.body for p in parts] == [content[n:n + 10] for n in range(20)]
    assert http.get(url, what="toy", limit=len(content)).body == content
    assert len(index.connections) == 1


def test_redirects_are_followed_to_http_and_https_urls_only(index):
    content = sdist()
    index.add("toy", "toy-1.0.tar.gz", content)
    index.redirects.update({"/moved": "../files/toy-1.0.tar.gz", "/to-a-file": "file:///etc/passwd", "/loop": "/loop"})
    http = client(attempts=3)
    fetched = http.get(files_url(index, "/moved"), what="moved", limit=len(content))
    assert fetched.body == content and fetched.url == files_url(index, "/files/toy-1.0.tar.gz")
    with pytest.raises(SourceUnavailable, match=r"^elsewhere: file:///etc/passwd is not an http or https URL$"):
        http.get(files_url(index, "/to-a-file"), what="elsewhere", limit=100)
    with pytest.raises(SourceUnavailable, match=r"^loop: HTTP 302 from .*/loop: more than 10 redirects$"):
        http.get(files_url(index, "/loop"), what="loop", limit=100)
    answered = [a.path for a in index.settled().log]
    assert answered.count("/to-a-file") == 1 and answered.count("/loop") == 11  # refused, not retried


def test_credentials_in_a_url_go_to_its_host_only_and_never_into_a_message(index, monkeypatch):
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    content = sdist()
    index.add("toy", "toy-1.0.tar.gz", content)
    index.redirects["/elsewhere"] = files_url(index, "/files/toy-1.0.tar.gz", host="localhost")  # another host
    http, basic = client(), "Basic " + base64.b64encode(f"bot:{SECRET}".encode()).decode()
    fetched = http.get(files_url(index, "/files/toy-1.0.tar.gz", userinfo=f"bot:{SECRET}@"), what="toy", limit=10**6)
    assert fetched.body == content and SECRET not in fetched.url
    assert http.get(files_url(index, "/elsewhere", userinfo=f"bot:{SECRET}@"), what="toy", limit=10**6).body == content
    with pytest.raises(SourceUnavailable) as refused:
        http.get(files_url(index, "/files/none.tar.gz", userinfo=f"bot:{SECRET}@"), what="none", limit=100)
    assert "HTTP 404" in str(refused.value) and SECRET not in str(refused.value)
    assert [(a.path, a.authorization) for a in index.settled().log] == [
        ("/files/toy-1.0.tar.gz", basic), ("/elsewhere", basic), ("/files/toy-1.0.tar.gz", None),
        ("/files/none.tar.gz", basic)]


def test_the_environments_proxy_is_used_unless_no_proxy_names_the_host(index, monkeypatch):
    content = sdist()
    index.add("toy", "toy-1.0.tar.gz", content)
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", files_url(index, "", host="localhost", userinfo=f"agent:{SECRET}@"))
    http, url = client(), files_url(index, "/files/toy-1.0.tar.gz")
    src = source(index, http=http)
    assert src.open(only_release(src)).read("toy/core.py") == CORE
    assert http.get(url, what="toy", limit=len(content)).body == content
    basic = "Basic " + base64.b64encode(f"agent:{SECRET}".encode()).decode()
    assert index.settled().proxied == [(index.url + "/toy/", basic), (url, basic), (url, basic)]
    monkeypatch.setenv("no_proxy", "127.0.0.1")  # read at each request, as urllib did
    assert http.get(url, what="toy", limit=len(content)).body == content
    assert len(index.proxied) == 3



def test_https_keeps_one_connection_and_refuses_a_certificate_it_cannot_verify(certificate):
    content = make_wheel({"toy/core.py": CORE}, "toy", "1.0")
    with IndexServer(certificate=certificate) as index:
        index.add("toy", "toy-1.0-py3-none-any.whl", content)
        url = index.url.removesuffix("/simple") + "/files/toy-1.0-py3-none-any.whl"
        trusting = HttpClient(timeout=2.0, attempts=3, backoff=0.01, cafile=certificate[0])
        assert [trusting.get_range(url, n, 10, what="toy").body for n in range(5)] == [
            content[n:n + 10] for n in range(5)]
        assert len(index.connections) == 1
        with pytest.raises(SourceUnavailable, match=r"^toy: https://127.0.0.1:\d+/files/\S+: .*CERTIFICATE_VERIFY_FAILED"
                           ) as refused:
            HttpClient(timeout=2.0, attempts=3, backoff=0.01).get_range(url, 0, 10, what="toy")  # the system's CAs
        assert "tried" not in str(refused.value)  # no other attempt would trust it either
