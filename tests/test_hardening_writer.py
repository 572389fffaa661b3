"""One atomic writer for every file the tool writes whole (`safety.replace_file`): the ledger's files and the member
store's blobs and manifests get the guarantees an entry's write has. A folder on the way swapped for a symbolic link
after it was checked is refused, not written through; a write that fails (a file-size limit) leaves the old file
byte-identical and no temporary file; a temporary file left by a killed run is removed by the ledger's next write."""

from __future__ import annotations

import hashlib
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verifier.cache import CacheFolderError
from verifier.ledger import EngineLedger, Ledger, LedgerError, ReleaseRecord
from verifier.ledger import folder as _folder
from verifier.sources.archive import store as _store
from verifier.sources.archive.members import Members

from .conftest import child_env

#: A ledger whose file is some 3 KB, where the empty one is 60 bytes: a write of it hits a 1 KiB file-size limit.
BIG = "EngineLedger('vllm', {'0.1.0': ReleaseRecord(date='2024-01-01', source='pypi:' + 'x' * 3000)})"


def swap_for_a_link(folder: Path, outside: Path) -> None:
    """What a hostile hand does between the check of `folder` and the write into it."""
    os.rename(folder, folder.with_name(folder.name + ".moved"))
    folder.symlink_to(outside, target_is_directory=True)


def limited_child(script: str, limit: int, *, killed: bool = False) -> subprocess.CompletedProcess:
    """`script` in a child Python whose files may hold at most `limit` bytes: a write past it fails with EFBIG, or
    (`killed`) kills the child with SIGXFSZ mid-write."""
    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    code = textwrap.dedent(script)
    if killed:  # Python ignores SIGXFSZ from its start (a write past the limit is EFBIG); this child does not
        code = "import signal; signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n" + code
    return subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True,
                          timeout=60, preexec_fn=limit_files)  # noqa: PLW1509 (the child starts no thread first)


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(".") and p.name != ".lock")


# --- 1. the ledger -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("swapped", ["ledger", "evidence"])
def test_a_ledger_folder_swapped_for_a_link_before_the_write_is_refused_and_nothing_is_written_outside(
        tmp_path, monkeypatch, swapped):
    ledger = Ledger(tmp_path / "ledger")
    ledger.save(EngineLedger("vllm"))
    ledger.save_evidence({"engine": "vllm", "version": None, "checks": {}})
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = ledger.folder if swapped == "ledger" else ledger.folder / "evidence"
    render = "ledger_text" if swapped == "ledger" else "evidence_text"
    real_render = getattr(_folder, render)

    def render_then_swap(*args, **kwargs):  # the path is checked by now; the write is still to come
        swap_for_a_link(folder, outside)
        return real_render(*args, **kwargs)

    monkeypatch.setattr(_folder, render, render_then_swap)
    with pytest.raises(LedgerError, match="on its way, which is a symbolic link; refusing to write through it"):
        if swapped == "ledger":
            ledger.save(EngineLedger("vllm", {"0.1.0": ReleaseRecord(date="2024-01-01")}))
        else:
            ledger.save_evidence({"engine": "vllm", "version": None, "checks": {}})
    assert list(outside.iterdir()) == []


