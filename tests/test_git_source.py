"""The git source against small repositories built in temporary folders (offline)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from verifier.cache import cache_dir
from verifier.kb import Engine
from verifier.model import Release
from verifier.sources import SourceUnavailable
from verifier.sources.git import GitSource
from verifier.sources.git import snapshot as _git_snapshot

from .gitrepo import GitRepo

ENGINE = Engine(key="vllm", name="vLLM", package="vllm", repository="https://github.com/vllm-project/vllm",
                tag_pattern="v{version}")

ENGINE_V1 = "MAX = 1\n"
ENGINE_V2 = "MAX = 2\n"
ENGINE_V3 = "MAX = 3\n"
CONFIG = "class Config:\n    pass\n"


pytestmark = pytest.mark.usefixtures("isolated_git")


@dataclass
class History:
    repo: GitRepo
    first: str  # v0.9.0, v0.9.1 (a tag of a tag)
    second: str  # v0.10.0 (annotated)
    third: str  # v0.10.1rc1, v0.13.0.dev1; config moved, links added


@pytest.fixture(scope="module")
def built_history(tmp_path_factory) -> History:
    repo = GitRepo(tmp_path_factory.mktemp("history") / "upstream")
    repo.write("README.md", "engine\n")
    repo.write("vllm/engine.py", ENGINE_V1)
    repo.write("vllm/config.py", CONFIG)
    first = repo.commit("first", date="2024-01-10T12:00:00+00:00")
    repo.tag("v0.9.0")
    repo.tag("base", message="an annotated tag outside the pattern")
    repo.tag("v0.9.1", target="base", message="a tag of a tag")

    repo.write("vllm/engine.py", ENGINE_V2)
    second = repo.commit("second", date="2024-02-20T23:30:00-05:00")
    repo.tag("v0.10.0", message="release 0.10.0")

    repo.write("vllm/engine.py", ENGINE_V3)
    repo.move("vllm/config.py", "vllm/config/base.py")
    repo.symlink("vllm/link.py", "engine.py")
    repo.symlink("vllm/linked_dir", "config")
    repo.embedded_repository("vendor/lib")
    third = repo.commit("third", date="2024-03-05T08:00:00+00:00")
    repo.tag("v0.10.1rc1")
    repo.tag("v0.13.0.dev1")
    repo.tag("nightly")
    repo.tag("v2.0.0-not-pep440")
    repo.tag("v0.11.0", target="HEAD:README.md")
    repo.tag("v0.11.1", target="HEAD:README.md", message="an annotated tag of a blob")
    repo.tag("v0.12.0", target="HEAD^{tree}")
    return History(repo, first, second, third)


@pytest.fixture
def history(built_history, tmp_path) -> History:
    """A copy of the history that a test may change."""
    copy = tmp_path / "upstream"
    shutil.copytree(built_history.repo.path, copy, symlinks=True)
    return History(GitRepo.existing(copy), built_history.first, built_history.second, built_history.third)


def source_of(history: History, **options) -> GitSource:
    return GitSource(ENGINE, str(history.repo.path), **options)


def release(source: GitSource, version: str) -> Release:
    return next(r for r in source.releases() if r.version == version)


# -- releases ----------------------------------------------------------------------------------

def test_releases_are_the_matching_tags_in_pep440_order(history):
    with source_of(history) as source:
        assert [r.version for r in source.releases()] == ["0.9.0", "0.9.1", "0.10.0"]


def test_prereleases_are_listed_only_when_asked(history):
    with source_of(history, include_prereleases=True) as source:
        assert [r.version for r in source.releases()] == ["0.9.0", "0.9.1", "0.10.0", "0.10.1rc1", "0.13.0.dev1"]


@pytest.fixture
def local_time_behind_utc(monkeypatch):
    """A local clock ten hours behind UTC, so that a local date and a UTC date differ."""
    monkeypatch.setenv("TZ", "HST10")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_release_is_its_tagged_commit_with_date_and_url(history, local_time_behind_utc):
    with source_of(history) as source:
        releases = {r.version: r for r in source.releases()}
    assert releases["0.9.0"] == Release("vllm", "0.9.0", date="2024-01-10", identity=history.first,
                                        url="https://github.com/vllm-project/vllm/tree/v0.9.0")
    assert releases["0.9.1"].identity == history.first  # peeled through two tag objects
    assert releases["0.10.0"].identity == history.second  # the commit, not the tag object
    assert releases["0.10.0"].identity != history.repo.rev("refs/tags/v0.10.0")
    assert releases["0.10.0"].date == "2024-02-21"  # the committer date, in UTC


def test_two_tags_of_one_version_give_one_release(tmp_path):
    repo = GitRepo(tmp_path / "twice")
    older = repo.commit("older")
    repo.tag("v1.0")
    repo.commit("newer")
    repo.tag("v1.0.0")
    with GitSource(ENGINE, str(repo.path)) as source:
        assert [(r.version, r.identity) for r in source.releases()] == [("1.0", older)]


def test_a_repository_without_tags_has_no_releases(tmp_path):
    repo = GitRepo(tmp_path / "untagged")
    repo.commit("only")
    with GitSource(ENGINE, str(repo.path)) as source:
        assert source.releases() == []


# -- reading files -----------------------------------------------------------------------------

def test_a_file_reads_as_it_was_at_each_tag(history):
    with source_of(history) as source:
        assert source.open(release(source, "0.9.0")).read("vllm/engine.py") == ENGINE_V1.encode()
        assert source.open(release(source, "0.10.0")).read("vllm/engine.py") == ENGINE_V2.encode()


def test_a_moved_file_is_missing_at_its_old_path(history):
    with source_of(history, include_prereleases=True) as source:
        before = source.open(release(source, "0.10.0"))
        after = source.open(release(source, "0.10.1rc1"))
        assert before.read("vllm/config.py") == CONFIG.encode()
        assert before.read("vllm/config/base.py") is None
        assert after.read("vllm/config.py") is None
        assert after.read("vllm/config/base.py") == CONFIG.encode()


@pytest.mark.parametrize("path", ["vllm/missing.py", "missing/engine.py", "vllm", "vllm/engine.py/deeper"])
def test_what_is_not_a_file_reads_as_missing(history, path):
    with source_of(history) as source:
        snapshot = source.open(release(source, "0.9.0"))
        assert snapshot.read(path) is None
        assert snapshot.blob_id(path) is None


@pytest.mark.parametrize("path, refused", [
    ("vllm/link.py", "symbolic link"),
    ("vllm/linked_dir/base.py", "symbolic link"),
    ("vendor/lib", "submodule"),
    ("vendor/lib/setup.py", "submodule"),
])
def test_symlinks_and_submodules_are_refused(history, path, refused):
    with source_of(history, include_prereleases=True) as source:
        snapshot = source.open(release(source, "0.10.1rc1"))
        with pytest.raises(SourceUnavailable, match=refused):
            snapshot.read(path)


@pytest.mark.parametrize("path", ["", "../upstream/README.md", "/etc/passwd", "vllm//engine.py", "./README.md"])
def test_paths_that_are_not_confined_are_refused(history, path):
    with source_of(history) as source:
        with pytest.raises(SourceUnavailable):
            source.open(release(source, "0.9.0")).read(path)


def test_blob_id_is_the_git_content_hash(history):
    with source_of(history) as source:
        old = source.open(release(source, "0.9.0"))
        new = source.open(release(source, "0.10.0"))
        assert old.blob_id("vllm/engine.py") == history.repo.rev("v0.9.0:vllm/engine.py")
        assert old.blob_id("vllm/engine.py") != new.blob_id("vllm/engine.py")
        assert old.blob_id("vllm/config.py") == new.blob_id("vllm/config.py")


def test_a_file_over_the_size_limit_is_unavailable(history, monkeypatch):
    monkeypatch.setattr(_git_snapshot, "MAX_FILE_BYTES", len(ENGINE_V1) - 1)
    with source_of(history) as source:
        snapshot = source.open(release(source, "0.9.0"))
        with pytest.raises(SourceUnavailable, match="limit"):
            snapshot.read("vllm/engine.py")
        assert snapshot.read("README.md") == b"engine\n"


def test_a_corrupt_object_is_unavailable_not_missing(history):
    blob = history.repo.rev("v0.10.0:vllm/engine.py")
    corrupt = history.repo.object_file(blob)
    corrupt.chmod(0o644)
    corrupt.write_bytes(b"not a zlib stream")
    with source_of(history) as source:
        snapshot = source.open(release(source, "0.10.0"))
        with pytest.raises(SourceUnavailable, match="could not read") as corrupt_read:
            snapshot.read("vllm/engine.py")
        assert blob in str(corrupt_read.value)
        assert snapshot.read("README.md") == b"engine\n"  # cat-file was restarted, in step


# -- opening releases and commits ---------------------------------------------------------------

def test_an_unknown_tag_is_unavailable(history):
    with source_of(history) as source:
        with pytest.raises(SourceUnavailable, match="no tag v9.9.9"):
            source.open(Release("vllm", "9.9.9"))


def test_a_release_without_a_commit_identity_opens_by_its_tag(history):
    archive_digest = "ab" * 32
    with source_of(history) as source:
        snapshot = source.open(Release("vllm", "0.9.0", identity=archive_digest))
        assert snapshot.commit == history.first
        assert snapshot.read("vllm/engine.py") == ENGINE_V1.encode()


def test_open_commit_reads_any_commit(history):
    with source_of(history) as source:
        snapshot = source.open_commit(history.second[:10])
        assert snapshot.commit == history.second
        assert snapshot.release.identity == history.second
        assert snapshot.release.date == "2024-02-21"
        assert snapshot.read("vllm/engine.py") == ENGINE_V2.encode()


@pytest.mark.parametrize("revision", ["0" * 40, "no-such-branch", "--output=written-by-git"])
def test_open_commit_of_an_unknown_revision_is_unavailable(history, revision):
    with source_of(history) as source:
        with pytest.raises(SourceUnavailable, match="no commit"):
            source.open_commit(revision)
    assert not (history.repo.path / "written-by-git").exists()


def test_commits_touching_a_path_oldest_first(history):
    with source_of(history) as source:
        assert source.commits_touching("vllm/engine.py", history.first, history.third) == [history.second,
                                                                                          history.third]
        assert source.commits_touching("vllm/config.py", "v0.9.0", "v0.10.1rc1") == [history.third]
        assert source.commits_touching("README.md", history.first, history.third) == []
        with pytest.raises(SourceUnavailable, match="no commit"):
            source.commits_touching("README.md", "--output=written-by-git", history.third)
    assert not (history.repo.path / "written-by-git").exists()


# -- where the repository is --------------------------------------------------------------------

def test_a_folder_that_is_not_a_repository_is_unavailable(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(SourceUnavailable, match="not a git repository"):
        GitSource(ENGINE, str(tmp_path / "plain")).releases()
    with pytest.raises(SourceUnavailable, match="no such directory"):
        GitSource(ENGINE, str(tmp_path / "absent")).releases()


def test_a_bare_repository_is_read_in_place(history, tmp_path):
    bare = tmp_path / "bare.git"
    history.repo.git("clone", "--quiet", "--bare", str(history.repo.path), str(bare))
    with GitSource(ENGINE, str(bare)) as source:
        assert source.open(release(source, "0.10.0")).read("vllm/engine.py") == ENGINE_V2.encode()
    assert not any(cache_dir("git").iterdir())


def git_in(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_a_url_is_cloned_once_into_the_cache_as_a_blobless_bare_clone(history):
    history.repo.allow_partial_clones()
    with GitSource(ENGINE, history.repo.url) as source:
        assert [r.version for r in source.releases()] == ["0.9.0", "0.9.1", "0.10.0"]
        (clone,) = cache_dir("git").iterdir()
        assert git_in(clone, "rev-parse", "--is-bare-repository") == "true"
        assert git_in(clone, "config", "remote.origin.partialclonefilter") == "blob:none"
        blob = history.repo.rev("v0.10.0:vllm/engine.py")
        assert f"?{blob}" in git_in(clone, "rev-list", "--objects", "--missing=print", "--all").split()
        assert source.open(release(source, "0.10.0")).read("vllm/engine.py") == ENGINE_V2.encode()
        assert source.warning is None

    (clone / "marker").write_text("this clone")
    history.repo.tag("v0.10.2", target=history.second)
    with GitSource(ENGINE, history.repo.url) as again:
        assert "0.10.2" in [r.version for r in again.releases()]
        assert again.warning is None
    assert list(cache_dir("git").iterdir()) == [clone]
    assert (clone / "marker").exists()


def test_a_failed_fetch_keeps_the_clone_and_warns(history, tmp_path):
    history.repo.allow_partial_clones()
    url = history.repo.url
    with GitSource(ENGINE, url) as source:
        source.releases()
    history.repo.path.rename(tmp_path / "gone")
    with GitSource(ENGINE, url) as offline:
        assert [r.version for r in offline.releases()] == ["0.9.0", "0.9.1", "0.10.0"]
        assert "could not fetch new tags" in offline.warning
        snapshot = offline.open(release(offline, "0.10.0"))
        assert snapshot.read("vllm/absent.py") is None  # trees came with the clone
        with pytest.raises(SourceUnavailable, match="could not read") as unfetched:
            snapshot.read("vllm/engine.py")  # a blob never fetched, from a remote that is gone
        assert "fatal:" in str(unfetched.value)  # git's own words, not GitPython's guess


def test_a_failed_clone_is_unavailable_and_leaves_nothing_behind(tmp_path):
    source = GitSource(ENGINE, (tmp_path / "absent").as_uri())
    with pytest.raises(SourceUnavailable, match="cannot clone"):
        source.releases()
    assert list(cache_dir("git").iterdir()) == []


# -- processes ----------------------------------------------------------------------------------

def git_children() -> dict[int, str]:
    """This process's git children by pid, with their command lines ("<exited>" for zombies)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        state, parent = text[text.rindex(")") + 2:].split()[:2]
        if int(parent) == os.getpid() and name == "git":
            found[int(stat.parent.name)] = command if state != "Z" else "<exited>"
    return found


