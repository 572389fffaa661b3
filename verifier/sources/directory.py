"""A local directory (a checkout of the engine's repository) as one release, "HEAD".

A checkout holds more than the engine's code: `.git/config` (a remote URL may carry a
token), `.env`, editor and tool folders. A check's hint can quote the file it reads,
and hints land in the ledger and in reports, so no file or folder whose name starts
with '.' is read or listed, however the path reaches it (a symbolic link included).
The engines keep no code under such names: in their release archives, dot-folders
hold CI scripts (`.buildkite/`, `.github/`) and agent notes, dot-files tool settings.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..model import Release
from . import MAX_FILE_BYTES, Snapshot, Source, SourceUnavailable, check_repository_path


class DirectorySource(Source):
    """A directory as one release.

    `archive_root` is the repository folder that the engine's release archives
    hold at their root (SGLang: `python/`); `vendored_at` the archive folder
    that holds the repository (llama.cpp in llama-cpp-python: `vendor/llama.cpp/`).
    A directory laid out like such an archive (an unpacked wheel or sdist) is
    read through that mapping, so that checks keep their repository paths.
    """

    def __init__(self, engine: str, root: str | os.PathLike, version: str = "HEAD", archive_root: str = "",
                 vendored_at: str = "") -> None:
        self.engine = engine
        self.root = Path(root)
        self.version = version
        self.strip = archive_root if archive_root and not (self.root / archive_root).is_dir() else ""
        # a directory laid out like the archive a repository is vendored in (an unpacked llama-cpp-python sdist)
        # is read from that folder; the repository's own checkout, as it is
        if vendored_at and (self.root / vendored_at).is_dir():
            self.root = self.root / vendored_at

    def releases(self) -> list[Release]:
        if not self.root.is_dir():
            raise SourceUnavailable(f"{self.root}: not a directory")
        return [Release(self.engine, self.version, identity=f"dir:{self.root.resolve()}")]

    def open(self, release: Release) -> DirectorySnapshot:
        return DirectorySnapshot(release, self.root, self.strip)


class DirectorySnapshot(Snapshot):
    def __init__(self, release: Release, root: Path, strip: str = "") -> None:
        self.release = release
        self.root = root.resolve()
        self.strip = strip

    def paths(self) -> list[str]:
        """The repository path of every regular file in the tree (symlinks, dot-files and dot-folders left out)."""
        found = []
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(folder, d)))
            relative = Path(folder).relative_to(self.root).as_posix()
            for name in files:
                if name.startswith("."):
                    continue
                full = os.path.join(folder, name)
                if os.path.islink(full) or not os.path.isfile(full):
                    continue
                path = name if relative == "." else f"{relative}/{name}"
                found.append(self.strip + path)
        return sorted(found)

    def read(self, path: str) -> bytes | None:
        problem = check_repository_path(path)
        if problem:
            raise SourceUnavailable(f"{path}: {problem}")
        if self.strip:
            if not path.startswith(self.strip):
                raise SourceUnavailable(f"{path}: this directory is laid out like a release archive, "
                                        f"which holds only {self.strip}")
            path = path[len(self.strip):]
        hidden = _hidden_part(path.split("/"))
        if hidden:
            raise SourceUnavailable(f"{path}: {hidden} is a dot-file or dot-folder, which a directory source never "
                                    "reads (not engine code, and it may hold credentials)")
        target = self.root.joinpath(*path.split("/"))
        try:
            real = target.resolve(strict=True)
        except FileNotFoundError:
            return None
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise SourceUnavailable(f"{path}: {exc}") from None
        if real != self.root and self.root not in real.parents:
            raise SourceUnavailable(f"{path}: resolves outside the source tree (a symlink?)")
        if _hidden_part(real.relative_to(self.root).parts):
            raise SourceUnavailable(f"{path}: a symbolic link to a dot-file or into a dot-folder, which a directory "
                                    "source never reads")
        if not real.is_file():
            return None
        try:
            size = real.stat().st_size
            if size > MAX_FILE_BYTES:
                raise SourceUnavailable(f"{path}: {size} bytes, over the {MAX_FILE_BYTES}-byte limit")
            return real.read_bytes()
        except OSError as exc:
            raise SourceUnavailable(f"{path}: {exc.strerror or exc}") from None


def _hidden_part(parts) -> str | None:
    """The first of `parts` whose name starts with '.', or None."""
    return next((part for part in parts if part.startswith(".")), None)
