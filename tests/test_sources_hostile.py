"""Hostile sources: index pages of the wrong shape, servers that trickle, files a checkout must not hand to checks.

Each ends as the source's error (`error` verdicts or an `error:` note, exit 3), never a traceback, a hang or a
secret in a hint; and the ledger stays as it was. The index is tests/index_server.py on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verifier.cli import main
from verifier.kb import Engine
from verifier.sources import SourceUnavailable
from verifier.sources.directory import DirectorySource
from verifier.sources.git import GitSource
from verifier.sources.pypi import MAX_INDEX_PAGE, HttpClient, PyPISource
from verifier.sources.pypi import http as _http

from .conftest import METRICS_PY, REPO, SCHED_PY, VALID_ENTRY, run_cli
from .gitrepo import ISOLATED_GIT_ENV, GitRepo
from .index_server import Faults, IndexServer, Trickle, make_sdist, make_wheel

TOY = Engine(key="toy", name="Toy", package="toy", repository="https://git.invalid/toy/toy", tag_pattern="v{version}")
#: A per-read timeout far above a trickle's interval: it is not what may stop a slow server.
PATIENT = {"timeout": 5.0, "attempts": 3, "backoff": 0.01}
DEADLINE = 0.5
#: A byte every 20 ms: every read is short, and a page or an archive takes many seconds.
LORIS = 0.02


@pytest.fixture(autouse=True)
def local(tmp_path, monkeypatch):
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("no_proxy", "NO_PROXY"):  # the test index is local, whatever proxy the machine has
        monkeypatch.setenv(name, "127.0.0.1")


def deadlines(monkeypatch, request: float = DEADLINE, download: float = DEADLINE) -> None:
    """Short deadlines, as every HttpClient (the CLI's too) reads them when a request starts."""
    monkeypatch.setattr(_http, "REQUEST_DEADLINE", request)
    monkeypatch.setattr(_http, "DOWNLOAD_DEADLINE", download)


def sdist(version: str) -> bytes:
    return make_sdist({"pkg/sched.py": SCHED_PY.encode(), "pkg/metrics.py": METRICS_PY.encode(), "setup.py": b""},
                      top=f"vllm-{version}")


#: The one healthy release; the same bytes in every test, so that one ledger of it serves them all.
HEALTHY = sdist("0.1.0")


@pytest.fixture
def index(kb, monkeypatch):
    with IndexServer() as server:
        server.add("vllm", "vllm-0.1.0.tar.gz", HEALTHY)
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        yield server


@pytest.fixture(scope="module")
def healthy_ledger(tmp_path_factory) -> Path:
    """The ledger folder of a run on the healthy index (one run for the module: tests copy it)."""
    root = tmp_path_factory.mktemp("healthy")
    (root / "kb" / "gotchas").mkdir(parents=True)
    for name in ("schemes.yaml", "severities.yaml", "concepts.yaml", "engines.yaml"):
        text = (REPO / "gotchas" / name).read_text()
        (root / "kb" / "gotchas" / name).write_text(re.sub(r"(?m)^  oldest: .*\n", "", text))
    (root / "kb" / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    with IndexServer() as server, pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(io.StringIO()):
        server.add("vllm", "vllm-0.1.0.tar.gz", HEALTHY)
        env.setenv("PIP_INDEX_URL", server.url)
        env.setenv("GOTCHAS_CACHE_DIR", str(root / "cache"))
        for name in ("no_proxy", "NO_PROXY"):
            env.setenv(name, "127.0.0.1")
        env.chdir(root / "kb")
        assert main(["verify", "--source", "pypi"]) in (0, 1)
    return root / "kb" / "ledger"


@pytest.fixture
def ledger(kb, index, healthy_ledger) -> bytes:
    """The ledger after a run on the healthy index: what every hostile run must leave as it is."""
    shutil.copytree(healthy_ledger, kb / "ledger")
    return (kb / "ledger" / "vllm.json").read_bytes()


# -- index pages of the wrong shape --------------------------------------------------------------------

def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def with_file(page: dict, **changes) -> dict:
    return {**page, "files": [{**page["files"][0], **changes}]}


def dumps(page: dict) -> bytes:
    return json.dumps(page).encode()


HOSTILE_PAGES = {
    "nested 50,000 deep": lambda page: nested(50_000),
    "nested deep inside a page": lambda page: dumps({**page, "x": 0}).replace(b'"x": 0', b'"x": ' + nested(50_000)),
    "files is an object": lambda page: dumps({**page, "files": {"0": page["files"][0]}}),
    "a file is a string": lambda page: dumps({**page, "files": [page["files"][0]["filename"]]}),
    "a url is a number": lambda page: dumps(with_file(page, url=7)),
    "hashes is a string": lambda page: dumps(with_file(page, hashes="sha256=" + page["files"][0]["hashes"]["sha256"])),
    "a digest is a number": lambda page: dumps(with_file(page, hashes={"md5": 5, **page["files"][0]["hashes"]})),
    "a size is a string": lambda page: dumps(with_file(page, size=str(page["files"][0]["size"]))),
    "a size is a boolean": lambda page: dumps(with_file(page, size=True)),
    "yanked is a number": lambda page: dumps(with_file(page, yanked=0)),
    "versions is a string": lambda page: dumps({**page, "versions": "0.1.0"}),
    "a version is a number": lambda page: dumps({**page, "versions": [0.1]}),
    "meta is an array": lambda page: dumps({**page, "meta": ["1.1"]}),
    "api-version is a number": lambda page: dumps({**page, "meta": {"api-version": 1.1}}),
    "a url with an unbalanced bracket": lambda page: dumps(with_file(page, url="http://[::1/vllm-0.1.0.tar.gz")),
    "over the size cap": lambda page: dumps(page) + b" " * MAX_INDEX_PAGE,
}


@pytest.mark.parametrize("hostile", HOSTILE_PAGES.values(), ids=HOSTILE_PAGES.keys())
def test_an_index_page_of_the_wrong_shape_is_the_sources_error(kb, index, ledger, capsys, hostile):
    index.pages["vllm"] = hostile(index.project_page("vllm"))
    code, out, err = run_cli(capsys, "verify", "--source", "pypi")  # an exception would fail the test here
    assert code == 3, out + err
    assert "error: vllm: vllm: the index page" in out and "its ledger is unchanged" in out
    assert (kb / "ledger" / "vllm.json").read_bytes() == ledger


def test_a_deeply_nested_index_page_ends_the_process_with_exit_3_and_no_traceback(kb, index, ledger):
    index.pages["vllm"] = nested(50_000)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "verifier", "verify", "--source", "pypi"], env=env, cwd=kb,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stdout + done.stderr
    assert "invalid JSON" in done.stdout
    assert (kb / "ledger" / "vllm.json").read_bytes() == ledger


def test_a_page_of_the_right_shape_still_reads(kb, index):
    """The checks refuse wrong types, not what PEP 691 allows: nulls for optional keys, keys not read, other hashes."""
    page = index.project_page("vllm")
    entry = page["files"][0]
    page["files"] = [{**entry, "upload-time": None, "yanked": None, "size": None, "core-metadata": {"sha256": "0"},
                      "hashes": {"md5": "00", **entry["hashes"]}},
                     {**entry, "filename": "vllm-0.2.0.tar.gz", "hashes": {"md5": "00"}}]  # no sha256: left out
    page["versions"] = ["0.1.0", "0.2.0"]
    index.pages["vllm"] = dumps(page)
    [release] = PyPISource(Engine(key="vllm", name="vLLM", package="vllm", repository="https://git.invalid/v/v",
                                  tag_pattern="v{version}"), index_url=index.url,
                           http=HttpClient(**PATIENT)).releases()
    assert release.version == "0.1.0" and release.date is None


# -- slow servers ----------------------------------------------------------------------------------------

def toy_sdist(version: str = "1.0") -> bytes:
    return make_sdist({"toy/core.py": b"def schedule(queue):\n    return queue.pop()\n" * 4}, top=f"toy-{version}")


@pytest.mark.parametrize("trickle", [Trickle(LORIS, limit=10), Trickle(LORIS, headers=True, limit=10)],
                         ids=["body", "headers and body"])
def test_a_trickling_index_page_fails_at_the_deadline(monkeypatch, trickle):
    deadlines(monkeypatch)
    with IndexServer(page_trickle=trickle) as index:
        index.add("toy", "toy-1.0.tar.gz", toy_sdist())
        assert len(json.dumps(index.project_page("toy"))) * LORIS > 3 * DEADLINE  # whole, it would take long
        started = time.monotonic()
        expected = rf"not done after {DEADLINE:g} seconds, the deadline for a request"
        with pytest.raises(SourceUnavailable, match=expected):
            PyPISource(TOY, index_url=index.url, http=HttpClient(**PATIENT)).releases()
        took = time.monotonic() - started
    assert DEADLINE <= took < DEADLINE + 1.5


TOY_WHEEL = make_wheel({"toy/core.py": b"x = 1\n" * 40}, "toy", "1.0")


@pytest.mark.parametrize("filename, content",
                         [("toy-1.0.tar.gz", toy_sdist()), ("toy-1.0-py3-none-any.whl", TOY_WHEEL)],
                         ids=["a download", "a range request"])
def test_an_archive_that_trickles_forever_fails_at_the_deadline_and_leaves_no_file(tmp_path, monkeypatch, filename,
                                                                                  content):
    deadlines(monkeypatch)
    with IndexServer() as index:
        index.add("toy", filename, content, faults=Faults(trickle=Trickle(LORIS, endless=True, limit=10)))
        source = PyPISource(TOY, index_url=index.url, http=HttpClient(**PATIENT))
        [release] = source.releases()  # the page itself is fine
        snapshot = source.open(release)
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match=rf"not done after {DEADLINE:g} seconds, the deadline"):
            snapshot.read("toy/core.py")
        took = time.monotonic() - started
    assert DEADLINE <= took < DEADLINE + 1.5
    archives = tmp_path / "cache" / "archives"
    assert not archives.exists() or list(archives.iterdir()) == []  # no partial file, nothing cached


