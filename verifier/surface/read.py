"""One release's surface from its snapshot: which files the registry's patterns select, read and extracted."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..model import language_of
from . import extract as extract_python
from . import extract_cpp
from .extract import EXTRACTOR
from .model import KINDS, Item
from .store import ReleaseSurface, fingerprint

#: The extractor of each language a surface is read from (verifier.model.language_of); other files are not read.
EXTRACTORS = {"python": extract_python.extract, "cpp": extract_cpp.extract}


@functools.lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern:
    """A path pattern: `*` any characters within a folder, `**/` any folders (none included), the rest literal."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif text[i] == "*":
            out.append("[^/]*")
            i += 1
        else:
            out.append(re.escape(text[i]))
            i += 1
    return re.compile("".join(out))


def matches(pattern: str, path: str) -> bool:
    return _pattern(pattern).fullmatch(path) is not None


@dataclass(frozen=True)
class SurfaceSpec:
    """Where an engine's surface is read from: kind -> path patterns; `primary`: env files read first."""

    patterns: tuple[tuple[str, tuple[str, ...]], ...]
    primary: tuple[str, ...] = ()

    @classmethod
    def of(cls, engine) -> SurfaceSpec | None:
        """The spec of a registry engine, or None when the registry gives it no `surface`."""
        return cls(engine.surface, engine.surface_primary) if engine.surface else None

    def literal_paths(self) -> list[str]:
        """The patterns that name one file each (no `*`): read in the checks' pass without a listing."""
        return sorted({p for _, patterns in self.patterns for p in patterns if "*" not in p})

    def select(self, paths: Iterable[str]) -> dict[str, list[str]]:
        """Kind -> the paths (of `paths`) its patterns match, of a language an extractor reads."""
        paths = [p for p in paths if language_of(p) in EXTRACTORS]
        chosen: dict[str, list[str]] = {}
        for kind, patterns in self.patterns:
            chosen[kind] = sorted({p for p in paths if any(matches(q, p) for q in patterns)})
        return chosen


def read_surface(snapshot, spec: SurfaceSpec, release, now: str, verifier: str,
                 memo: dict | None = None) -> ReleaseSurface:
    """The surface of the release `snapshot` holds. The files are those of `snapshot.paths()` that the patterns
    select (read in one pass, which is none when the checks' pass read them); `memo` keeps the last release's
    surface by what was read, so that a release with the same files is not extracted again."""
    chosen = spec.select(snapshot.paths())
    wanted = sorted({p for paths in chosen.values() for p in paths})
    snapshot.prefetch(wanted)
    contents: dict[str, bytes] = {}
    for path in wanted:
        data = snapshot.read(path)
        if data is not None:
            contents[path] = data
    shas = {p: hashlib.sha256(d).hexdigest() for p, d in contents.items()}
    key = fingerprint(shas)
    if memo is not None and memo.get("fingerprint") == key:
        items = list(memo["items"])
    else:
        items = extract(chosen, contents, [p for p in spec.primary if p in contents])
        if memo is not None:
            memo.update(fingerprint=key, items=items)
    # Kept: the files that define an item (its place), not every file the patterns chose (most define none).
    defining = {i.path for i in items} | {i.default_path for i in items if i.default_path}
    return ReleaseSurface(release.version, release.identity or "", now, verifier,
                          {p: shas[p] for p in sorted(defining) if p in shas}, items, EXTRACTOR, (len(shas), key))


def extract(chosen: dict[str, list[str]], contents: dict[str, bytes], primary: list[str]) -> list[Item]:
    """The items of the files read, each file given to the extractor of its language; one release may have both
    (an item defined in both keeps the first language's, Python's)."""
    found: dict[tuple[str, str], Item] = {}
    for language, extractor in EXTRACTORS.items():
        by_kind = {kind: {p: contents[p] for p in chosen.get(kind, []) if p in contents and language_of(p) == language}
                   for kind in KINDS}
        if not any(by_kind.values()):
            continue
        for item in extractor(by_kind, [p for p in primary if language_of(p) == language]):
            found.setdefault(item.key, item)
    return sorted(found.values(), key=lambda i: (i.kind, i.name))
