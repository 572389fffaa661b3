"""The Python package index as a source: releases from the PEP 691 JSON simple API, code from their archives.

Which index: the one pip is configured with, so that mirrors work: PIP_INDEX_URL,
else `index-url` from pip's configuration files (the `install` section, then
`global`), else pip's own default. Only that primary index is read; extra
indexes are not. A CA bundle set for pip (PIP_CERT, or `cert` in its
configuration) is used for https.

Which versions: every version with a file that is neither yanked nor without
a sha256 digest; pre- and dev-releases only when asked for. In PEP 440 order.

Which archive a version is read from: its sdist (a .tar.gz before an old
.zip) where there is one; else a wheel: the pure-Python `py3-none-any` one if
there is one, else the first by file name (one fixed choice, so that a
version's identity does not depend on the machine that verifies it).

What is verified, by how the archive is read:

- An sdist, or a wheel whose server does not answer range requests, is
  downloaded whole into the cache (`archives/`, named by its sha256). The
  sha256 the index lists is checked over the whole file while it streams in;
  a mismatch deletes the file. A cached copy is used after checking its size,
  and its sha256 once per process. Tar members must have their declared size;
  zip members their declared size and CRC-32.
- A wheel is otherwise read with HTTP range requests: its end record, its
  central directory, its RECORD and only the members needed. The archive's own
  digest cannot be checked without the whole file. What is checked: the file's
  total size (from Content-Range) is the size the index lists, on every
  request; each member read decompresses to its declared size and CRC-32;
  RECORD's CRC-32; and each member's sha256 against the one RECORD lists (a
  member RECORD does not list with a sha256 is refused). That proves the
  members consistent with the wheel's own manifest, not that the wheel is the
  one the index vouches for: a server that sends a different but
  self-consistent wheel of the same size is not caught in this mode.
"""

from __future__ import annotations

import configparser
import datetime as _dt
import hashlib
import json
import locale
import os
import queue
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.tags import Tag
from packaging.utils import (InvalidSdistFilename, InvalidWheelFilename, canonicalize_name,
                             parse_sdist_filename, parse_wheel_filename)
from packaging.version import InvalidVersion, Version

from ..cache import cache_dir
from ..kb import Engine
from ..model import Release
from . import Snapshot, SourceUnavailable, check_repository_path
from ._archive import (ZIP_TAIL, ArchiveError, Members, ZipReader, matches_record, parse_record,
                       read_tar_members, record_path)
from ._http import HttpClient, Progress, RangeNotSupported
from ._store import MemberStore

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
#: The largest index page read (vLLM's is under 100 KiB); parsed, a page takes some ten times its size.
MAX_INDEX_PAGE = 16 * 1024 * 1024
#: The largest archive downloaded.
MAX_ARCHIVE_BYTES = 4 * 1024 ** 3

_PURE = Tag("py3", "none", "any")
#: A wheel is read by range requests for at most this many members at once; more, and it is downloaded whole.
RANGE_READ_MAX_MEMBERS = 64


@dataclass(frozen=True)
class ArchiveFile:
    """One file of a version on the index."""

    filename: str
    url: str
    sha256: str  # hex
    size: int | None
    kind: str  # "sdist" or "wheel"
    version: str  # as its file name spells it, normalised
    upload_time: str | None = None  # ISO 8601 (PEP 700)
    pure: bool = False  # a py3-none-any wheel

    @property
    def suffix(self) -> str:
        for suffix in (".tar.gz", ".zip", ".whl"):
            if self.filename.endswith(suffix):
                return suffix
        return ""


def configured_index_url() -> str | None:
    """The primary index pip is configured with, else pip's default; None without pip and settings."""
    return os.environ.get("PIP_INDEX_URL", "").strip() or _pip_setting("index-url") or _pip_default_index()


def configured_cert() -> str | None:
    """The CA bundle pip is configured with, if it names a file."""
    cert = os.environ.get("PIP_CERT", "").strip() or _pip_setting("cert")
    return cert if cert and os.path.isfile(cert) else None


