from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import platformdirs
import pytest

REPO = Path(__file__).resolve().parent.parent

# The built-site fixtures, shared by the site tests; the builds of this checkout made once per run (real_site,
# real_kb_file).
pytest_plugins = ("tests.site_fixture", "tests.prebuilt")

#: The cache a run of gotchas on this machine uses (downloads, clones, verdicts): no offline test may write there.
USER_CACHE = Path(os.environ.get("GOTCHAS_CACHE_DIR") or platformdirs.user_cache_dir("gotchas", appauthor=False))


#: SQLite's side files beside the verdict cache: any process that only reads the cache (another gotchas run on
#: this machine) creates, changes and removes them, so they say nothing about this run. A write by a test still
#: shows: the database file itself changes when its last connection closes and the log is folded into it.
_SIDE_FILES = ("-wal", "-shm", "-journal")


def _cache_state(root: Path) -> dict[str, tuple[int, int]]:
    """What a write into the cache would change, cheaply: the modification time and size of its top-level files
    and of its folders two levels deep (a folder's time changes when an entry is added or removed in it). The
    cache folder's own time is left out, as SQLite's side files are: readers elsewhere change both."""
    state = {}
    for path in [*root.glob("*"), *root.glob("*/*")]:
        if path.name.endswith(_SIDE_FILES):
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if path.is_dir() or path.parent == root:
            state[str(path.relative_to(root))] = (info.st_mtime_ns, info.st_size if path.is_file() else 0)
    return state


@pytest.fixture(scope="session", autouse=True)
def _user_cache_untouched(request):
    """The suite leaves the user's cache as it found it (network tests excepted: they read real releases, and
    keep them there on purpose); a write into it fails the run at its end, naming what changed."""
    before = _cache_state(USER_CACHE)
    yield
    if any(item.get_closest_marker("network") for item in request.session.items):
        return
    after = _cache_state(USER_CACHE)
    changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    assert not changed, f"the tests wrote into the user cache {USER_CACHE}: {', '.join(changed[:8])}"


@pytest.fixture(autouse=True)
def _own_cache(request, tmp_path_factory, monkeypatch):
    """Every offline test has a cache of its own (a fixture that sets GOTCHAS_CACHE_DIR itself overrides it)."""
    if request.node.get_closest_marker("network"):
        return
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))

VALID_ENTRY = """\
---
id: ops-example
title: An example gotcha that is well-formed
scheme: ops
concepts: [kv-cache, preemption]
engines: [vllm]
references:
  - https://example.org/issue/1
history:
  - {date: 2026-10-04, note: "Written."}
checks:
  - id: zero
    claim: Preemption resets the computed tokens.
    path: pkg/sched.py
    in: Scheduler.preempt
    contains: request.num_computed_tokens = 0
    after: request.status = PREEMPTED
    adjacent: true
  - id: metric
    claim: The metric exists.
    path: pkg/metrics.py
    string: "vllm:num_preemptions"
severity: performance
---

## Symptom

Latency climbs.

## Root cause

The scheduler preempts.

## Workaround

Add capacity.

## Notes

None.
"""

SCHED_PY = """\
class Scheduler:
    def preempt(self, request):
        request.status = PREEMPTED
        request.num_computed_tokens = 0
"""

METRICS_PY = 'NAME = "vllm:num_preemptions"\n'


def make_kb(root: Path, site: bool = False) -> Path:
    """A KB at `root` with the real vocabularies and registry (and, with `site`, the real site's templates and
    assets), and no entries."""
    (root / "gotchas").mkdir(parents=True)
    for name in ("schemes.yaml", "severities.yaml", "concepts.yaml"):
        shutil.copy(REPO / "gotchas" / name, root / "gotchas" / name)
    # The real registry, less its release floors: tests make releases of their own numbering.
    registry = (REPO / "gotchas" / "engines.yaml").read_text()
    (root / "gotchas" / "engines.yaml").write_text(re.sub(r"(?m)^  oldest: .*\n", "", registry))
    if site:
        shutil.copytree(REPO / "site", root / "site")
    return root


@pytest.fixture
def kb_root(tmp_path: Path) -> Path:
    """A KB with the real vocabularies and registry, and no entries."""
    return make_kb(tmp_path / "kb")


@pytest.fixture
def engine_tree(tmp_path: Path) -> Path:
    """A tiny engine source tree on which VALID_ENTRY's checks hold."""
    tree = tmp_path / "engine"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "sched.py").write_text(SCHED_PY)
    (tree / "pkg" / "metrics.py").write_text(METRICS_PY)
    return tree


@pytest.fixture
def isolated_git(monkeypatch, tmp_path):
    """Git without the machine's configuration, and a cache of the test's own."""
    from .gitrepo import ISOLATED_GIT_ENV

    for name, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def kb(kb_root, monkeypatch):
    """The fixture KB with VALID_ENTRY, as the current directory."""
    (kb_root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    monkeypatch.chdir(kb_root)
    return kb_root


def serve_index(monkeypatch, tmp_path, releases: dict[str, bytes]):
    """A package index on 127.0.0.1 serving vLLM sdists (version -> bytes, uploaded a month apart), set as pip's
    index, with a cache of the test's own; a context manager yielding the server."""
    import contextlib

    from .index_server import IndexServer

    @contextlib.contextmanager
    def served():
        monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with IndexServer() as server:
            for month, (version, data) in enumerate(releases.items(), 1):
                server.add("vllm", f"vllm-{version}.tar.gz", data, upload_time=f"2024-{month:02d}-0{month}T00:00:00Z")
            monkeypatch.setenv("PIP_INDEX_URL", server.url)
            yield server

    return served()


def child_env() -> dict[str, str]:
    """The environment of a child Python that imports what this one does (the checkout's `verifier` first)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONDONTWRITEBYTECODE": "1"}


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """`gotchas ARGV...` in this process: (exit code, stdout, stderr)."""
    from verifier.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[str, str]:
    """A self-signed certificate and key for 127.0.0.1 (tests of https against the index server)."""
    from .index_server import self_signed

    made = self_signed(tmp_path_factory.mktemp("tls"))
    if made is None:
        pytest.skip("no openssl command to make a certificate with")
    return made


@pytest.fixture(scope="session")
def real_kb(real_kb_file):
    """This checkout's KB compiled for `audit` (entries and ledger), once for the run: nothing changes it. Read
    from the file `compiled.write` made (tests/prebuilt.py), as an installed wheel reads its kb.json."""
    from verifier import compiled

    return compiled.read(real_kb_file)


@pytest.fixture
def audit_cli(real_kb, monkeypatch, capsys):
    """`gotchas audit ARGV...` in this process on the compiled real KB: (exit code, stdout, stderr)."""
    from verifier import compiled

    monkeypatch.setattr(compiled, "load_packaged", lambda: real_kb)

    def invoke(*argv):
        return run_cli(capsys, "audit", *argv)
    return invoke
