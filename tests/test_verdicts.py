"""The verdict cache: answers from memory, writes in batches, and lets a snapshot skip reading known files."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from verifier import verdicts as verdicts_module
from verifier.model import CHANGED, ERROR, HOLDS, Check, Verdict
from verifier.reading import FileCache, evaluate
from verifier.sources import Snapshot as Snapshot_
from verifier.verdicts import VerdictCache

SOURCE = b"class Scheduler:\n    def preempt(self, request):\n        request.num_computed_tokens = 0\n"
SHA = hashlib.sha256(SOURCE).hexdigest()
CHECK = Check("zero", "", "vllm", "pkg/sched.py", "contains", "request.num_computed_tokens = 0",
              scope="Scheduler.preempt")


class Snapshot(Snapshot_):
    """One file; counts reads; names its content by `identity` when given one."""

    def __init__(self, data: bytes | None, identity: str | None = None) -> None:
        self.data, self.identity, self.reads = data, identity, 0

    def read(self, path):
        self.reads += 1
        return self.data


class NamingSnapshot(Snapshot):
    def digest(self, path):
        return self.identity


def stored_rows(path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT check_fp, sha256 FROM verdicts").fetchall()


def test_verdicts_are_written_in_batches_and_survive_a_new_process(tmp_path):
    path = tmp_path / "v.sqlite3"
    cache = VerdictCache(path)
    verdict = evaluate(CHECK, Snapshot(SOURCE), FileCache(), cache)
    assert verdict.status == HOLDS and cache.misses == 1
    assert stored_rows(path) == []  # not written yet: one transaction per batch
    assert cache.get(CHECK, SHA) == verdict  # but known to this run
    cache.flush()
    assert stored_rows(path) == [(CHECK.fingerprint, SHA)]
    cache.close()

    again = VerdictCache(path)
    assert again.get(CHECK, SHA) == verdict and again.hits == 1
    again.close()


def test_close_writes_what_is_pending_and_a_full_batch_is_written_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(verdicts_module, "BATCH", 3)
    path = tmp_path / "v.sqlite3"
    cache = VerdictCache(path)
    for i in range(4):
        cache.put(CHECK, Verdict(HOLDS, path=CHECK.path, lines=(1, 1), file_sha=f"{i:064x}"))
    assert len(stored_rows(path)) == 3
    cache.close()
    assert len(stored_rows(path)) == 4


def test_errors_are_never_cached(tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite3")
    cache.put(CHECK, Verdict(ERROR, "unavailable", path=CHECK.path, file_sha=SHA))
    assert cache.get(CHECK, SHA) is None
    cache.close()
    assert stored_rows(tmp_path / "v.sqlite3") == []


def test_another_verifier_version_or_check_is_a_miss(tmp_path, monkeypatch):
    path = tmp_path / "v.sqlite3"
    cache = VerdictCache(path)
    cache.put(CHECK, Verdict(CHANGED, "not-found", path=CHECK.path, file_sha=SHA))
    cache.close()
    monkeypatch.setattr(verdicts_module, "SEMANTICS", "0.0.0-other")
    other = VerdictCache(path)
    assert other.get(CHECK, SHA) is None
    other.close()
    monkeypatch.undo()
    edited = Check(CHECK.id, "", "vllm", CHECK.path, "contains", "request.num_computed_tokens = 1",
                   scope=CHECK.scope)
    same = VerdictCache(path)
    assert same.get(edited, SHA) is None and same.get(CHECK, SHA).status == CHANGED
    same.close()


def test_a_damaged_row_is_a_miss_not_a_failure(tmp_path):
    path = tmp_path / "v.sqlite3"
    VerdictCache(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO verdicts VALUES (?, ?, ?, ?)",
                   (verdicts_module.SEMANTICS, CHECK.fingerprint, SHA, "{not json"))
    cache = VerdictCache(path)
    assert cache.get(CHECK, SHA) is None and cache.misses == 1
    assert evaluate(CHECK, Snapshot(SOURCE), FileCache(), cache).status == HOLDS
    cache.close()


def test_a_known_digest_spares_reading_the_file(tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite3")
    first = NamingSnapshot(SOURCE, "sha256:" + SHA)
    assert evaluate(CHECK, first, FileCache(), cache).status == HOLDS and first.reads == 1
    second = NamingSnapshot(SOURCE, "sha256:" + SHA)
    assert evaluate(CHECK, second, FileCache(), cache).status == HOLDS
    assert second.reads == 0
    other = NamingSnapshot(SOURCE.replace(b"= 0", b"= 1"), "sha256:" + "0" * 64)
    assert evaluate(CHECK, other, FileCache(), cache).status == CHANGED and other.reads == 1
    cache.close()


def test_a_source_identity_is_learnt_on_first_read_then_spares_reads(tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite3")
    first = NamingSnapshot(SOURCE, "git-blob:abc")
    evaluate(CHECK, first, FileCache(), cache)
    assert first.reads == 1 and cache.content_of("git-blob:abc") == SHA
    second = NamingSnapshot(SOURCE, "git-blob:abc")
    assert evaluate(CHECK, second, FileCache(), cache).status == HOLDS and second.reads == 0
    missing = NamingSnapshot(None, None)
    assert evaluate(CHECK, missing, FileCache(), cache).reason == "file-missing"
    cache.close()


def test_an_unopenable_cache_is_no_cache(tmp_path):
    cache = VerdictCache(tmp_path / "no-such-folder" / "v.sqlite3")
    assert evaluate(CHECK, Snapshot(SOURCE), FileCache(), cache).status == HOLDS
    assert cache.get(CHECK, SHA) is not None  # still remembered for the run
    cache.close()


def test_checks_on_a_file_already_parsed_do_not_read_it_again(tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite3")
    files = FileCache()
    other = Check("other", "", "vllm", CHECK.path, "defines", "Scheduler.preempt")
    first = NamingSnapshot(SOURCE, "git-blob:abc")
    assert evaluate(CHECK, first, files, cache).status == HOLDS and first.reads == 1
    # a new check (no verdict yet) on the same content: answered from the parsed file, not read again
    assert evaluate(other, first, files, cache).status == HOLDS and first.reads == 1
    assert cache.get(other, SHA) is not None
    cache.close()


def test_the_cache_key_follows_the_matching_code(tmp_path, monkeypatch):
    """Matching code edited without a new version (during development) must not meet the old answers."""
    import shutil

    from verifier import verdicts

    package = Path(verdicts.__file__).resolve().parent
    copy = tmp_path / "verifier"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(verdicts, "__file__", str(copy / "verdicts.py"))
    same = verdicts._semantics()
    (copy / "code" / "_fragments.py").write_text((copy / "code" / "_fragments.py").read_text() + "\n# edited\n")
    assert same == verdicts.SEMANTICS and verdicts._semantics() != same


def test_a_known_verdict_costs_no_evaluation_and_the_count_says_so(tmp_path):
    """`verifier.stats` counts each evaluation once, where it happens (what the benchmarks read): a verdict the
    cache knows is not evaluated again, and a content it does not know is."""
    from verifier import stats

    cache = VerdictCache(tmp_path / "v.sqlite3")
    stats.counts.clear()
    evaluate(CHECK, Snapshot(SOURCE), FileCache(), cache)
    assert stats.counts["evaluations"] == 1
    evaluate(CHECK, Snapshot(SOURCE), FileCache(), cache)
    assert stats.counts["evaluations"] == 1
    evaluate(CHECK, Snapshot(SOURCE.replace(b"= 0", b"= 1")), FileCache(), cache)
    assert stats.counts["evaluations"] == 2
    cache.close()