def _pip_setting(name: str) -> str | None:
    """`name` as pip's configuration files set it for `pip install`, else globally.

    The files are read here with configparser, as pip (23.x, `pip._internal.configuration`)
    reads them, without importing pip's internals:

    - which files: site-wide ones, then the user's, then the environment's
      (`sys.prefix`), then the file named by PIP_CONFIG_FILE; a later file overrides an
      earlier one key by key (see `_pip_config_files` for the paths on each platform).
      PIP_CONFIG_FILE set to `os.devnull` means no file at all; PIP_CONFIG_FILE naming
      a file that exists means the user's files are skipped.
    - within the merged keys, `[install]` overrides `[global]` whichever file each came
      from (pip applies the command's section after `global`). Option names are
      normalised as pip does: lower case, `_` as `-`, a leading `--` dropped; a
      `[DEFAULT]` section applies to every section (configparser's rule). An empty
      value counts as unset.
    - a file that cannot be read, or that configparser cannot parse (pip would stop
      with "Configuration file could not be loaded"), or that is not in the locale's
      encoding, is ignored whole; the other files still count.

    PIP_* environment variables other than the ones the callers read are not applied.
    """
    values: dict[str, str] = {}
    for path in _pip_config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding=locale.getpreferredencoding(False))
        except (configparser.Error, UnicodeDecodeError):
            continue
        for section in parser.sections():
            for option, value in parser.items(section):
                option = option.lower().replace("_", "-")
                values[f"{section}.{option[2:] if option.startswith('--') else option}"] = value
    for section in ("install", "global"):
        value = values.get(f"{section}.{name}")
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _pip_config_files() -> list[str]:
    """pip's configuration files, lowest precedence first (pip's `get_configuration_files`).

    On Linux and other Unix: each of $XDG_CONFIG_DIRS (else /etc/xdg) + /pip/pip.conf,
    /etc/pip.conf; ~/.pip/pip.conf, $XDG_CONFIG_HOME (else ~/.config) + /pip/pip.conf;
    sys.prefix/pip.conf; $PIP_CONFIG_FILE. On macOS: /Library/Application Support/pip/pip.conf;
    ~/.pip/pip.conf, then ~/Library/Application Support/pip/pip.conf if that folder exists,
    else ~/.config/pip/pip.conf; then as on Linux. On Windows (pip.ini): %ALLUSERSPROFILE%
    (else %PROGRAMDATA%)\\pip\\pip.ini; ~\\pip\\pip.ini, %APPDATA%\\pip\\pip.ini; then as on
    Linux; pip asks Windows for these folders, here the environment variables stand in.
    Android's folders are not supported (the Unix ones are used).
    """
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        basename = "pip.ini"
        common = os.environ.get("ALLUSERSPROFILE") or os.environ.get("PROGRAMDATA")
        site_wide = [os.path.join(os.path.normpath(common), "pip", basename)] if common else []
        appdata = os.environ.get("APPDATA")
        user = [os.path.join(home, "pip", basename)]
        user += [os.path.join(os.path.normpath(appdata), "pip", basename)] if appdata else []
    else:
        basename = "pip.conf"
        if sys.platform == "darwin":
            site_dirs = ["/Library/Application Support/pip"]
            user_dir = os.path.join(home, "Library", "Application Support", "pip")
            if not os.path.isdir(user_dir):
                user_dir = os.path.join(home, ".config", "pip")
        else:
            xdg_dirs = os.environ.get("XDG_CONFIG_DIRS", "")
            xdg_dirs = xdg_dirs if xdg_dirs.strip() else "/etc/xdg"
            site_dirs = [os.path.join(os.path.expanduser(d), "pip") for d in xdg_dirs.split(os.pathsep)] + ["/etc"]
            xdg_home = os.environ.get("XDG_CONFIG_HOME", "")
            user_dir = os.path.join(xdg_home if xdg_home.strip() else os.path.join(home, ".config"), "pip")
        site_wide = [os.path.join(d, basename) for d in site_dirs]
        user = [os.path.join(home, ".pip", basename), os.path.join(user_dir, basename)]
    files = site_wide
    if not (env_file and os.path.exists(env_file)):
        files += user
    files.append(os.path.join(sys.prefix, basename))
    if env_file is not None:
        files.append(env_file)
    return files


def _pip_default_index() -> str | None:
    """pip's own default index (importing only pip's small `models.index` module, a few ms)."""
    try:
        from pip._internal.models.index import PyPI

        return str(PyPI.simple_url)
    except Exception:  # pip's internals are no API: when they change, do without
        return None


