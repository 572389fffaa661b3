"""Where engine code comes from: each source lists releases and opens one as a snapshot.

A snapshot reads repository paths (POSIX, relative to the engine's git root)
and answers bytes, or None when the release has no such file. Anything that
keeps it from answering (network, corrupt archive, a path that escapes) raises
SourceUnavailable, which the verifier reports as `error`, never `changed`.
"""

from __future__ import annotations

from typing import Protocol

from ..model import Release

#: The largest file a snapshot hands to the matchers.
MAX_FILE_BYTES = 16 * 1024 * 1024


class SourceUnavailable(Exception):
    """The source could not be read; the message says what and why."""


class Snapshot(Protocol):
    """One release's files. Snapshots that read archives may also offer
    `prefetch(paths)`: the verifier calls it first with every path its checks
    will read, so that an archive is gone through once."""

    release: Release

    def read(self, path: str) -> bytes | None: ...


class Source(Protocol):
    engine: str

    def releases(self) -> list[Release]: ...

    def open(self, release: Release) -> Snapshot: ...


def check_repository_path(path: str) -> str | None:
    """Why `path` is not a confined repository path, or None when it is fine."""
    if not path:
        return "path is empty"
    if "\\" in path:
        return "path uses backslashes; write it with forward slashes"
    if path.startswith("/"):
        return "path is absolute; write it relative to the repository root"
    if "\x00" in path:
        return "path contains a NUL character"
    parts = path.split("/")
    if any(p == ".." for p in parts):
        return "path climbs out with '..'"
    if any(p in ("", ".") for p in parts):
        return "path is not normalised (empty or '.' component)"
    return None
