"""Where engine code comes from: each source lists releases and opens one as a snapshot.

A snapshot reads repository paths (POSIX, relative to the engine's git root)
and answers bytes, or None when the release has no such file. Anything that
keeps it from answering (network, corrupt archive, a path that escapes) raises
SourceUnavailable, which the verifier reports as `error`, never `changed`.

The sources: `directory` (a checkout, one release), the packages `git` (a repository's tags) and `pypi` (the
package index; its archives are read by the package `archive`). Each package exports its public names from
its __init__; the modules inside are its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from ..errors import EXIT_ERROR, GotchasError
from ..model import Release

_Snapshot = TypeVar("_Snapshot", bound="Snapshot")
_Source = TypeVar("_Source", bound="Source")

#: The largest file a snapshot hands to the matchers.
MAX_FILE_BYTES = 16 * 1024 * 1024


class SourceUnavailable(GotchasError, exit_code=EXIT_ERROR):
    """The source could not be read; the message says what and why."""


class Snapshot:
    """One release's files, by repository path: every operation the verifier asks of a snapshot.

    Only `read` must be given; the others have defaults that fit a source whose
    files are each read on their own when asked for (a directory). Sources that
    read archives or git objects override what they can do better.
    """

    release: Release

    def read(self, path: str) -> bytes | None:
        """The file's bytes; None when the release has no file at `path`."""
        raise NotImplementedError

    def paths(self) -> list[str]:
        """The repository path of every plain file of the release, sorted (none known: empty)."""
        return []

    def files(self, paths: Iterable[str], on_pass: Callable[[], None] | None = None) -> Iterator[str]:
        """Make every one of `paths` readable, telling which as they become so.

        A snapshot that reads an archive goes through it once for all of them,
        and may hand a path out as soon as it has it (and again when a later
        member of the same name replaced it); `on_pass()` is called as such a
        pass starts (new contents, most likely: a run starts its worker
        processes then), not when the paths come from a store or a tree. When
        the iteration ends, each path reads without going back to the archive;
        when it fails it raises SourceUnavailable, and what was done with the
        paths handed out must be discarded. The default has nothing to prepare:
        it names each path once.
        """
        return iter(dict.fromkeys(paths))

    def prefetch(self, paths: Iterable[str]) -> None:
        """`files(paths)`, gone through to the end."""
        for _ in self.files(paths):
            pass

    def digest(self, path: str) -> str | None:
        """An identity of the file's content known without reading it ("sha256:<hex>", or one of the source's
        own such as "git-blob:<id>"); None when it is not known so."""
        return None

    def identities(self, paths: Iterable[str]) -> tuple | None:
        """Each file's identity (None where the release has no such file), named without reading any file;
        None when some file cannot be named so."""
        return None

    def vendored_commit(self) -> str | None:
        """The commit of the engine's repository that the release holds, when the release itself says so (a
        vendored engine: the package's archive names the commit it ships); None otherwise."""
        return None

    def close(self) -> None:
        """Let go of what the snapshot holds open (processes, files)."""

    def __enter__(self: _Snapshot) -> _Snapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Source:
    """An engine's releases, each opened as a snapshot.

    A source and each snapshot it opens are owned by a `with` (or closed in a `finally`) of whoever made them:
    a snapshot may hold an archive, a source git processes or an HTTP client's connections, and every way out of
    a command (an error half-way included) lets go of them.
    """

    engine: str

    def releases(self) -> list[Release]:
        """Every release, in PEP 440 order."""
        raise NotImplementedError

    def open(self, release: Release) -> Snapshot:
        raise NotImplementedError

    def renamed_from(self, path: str, older: Release, newer: Release) -> str | None:
        """The path that the file at `path` in `newer` had in `older`, when history says it was renamed (a
        source that has history: git); None when not, or when the source cannot tell."""
        return None

    def batch(self) -> contextlib.AbstractContextManager:
        """A context in which successive snapshots may share what the source keeps open (git's processes)."""
        return contextlib.nullcontext()

    def close(self) -> None:
        """Let go of what the source holds open. Once is enough; again does nothing."""

    def __enter__(self: _Source) -> _Source:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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