class PyPISource:
    """An engine's releases on the package index.

    `progress(done_bytes, total_bytes, label)`, when given, is told how
    downloads go. `http` sets timeouts and retries (tests make them short).
    """

    def __init__(self, engine: Engine, index_url: str | None = None, include_prereleases: bool = False,
                 progress: Progress | None = None, http: HttpClient | None = None) -> None:
        self.engine = engine.key
        self._engine = engine
        self.index_url = (index_url or configured_index_url() or "").rstrip("/")
        self.include_prereleases = include_prereleases
        self.progress = progress
        self._http = http or HttpClient(cafile=configured_cert())
        self._files: dict[Version, list[ArchiveFile]] | None = None

    def releases(self) -> list[Release]:
        releases = []
        for version, files in sorted(self._index_files().items()):
            if version.is_prerelease and not self.include_prereleases:
                continue
            releases.append(self._release(choose_archive(files)))
        return releases

    def archive_of(self, release: Release) -> ArchiveFile:
        """The file `release` is read from: the one its identity names, else the one chosen for its version."""
        try:
            files = self._index_files().get(Version(release.version))
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
        return PyPISnapshot(release, self._engine, _reader_for(archive, self._http, self.progress))

    def _release(self, archive: ArchiveFile) -> Release:
        engine = self._engine
        forge = engine.repository.rstrip("/").removesuffix(".git")
        return Release(engine.key, archive.version, date=_iso_date(archive.upload_time),
                       identity=f"sha256:{archive.sha256}", url=f"{forge}/tree/{engine.tag(archive.version)}")

    def _index_files(self) -> dict[Version, list[ArchiveFile]]:
        if self._files is None:
            self._files = self._read_index_page()
        return self._files

    def _read_index_page(self) -> dict[Version, list[ArchiveFile]]:
        package = self._engine.package
        if not self.index_url:
            raise SourceUnavailable(f"{package}: no package index configured (set PIP_INDEX_URL)")
        what = f"{package}: the index page"
        page = self._http.get(f"{self.index_url}/{canonicalize_name(package)}/", what=what, accept=SIMPLE_JSON,
                              limit=MAX_INDEX_PAGE)
        if "json" not in page.content_type:
            raise SourceUnavailable(f"{what} at {page.url} is {page.content_type or 'not JSON'}: "
                                    "the index does not offer the JSON simple API (PEP 691)")
        try:
            data = json.loads(page.body)
        except RecursionError:
            raise SourceUnavailable(f"{what} at {page.url}: invalid JSON (nested too deeply)") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of too many digits
            raise SourceUnavailable(f"{what} at {page.url}: invalid JSON ({exc})") from None
        return _files_by_version(_project_files(data, what), page.url, package, what)


#: What a PEP 691 (1.x) project page holds, as far as it is read: key -> (the types it may have, required).
#: Optional keys may also be null. Keys not listed (requires-python, core-metadata...) are not read.
_PAGE_KEYS = {"meta": ((dict,), False), "name": ((str,), False), "files": ((list,), True),
              "versions": ((list,), False)}
_FILE_KEYS = {"filename": ((str,), True), "url": ((str,), True), "hashes": ((dict,), True),
              "yanked": ((bool, str), False), "size": ((int,), False), "upload-time": ((str,), False)}