def test_a_deadline_spans_the_retries(monkeypatch):
    """Three attempts of a server that stalls each time: the deadline is for all of them, not for each."""
    deadlines(monkeypatch, request=1.0)
    with IndexServer(page_trickle=Trickle(LORIS, limit=0.4)) as index:  # each answer stops short after 0.4 s
        index.add("toy", "toy-1.0.tar.gz", toy_sdist())
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match="the deadline for a request"):
            PyPISource(TOY, index_url=index.url, http=HttpClient(**PATIENT)).releases()
        took = time.monotonic() - started
        assert sum(1 for a in index.log if a.path == "/simple/toy/") >= 2  # retried within it
    assert took < 2.0



@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers and body"])
@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_a_kept_alive_connection_is_watched_too_and_never_pooled_again_once_shut_down(monkeypatch, request, headers,
                                                                                     tls):
    """A range request that goes over a connection from the pool, to a server that stalls: cut at the deadline."""
    deadlines(monkeypatch)
    certificate = request.getfixturevalue("certificate") if tls else None
    with IndexServer(certificate=certificate) as index:
        index.add("toy", "toy-1.0-py3-none-any.whl", TOY_WHEEL)
        index.add("toy", "slow.whl", TOY_WHEEL, faults=Faults(trickle=Trickle(LORIS, headers=headers, endless=True)))
        http = HttpClient(**PATIENT, cafile=certificate[0] if certificate else None)
        base = index.url.removesuffix("/simple")
        assert http.get_range(f"{base}/files/toy-1.0-py3-none-any.whl", 0, 10, what="first").body == TOY_WHEEL[:10]
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match=rf"^slow: not done after {DEADLINE:g} seconds"):
            http.get_range(f"{base}/files/slow.whl", 0, 1 << 16, what="slow")
        took = time.monotonic() - started
        assert len(index.connections) == 1  # the first request's, kept alive, and taken from the pool
        assert http.get_range(f"{base}/files/toy-1.0-py3-none-any.whl", 10, 10, what="after").body == TOY_WHEEL[10:20]
        assert len(index.connections) == 2  # not the one the watchdog shut down
        assert len(index.answers_for("toy-1.0-py3-none-any.whl")) == 2  # at the first attempt
    assert DEADLINE <= took < DEADLINE + 1.5


