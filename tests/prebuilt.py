"""Builds of this checkout that tests only read — the real site (a minute of CPU: a surface page per release, 400
upgrade pages) and the real KB compiled for `audit` — each made once per run, in a process of its own.

The process starts with the run's first test (in whichever xdist worker gets there first) if some test of the
run needs the build. The modules that do not need it run meanwhile (the modules that do run last); a test that
needs it before it is made waits for it. Every xdist worker, and a run without xdist, reads the one build: it is
made in the run's shared temporary folder (the parent of the workers' own), by the worker that first claims it
there (a file made with O_EXCL).

`python -m tests.prebuilt NAME OUT DONE` is that process: it makes the build NAME in OUT, then writes its exit
status into DONE (through a rename: a reader sees all of it or nothing). Its output goes to a log beside DONE."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: Each build, by the fixture whose tests need it (fixtures that need that fixture count too: pytest lists the
#: closure in `item.fixturenames`).
NEEDED_BY = {"real-site": "real_site", "real-kb": "real_kb_file"}
#: What a build is, in its folder.
OUTPUT = {"real-site": "_site", "real-kb": "kb.json"}
#: The longest a test waits for a build (under load the real site has taken some 3 minutes).
TIMEOUT = 1200.0


def _make(name: str, out: Path) -> int:
    """The build, made in this process (`python -m tests.prebuilt`), from the checkout (the current folder)."""
    if name == "real-site":
        from verifier.cli import main

        return main(["site", "--out", str(out)])
    if name == "real-kb":
        from verifier import compiled

        compiled.write(REPO, out)
        return 0
    raise ValueError(f"no build {name!r}")


class Build:
    """One build of the run: started once, waited for by every test that needs it."""

    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        self.folder = root / f"prebuilt-{name}"
        self.output = self.folder / OUTPUT[name]
        self.claim = root / f"prebuilt-{name}.claim"
        self.done = root / f"prebuilt-{name}.done"
        self.log = root / f"prebuilt-{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the build unless this run has (here, or in another worker)."""
        try:
            fd = os.open(self.claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return
        self.folder.mkdir()
        # A cache of its own: no build may read or write the user's (conftest's _user_cache_untouched).
        env = {**os.environ, "GOTCHAS_CACHE_DIR": str(self.folder.with_name(self.folder.name + "-cache"))}
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.prebuilt", self.name, str(self.output), str(self.done)],
                cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        os.write(fd, str(self.process.pid).encode())
        os.close(fd)

    def result(self) -> Path:
        """The build's output, once made (started here if no one has yet); a failure if it could not be made."""
        self.start()
        deadline = time.monotonic() + TIMEOUT
        while not self.done.exists():
            if self.process is not None and self.process.poll() is not None and not self.done.exists():
                pytest.fail(f"the {self.name} build ended with {self.process.returncode} and no status:\n"
                            + self._log_tail(), pytrace=False)
            if not self._running():
                pytest.fail(f"the {self.name} build is gone and left no status:\n" + self._log_tail(), pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"the {self.name} build took more than {TIMEOUT:.0f} s:\n" + self._log_tail(),
                            pytrace=False)
            time.sleep(0.05)
        status = self.done.read_text()
        if status != "0":
            pytest.fail(f"the {self.name} build failed (exit status {status}):\n" + self._log_tail(), pytrace=False)
        return self.output

    def _running(self) -> bool:
        """Whether the process that claimed the build is still there (another worker's: by its pid)."""
        try:
            pid = int(self.claim.read_text() or 0)
        except (OSError, ValueError):
            return True
        if not pid:  # claimed, its process not started yet
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return "(no log)"

    def close(self, session) -> None:
        """At the end of this worker's session: a build that no test of the run will read any more (the run is
        stopping) is stopped; one that another worker may still read is waited for."""
        if self.process is None or self.process.poll() is not None:
            return
        if session.shouldstop or session.shouldfail:
            self.process.terminate()
        try:
            self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _needs_a_build(item) -> bool:
    return any(fixture in getattr(item, "fixturenames", ()) for fixture in NEEDED_BY.values())


def pytest_collection_modifyitems(items) -> None:
    """The modules with a test that needs a build run last (each module's tests in their order, kept together:
    its module-scoped fixtures are set up once): the build is made while the other modules run, and no test
    waits for it, with or without xdist."""
    late = {item.path for item in items if _needs_a_build(item)}
    items[:] = [item for item in items if item.path not in late] + [item for item in items if item.path in late]


def _root(tmp_path_factory) -> Path:
    """The run's temporary folder: under xdist the parent of this worker's own, which every worker shares."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def _builds(tmp_path_factory) -> dict[str, Build]:
    root = _root(tmp_path_factory)
    return {name: Build(root, name) for name in NEEDED_BY}


@pytest.fixture(scope="session", autouse=True)
def _prebuild(request, _builds):
    """Start, as the run's first test starts, every build that some test of the run needs."""
    needed = {fixture for item in request.session.items for fixture in getattr(item, "fixturenames", ())}
    for name, fixture in NEEDED_BY.items():
        if fixture in needed:
            _builds[name].start()
    yield
    for build in _builds.values():
        build.close(request.session)


@pytest.fixture(scope="session")
def real_site(_builds) -> Path:
    """The site of the real KB and its committed ledger (`gotchas site --out` from the checkout), built once for
    the run and read by every module that needs it: no test writes in it."""
    return _builds["real-site"].result()


@pytest.fixture(scope="session")
def real_kb_file(_builds) -> Path:
    """This checkout's KB compiled for `audit` (entries and ledger) as a wheel ships it (`compiled.write`, as
    setup.py writes kb.json), once for the run."""
    return _builds["real-kb"].result()


if __name__ == "__main__":
    name, out, done = sys.argv[1:]
    try:
        code = _make(name, Path(out))
    except BaseException:
        traceback.print_exc()
        code = -1
    temporary = Path(done + ".tmp")
    temporary.write_text(str(code))
    os.replace(temporary, done)
    sys.exit(0)
