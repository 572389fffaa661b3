"""The release surfaces on disk: `ledger/surface/<engine>.json`, written by `gotchas verify` beside the ledger.

One file per engine, in a deterministic form: the bodies of all items (what an item says, without its place) once
each, under a short id; then for each release what was read (the archive's identity, the files that define items
and their sha256, how many files were read in all and a digest of them, when and by which verifier) and its
items, one line each, as `[id, file index, line]`, or with the file index and line of its default where that is
written elsewhere (a flag whose default is a config class's field). A release that keeps a flag as it was adds
a line naming the same id, so that the diff of a scheduled run reads as "these items changed".

Reading trusts nothing: the text goes through `decode`, which refuses (SurfaceError, with the place in the file)
anything `encode` would not have written, before a run writes anything.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import cast

from ..errors import EXIT_USAGE, GotchasError
from ..model import version_key
from .model import KINDS, NO_VALUE, Item, Surface

FORMAT_VERSION = 1
#: The largest surface file read.
MAX_SURFACE_BYTES = 64 << 20
_ID = re.compile(r"[0-9a-f]{12}")
_JSON_SCALARS = (str, int, float, bool, type(None))


class SurfaceError(GotchasError, exit_code=EXIT_USAGE):
    """A surface file is not what `verify` writes; the message names the file and the place."""


@dataclass
class ReleaseSurface:
    """What one release's surface record holds."""

    version: str
    identity: str = ""
    extracted: str = ""  # when, UTC
    verifier: str = ""
    files: dict[str, str] = field(default_factory=dict)  # path -> sha256 of each file that defines an item
    items: list[Item] = field(default_factory=list)
    extractor: int = 0  # the extractor's version (extract.EXTRACTOR) that read it
    read: tuple[int, str] = (0, "")  # how many files were read, and `fingerprint` of them all
    #: As read from a file, before `items` is made from them: the rows ([id, file index, line]) and the bodies by
    #: id. Most runs never look at most releases; their rows are written back as they were read.
    rows: list | None = None
    bodies: dict | None = None
    made: dict | None = None  # items made from `bodies`, by (id, path, line), shared by the file's releases

    def all_items(self) -> list[Item]:
        if self.rows is not None:
            paths = sorted(self.files)
            made = self.made if self.made is not None else {}
            bodies = cast(dict, self.bodies)  # read with the rows
            self.items = []
            for row in self.rows:
                key, index, line = row[0], row[1], row[2]
                place = (key, paths[index] if index >= 0 else "", line, *row[3:])
                item = made.get(place)
                if item is None:
                    item = Item.from_json(bodies[key], place[1], line)
                    if len(row) == 5 and row[3] >= 0:
                        item = replace(item, default_path=paths[row[3]], default_line=row[4])
                    made[place] = item
                self.items.append(item)
            self.rows = None
        return self.items

    def surface(self, engine: str) -> Surface:
        return Surface(engine, self.version, {i.key: i for i in self.all_items()}, dict(self.files), self.identity)




def fingerprint(files: dict[str, str]) -> str:
    """The identity of what was read (path -> sha256): releases with the same files have the same surface."""
    digest = hashlib.sha256()
    for path, sha in sorted(files.items()):
        digest.update(f"{path}\0{sha}\n".encode())
    return digest.hexdigest()


@dataclass
class EngineSurfaces:
    engine: str
    releases: dict[str, ReleaseSurface] = field(default_factory=dict)

    def versions(self) -> list[str]:
        return sorted(self.releases, key=version_key)

    def current(self, release) -> bool:
        """Whether the file has this release's surface as this extractor reads it (same archive, same extractor)."""
        from .extract import EXTRACTOR

        found = self.releases.get(release.version)
        return found is not None and found.extractor == EXTRACTOR and (
            not release.identity or found.identity == release.identity)

    def surface(self, version: str) -> Surface | None:
        found = self.releases.get(version)
        return found.surface(self.engine) if found is not None else None


