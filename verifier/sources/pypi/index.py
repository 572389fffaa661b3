"""The package index's side: a project's PEP 691 JSON page, read and checked for its shape in one place, as
the archives of each version (yanked files and files without a sha256 left out), and the one archive a
version is read from."""

from __future__ import annotations

import datetime as _dt
import json
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from .. import SourceUnavailable
from .http import HttpClient

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
#: The largest index page read (vLLM's is under 100 KiB); parsed, a page takes some ten times its size.
MAX_INDEX_PAGE = 16 * 1024 * 1024

_PURE = Tag("py3", "none", "any")


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


def read_index_page(http: HttpClient, index_url: str, package: str) -> dict[Version, list[ArchiveFile]]:
    """The usable archives of every version of `package` on the index at `index_url`, from its PEP 691 page."""
    if not index_url:
        raise SourceUnavailable(f"{package}: no package index configured (set PIP_INDEX_URL)")
    what = f"{package}: the index page"
    page = http.get(f"{index_url}/{canonicalize_name(package)}/", what=what, accept=SIMPLE_JSON,
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


def iso_date(timestamp: str | None) -> str | None:
    if not timestamp:
        return None
    try:
        return _dt.date.fromisoformat(timestamp[:10]).isoformat()
    except ValueError:
        return None
