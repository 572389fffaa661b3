"""Members already read from an archive, kept so that the archive is not gone through again.

A release archive is read once per member it is asked for: what was read (and
verified against the archive's digest or the wheel's RECORD at that time) goes
into a content-addressed store under the cache directory, beside a manifest
per archive that lists every file the archive holds. A later run answers from
the store, and goes back to the archive only for members it never read.
Identical files in successive releases are stored once.

    members/<archive sha256>.json.z   zlib(JSON): names, member -> blob sha256, refused member -> why
    members/ranges-<sha256>.json.z    the same, of members read by range requests (see below)
    members/blobs/<ab>/<sha256>       zlib(content)

What a manifest answers is tied to what was verified. A manifest is kept under
the archive's sha256 only when the pass read the whole archive and checked it
against that digest (`origin=None`): then any index that lists the digest gets
the same bytes. Members read by range requests were checked against the wheel's
own RECORD only (the archive's digest cannot be checked without the whole file),
so a hostile mirror can claim the honest wheel's digest for a wheel of its own:
those are kept under `ranges-<sha256(archive sha256, file URL)>`, answered only
for the same file URL, never for the digest alone.

Every blob is checked against its sha256 when read back; anything missing or
damaged in the store makes the reader go back to the archive. The store's
folders are never links (`folders.real_folder`): a link planted in them is
refused, never written through.
"""

from __future__ import annotations

import errno
import hashlib
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ... import stats
from ...cache import ADVICE, CacheFolderError, cache_dir, real_folder
from ...safety import PathError, replace_file
from .members import Members


def origin_key(archive_sha: str, origin: str | None) -> str:
    """The name of the manifest of an archive's members: its sha256 when the whole archive was checked against
    it (`origin` None), else a digest of the sha256 and the URL the members were read from by ranges."""
    if origin is None:
        return archive_sha
    return "ranges-" + hashlib.sha256(f"{archive_sha}\n{origin}".encode()).hexdigest()


@dataclass
class Manifest:
    names: frozenset[str] | None = None
    members: dict[str, str] = field(default_factory=dict)  # archive path -> blob sha256
    refused: dict[str, str] = field(default_factory=dict)  # archive path -> why it is not handed out


class MemberStore:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir("members")

    def _manifest_path(self, key: str) -> Path:
        return self.folder / f"{key}.json.z"

    def _blob_path(self, sha: str) -> Path:
        return self.folder / "blobs" / sha[:2] / sha

    def manifest(self, key: str) -> Manifest:
        """The manifest kept under `key` (`origin_key`); an empty one when there is none, or it is damaged."""
        try:
            data = json.loads(zlib.decompress(self._manifest_path(key).read_bytes()))
            return Manifest(frozenset(data["names"]), dict(data["members"]), dict(data["refused"]))
        except (OSError, ValueError, KeyError, TypeError, zlib.error):
            return Manifest()

    def blob(self, sha: str) -> bytes | None:
        try:
            data = zlib.decompress(self._blob_path(sha).read_bytes())
        except (OSError, zlib.error):
            return None
        return data if hashlib.sha256(data).hexdigest() == sha else None

    def answer(self, archive_sha: str, wanted: set[str], origin: str | None = None) -> Members | None:
        """The wanted members from the store, or None when some must be read from the archive: what a verified
        pass over the whole archive kept, else (with `origin`, the file's URL) what range reads of it kept."""
        located = self.locate(archive_sha, wanted, origin)
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

    def locate(self, archive_sha: str, wanted: set[str],
               origin: str | None = None) -> tuple[frozenset[str], dict[str, str], dict[str, str]] | None:
        """Without reading any blob: (every name, wanted member -> blob sha256, wanted refused member -> why),
        or None when some wanted member is not in the store. The manifest of the verified archive is asked
        first, then (with `origin`) that of range reads from that URL."""
        for key in (archive_sha, *(() if origin is None else (origin_key(archive_sha, origin),))):
            located = self._locate(self.manifest(key), wanted)
            if located is not None:
                return located
        stats.count("store_misses")
        return None

    def _locate(self, manifest: Manifest,
                wanted: set[str]) -> tuple[frozenset[str], dict[str, str], dict[str, str]] | None:
        if manifest.names is None:
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
                return None
            digests[path] = sha
        return manifest.names, digests, refused

    def keep(self, archive_sha: str, found: Members, origin: str | None = None) -> None:
        """Add what one pass over the archive read: `origin` None when the pass read the whole archive and
        checked it against `archive_sha`, else the URL its members were read from by ranges. Failures to write
        only cost a later re-read; a link planted in the store's folders is refused (CacheFolderError)."""
        key = origin_key(archive_sha, origin)
        manifest = self.manifest(key)
        try:
            for path, content in found.contents.items():
                sha = hashlib.sha256(content).hexdigest()
                blob = self._blob_path(sha)
                if not blob.is_file():
                    self._write(blob, zlib.compress(content, 6))
                manifest.members[path] = sha
            manifest.refused.update(found.refused)
            data = {"names": sorted(found.names), "members": manifest.members, "refused": manifest.refused}
            self._write(self._manifest_path(key), zlib.compress(json.dumps(data).encode(), 6))
        except CacheFolderError:
            raise
        except OSError:
            pass

    def _write(self, path: Path, data: bytes) -> None:
        """`data` into `path` atomically (`safety.replace_file`: a temporary file made with O_EXCL, fsynced, renamed
        over `path`; a link in `path`'s place is replaced, not followed). Every folder from the store's down to
        `path`'s is a real folder (made when missing), never a link (CacheFolderError), not even one swapped in
        after `real_folder` looked at it: the write opens each of them without following a link. Anything else
        in the file's place (a folder) is an OSError, which `keep` lets go like a full disk."""
        relative = path.relative_to(self.folder)
        real_folder(self.folder, *relative.parent.parts)
        try:
            replace_file(self.folder, relative.as_posix(), data, shown=relative, root_may_be_link=False,
                         over_link=True)
        except PathError as exc:
            if exc.link:
                raise CacheFolderError(f"cache folder {self.folder}: {exc}; {ADVICE}") from None
            raise OSError(errno.EEXIST, str(exc)) from None  # a folder in the file's place: a later re-read, no more