def item_id(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


def encode(surfaces: EngineSurfaces) -> str:
    """The file's text: sorted, one item body per line and one release item per line."""
    bodies: dict[str, dict] = {}
    releases = []
    known: dict[int, tuple[Item, str]] = {}  # id(item) -> (item, its id): `decode` shares items between releases
    for version in sorted(surfaces.releases, key=version_key):
        record = surfaces.releases[version]
        paths = sorted(record.files)
        index = {p: i for i, p in enumerate(paths)}
        rows: list = []
        if record.rows is not None:  # never made into items: as read
            record_bodies = cast(dict, record.bodies)  # read with the rows
            for row in record.rows:
                bodies[row[0]] = record_bodies[row[0]]
            rows = [tuple(row) for row in record.rows]
        for item in sorted(record.items if record.rows is None else (),
                           key=lambda i: (KINDS.index(i.kind), i.name)):
            seen = known.get(id(item))
            if seen is None:
                body = item.body()
                key = item_id(body)
                bodies[key] = body
                known[id(item)] = (item, key)
            else:
                key = seen[1]
            row = [key, index.get(item.path, -1), item.line]
            if item.default_path:
                row += [index.get(item.default_path, -1), item.default_line]
            rows.append(row)
        head = {"identity": record.identity, "extracted": record.extracted, "verifier": record.verifier,
                "extractor": record.extractor, "files": {p: record.files[p] for p in paths},
                "read": {"files": record.read[0], "sha256": record.read[1]}}
        releases.append((version, head, rows))
    out = ['{"engine": ' + json.dumps(surfaces.engine) + f', "format": {FORMAT_VERSION},', ' "items": {']
    keys = sorted(bodies)
    for n, key in enumerate(keys):
        out.append(f"  {json.dumps(key)}: {json.dumps(bodies[key], sort_keys=True, ensure_ascii=False)}"
                   + ("," if n < len(keys) - 1 else ""))
    out.append(" },")
    out.append(' "releases": {')
    for n, (version, head, rows) in enumerate(releases):
        text = json.dumps(head, sort_keys=True, ensure_ascii=False)
        out.append(f"  {json.dumps(version)}: {text[:-1]}, \"rows\": [")
        last = len(rows) - 1
        # A row is an id (hex), a number and a number: written as JSON without json.dumps, a third of the time.
        out.extend("   [\"" + row[0] + "\", " + ", ".join(map(str, row[1:])) + "]" + ("," if m < last else "")
                   for m, row in enumerate(rows))
        out.append("  ]}" + ("," if n < len(releases) - 1 else ""))
    out.append(" }")
    out.append("}")
    return "\n".join(out) + "\n"


def decode(data: object, engine: str, where: str) -> EngineSurfaces:
    """The surfaces in a parsed file, checked; SurfaceError names the first thing wrong."""
    def fail(at: str, why: str) -> SurfaceError:
        return SurfaceError(f"{where}: {at}: {why}; delete the file and run `gotchas verify` to extract it again")

    if not isinstance(data, dict):
        raise fail("top level", "not an object")
    if data.get("format") != FORMAT_VERSION:
        raise fail("format", f"{data.get('format')!r} is not a format this verifier reads ({FORMAT_VERSION})")
    if data.get("engine") != engine:
        raise fail("engine", f"{data.get('engine')!r} is not {engine!r}")
    unknown = set(data) - {"engine", "format", "items", "releases"}
    if unknown:
        raise fail("top level", f"unknown keys {sorted(unknown)}")
    items_data, releases_data = data.get("items"), data.get("releases")
    if not isinstance(items_data, dict) or not isinstance(releases_data, dict):
        raise fail("top level", "'items' and 'releases' must be objects")
    bodies: dict[str, dict] = {}
    for key, body in items_data.items():
        if not _ID.fullmatch(key):
            raise fail(f"items.{key[:40]}", "not an item id")
        problem = _body_problem(body)
        if problem:
            raise fail(f"items.{key}", problem)
        bodies[key] = body
    result = EngineSurfaces(engine)
    made: dict = {}
    for version, record in releases_data.items():
        at = f"releases.{version[:40]}"
        if not isinstance(version, str) or not re.fullmatch(r"[0-9A-Za-z.+!_-]{1,64}", version):
            raise fail(at, "not a release version")
        if not isinstance(record, dict) or set(record) - {"identity", "extracted", "verifier", "extractor", "files",
                                                         "read", "rows"}:
            raise fail(at, "not a release record (identity, extracted, verifier, files, rows)")
        files, rows = record.get("files", {}), record.get("rows", [])
        if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise fail(f"{at}.files", "must map paths to sha256")
        if not isinstance(rows, list):
            raise fail(f"{at}.rows", "must be a list")
        count = len(files)
        for n, row in enumerate(rows):
            if not (isinstance(row, list) and len(row) in (3, 5) and isinstance(row[0], str) and row[0] in bodies
                    and all(type(v) is int for v in row[1:]) and -1 <= row[1] < count and row[2] >= 0
                    and (len(row) == 3 or (-1 <= row[3] < count and row[4] >= 0))):
                raise fail(f"{at}.rows[{n}]", "not [item id, file index, line] or [..., default's file index, line]")
        strings = [record.get(k, "") for k in ("identity", "extracted", "verifier")]
        if not all(isinstance(s, str) for s in strings):
            raise fail(at, "identity, extracted and verifier must be strings")
        extractor = record.get("extractor", 0)
        if not isinstance(extractor, int) or isinstance(extractor, bool):
            raise fail(f"{at}.extractor", "must be a number")
        read = record.get("read", {"files": 0, "sha256": ""})
        if not (isinstance(read, dict) and set(read) == {"files", "sha256"} and type(read["files"]) is int
                and isinstance(read["sha256"], str)):
            raise fail(f"{at}.read", "must be {files: a count, sha256: a digest}")
        result.releases[version] = ReleaseSurface(version, strings[0], strings[1], strings[2], files=dict(files),
                                                  extractor=extractor,
                                                  read=(read["files"], read["sha256"]),
                                                  rows=rows, bodies=bodies, made=made)
    return result


def _body_problem(body: object) -> str | None:
    if not isinstance(body, dict):
        return "not an object"
    allowed = {"kind", "name", "default", "value", "aliases", "choices", "help", "detail", "deprecated"}
    if set(body) - allowed:
        return f"unknown keys {sorted(set(body) - allowed)}"
    if body.get("kind") not in KINDS or not isinstance(body.get("name"), str) or not body["name"]:
        return "needs a kind and a name"
    for key in ("default", "help", "detail"):
        if key in body and not isinstance(body[key], str):
            return f"{key!r} must be a string"
    for key in ("aliases", "choices"):
        if key in body and not (isinstance(body[key], list) and all(isinstance(v, str) for v in body[key])):
            return f"{key!r} must be a list of strings"
    if "value" in body and not _json_value(body["value"], 0):
        return "'value' is not a plain JSON value"
    if "deprecated" in body and body["deprecated"] is not True:
        return "'deprecated' is true or left out"
    return None


def _json_value(value: object, depth: int) -> bool:
    if depth > 8:
        return False
    if isinstance(value, _JSON_SCALARS):
        return True
    if isinstance(value, list):
        return all(_json_value(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_value(v, depth + 1) for k, v in value.items())
    return False


__all__ = ["FORMAT_VERSION", "MAX_SURFACE_BYTES", "NO_VALUE", "EngineSurfaces", "ReleaseSurface", "SurfaceError",
           "decode", "encode", "item_id"]