def started_since(before: dict[int, str]) -> list[str]:
    """Git processes started since `before` that are still there (other tests' leftovers aside)."""
    return [command for pid, command in git_children().items() if pid not in before]


linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes through /proc")


@linux_only
def test_closing_the_source_ends_every_git_process(history):
    before = git_children()
    source = source_of(history)
    first = source.open(release(source, "0.9.0"))
    second = source.open(release(source, "0.10.0"))
    assert first.read("vllm/engine.py") and second.read("vllm/engine.py")
    assert any("cat-file" in command for command in started_since(before))
    source.close()
    assert started_since(before) == []
    with pytest.raises(SourceUnavailable, match="closed"):
        second.read("README.md")
    assert started_since(before) == []


@linux_only
def test_closing_a_snapshot_ends_its_git_processes(history):
    before = git_children()
    with source_of(history) as source:
        with source.open(release(source, "0.9.0")) as snapshot:
            snapshot.read("vllm/engine.py")
            assert any("cat-file" in command for command in started_since(before))
        assert started_since(before) == []
        with pytest.raises(SourceUnavailable, match="closed"):
            snapshot.read("README.md")
        assert source.open(release(source, "0.10.0")).read("vllm/engine.py") == ENGINE_V2.encode()
    assert started_since(before) == []


