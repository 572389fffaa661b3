"""`PyPISource`: an engine's releases on the package index, and `PyPISnapshot`: one release's archive, read by
repository path. Part of `verifier.sources.pypi`, whose docstring says which index, versions and archive, and
what is verified of each.
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import cast

from packaging.version import InvalidVersion, Version

from ...kb import Engine
from ...model import Release
from .. import Snapshot, Source, SourceUnavailable, check_repository_path
from ..archive import ArchiveError
from .http import HttpClient, Progress
from .index import ArchiveFile, choose_archive, iso_date, read_index_page
from .pip_config import configured_cert, configured_index_url
from .readers import ArchiveReader, reader_for


class PyPISource(Source):
    """An engine's releases on the package index.

    `progress(done_bytes, total_bytes, label)`, when given, is told how
    downloads go. `http` sets timeouts and retries (tests make them short). `member_store=False` reads
    every archive afresh, without the store of members read before, and `listing` (what `listing()` gave)
    spares reading the index page again (both for benchmarks).
    """

    def __init__(self, engine: Engine, index_url: str | None = None, include_prereleases: bool = False,
                 progress: Progress | None = None, http: HttpClient | None = None, member_store: bool = True,
                 listing: dict[Version, list[ArchiveFile]] | None = None) -> None:
        self.engine = engine.key
        self._engine = engine
        self.index_url = (index_url or configured_index_url() or "").rstrip("/")
        self.include_prereleases = include_prereleases
        self.progress = progress
        self._http = http or HttpClient(cafile=configured_cert())
        self._files: dict[Version, list[ArchiveFile]] | None = listing
        self._member_store = member_store

    def releases(self) -> list[Release]:
        releases = []
        for version, files in sorted(self.listing().items()):
            if version.is_prerelease and not self.include_prereleases:
                continue
            releases.append(self._release(choose_archive(files)))
        return releases

    def archive_of(self, release: Release) -> ArchiveFile:
        """The file `release` is read from: the one its identity names, else the one chosen for its version."""
        try:
            files = self.listing().get(Version(release.version))
        except InvalidVersion:
            files = None
        if not files:
            raise SourceUnavailable(f"{self._engine.package} {release.version}: no such version on the index "
                                    f"(or only yanked files)")
        if not release.identity:
            return choose_archive(files)
        for candidate in files:
            if release.identity == f"sha256:{candidate.sha256}":
                return candidate
        raise SourceUnavailable(f"{self._engine.package} {release.version}: the index no longer offers "
                                f"the archive {release.identity}")

    def open(self, release: Release) -> PyPISnapshot:
        archive = self.archive_of(release)
        return PyPISnapshot(release, self._engine, reader_for(archive, self._http, self.progress, self._member_store))

    def _release(self, archive: ArchiveFile) -> Release:
        engine = self._engine
        forge = engine.repository.rstrip("/").removesuffix(".git")
        ref = engine.tag(archive.version)  # a vendored engine's commit is known once its archive is read
        return Release(engine.key, archive.version, date=iso_date(archive.upload_time),
                       identity=f"sha256:{archive.sha256}", url=f"{forge}/tree/{ref}" if ref else None)

    def listing(self) -> dict[Version, list[ArchiveFile]]:
        """The index's archive files of the package, by version (the index page is read once)."""
        if self._files is None:
            self._files = read_index_page(self._http, self.index_url, self._engine.package)
        return self._files


