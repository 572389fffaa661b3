"""Every source a command opens, and every snapshot of it, is closed on every way out: here an exception raised
half-way through `locate`, `bisect`, `trace`, `follow`, `verify`, `mutate` and `check`, each over a git source (a
source that holds git processes open), after a snapshot was opened."""

from __future__ import annotations

import pytest

from verifier.cli import main
from verifier.sources.git import GitSource

from . import test_bisect

#: The engine repository test_bisect builds: v0.1.0, then v0.2.0 with the breaking commit among others.
repo = test_bisect.repo

class Boom(Exception):
    """The failure raised half-way: no command catches it."""


@pytest.fixture
def opened(monkeypatch):
    """Every GitSource used and every snapshot opened, with whether it was closed: (sources, snapshots), each a
    list of [thing, closed]."""
    sources: list[list] = []
    snapshots: list[list] = []
    releases, close = GitSource.releases, GitSource.close

    def seen(source):
        if not any(item[0] is source for item in sources):
            sources.append([source, False])

    def listed(self):
        seen(self)
        return releases(self)

    def closed(self):
        seen(self)
        for item in sources:
            if item[0] is self:
                item[1] = True
        close(self)

    def opening(original):
        def open_(self, *args):
            seen(self)
            snapshot = original(self, *args)
            item = [snapshot, False]
            snapshots.append(item)
            snapshot_close = snapshot.close

            def close_snapshot():
                item[1] = True
                snapshot_close()
            snapshot.close = close_snapshot
            return snapshot
        return open_

    monkeypatch.setattr(GitSource, "releases", listed)
    monkeypatch.setattr(GitSource, "close", closed)
    monkeypatch.setattr(GitSource, "open", opening(GitSource.open))
    monkeypatch.setattr(GitSource, "open_commit", opening(GitSource.open_commit))
    return sources, snapshots


def _all_closed(opened, snapshot_needed: bool = True) -> None:
    sources, snapshots = opened
    assert sources, "the command used no git source: the test no longer reaches what it tests"
    assert not snapshot_needed or snapshots, "no snapshot was opened before the failure"
    assert [s for s, closed in sources if not closed] == []
    assert [s for s, closed in snapshots if not closed] == []


def _boom(*args, **kwargs):
    raise Boom("half-way")


def test_trace_closes_its_source_and_snapshots_when_it_fails_half_way(kb, repo, opened, monkeypatch):
    from verifier import trace

    def opens_then_fails(entry, check, walker):
        walker.snapshot(walker.releases[-1])
        raise Boom("half-way")

    monkeypatch.setattr(trace, "trace_check", opens_then_fails)
    with pytest.raises(Boom):
        main(["trace", "ops-example", "zero", "--source", f"git:{repo.path}"])
    _all_closed(opened)


def test_verify_closes_its_source_and_snapshots_when_it_fails_half_way(kb, repo, opened, monkeypatch):
    from verifier import verify

    monkeypatch.setattr(verify, "_layout", _boom)  # after the release's snapshot is open
    with pytest.raises(Boom):
        main(["verify", "--source", f"git:{repo.path}"])
    _all_closed(opened)


def test_check_closes_its_source_and_snapshots_when_it_fails_half_way(kb, repo, opened, monkeypatch):
    from verifier import verify

    monkeypatch.setattr(verify, "_layout", _boom)
    with pytest.raises(Boom):
        main(["check", "--source", f"git:{repo.path}", "--release", "0.1.0"])
    _all_closed(opened)


def test_mutate_closes_its_source_and_snapshots_when_it_fails_half_way(kb, repo, opened, monkeypatch):
    from verifier import mutate

    monkeypatch.setattr(mutate, "mutate_entry", _boom)
    with pytest.raises(Boom):
        main(["mutate", "ops-example", "--source", f"git:{repo.path}", "--release", "0.1.0"])
    _all_closed(opened)


def test_follow_closes_its_source_and_snapshots_when_it_fails_half_way(kb, repo, opened, monkeypatch):
    from verifier import follow

    monkeypatch.setattr(follow, "_places", _boom)  # the two releases' snapshots are open then
    with pytest.raises(Boom):
        main(["follow", "--release", "0.2.0", "--source", f"git:{repo.path}"])
    _all_closed(opened)


def test_follow_write_closes_its_source_and_snapshots_when_it_fails_half_way(kb, repo, opened, monkeypatch):
    from verifier import follow

    monkeypatch.setattr(follow, "_places", _boom)
    with pytest.raises(Boom):
        main(["follow", "--release", "0.2.0", "--write", "--source", f"git:{repo.path}"])
    _all_closed(opened)


def test_locate_closes_its_source_and_snapshot_when_it_fails_half_way(kb, repo, opened, monkeypatch):
    from verifier import locate

    monkeypatch.setattr(locate, "read_files", _boom)
    with pytest.raises(Boom):
        main(["locate", "vllm", "Scheduler.preempt", "--source", f"git:{repo.path}", "--release", "0.1.0"])
    _all_closed(opened)


def test_bisect_closes_its_source_and_snapshots_when_it_fails_half_way(kb, repo, opened, monkeypatch):
    from verifier import bisect

    monkeypatch.setattr(bisect, "status", _boom)
    with pytest.raises(Boom):
        main(["bisect", "ops-example", "zero", "--source", f"git:{repo.path}", "--between", "0.1.0", "0.2.0"])
    _all_closed(opened)


# --- the library's own: what the command line is to call ---------------------------------------------------------

def _source(kb, repo) -> GitSource:
    from verifier import kb as kb_module

    return GitSource(kb_module.load(kb).engines["vllm"], str(repo.path))


def test_locate_in_owns_its_source(kb, repo, opened, monkeypatch):
    from verifier import locate

    found = locate.locate_in(_source(kb, repo), lambda source: source.releases()[0], "Scheduler.preempt")
    assert found.release.version == "0.1.0" and found.python_files == 2 and found.cpp_files == 0
    assert [str(p) for p in found.definitions or []] == ["pkg/sched.py:2-4 in Scheduler.preempt"]
    _all_closed(opened)
    monkeypatch.setattr(locate, "read_files", _boom)
    with pytest.raises(Boom):
        locate.locate_in(_source(kb, repo), lambda source: source.releases()[0], "Scheduler.preempt")
    _all_closed(opened)
    def no_such_release(source):
        raise LookupError("no release 9.9.9")

    with pytest.raises(LookupError):
        locate.locate_in(_source(kb, repo), no_such_release, "x")  # no release chosen: closed too
    _all_closed(opened)


def test_bisect_source_owns_its_source(kb, repo, opened, monkeypatch):
    from verifier import bisect
    from verifier.entries import load_entry

    check = next(c for c in load_entry(kb / "gotchas" / "ops-example.md").entry.checks if c.id == "zero")
    found = bisect.bisect_source(_source(kb, repo), check, [], ["0.1.0", "0.2.0"])
    assert found.flip is not None and found.result is not None and found.result.commit
    assert found.summary and "keep computed tokens" in found.summary
    _all_closed(opened)
    monkeypatch.setattr(bisect, "status", _boom)
    with pytest.raises(Boom):
        bisect.bisect_source(_source(kb, repo), check, [], ["0.1.0", "0.2.0"])
    _all_closed(opened)


def test_a_source_is_a_context_manager_that_closes_it(kb, repo, opened):
    with _source(kb, repo) as source:
        source.releases()
    _all_closed(opened, snapshot_needed=False)