def test_a_ledger_write_past_a_file_size_limit_leaves_the_old_file_and_no_temporary(tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    ledger.save(EngineLedger("vllm"))
    before = ledger.path("vllm").read_bytes()
    done = limited_child(f"""
        from verifier.ledger import EngineLedger, Ledger, LedgerError, ReleaseRecord
        try:
            Ledger({str(ledger.folder)!r}).save({BIG})
        except LedgerError as exc:
            print(exc)
        """, limit=1024)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{ledger.path('vllm')}: cannot write: File too large; it is unchanged"
    assert ledger.path("vllm").read_bytes() == before
    assert temporaries(ledger.folder) == []


def test_a_temporary_file_left_by_a_killed_write_is_removed_by_the_next_one(tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    ledger.save(EngineLedger("vllm"))
    before = ledger.path("vllm").read_bytes()
    done = limited_child(f"""
        from verifier.ledger import EngineLedger, Ledger, ReleaseRecord
        Ledger({str(ledger.folder)!r}).save({BIG})
        """, limit=1024, killed=True)
    assert done.returncode == -signal.SIGXFSZ, done.stderr
    left = temporaries(ledger.folder)
    assert len(left) == 1 and left[0].startswith(".vllm.") and left[0].endswith(".tmp")  # killed mid-write
    assert ledger.path("vllm").read_bytes() == before
    other = ledger.folder / ".sglang.json.0123456789ab.tmp"  # another engine's: not this write's to remove
    other.write_text("{")
    ledger.save(EngineLedger("vllm", {"0.1.0": ReleaseRecord(date="2024-01-01")}))
    assert temporaries(ledger.folder) == [other.name]
    assert ledger.load("vllm").versions() == ["0.1.0"]


def test_a_rewritten_ledger_file_keeps_its_mode(tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    ledger.save(EngineLedger("vllm"))
    ledger.path("vllm").chmod(0o640)
    ledger.save(EngineLedger("vllm", {"0.1.0": ReleaseRecord(date="2024-01-01")}))
    assert ledger.load("vllm").versions() == ["0.1.0"]
    assert oct(ledger.path("vllm").stat().st_mode & 0o777) == oct(0o640)


# --- 2. the member store -------------------------------------------------------------------------------------


CONTENT = b"def schedule():\n    return 1\n"
SHA = hashlib.sha256(CONTENT).hexdigest()


@pytest.mark.parametrize("swapped", ["", "blobs", f"blobs/{SHA[:2]}"])
def test_a_store_folder_swapped_for_a_link_after_its_check_is_refused_and_nothing_is_written_outside(
        tmp_path, monkeypatch, swapped):
    store = _store.MemberStore(tmp_path / "members")
    outside = tmp_path / "outside"
    outside.mkdir()
    real_check = _store.real_folder
    swaps = []

    def check_then_swap(base, *parts):
        checked = real_check(base, *parts)
        if "/".join(parts) == f"blobs/{SHA[:2]}" and not swaps:  # checked; the write is still to come
            swaps.append(swapped)
            swap_for_a_link(store.folder / swapped if swapped else store.folder, outside)
        return checked

    monkeypatch.setattr(_store, "real_folder", check_then_swap)
    with pytest.raises(CacheFolderError, match=f"^cache folder {store.folder}: blobs/{SHA[:2]}/{SHA} has .* on its "
                                               "way, which is a symbolic link; refusing to write through it; set "
                                               "GOTCHAS_CACHE_DIR"):
        store.keep("a" * 64, Members(frozenset({"pkg/sched.py"}), {"pkg/sched.py": CONTENT}))
    assert swaps and list(outside.iterdir()) == []


def test_a_store_write_past_a_file_size_limit_leaves_the_old_manifest_and_no_temporary(tmp_path):
    store = _store.MemberStore(tmp_path / "members")
    store.keep("a" * 64, Members(frozenset({"pkg/sched.py"}), {"pkg/sched.py": CONTENT}))
    manifest = store.folder / f"{'a' * 64}.json.z"
    before = manifest.read_bytes()
    done = limited_child(f"""
        import hashlib
        from pathlib import Path
        from verifier.sources.archive.members import Members
        from verifier.sources.archive.store import MemberStore
        names = frozenset(hashlib.sha256(str(i).encode()).hexdigest() for i in range(5000))  # a manifest of 100 KB
        MemberStore(Path({str(store.folder)!r})).keep("a" * 64, Members(names | {{"new.py"}}, {{"new.py": b"new"}}))
        """, limit=16 << 10)
    assert done.returncode == 0, done.stderr  # a failed write of the store only costs a later re-read
    assert manifest.read_bytes() == before
    assert store._blob_path(hashlib.sha256(b"new").hexdigest()).is_file()  # the limit was met at the manifest
    assert temporaries(store.folder) == []
    assert store.answer("a" * 64, {"pkg/sched.py"}).contents == {"pkg/sched.py": CONTENT}