class PyPISnapshot(Snapshot):
    """One release's archive, read by repository path.

    Members are read once and kept in memory; `prefetch(paths)` reads all the
    paths the checks need in one pass over the archive.
    """

    def __init__(self, release: Release, engine: Engine, reader: ArchiveReader) -> None:
        self.release = release
        self.archive = reader.archive
        self._engine = engine
        self._reader = reader
        self._names: frozenset[str] | None = None
        self._contents: dict[str, bytes] = {}
        self._digests: dict[str, str] = {}  # member -> sha256, for members in the store not read yet
        self._refused: dict[str, str] = {}
        self._failure: SourceUnavailable | None = None

    def read(self, path: str) -> bytes | None:
        problem = check_repository_path(path)
        if problem:
            raise SourceUnavailable(f"{path}: {problem}")
        member = self._engine.archive_path(path)
        if member is None:
            raise SourceUnavailable(f"{path}: {self._engine.name} release archives never ship it; "
                                    f"they hold only {self._engine.archive_root}")
        if self._unread({member}):
            self._fetch({member})
        if member in self._refused:
            raise SourceUnavailable(f"{path}: {self.archive.filename}: {self._refused[member]}")
        if member in self._digests and member not in self._contents:
            data = self._reader.stored(self._digests[member])
            if data is None:  # gone from the store, or damaged: back to the archive
                del self._digests[member]
                self._fetch({member}, located=False)
                if member in self._refused:
                    raise SourceUnavailable(f"{path}: {self.archive.filename}: {self._refused[member]}")
            else:
                self._contents[member] = data
        return self._contents.get(member)

    def digest(self, path: str) -> str | None:
        """"sha256:<hex>" of the file's content when the member store knows it without reading the file."""
        member = self._member(path)
        if member is None:
            return None  # `read` says why
        if self._unread({member}):
            self._fetch({member})
        sha = self._digests.get(member)
        return f"sha256:{sha}" if sha else None

    def vendored_commit(self) -> str | None:
        """The commit a vendored engine's release holds, read from the archive itself: the submodule's HEAD
        that the package's sdist ships (`.git/modules/<vendored_at>HEAD`, a shallow clone's detached head).
        None for an engine that is not vendored, an archive without it, or a HEAD that is not a commit id."""
        member = self._head_member()
        if member is None:
            return None
        try:
            if self._unread({member}):
                self._fetch({member})
        except SourceUnavailable:
            return None
        data = self._contents.get(member)
        if data is None and member in self._digests:
            data = self._reader.stored(self._digests[member])
        text = data.decode("ascii", "replace").strip() if data is not None and len(data) <= 100 else ""
        return text.lower() if re.fullmatch(r"[0-9a-fA-F]{40}", text) else None

    def _head_member(self) -> str | None:
        vendored = self._engine.vendored_at
        return f".git/modules/{vendored}HEAD" if vendored else None

    def paths(self) -> list[str]:
        """The repository path of every plain file the archive holds."""
        if self._names is None:
            self._fetch(set())
        found = (self._engine.repository_path(name) for name in self._names or ())
        return sorted(path for path in found if path is not None)

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read every one of `paths` that the archive may hold, in one pass; reads of the others raise later."""
        missing = self._unread(self._members(paths))
        if missing:
            self._fetch(missing)

    def identities(self, paths: Iterable[str]) -> tuple | None:
        """What each file's content is, named without reading any file or archive (the member store's
        manifest): a sha256, or None for a file the release does not have. None when some file cannot
        be named so (the store has not seen it, or it is refused)."""
        maybe = [self._member(p) for p in paths]
        if None in maybe or self._failure is not None:
            return None
        members = cast("list[str]", maybe)  # none is None (above)
        missing = self._unread(set(members))
        if missing and not self._located(missing):
            return None
        if self._names is None or any(m in self._refused for m in members):
            return None
        found: list[str | None] = []
        for member in members:
            if member not in self._names:
                found.append(None)
            elif member in self._digests:
                found.append(self._digests[member])
            else:
                return None  # read from the archive in this run: its digest is not at hand
        return tuple(found)

    def files(self, paths: Iterable[str], on_pass: Callable[[], None] | None = None) -> Iterator[str]:
        """`prefetch(paths)`, telling which paths can be read as they become readable.

        An archive pass runs in a thread of its own, and each wanted file is handed
        out as soon as it is decompressed, so that the caller works on it while
        the rest of the archive is read. A path is yielded again when a later
        member of the same name replaced it. When the iteration ends, every path
        reads as after `prefetch`; when the pass fails, the iteration raises
        SourceUnavailable (after handing out files): what was done with them must
        then be discarded, as `prefetch` would have raised before any of it.
        """
        wanted = {}
        for path in paths:
            member = self._member(path)
            if member is not None:
                wanted[member] = path
        missing = self._unread(set(wanted))
        head = self._head_member()
        if missing and head is not None:
            missing |= self._unread({head})  # the vendored commit, read in the same pass (`vendored_commit`)
        if missing:
            if self._failure is not None:
                raise self._failure
            if not self._located(missing):  # the member store does not have them all: a pass over the archive
                if on_pass is not None:
                    on_pass()
                yield from self._stream(missing, wanted)
                return
        yield from wanted.values()

    def _stream(self, missing: set[str], wanted: dict[str, str]) -> Iterator[str]:
        arrived: queue.Queue = queue.Queue()
        end = object()

        def work() -> None:
            try:
                self._fetch(missing, located=False, on_member=lambda member, data: arrived.put((member, data)))
            except BaseException as exc:  # raised in the consumer
                arrived.put(exc)
            else:
                arrived.put(end)

        worker = threading.Thread(target=work, name=f"read {self.archive.filename}", daemon=True)
        worker.start()
        handed: dict[str, bytes] = {}  # what each path was when it was handed out
        while (item := arrived.get()) is not end:
            if isinstance(item, BaseException):
                worker.join()
                raise item
            member, data = item
            if member not in wanted:  # read for the snapshot itself (`vendored_commit`), not asked for
                self._contents.setdefault(member, data)
                continue
            if self._contents.setdefault(member, data) is data and member not in handed:
                handed[member] = data
                yield wanted[member]  # an interruption here (Ctrl-C) leaves the daemon thread to the exit
        worker.join()
        for member, data in handed.items():  # replaced by a later member of the same name, or refused after all
            if self._contents.get(member) is not data:
                yield wanted[member]

    def _member(self, path: str) -> str | None:
        """The archive member of a repository path; None for a path that is unsafe or never in the archive."""
        return self._engine.archive_path(path) if check_repository_path(path) is None else None

    def _members(self, paths: Iterable[str]) -> set[str]:
        return {m for p in paths if (m := self._member(p)) is not None}

    def _unread(self, members: set[str]) -> set[str]:
        return {m for m in members if m not in self._contents and m not in self._refused and m not in self._digests
                and (self._names is None or m in self._names)}

    def _located(self, members: set[str]) -> bool:
        """Whether the member store names every one of `members`; their contents are then read when asked for."""
        in_store = self._reader.locate(members)
        if in_store is None:
            return False
        self._names, digests, refused = in_store
        self._digests.update(digests)
        self._refused.update(refused)
        return True

    def _fetch(self, members: set[str], located: bool = True, on_member=None) -> None:
        """Learn where `members` are: in the member store (read when asked for), else from one archive pass."""
        if self._failure is not None:
            raise self._failure
        if located and self._located(members):
            return
        try:
            found = (self._reader.read_members(members, on_member) if on_member
                     else self._reader.read_members(members))
        except ArchiveError as exc:
            self._failure = SourceUnavailable(f"{self.archive.filename}: {exc}")
            raise self._failure from None
        except OSError as exc:  # the cache folder
            self._failure = SourceUnavailable(f"{self.archive.filename}: {exc}")
            raise self._failure from None
        except SourceUnavailable as exc:
            self._failure = exc
            raise
        self._names = found.names
        self._contents.update(found.contents)
        self._refused.update(found.refused)