def test_verify_against_a_trickling_archive_ends_in_errors_and_keeps_the_ledger(kb, index, ledger, capsys,
                                                                              monkeypatch):
    deadlines(monkeypatch)
    content = sdist("0.2.0")
    index.add("vllm", "vllm-0.2.0.tar.gz", content, faults=Faults(trickle=Trickle(LORIS, limit=30)))
    assert len(content) * LORIS > 3  # whole, the archive would take seconds
    started = time.monotonic()
    code, out, err = run_cli(capsys, "verify", "--source", "pypi", "--new", "--format", "json")
    took = time.monotonic() - started
    assert code == 3, out + err
    records = json.loads(out)
    assert records and {(r["version"], r["verdict"]) for r in records} == {("0.2.0", "error")}
    assert all("deadline for a download" in r["message"] for r in records)
    assert (kb / "ledger" / "vllm.json").read_bytes() == ledger
    assert took < 10


def test_verify_against_a_trickling_index_page_is_an_error_and_keeps_the_ledger(kb, index, ledger, capsys,
                                                                               monkeypatch):
    deadlines(monkeypatch)
    index.page_trickle = Trickle(LORIS, headers=True, limit=30)
    started = time.monotonic()
    code, out, err = run_cli(capsys, "verify", "--source", "pypi")
    took = time.monotonic() - started
    assert code == 3, out + err
    assert "error: vllm:" in out and "deadline for a request" in out and "its ledger is unchanged" in out
    assert (kb / "ledger" / "vllm.json").read_bytes() == ledger
    assert took < 10


# -- files a checkout must not hand out ---------------------------------------------------------------------

SECRET = "s3cr3t-t0ken"