def _project_files(data: object, what: str) -> list[dict]:
    """The file entries of a PEP 691 project page, once every value that is read has its type.

    The one place that checks the page's shape: anything else (a list for an object, a
    number for a string, `true` for a size) makes the whole page unavailable, so that a
    malformed or hostile page is an error, never a traceback nor a shorter list of releases.
    """
    def refuse(where: str, problem: str) -> SourceUnavailable:
        return SourceUnavailable(f"{what}: not a PEP 691 project page: {where} {problem}")

    def check(mapping: dict, keys: dict, prefix: str) -> None:
        for key, (types, required) in keys.items():
            value = mapping.get(key)
            if value is None:
                if required:
                    raise refuse(prefix.removesuffix(".") or "the page", f"has no {key!r}")
                continue
            # bool is an int in Python, never a size in JSON
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                expected = " or ".join(map(_json_type_of, types))
                raise refuse(f"{prefix}{key}", f"is {_json_type(value)}, not {expected}")

    if not isinstance(data, dict):
        raise refuse("the page", f"is {_json_type(data)}, not an object")
    check(data, _PAGE_KEYS, "")
    api_version = (data.get("meta") or {}).get("api-version", "1.0")
    if not isinstance(api_version, str):
        raise refuse("meta.api-version", f"is {_json_type(api_version)}, not a string")
    if api_version.split(".")[0] != "1":
        raise SourceUnavailable(f"{what}: simple API version {api_version} is not supported (only 1.x)")
    for i, version in enumerate(data.get("versions") or ()):
        if not isinstance(version, str):
            raise refuse(f"versions[{i}]", f"is {_json_type(version)}, not a string")
    for i, entry in enumerate(data["files"]):
        if not isinstance(entry, dict):
            raise refuse(f"files[{i}]", f"is {_json_type(entry)}, not an object")
        check(entry, _FILE_KEYS, f"files[{i}].")
        for name, digest in entry["hashes"].items():
            if not isinstance(digest, str):
                raise refuse(f"files[{i}].hashes[{name!r}]", f"is {_json_type(digest)}, not a string")
        if entry.get("size") is not None and entry["size"] < 0:
            raise refuse(f"files[{i}].size", "is negative")
    return data["files"]


def _json_type(value: object) -> str:
    """What a parsed JSON value is, in JSON's words: 'a number', 'an array'..."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _json_type_of(kind: type) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer"}[kind]


def _files_by_version(entries: list[dict], base_url: str, package: str,
                      what: str) -> dict[Version, list[ArchiveFile]]:
    by_version: dict[Version, list[ArchiveFile]] = {}
    for i, entry in enumerate(entries):
        archive = _archive_file(entry, base_url, package, f"{what}: files[{i}]")
        if archive is not None:
            by_version.setdefault(Version(archive.version), []).append(archive)
    return by_version


def _archive_file(entry: dict, base_url: str, package: str, where: str) -> ArchiveFile | None:
    """The entry (checked by `_project_files`) as a usable archive; None when it is yanked, has no
    sha256, or is not an sdist or wheel of `package`."""
    if entry.get("yanked") not in (None, False):
        return None
    sha256 = entry["hashes"].get("sha256")
    if not isinstance(sha256, str) or len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256.lower()):
        return None
    parsed = _parse_filename(entry["filename"], package)
    if parsed is None:
        return None
    kind, version, pure = parsed
    try:
        url = urllib.parse.urljoin(base_url, entry["url"])
    except ValueError as exc:  # an unbalanced [ in the host
        raise SourceUnavailable(f"{where}.url: not a URL ({exc})") from None
    return ArchiveFile(filename=entry["filename"], url=url, sha256=sha256.lower(), size=entry.get("size"),
                       kind=kind, version=version, upload_time=entry.get("upload-time"), pure=pure)


def _parse_filename(filename: str, package: str) -> tuple[str, str, bool] | None:
    """(kind, version, pure) of an sdist or wheel file name of `package`."""
    try:
        if filename.endswith(".whl"):
            name, version, _, tags = parse_wheel_filename(filename)
            kind, pure = "wheel", _PURE in tags
        elif filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
            kind, pure = "sdist", False
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    if name != canonicalize_name(package):
        return None
    return kind, str(version), pure


def choose_archive(files: Iterable[ArchiveFile]) -> ArchiveFile:
    """The sdist (.tar.gz before .zip), else the py3-none-any wheel, else the first wheel by file name."""
    return min(files, key=lambda f: (f.kind != "sdist", f.suffix != ".tar.gz", not f.pure, f.filename))


def _iso_date(timestamp: str | None) -> str | None:
    if not timestamp:
        return None
    try:
        return _dt.date.fromisoformat(timestamp[:10]).isoformat()
    except ValueError:
        return None


class PyPISnapshot(Snapshot):
    """One release's archive, read by repository path.

    Members are read once and kept in memory; `prefetch(paths)` reads all the
    paths the checks need in one pass over the archive.
    """

    def __init__(self, release: Release, engine: Engine, reader: _ArchiveReader) -> None:
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

    def paths(self) -> list[str]:
        """The repository path of every plain file the archive holds."""
        if self._names is None:
            self._fetch(set())
        return sorted(self._engine.repository_path(name) for name in self._names or ())

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read every one of `paths` that the archive may hold, in one pass; reads of the others raise later."""
        missing = self._unread(self._members(paths))
        if missing:
            self._fetch(missing)

    def identities(self, paths: Iterable[str]) -> tuple | None:
        """What each file's content is, named without reading any file or archive (the member store's
        manifest): a sha256, or None for a file the release does not have. None when some file cannot
        be named so (the store has not seen it, or it is refused)."""
        members = [self._member(p) for p in paths]
        if None in members or self._failure is not None:
            return None
        missing = self._unread(set(members))
        if missing and not self._located(missing):
            return None
        if self._names is None or any(m in self._refused for m in members):
            return None
        found = []
        for member in members:
            if member not in self._names:
                found.append(None)
            elif member in self._digests:
                found.append(self._digests[member])
            else:
                return None  # read from the archive in this run: its digest is not at hand
        return tuple(found)

    def needs_pass(self, paths: Iterable[str]) -> bool:
        """Whether reading `paths` takes a pass over the archive (the member store does not have them all)."""
        missing = self._unread(self._members(paths))
        return bool(missing) and self._failure is None and not self._located(missing)

    def files(self, paths: Iterable[str]) -> Iterator[str]:
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
        if missing:
            if self._failure is not None:
                raise self._failure
            if not self._located(missing):
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
        return {self._member(p) for p in paths} - {None}

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


