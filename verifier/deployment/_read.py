"""What reading a deployment can fail with (exit 2 or 3), and the bounded reader every file given goes through."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import EXIT_ERROR, EXIT_USAGE, GotchasError
from ..safety import PathError, read_fd, read_regular

MAX_FILE_BYTES = 16 << 20


class DeploymentError(GotchasError, exit_code=EXIT_USAGE):
    """What was given cannot be read as a deployment (exit 2); the message names the file and line."""


class EnvironmentFailed(GotchasError, exit_code=EXIT_ERROR):
    """Another environment could not be asked (exit 3): its interpreter failed or said nothing readable."""


def read_head(path: Path, limit: int) -> bytes:
    """The first `limit` bytes (or fewer) of a regular file, never through a link and never blocking
    (`safety.read_regular`): what a folder's file is sniffed by before it is read. DeploymentError for anything
    else (a FIFO, a device, a file that cannot be opened)."""
    try:
        return read_regular(path, limit)[:limit]
    except PathError as exc:
        raise DeploymentError(str(exc)) from None  # `path` is not a regular file; only those are read
    except OSError as exc:
        raise DeploymentError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _read_text(path: Path) -> str:
    """A deployment's file as text, at most MAX_FILE_BYTES. Only a regular file is read (a link to one is
    followed): a FIFO or a device would block or never end, so it is refused before any read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise DeploymentError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DeploymentError(f"{path}: not a regular file (a folder, a FIFO or a device); not read")
        data = read_fd(fd, MAX_FILE_BYTES)
    except OSError as exc:
        raise DeploymentError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise DeploymentError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB; not read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DeploymentError(f"{path}: not UTF-8 (byte {exc.start})") from None
