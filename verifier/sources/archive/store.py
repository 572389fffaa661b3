"""Members already read from an archive, kept so that the archive is not gone through again.

A release archive is read once per member it is asked for: what was read (and
verified against the archive's digest or the wheel's RECORD at that time) goes
into a content-addressed store under the cache directory, beside a manifest
per archive that lists every file the archive holds. A later run answers from
the store, and goes back to the archive only for members it never read.
Identical files in successive releases are stored once.

    members/<archive sha256>.json.z   zlib(JSON): names, member -> blob sha256, refused member -> why
    members/blobs/<ab>/<sha256>       zlib(content)

Every blob is checked against its sha256 when read back; anything missing or
damaged in the store makes the reader go back to the archive.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ... import stats
from ...cache import cache_dir
from .members import Members


@dataclass
class Manifest:
    names: frozenset[str] | None = None
    members: dict[str, str] = field(default_factory=dict)  # archive path -> blob sha256
    refused: dict[str, str] = field(default_factory=dict)  # archive path -> why it is not handed out


class MemberStore:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir("members")

    def _manifest_path(self, archive_sha: str) -> Path:
        return self.folder / f"{archive_sha}.json.z"

    def _blob_path(self, sha: str) -> Path:
        return self.folder / "blobs" / sha[:2] / sha

    def manifest(self, archive_sha: str) -> Manifest:
        try:
            data = json.loads(zlib.decompress(self._manifest_path(archive_sha).read_bytes()))
            return Manifest(frozenset(data["names"]), dict(data["members"]), dict(data["refused"]))
        except (OSError, ValueError, KeyError, TypeError, zlib.error):
            return Manifest()

    def blob(self, sha: str) -> bytes | None:
        try:
            data = zlib.decompress(self._blob_path(sha).read_bytes())
        except (OSError, zlib.error):
            return None
        return data if hashlib.sha256(data).hexdigest() == sha else None

    def answer(self, archive_sha: str, wanted: set[str]) -> Members | None:
        """The wanted members from the store, or None when some must be read from the archive."""
        located = self.locate(archive_sha, wanted)
        if located is None:
            return None
        names, digests, refused = located
        found = Members(names, refused=refused)
        for path, sha in digests.items():
            content = self.blob(sha)
            if content is None:
                return None
            found.contents[path] = content
        return found

    def locate(self, archive_sha: str,
               wanted: set[str]) -> tuple[frozenset[str], dict[str, str], dict[str, str]] | None:
        """Without reading any blob: (every name, wanted member -> blob sha256, wanted refused member -> why),
        or None when some wanted member is not in the store."""
        manifest = self.manifest(archive_sha)
        if manifest.names is None:
            stats.count("store_misses")
            return None
        digests, refused = {}, {}
        for path in wanted:
            if path not in manifest.names:
                continue
            if path in manifest.refused:
                refused[path] = manifest.refused[path]
                continue
            sha = manifest.members.get(path)
            if not sha or not self._blob_path(sha).is_file():
                stats.count("store_misses")
                return None
            digests[path] = sha
        return manifest.names, digests, refused

    def keep(self, archive_sha: str, found: Members) -> None:
        """Add what one pass over the archive read. Failures to write only cost a later re-read."""
        manifest = self.manifest(archive_sha)
        try:
            for path, content in found.contents.items():
                sha = hashlib.sha256(content).hexdigest()
                blob = self._blob_path(sha)
                if not blob.is_file():
                    _write_atomically(blob, zlib.compress(content, 6))
                manifest.members[path] = sha
            manifest.refused.update(found.refused)
            data = {"names": sorted(found.names), "members": manifest.members, "refused": manifest.refused}
            _write_atomically(self._manifest_path(archive_sha), zlib.compress(json.dumps(data).encode(), 6))
        except OSError:
            pass


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".partial-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
