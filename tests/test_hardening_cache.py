"""Caches and ledgers that hostile indexes and folders cannot poison (issue #32, "Caches and ledgers").

- the member store answers only what was verified: members read by range requests (checked against the wheel's
  own RECORD, the archive's digest never) are kept for the index URL they came from, never for the archive's
  sha256 that a hostile mirror can claim;
- the cache folders are never written through a link planted in them;
- a cache folder that is a file, or cannot be written, is a clear error (exit 3), not a traceback;
- a ledger larger than the reader accepts is never written;
- a zip's members have a total bound, as each member has one.

The index is tests/index_server.py on 127.0.0.1; everything is offline.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest

from verifier.kb import Engine
from verifier.ledger import folder as _folder
from verifier.sources import SourceUnavailable
from verifier.sources.archive import ArchiveError, ZipReader
from verifier.sources.archive import zip as _zip
from verifier.sources.pypi import HttpClient, PyPISource

from .conftest import SCHED_PY, run_cli
from .index_server import IndexServer, make_sdist, make_wheel

TOY = Engine(key="toy", name="Toy", package="toy", repository="https://git.invalid/toy/toy", tag_pattern="v{version}")
FAST = HttpClient(timeout=2.0, attempts=3, backoff=0.01)
HONEST = b"def schedule(queue):\n    return queue.pop()\n"
HOSTILE = b"def schedule(queue):\n    return queue.pop(0)  # planted\n"
WHEEL = "toy-1.0-py3-none-any.whl"


@pytest.fixture(autouse=True)
def local(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("no_proxy", "NO_PROXY"):  # the test index is local, whatever proxy the machine has
        monkeypatch.setenv(name, "127.0.0.1")
    return tmp_path / "cache"


def page(served: bytes, claimed_sha: str) -> bytes:
    """A project page listing `WHEEL` with the digest `claimed_sha` and the size of the bytes actually served."""
    return json.dumps({"meta": {"api-version": "1.1"}, "name": "toy", "files": [
        {"filename": WHEEL, "url": f"../../files/{WHEEL}", "hashes": {"sha256": claimed_sha},
         "size": len(served), "upload-time": "2024-05-06T07:08:09Z"}]}).encode()


def read_core(index: IndexServer) -> bytes | None:
    src = PyPISource(TOY, index_url=index.url, http=FAST)
    [release] = src.releases()
    return src.open(release).read("toy/core.py")


# -- 1. the member store answers what was verified -----------------------------------------------------

def test_members_a_hostile_mirror_served_by_ranges_are_never_answered_for_the_honest_index():
    honest = make_wheel({"toy/core.py": HONEST}, "toy", "1.0")
    hostile = make_wheel({"toy/core.py": HOSTILE}, "toy", "1.0")  # its RECORD agrees with its own member
    honest_sha = hashlib.sha256(honest).hexdigest()
    with IndexServer() as mirror:
        mirror.add("toy", WHEEL, hostile)
        mirror.pages["toy"] = page(hostile, honest_sha)  # claims the honest wheel's digest
        assert read_core(mirror) == HOSTILE  # read by ranges: only RECORD can be checked
        assert all(a.range for a in mirror.answers_for(WHEEL))
    with IndexServer() as honest_index:
        honest_index.add("toy", WHEEL, honest)
        assert read_core(honest_index) == HONEST
        assert honest_index.answers_for(WHEEL), "the honest wheel was not read: the store answered"


def test_members_read_by_ranges_are_still_reused_for_the_same_index():
    wheel = make_wheel({"toy/core.py": HONEST}, "toy", "1.0")
    with IndexServer() as index:
        index.add("toy", WHEEL, wheel)
        assert read_core(index) == HONEST
        before = len(index.answers_for(WHEEL))
        assert read_core(index) == HONEST
        assert len(index.answers_for(WHEEL)) == before  # answered from the store


def test_members_of_a_wheel_downloaded_whole_and_verified_are_reused_from_any_index():
    wheel = make_wheel({"toy/core.py": HONEST}, "toy", "1.0")
    with IndexServer(range_support=False) as index:
        index.add("toy", WHEEL, wheel)
        assert read_core(index) == HONEST
    with IndexServer() as other:
        other.add("toy", WHEEL, wheel)
        assert read_core(other) == HONEST
        assert not other.answers_for(WHEEL)  # the store (or the verified download) answered


# -- 2. no write through a link planted in the cache ----------------------------------------------------

def sdist_index(index: IndexServer, monkeypatch) -> None:
    index.add("vllm", "vllm-0.1.0.tar.gz", make_sdist({"pkg/sched.py": SCHED_PY.encode(), "setup.py": b""},
                                                      top="vllm-0.1.0"))
    monkeypatch.setenv("PIP_INDEX_URL", index.url)


def everything_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("planted", ["members", "archives", "members/blobs"])
def test_a_link_planted_in_the_cache_folder_is_never_written_through(kb, tmp_path, local, monkeypatch, capsys,
                                                                       planted):
    outside = tmp_path / "outside"
    outside.mkdir()
    (local / planted).parent.mkdir(parents=True, exist_ok=True)
    (local / planted).symlink_to(outside, target_is_directory=True)
    with IndexServer() as index:
        sdist_index(index, monkeypatch)
        code, _, err = run_cli(capsys, "verify", "--source", "pypi")
    assert everything_under(outside) == []
    assert code == 3 and "Traceback" not in err
    assert f"cache folder {local / planted}" in err and "symbolic link" in err and "GOTCHAS_CACHE_DIR" in err


# -- 3. a cache folder that cannot be used is a clear error ----------------------------------------------

def unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create anything in (root ignores modes: a read-only system folder then)."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    for candidate in ("/sys/fs", "/proc/sys"):
        try:
            os.mkdir(os.path.join(candidate, "gotchas-probe"))
        except OSError:
            return Path(candidate)
        os.rmdir(os.path.join(candidate, "gotchas-probe"))
    pytest.skip("no folder this process cannot write")


@pytest.mark.parametrize("kind", ["file", "read-only"])
def test_a_cache_folder_that_is_a_file_or_read_only_is_a_clear_error(kb, tmp_path, monkeypatch, capsys, kind):
    if kind == "file":
        cache = tmp_path / "a-file"
        cache.write_text("not a folder")
    else:
        cache = unwritable_folder(tmp_path)
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(cache))
    with IndexServer() as index:
        sdist_index(index, monkeypatch)
        code, _, err = run_cli(capsys, "verify", "--source", "pypi")
    assert code == 3, err
    assert "Traceback" not in err
    assert f"cache folder {cache}" in err and "set GOTCHAS_CACHE_DIR" in err
    if kind == "file":
        assert cache.read_text() == "not a folder"


# -- 4. the ledger's size is bounded when it is written --------------------------------------------------

def test_a_ledger_larger_than_the_reader_takes_is_not_written_and_the_old_one_stays(tmp_path, monkeypatch):
    from verifier.ledger import EngineLedger, Ledger

    ledger = Ledger(tmp_path / "ledger")
    ledger.save(EngineLedger("vllm"))
    old = ledger.path("vllm").read_bytes()
    monkeypatch.setattr(_folder, "MAX_LEDGER_BYTES", len(old) - 1)
    with pytest.raises(_folder.LedgerError, match=r"not written: .* bytes, more than the .* a ledger file may hold"):
        ledger.save(EngineLedger("vllm"))
    assert ledger.path("vllm").read_bytes() == old
    assert [p.name for p in ledger.folder.iterdir()] == ["vllm.json"]


def test_verify_that_would_write_a_ledger_past_the_bound_ends_with_a_clear_message_and_keeps_the_old(
        kb, monkeypatch, capsys):
    with IndexServer() as index:
        sdist_index(index, monkeypatch)
        assert run_cli(capsys, "verify", "--source", "pypi")[0] == 0
        old = (kb / "ledger" / "vllm.json").read_bytes()
        for version in ("0.2.0", "0.3.0"):  # more releases: the ledger grows past the (small) bound
            index.add("vllm", f"vllm-{version}.tar.gz", make_sdist({"pkg/sched.py": SCHED_PY.encode()},
                                                                  top=f"vllm-{version}"))
        monkeypatch.setattr(_folder, "MAX_LEDGER_BYTES", len(old) + 10)
        code, _, err = run_cli(capsys, "verify", "--source", "pypi")
    assert code == 3 and "Traceback" not in err
    assert "vllm.json: not written" in err and "a ledger file may hold" in err
    assert (kb / "ledger" / "vllm.json").read_bytes() == old
    assert run_cli(capsys, "show", "ops-example")[0] == 0  # the ledger every command reads is still readable


# -- 5. a zip's members have a total bound ---------------------------------------------------------------

def zip_of(members: dict[str, bytes]) -> bytes:
    import io

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()


def reader(data: bytes) -> ZipReader:
    return ZipReader(lambda start, length: data[start:start + length], len(data))


def test_the_members_of_one_zip_read_in_total_are_bounded(monkeypatch):
    monkeypatch.setattr(_zip, "MAX_ZIP_TOTAL", 3000)
    data = zip_of({f"pkg/m{i}.py": b"x" * 1000 for i in range(5)})
    with pytest.raises(ArchiveError, match=r"more than 3000 bytes .* in total"):
        reader(data).read_members({f"pkg/m{i}.py" for i in range(5)})
    found = reader(data).read_members({"pkg/m0.py", "pkg/m1.py"})  # under the bound: read
    assert set(found.contents) == {"pkg/m0.py", "pkg/m1.py"}


def test_a_wheel_past_the_total_bound_is_the_sources_error(monkeypatch):
    monkeypatch.setattr(_zip, "MAX_ZIP_TOTAL", 3000)
    files = {f"toy/m{i}.py": b"y" * 1000 for i in range(5)}
    with IndexServer() as index:
        index.add("toy", WHEEL, make_wheel(files, "toy", "1.0"))
        src = PyPISource(TOY, index_url=index.url, http=FAST)
        [release] = src.releases()
        snapshot = src.open(release)
        with pytest.raises(SourceUnavailable, match="in total"):
            snapshot.prefetch([f"toy/m{i}.py" for i in range(5)])