# -- reading archives ---------------------------------------------------------------------------------

class _ArchiveReader:
    """Reads members of one archive file; subclasses know its format and where its bytes come from."""

    def __init__(self, archive: ArchiveFile, http: HttpClient, progress: Progress | None) -> None:
        self.archive = archive
        self.http = http
        self.progress = progress

    def read_members(self, wanted: set[str], on_member=None) -> Members:
        """The wanted members; a reader that can tells `on_member(member, data)` of each as soon as it has it."""
        raise NotImplementedError

    def locate(self, wanted: set[str]) -> tuple[frozenset[str], dict[str, str], dict[str, str]] | None:
        """(names, member -> sha256, refused) when the members can be read later one by one (`stored`)."""
        return None

    def stored(self, sha: str) -> bytes | None:
        return None


class _TarSdist(_ArchiveReader):
    def read_members(self, wanted: set[str], on_member=None) -> Members:
        path = _cache_path(self.archive)
        if path.is_file() and _intact(path, self.archive):
            return self._read(path, wanted, on_member)
        return self._read_while_downloading(wanted, on_member)

    @staticmethod
    def _read(path: Path, wanted: set[str], on_member) -> Members:
        with open(path, "rb") as raw:
            if on_member is None:
                return read_tar_members(raw, wanted)
            return read_tar_members(raw, wanted, on_member=on_member)

    def _read_while_downloading(self, wanted: set[str], on_member) -> Members:
        """One pass over the sdist as it downloads, so that decompressing it hides behind the download.

        What the pass found counts only once the download is whole and has the
        index's sha256; until then `on_member` may have been told of files from an
        archive that turns out wrong (the caller discards them when this raises).
        If the download starts over (a retry) or the pass fails before the digest
        is known, the pass is made again over the downloaded file, which then has
        its digest checked.
        """
        growing = _Growing()
        outcome: dict = {}

        def fetch() -> None:
            try:
                outcome["path"] = _local_copy(self.archive, self.http, self.progress, growing)
            except BaseException as exc:  # noqa: BLE001 - raised in the reader, below
                outcome["error"] = exc
            finally:
                growing.finish()

        thread = threading.Thread(target=fetch, name=f"download {self.archive.filename}", daemon=True)
        thread.start()
        try:
            try:
                found = (read_tar_members(growing, wanted, on_member=on_member) if on_member is not None
                         else read_tar_members(growing, wanted))
            except ArchiveError:
                found = None  # a download that started over, or an archive that may be corrupt: see below
            thread.join()
        finally:
            growing.close()  # leaving early (an interruption) also stops the download, which cleans up
        if "error" in outcome:
            raise outcome["error"]
        if found is None:
            return self._read(outcome["path"], wanted, on_member)
        return found