LEAKY_CHECKS = """\
  - id: remote
    claim: The remote is the public one.
    path: .git/config
    contains: "url = https://example.org/engine.git"
  - id: env
    claim: The token is a placeholder.
    path: .env
    contains: "HF_TOKEN=hf_placeholder"
  - id: settings
    claim: The settings name the token.
    path: pkg/settings.py
    contains: "HF_TOKEN=hf_placeholder"
  - id: hidden
    claim: The hidden module sets the token.
    path: pkg/.hidden/token.py
    contains: "TOKEN = 'placeholder'"
"""


@pytest.fixture
def checkout(engine_tree: Path) -> Path:
    """An engine checkout with credentials in dot-files, one reached through a symbolic link from a module."""
    (engine_tree / ".git").mkdir()
    remote = f"https://bot:{SECRET}@example.org/engine.git"
    (engine_tree / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {remote}\n')
    (engine_tree / ".env").write_text(f"HF_TOKEN=hf_{SECRET}\n")
    (engine_tree / "pkg" / ".hidden").mkdir()
    (engine_tree / "pkg" / ".hidden" / "token.py").write_text(f"TOKEN = '{SECRET}'\n")
    (engine_tree / "pkg" / ".secret.py").write_text(f"TOKEN = '{SECRET}'\n")
    (engine_tree / "pkg" / "settings.py").symlink_to("../.env")
    return engine_tree


@pytest.fixture
def leaky_kb(kb):
    (kb / "gotchas" / "ops-example.md").write_text(VALID_ENTRY.replace("checks:\n", "checks:\n" + LEAKY_CHECKS, 1))
    return kb


def test_a_directory_source_hands_no_dot_file_to_checks(leaky_kb, checkout, capsys):
    # `check` evaluates even what lint refuses: the source's own guard, with lint's out of the way.
    code, out, err = run_cli(capsys, "check", "--source", f"dir:{checkout}", "--format", "json")
    records = {r["check"]: r for r in json.loads(out) if "check" in r}
    assert {name: records[name]["verdict"] for name in ("remote", "env", "settings", "hidden")} == dict.fromkeys(
        ("remote", "env", "settings", "hidden"), "error")
    assert records["zero"]["verdict"] == records["metric"]["verdict"] == "holds"  # the engine's own files still read
    assert code == 1  # lint: three paths into dot-files and dot-folders (G305)
    assert SECRET not in out + err


def test_verify_does_not_start_on_checks_of_dot_paths_and_leaks_nothing(leaky_kb, checkout, capsys):
    code, out, err = run_cli(capsys, "verify", "--source", f"dir:{checkout}", "--format", "json")
    assert code == 1 and err.count("G305") == 3, err  # lint problems: exit 1
    assert not (leaky_kb / "ledger").exists()
    assert SECRET not in out + err


def test_a_directory_lists_no_dot_file_nor_anything_in_a_dot_folder(checkout):
    (checkout / ".github" / "workflows").mkdir(parents=True)
    (checkout / ".github" / "workflows" / "ci.py").write_text("x = 1\n")
    source = DirectorySource("vllm", checkout)
    [release] = source.releases()
    paths = source.open(release).paths()
    assert "pkg/sched.py" in paths and "pkg/metrics.py" in paths
    assert [p for p in paths if any(part.startswith(".") for part in p.split("/"))] == []


@pytest.mark.parametrize("userinfo", [f"bot:{SECRET}@", f"{SECRET}@"], ids=["user and token", "token as user"])
def test_a_git_urls_credentials_never_reach_a_message(kb, capsys, monkeypatch, userinfo):
    for name, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(name, value)
    code, out, err = run_cli(capsys, "verify", "--source", f"git:http://{userinfo}127.0.0.1:9/engine.git")
    assert code == 3, out + err
    assert "error: vllm: http://127.0.0.1:9/engine.git: cannot clone" in out
    assert SECRET not in out + err
    with pytest.raises(SourceUnavailable) as raised:
        GitSource(TOY, f"http://{userinfo}127.0.0.1:9/engine.git").releases()
    assert SECRET not in str(raised.value)


def test_a_git_source_hands_out_committed_files_only(tmp_path, monkeypatch):
    """The same class for git: files come from the commit's trees, never from the local repository around them."""
    for name, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(name, value)
    repo = GitRepo(tmp_path / "engine")
    repo.write("toy/core.py", "x = 1\n")
    repo.commit("first")
    repo.tag("v1.0")
    repo.git("remote", "add", "origin", f"https://bot:{SECRET}@example.org/engine.git")
    repo.write(".env", f"HF_TOKEN=hf_{SECRET}\n")  # not committed
    with GitSource(TOY, str(repo.path)) as source:
        [release] = source.releases()
        assert release.identity == repo.rev("v1.0")
        with source.open(release) as snapshot:
            assert snapshot.paths() == ["toy/core.py"]
            assert snapshot.read(".git/config") is None and snapshot.read(".env") is None
