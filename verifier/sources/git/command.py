"""How every git process of a git source runs: with the machine's and the repository's power to run commands
taken away, and with a deadline on everything that goes over the network.

A repository's own config (`.git/config`) cannot be switched off, but settings given on git's command line
(`-c`) win over it, and `GIT_ALLOW_PROTOCOL` wins over every `protocol.*` setting. So:

- reading processes (`cat-file`, `ls-tree`, `log`, `diff`: GitPython's included) may use no transport at all, so
  that a blob missing from a partial clone is never fetched lazily from a remote the repository names (a promisor
  remote `ext::sh -c ...` would run that command); `GIT_NO_LAZY_FETCH` says the same to git 2.44 and later;
- network processes (clone, fetch) may use https, http and file only, are killed with their children
  (`remote-https`) past their deadline, and get a URL's credentials from their environment only (never a file,
  never a command line that `ps` shows);
- every process runs without the system and global config, with fsmonitor, hooks, credential helpers and
  askpass programs off, and never prompts.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from .. import SourceUnavailable
from .errors import scrub

#: Seconds a clone may take, everything included; it is killed past it.
CLONE_SECONDS = 1800
#: Seconds a fetch (new tags, a missing blob, the blobs of a rename detection) may take.
FETCH_SECONDS = 300
#: The transports clones and fetches may use.
NETWORK_PROTOCOLS = ("https", "http", "file")
#: What is kept of a git process's standard error (the last line is the reason given).
_STDERR_TAIL = 64 * 1024
#: Seconds a listing of a repository's own (`for-each-ref`, `log`) may take: a local read, far below this.
LIST_SECONDS = 300

#: Settings given as `-c` to every git process: they win over the repository's own config.
LOCKED_CONFIG = (
    ("protocol.allow", "never"),
    *((f"protocol.{name}.allow", "never") for name in ("ext", "fd", "ssh", "git")),
    *((f"protocol.{name}.allow", "always") for name in NETWORK_PROTOCOLS),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("credential.helper", ""),  # an empty value clears the list of helpers
    ("core.askPass", ""),
    ("fetch.recurseSubmodules", "false"),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),  # a fetch starts no gc or maintenance of its own
    ("maintenance.auto", "false"),
)

CONFIG_OPTIONS = tuple(f"{key}={value}" for key, value in LOCKED_CONFIG)
CONFIG_ARGS = tuple(arg for option in CONFIG_OPTIONS for arg in ("-c", option))


def locked_env(*, network: bool = False) -> dict[str, str]:
    """The environment variables every git process gets (on top of the caller's environment)."""
    return {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",  # set but empty: no askpass program, not even SSH_ASKPASS
        "GIT_NO_LAZY_FETCH": "1",
        # An empty list allows no transport at all: a lazy fetch by a reading process fails, running nothing.
        "GIT_ALLOW_PROTOCOL": ":".join(NETWORK_PROTOCOLS) if network else "",
        "GIT_PROTOCOL_FROM_USER": "0",
    }


def remote_env(url: str, *, lazy_fetch: bool = False) -> dict[str, str]:
    """A network process's environment, with `url` as the remote `origin`'s URL (credentials included): given
    as command-line-level config through the environment, it is in no file and on no command line.
    With `lazy_fetch`, missing blobs are fetched from there (a rename detection in a blobless clone)."""
    return {**locked_env(network=True), "GIT_NO_LAZY_FETCH": "0" if lazy_fetch else "1",
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "remote.origin.url", "GIT_CONFIG_VALUE_0": url}


def run_git(args: Sequence[str], *, what: str, seconds: float | None = None, env: dict[str, str] | None = None,
            stdin: bytes | None = None, late: str | None = None) -> str:
    """Run `git <args>` locked down; its standard output. A failure raises SourceUnavailable with `what` and
    git's last line; past `seconds`, git and every process it started are killed, and the message is
    "`late` (or `what`) did not finish in N s"."""
    with tempfile.TemporaryFile() as errors, tempfile.TemporaryFile() as output:
        process = _start(args, what=what, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                         stdout=output, stderr=errors)
        try:
            process.communicate(stdin, timeout=seconds)
        except BaseException as exc:  # the deadline, or an interrupt: git and what it started end with us
            _end_group(process)
            if isinstance(exc, subprocess.TimeoutExpired):
                raise SourceUnavailable(f"{late or what} did not finish in {seconds:g} s") from None
            raise
        if process.returncode != 0:
            raise SourceUnavailable(f"{what}: {_git_said(errors, process.returncode)}")
        output.seek(0)
        return output.read().decode(errors="replace")


def _start(args: Sequence[str], *, what: str, env: dict[str, str] | None, stdin: int | IO[bytes],
           stdout: int | IO[bytes], stderr: IO[bytes]) -> subprocess.Popen[bytes]:
    """`git <args>` started locked down (its config, and `env` or the environment with no transport), in a
    process group of its own so that `_end_group` can end it with what it starts."""
    command = ["git", *CONFIG_ARGS, *args]
    environment = {**os.environ, **(env if env is not None else locked_env())}
    try:
        return subprocess.Popen(command, stdin=stdin, stdout=stdout, stderr=stderr, env=environment,
                                start_new_session=True)
    except OSError as exc:
        raise SourceUnavailable(f"{what}: cannot run git ({exc.strerror or exc})") from None


def _git_said(errors: IO[bytes], returncode: int) -> str:
    """The reason a git process gave for failing, from (the tail of) its standard error."""
    errors.seek(max(0, errors.seek(0, os.SEEK_END) - _STDERR_TAIL))
    said = [line.strip() for line in errors.read().decode(errors="replace").splitlines() if line.strip()]
    # git's first "fatal:" or "error:" is the reason; the advice after it ("Please make sure...") is not
    reasons = [line for line in said if line.startswith(("fatal:", "error:"))] or said[-1:]
    return scrub(reasons[0]) if reasons else f"git exited with status {returncode}"


def stream_git(args: Sequence[str], *, what: str, limit: int, max_bytes: int, items: str,
               separator: bytes = b"\n", seconds: float = LIST_SECONDS) -> list[str]:
    """The records (split at `separator`, empty ones left out) `git <args>` writes, run locked down like
    `run_git`, read as git writes them: past `limit` records or `max_bytes` bytes, or past `seconds`, git is
    killed at once (it need not list the rest) and SourceUnavailable says "`what`: more than N `items`". So a
    repository of millions of tags or commits costs the bound, never its own size, in time and memory."""
    deadline = time.monotonic() + seconds
    with tempfile.TemporaryFile() as errors:
        process = _start(args, what=what, env=None, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors)
        assert process.stdout is not None
        records: list[bytes] = []
        rest, read = bytearray(), 0
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(process.stdout, selectors.EVENT_READ)
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0 or not selector.select(left):
                        raise SourceUnavailable(f"{what} did not finish in {seconds:g} s")
                    chunk = os.read(process.stdout.fileno(), 1 << 16)
                    if not chunk:
                        break
                    read += len(chunk)
                    if read > max_bytes:
                        raise SourceUnavailable(f"{what}: more than {max_bytes:,} bytes of {items}")
                    end = chunk.rfind(separator)
                    if end < 0:  # a record still going on: kept whole in `rest`, never copied per chunk
                        rest += chunk
                        continue
                    complete = bytes(rest) + chunk[:end]
                    rest = bytearray(chunk[end + len(separator):])
                    records.extend(record for record in complete.split(separator) if record)
                    if len(records) > limit:
                        raise SourceUnavailable(f"{what}: more than {limit:,} {items}")
            process.wait()
        except BaseException:  # a bound, the deadline or an interrupt: git and what it started end with us
            _end_group(process)
            raise
        finally:
            process.stdout.close()
        if process.returncode != 0:
            raise SourceUnavailable(f"{what}: {_git_said(errors, process.returncode)}")
    if rest:
        records.append(bytes(rest))
        if len(records) > limit:
            raise SourceUnavailable(f"{what}: more than {limit:,} {items}")
    return [record.decode(errors="replace") for record in records]


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """Kill git and every process it started (its own process group, `remote-https` included); git is not
    reaped yet, so the group is still its own."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def git_dir_args(folder: Path) -> tuple[str, ...]:
    return ("--git-dir", str(folder))
