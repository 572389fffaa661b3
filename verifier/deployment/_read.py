"""What reading a deployment can fail with (exit 2 or 3), and the bounded reader every file given goes through."""

from __future__ import annotations

from pathlib import Path

MAX_FILE_BYTES = 16 << 20


class DeploymentError(Exception):
    """What was given cannot be read as a deployment (exit 2); the message names the file and line."""


class EnvironmentFailed(Exception):
    """Another environment could not be asked (exit 3): its interpreter failed or said nothing readable."""


def _read_text(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise DeploymentError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise DeploymentError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB; not read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DeploymentError(f"{path}: not UTF-8 (byte {exc.start})") from None