def test_paths_lists_regular_files_only(history):
    with source_of(history, include_prereleases=True) as source:
        assert source.open(release(source, "0.9.0")).paths() == ["README.md", "vllm/config.py", "vllm/engine.py"]
        later = source.open(release(source, "0.10.1rc1")).paths()
        assert "vllm/config/base.py" in later and "vllm/config.py" not in later
        assert "vllm/link.py" not in later and not any(p.startswith("vendor/") for p in later)


def test_digest_names_a_file_by_its_blob_without_reading_it(history, monkeypatch):
    with source_of(history) as source:
        first, same, later = (source.open(release(source, v)) for v in ("0.9.0", "0.9.1", "0.10.0"))
        reads = []
        real = type(source.repository().git).get_object_data
        monkeypatch.setattr(type(source.repository().git), "get_object_data",
                            lambda git, sha: reads.append(sha) or real(git, sha))
        digest = first.digest("vllm/engine.py")
        assert digest == "git-blob:" + first.blob_id("vllm/engine.py")
        assert same.digest("vllm/engine.py") == digest != later.digest("vllm/engine.py")
        assert first.digest("vllm/absent.py") is None
        blobs = {first.blob_id("vllm/engine.py"), later.blob_id("vllm/engine.py")}
        assert reads and not blobs & set(reads)  # trees were read, the files were not
        first.read("vllm/engine.py")
        assert first.blob_id("vllm/engine.py") in reads


@linux_only
def test_in_a_batch_closed_snapshots_leave_git_running_for_the_next_until_it_ends(history):
    before = git_children()
    with source_of(history) as source:
        with source.batch():
            with source.open(release(source, "0.9.0")) as first:
                first.read("vllm/engine.py")
            running = started_since(before)
            assert any("cat-file" in command for command in running)
            with source.open(release(source, "0.10.0")) as second:
                assert second.read("vllm/engine.py") == ENGINE_V2.encode()
            assert started_since(before) == running  # the same processes, not new ones
        assert started_since(before) == []
