"""What changes between two releases' surfaces: items added, removed, renamed, and changed (default, choices,
spellings, deprecation), each with the file and line on both sides. Pure: two `Surface`s in, a `SurfaceDiff` out.

A rename is an item of the older release that the newer one no longer has by name, paired with a new item of the
same kind that is unmistakably the same setting: one spells the other (an alias: `--tp-size` and
`--tensor-parallel-size`), or, for a flag, both set the same config field, or both say the same thing (the same
help text, at least 24 characters, found once on each side).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import KINDS, Item, Surface, flag_key

#: A help text shorter than this says too little to pair a rename by it.
RENAME_HELP = 24


@dataclass(frozen=True)
class Change:
    what: str  # added | removed | renamed | changed
    kind: str
    name: str  # the name in the newer release (the older one for `removed`)
    before: Item | None
    after: Item | None
    fields: tuple[str, ...] = ()  # for `changed` and `renamed`: which of default, choices, aliases, deprecated

    def to_json(self) -> dict:
        found: dict[str, object] = {"change": self.what, "kind": self.kind, "name": self.name}
        if self.fields:
            found["fields"] = list(self.fields)
        if self.before is not None:
            found["before"] = self.before.to_json()
        if self.after is not None:
            found["after"] = self.after.to_json()
        return found


@dataclass
class SurfaceDiff:
    engine: str
    older: str
    newer: str
    changes: list[Change] = field(default_factory=list)

    def of(self, what: str | None = None, kind: str | None = None) -> list[Change]:
        return [c for c in self.changes if (what is None or c.what == what) and (kind is None or c.kind == kind)]

    def counts(self) -> dict[str, int]:
        return {what: len(self.of(what)) for what in ("added", "removed", "renamed", "changed")}


_FIELDS = ("default", "choices", "aliases", "deprecated")


def _changed_fields(a: Item, b: Item) -> tuple[str, ...]:
    found = []
    if default_key(a) != default_key(b):
        found.append("default")
    if set(a.choices) != set(b.choices):
        found.append("choices")
    if set(a.aliases) != set(b.aliases):
        found.append("aliases")
    if a.deprecated != b.deprecated:
        found.append("deprecated")
    return tuple(found)


def default_key(item: Item) -> object:
    """A default by what it means: a literal by value (`0.90` is `0.9`), anything else as written."""
    if item.computed or item.default is None:
        return ("text", item.default)
    return ("value", repr(item.value))


def diff(older: Surface, newer: Surface, kinds: tuple[str, ...] = KINDS) -> SurfaceDiff:
    result = SurfaceDiff(newer.engine, older.version, newer.version)
    for kind in kinds:
        before = {i.name: i for i in older.of_kind(kind)}
        after = {i.name: i for i in newer.of_kind(kind)}
        for name in sorted(before.keys() & after.keys()):
            fields = _changed_fields(before[name], after[name])
            if fields:
                result.changes.append(Change("changed", kind, name, before[name], after[name], fields))
        gone = [before[n] for n in sorted(before.keys() - after.keys())]
        came = [after[n] for n in sorted(after.keys() - before.keys())]
        pairs = _renames(gone, came)
        paired_old = {id(a) for a, _ in pairs}
        paired_new = {id(b) for _, b in pairs}
        for a, b in pairs:
            result.changes.append(Change("renamed", kind, b.name, a, b, _changed_fields(a, b)))
        result.changes.extend(Change("removed", kind, a.name, a, None) for a in gone if id(a) not in paired_old)
        result.changes.extend(Change("added", kind, b.name, None, b) for b in came if id(b) not in paired_new)
    order = {"removed": 0, "renamed": 1, "changed": 2, "added": 3}
    result.changes.sort(key=lambda c: (KINDS.index(c.kind), order[c.what], c.name))
    return result


def _renames(gone: list[Item], came: list[Item]) -> list[tuple[Item, Item]]:
    """Pairs (old, new) by three rules in turn, each on what the rules before left: an old item and a new one pair
    when the new one is the only remaining match of the old one and the old one the only match of the new one.
    The old items are taken in order, and a pair made leaves both lists at once (as with a scan over the two
    lists; found through an index by key: a scan of every pair took 12 s of a site build on SGLang)."""
    pairs: list[tuple[Item, Item]] = []
    left, right = list(gone), list(came)
    rules = (lambda i: {flag_key(s) for s in i.spellings()},
             lambda i: {i.detail} if i.kind == "flag" and "." in i.detail else set(),
             lambda i: {i.help} if len(i.help) >= RENAME_HELP else set())
    for keys_of in rules:
        left_keys = {id(a): keys_of(a) for a in left}
        right_keys = {id(b): keys_of(b) for b in right}
        by_key_right: dict = {}
        by_key_left: dict = {}
        for b in right:
            for key in right_keys[id(b)]:
                by_key_right.setdefault(key, {})[id(b)] = b
        for a in left:
            for key in left_keys[id(a)]:
                by_key_left.setdefault(key, {})[id(a)] = a
        taken: set[int] = set()
        for a in list(left):
            candidates = {id(b): b for key in left_keys[id(a)] for b in by_key_right.get(key, {}).values()}
            if len(candidates) != 1:
                continue
            (b,) = candidates.values()
            matched_by = {id(x) for key in right_keys[id(b)] for x in by_key_left.get(key, {}).values()}
            if len(matched_by) != 1:
                continue
            pairs.append((a, b))
            taken |= {id(a), id(b)}
            for key in left_keys[id(a)]:
                by_key_left[key].pop(id(a), None)
            for key in right_keys[id(b)]:
                by_key_right[key].pop(id(b), None)
        left = [a for a in left if id(a) not in taken]
        right = [b for b in right if id(b) not in taken]
    return pairs