class _LocalZip(_ArchiveReader):
    """A zip sdist, or a wheel downloaded whole."""

    def read_members(self, wanted: set[str], on_member=None) -> Members:
        with open(_local_copy(self.archive, self.http, self.progress), "rb") as raw:
            size = os.fstat(raw.fileno()).st_size
            return ZipReader(_file_range(raw), size, strip_top_folder=self.archive.kind == "sdist").read_members(wanted)


class _RemoteWheel(_ArchiveReader):
    """A wheel read with range requests; downloaded whole when cached already or when the server cannot."""

    def __init__(self, archive: ArchiveFile, http: HttpClient, progress: Progress | None) -> None:
        super().__init__(archive, http, progress)
        self._zip: ZipReader | None = None
        self._record: dict[str, tuple[str, str]] | None = None
        self._whole: _LocalZip | None = _LocalZip(archive, http, progress) if _cached(archive) else None
        self._received = 0

    def read_members(self, wanted: set[str], on_member=None) -> Members:
        if self._whole is None and len(wanted) > RANGE_READ_MAX_MEMBERS:
            # One request per member stops paying off: the whole file costs less, and gets its digest checked.
            self._whole = _LocalZip(self.archive, self.http, self.progress)
        if self._whole is None:
            try:
                return self._read_by_ranges(wanted)
            except RangeNotSupported:
                self._whole = _LocalZip(self.archive, self.http, self.progress)
        return self._whole.read_members(wanted)

    def _read_by_ranges(self, wanted: set[str]) -> Members:
        zip_file = self._remote_zip()
        record = self._manifest(zip_file)
        found = zip_file.read_members(wanted)
        for path, content in list(found.contents.items()):
            listed = record.get(path)
            if listed is None or not matches_record(content, listed):
                del found.contents[path]
                found.refused[path] = ("RECORD lists no sha256 for it, so it cannot be verified" if listed is None
                                       else "its sha256 is not the one RECORD lists (corrupt or tampered)")
        return found

    def _remote_zip(self) -> ZipReader:
        if self._zip is None:
            size = self.archive.size
            length = min(size, ZIP_TAIL) if size is not None else ZIP_TAIL
            tail = self._part(size - length if size is not None else None, length)
            self._zip = ZipReader(self._part, self.archive.size, tail=tail)
        return self._zip

    def _manifest(self, zip_file: ZipReader) -> dict[str, tuple[str, str]]:
        if self._record is None:
            path = record_path(zip_file.paths())
            if path is None:
                raise ArchiveError("a wheel without one *.dist-info/RECORD")
            self._record = parse_record(zip_file.read(zip_file.member(path)))
        return self._record

    def _part(self, start: int | None, length: int) -> bytes:
        """Bytes of the wheel; the first answer tells its size when the index did not."""
        part = self.http.get_range(self.archive.url, start, length, what=self.archive.filename)
        if self.archive.size is None and part.total is not None:
            self.archive = replace(self.archive, size=part.total)
        if part.total != self.archive.size:
            raise SourceUnavailable(f"{self.archive.filename}: the server's file has {part.total} bytes, "
                                    f"the index says {self.archive.size}")
        self._received += len(part.body)
        if self.progress:
            self.progress(self._received, None, self.archive.filename)
        return part.body


class _Stored(_ArchiveReader):
    """Answers from the member store what an earlier pass read; goes to the archive only for the rest."""

    def __init__(self, inner: _ArchiveReader) -> None:
        super().__init__(inner.archive, inner.http, inner.progress)
        self.inner = inner
        self.store = MemberStore()

    def locate(self, wanted: set[str]) -> tuple[frozenset[str], dict[str, str], dict[str, str]] | None:
        return self.store.locate(self.archive.sha256, wanted)

    def stored(self, sha: str) -> bytes | None:
        return self.store.blob(sha)

    def read_members(self, wanted: set[str], on_member=None) -> Members:
        stored = self.store.answer(self.archive.sha256, wanted)
        if stored is not None:
            return stored
        found = self.inner.read_members(wanted, on_member) if on_member else self.inner.read_members(wanted)
        self.store.keep(self.archive.sha256, found)
        return found


def _reader_for(archive: ArchiveFile, http: HttpClient, progress: Progress | None) -> _ArchiveReader:
    if archive.kind == "wheel":
        return _Stored(_RemoteWheel(archive, http, progress))
    if archive.suffix == ".zip":
        return _Stored(_LocalZip(archive, http, progress))
    return _Stored(_TarSdist(archive, http, progress))


