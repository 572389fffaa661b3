"""The commands over release surfaces: `surface` (one release's flags, variables, metrics and request fields) and
`diff` (what changes between two releases, and which entries start or stop biting)."""

from __future__ import annotations

import argparse
import datetime
import re
import sys

from .. import __version__, history, report, run
from ..kb import KB
from ..ledger import DEFAULT_DIR as DEFAULT_LEDGER_DIR
from ..ledger import EngineLedger, Ledger
from ..model import Entry
from ..progress import Progress
from ..sources import Source
from ..surface.diff import diff
from ..surface.model import KIND_WORDS, KINDS, Item, Surface
from ..surface.read import SurfaceSpec, read_surface
from ._common import EXIT_OK, UsageError, _check_engine, _close, _kb, _load, _make_source


def _kinds(args: argparse.Namespace) -> tuple[str, ...]:
    if not args.kind:
        return KINDS
    chosen = []
    for word in args.kind:
        for part in word.split(","):
            if part not in KIND_WORDS:
                raise UsageError(f"--kind {part!r}: choose from flags, env, metrics, requests")
            chosen.append(KIND_WORDS[part])
    return tuple(k for k in KINDS if k in chosen)


class _Surfaces:
    """Release surfaces from the ledger's surface file, or read from the engine's source for a release the file
    does not have (nothing is written: `gotchas verify` records them)."""

    def __init__(self, kb: KB, args: argparse.Namespace, engine: str) -> None:
        self.kb, self.args, self.engine = kb, args, engine
        spec = SurfaceSpec.of(kb.engines[engine])
        if spec is None:
            raise UsageError(f"{engine}: the engine registry gives no `surface` files for it")
        self.spec = spec
        self.ledger = Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR)
        self.stored = self.ledger.load_surfaces(engine)
        self.source: Source | None = None
        self.progress = Progress()

    def get(self, version: str):
        versions = self.stored.versions()
        if version == "latest" and versions and not self.args.source:
            version = versions[-1]
        if version in self.stored.releases and not self.args.source:
            return self.stored.surface(version), None
        if self.source is None:
            self.source = _make_source(self.kb, self.engine, self.args.source or "pypi", self.progress)
        release = run.chosen_release(self.engine, self.source, version)
        self.progress.status(f"{self.engine} {release.version}: reading its surface", force=True)
        snapshot = self.source.open(release)
        try:
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            record = read_surface(snapshot, self.spec, release, now, __version__)
        finally:
            snapshot.close()
            self.progress.done()
        return record.surface(self.engine), (f"note: {self.engine} {release.version} is not in the ledger's surface "
                                             f"file; read from {self.args.source or 'pypi'}")

    def close(self) -> None:
        if self.source is not None:
            _close(self.source)


def _surfaces_of(args: argparse.Namespace, versions: list[str]):
    """(kb, kinds, the surfaces reader, [(surface, note)] of `versions`)."""
    kb = _kb(args)
    _check_engine(kb, args.engine)
    kinds = _kinds(args)
    surfaces = _Surfaces(kb, args, args.engine)
    try:
        return kb, kinds, surfaces, [surfaces.get(v) for v in versions]
    finally:
        surfaces.close()


def run_surface(args: argparse.Namespace) -> int:
    kb, kinds, _, [(surface, note)] = _surfaces_of(args, [args.version])
    if note:
        print(report.terminal(note), file=sys.stderr)
    name = kb.engines[args.engine].name
    sys.stdout.write(report.writer("surface", args.format)(args.engine, name, surface, kinds))
    return EXIT_OK


def _find(surface: Surface, wanted: str) -> Item | None:
    """An item by name: a flag by any spelling (`gpu-memory-utilization` and `gpu_memory_utilization` too), else a
    variable, metric or request field by its exact name."""
    found = surface.flag(wanted if wanted.startswith("-") else f"--{wanted}")
    if found is not None:
        return found
    return next((i for i in surface.items.values() if i.name == wanted), None)


def _entries_about(named: list[tuple[str, Item | None, Item | None]], entries: list[Entry],
                   engine_ledger: EngineLedger, older: str, newer: str) -> list[tuple[str, str, str, str]]:
    """(name, entry, status at FROM, status at TO) of each entry whose title or sections name an item asked for:
    what the code does with the setting, as far as the KB says."""
    found = []
    for _wanted, a, b in named:
        item = b or a
        if item is None:
            continue
        spellings = set(item.spellings()) if item.kind == "flag" else {item.name}
        for entry in entries:
            text = " ".join([entry.title, *entry.sections.values()])
            if any(re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", text) for s in spellings):
                at_older, at_newer = [(r.status if (r := engine_ledger.entry(v, entry.id)) else "no record")
                                      for v in (older, newer)]
                found.append((item.name, entry.id, at_older, at_newer))
    return found


def run_diff(args: argparse.Namespace) -> int:
    kb, kinds, surfaces, [(older, note_a), (newer, note_b)] = _surfaces_of(args, [args.older, args.newer])
    notes = [n for n in (note_a, note_b) if n]
    result = diff(older, newer, kinds)
    engine_ledger = surfaces.ledger.load(args.engine)
    changes = []
    if older.version in engine_ledger.releases and newer.version in engine_ledger.releases:
        changes = history.between(engine_ledger, older.version, newer.version)
    else:
        notes.append(f"note: the ledger has no verdicts of {older.version} or {newer.version}: entries not compared")
    titles = {}
    entries = []
    if changes or args.name:
        _, _, entries = _load(kb, [])
        titles = {e.id: e.title for e in entries}
    for note in notes:
        print(report.terminal(note), file=sys.stderr)
    named = [(wanted, _find(older, wanted), _find(newer, wanted)) for wanted in args.name]
    about = _entries_about(named, entries, engine_ledger, older.version, newer.version)
    name = kb.engines[args.engine].name
    sys.stdout.write(report.writer("diff", args.format)(args.engine, name, result, changes, titles, named, about))
    return EXIT_OK