def _file_range(raw):
    def read_range(start: int, length: int) -> bytes:
        raw.seek(start)
        return raw.read(length)
    return read_range


# -- the download cache -------------------------------------------------------------------------------

#: Cached files whose sha256 this process has checked, by (path, size, mtime, inode).
_VERIFIED: set[tuple[str, int, int, int]] = set()


def _cache_path(archive: ArchiveFile) -> Path:
    return cache_dir("archives") / f"{archive.sha256}{archive.suffix}"


def _cached(archive: ArchiveFile) -> bool:
    return _cache_path(archive).is_file()


def _local_copy(archive: ArchiveFile, http: HttpClient, progress: Progress | None,
                growing: _Growing | None = None) -> Path:
    """The archive in the cache, downloaded and checked against its digest when it is not there or not intact.

    With `growing`, a reader follows the download as it is written."""
    path = _cache_path(archive)
    if path.is_file() and _intact(path, archive):
        return path
    path.unlink(missing_ok=True)
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=".partial-", suffix=archive.suffix)
    os.close(fd)
    try:
        if growing is not None:
            growing.follow(partial)
        digest = http.download(archive.url, partial, what=archive.filename, size=archive.size,
                               limit=MAX_ARCHIVE_BYTES, progress=progress,
                               on_write=growing.wrote if growing is not None else None)
        if digest != archive.sha256:
            raise SourceUnavailable(f"{archive.filename}: digest mismatch: the index lists sha256 {archive.sha256}, "
                                    f"the file downloaded has {digest}")
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    _VERIFIED.add(_stamp(path))
    return path


class _Interrupted(OSError):
    """The file being read stopped being the one downloaded (the download started over, or failed)."""


class _Cancelled(BaseException):
    """The reader gave up: the download stops (and removes its partial file)."""


class _Growing:
    """A file being downloaded, read as it grows (a BinaryIO for the tar reader).

    `read` waits for bytes the download has not written yet, and ends when the
    download does. A download that starts over (a retry empties the file) or
    fails makes `read` raise _Interrupted, an OSError, which the tar reader
    reports as a corrupt archive; the caller then reads the finished file.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._file = None  # the partial file, once the download has created it
        self._attempt: int | None = None
        self._written = 0
        self._position = 0
        self._ended = False
        self._broken = False
        self._closed = False

    # -- the download's side

    def follow(self, partial: str) -> None:
        with self._changed:
            if self._closed:
                raise _Cancelled()
            self._file = open(partial, "rb", buffering=0)  # noqa: SIM115 - closed by close()
            self._changed.notify_all()

    def wrote(self, attempt: int, written: int) -> None:
        with self._changed:
            if self._closed:
                raise _Cancelled()
            if self._attempt is None:
                self._attempt = attempt
            elif attempt != self._attempt:
                self._broken = True  # the bytes read so far may not be the file's any more
            self._written = written
            self._changed.notify_all()

    def finish(self) -> None:
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    # -- the reader's side

    def read(self, size: int = -1) -> bytes:
        with self._changed:
            while not (self._broken or self._ended or self._closed) and (
                    self._file is None or self._written - self._position < max(size, 1)):
                self._changed.wait()
            if self._broken or self._closed or self._file is None:
                raise _Interrupted("the download started over or stopped")
            available = self._written - self._position
        want = available if size < 0 else min(size, available)
        pieces, got = [], 0
        while got < want:
            piece = self._file.read(want - got)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        self._position += got
        return b"".join(pieces)

    def close(self) -> None:
        with self._changed:
            self._closed = True
            if self._file is not None:
                self._file.close()
            self._changed.notify_all()


def _intact(path: Path, archive: ArchiveFile) -> bool:
    """Whether a cached copy has the archive's size, and (checked once per process) its sha256."""
    stamp = _stamp(path)
    if archive.size is not None and stamp[1] != archive.size:
        return False
    if stamp not in _VERIFIED:
        if _sha256_of(path) != archive.sha256:
            return False
        _VERIFIED.add(stamp)
    return True


def _stamp(path: Path) -> tuple[str, int, int, int]:
    status = path.stat()
    return str(path), status.st_size, status.st_mtime_ns, status.st_ino


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as raw:
        while chunk := raw.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()
