"""The view model: entries, engines and the ledger as the pages need them (statuses, ranges, which files a
release has), computed once."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import cast

from .. import history, prose
from ..errors import EXIT_USAGE, GotchasError
from ..kb import KB, Engine
from ..ledger import EngineLedger, EntryRecord, Ledger, check_json
from ..model import CHANGED, HOLDS, MISSING, Entry, entry_bounds, entry_rules
from ..surface.store import EngineSurfaces
from .safe import url_problem


class SiteError(GotchasError, exit_code=EXIT_USAGE):
    """No site can be built from this data, or into this folder; the message says why."""


def short_ref(ref: str) -> str:
    """A ref as a reader sees it: a commit id cut to 12 digits (unique in any repository this size), a tag as is."""
    return ref[:12] if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref) else ref


@dataclass
class EngineView:
    engine: Engine
    ledger: EngineLedger
    evidence: dict
    surfaces: EngineSurfaces | None = None  # the release surfaces (ledger/surface/<engine>.json), when read

    @property
    def versions(self) -> list[str]:
        return self.ledger.versions()

    @property
    def latest(self) -> str | None:
        versions = self.versions
        return versions[-1] if versions else None

    def commit(self, version: str) -> str | None:
        """The engine's commit that a release holds, as the ledger records it (a vendored engine); else None."""
        release = self.ledger.releases.get(version)
        return release.commit if release is not None else None

    def ref(self, version: str) -> str:
        """What a link to a release's code names: its tag, or the commit a vendored engine's release holds
        ("" when not recorded: no link)."""
        return self.engine.ref(version, self.commit(version))


@dataclass
class EntryStatus:
    """An entry's standing on one engine, derived from the ledger."""

    engine: str
    statuses: list[tuple[str, str]]
    ranges: list[history.Range]
    transitions: list[history.Transition]
    latest_version: str | None
    latest: str | None  # the entry's status at the engine's newest release in the ledger
    verified: dict[str, tuple[int, int]] = field(default_factory=dict)  # version -> (claims verified, claims)
    introduced: str | None = None
    fixed: str | None = None

    @property
    def runs(self) -> list[history.Range]:
        """Every run of releases with one status, `error`-only releases included (the strip shows them all)."""
        return history.segments(self.statuses)

    def to_json(self) -> dict:
        return {
            "engine": self.engine,
            "latest_version": self.latest_version,
            "latest": self.latest,
            "introduced": self.introduced,
            "fixed": self.fixed,
            "ranges": [{"status": r.status, "first": r.first, "last": r.last, "latest": r.latest,
                        "next": {"version": r.next[0], "status": r.next[1]} if r.next else None}
                       for r in self.ranges],
            "transitions": [{"check": t.check, "before_version": t.before_version, "after_version": t.after_version,
                             "before": check_json(t.before), "after": check_json(t.after)} for t in self.transitions],
            "statuses": dict(self.statuses),
            "verified": {v: {"verified": n, "claims": m} for v, (n, m) in self.verified.items()},
        }


@dataclass
class Site:
    kb: KB
    entries: list[Entry]
    engines: dict[str, EngineView]
    base_url: str = "/"
    edit_base: str | None = None  # e.g. https://github.com/OWNER/REPO/edit/main/ ; None: no edit links
    generated: str = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    _statuses: dict = field(default_factory=dict, repr=False, compare=False)
    _texts: dict = field(default_factory=dict, repr=False, compare=False)
    _readings: dict = field(default_factory=dict, repr=False, compare=False)
    _files: dict = field(default_factory=dict, repr=False, compare=False)
    #: The entries as written (`entries` read across every release: bounds in words, values with their releases),
    #: for the pages about one release, which read them at that release.
    written: dict[str, Entry] = field(default_factory=dict, repr=False, compare=False)

    def text_at(self, entry: Entry, engine: str | None, version: str | None):
        """The entry as it reads at one release (`prose.entry_text`; both None: across every release and engine):
        title, sections, the parts that hold. Made once: a release page and the entry page's wordings both ask."""
        by_version = self._texts.setdefault((entry.id, engine), {})
        found = by_version.get(version)
        if found is None:
            made = prose.entry_text(self.written.get(entry.id, entry), engine, version, self._ledgers,
                                    self.kb.engines, self._engine_names, self._surfaces)
            # Most entries read alike at most releases: each distinct reading is kept once, and the releases
            # that read so share it (a copy per release made these texts most of what the site held per entry).
            readings = self._readings.setdefault((entry.id, engine), {})
            found = by_version[version] = readings.setdefault(
                (made.title, tuple(made.sections.items()), tuple(made.parts), tuple(made.says)), made)
        return found

    @cached_property
    def _ledgers(self) -> dict:
        return {key: view.ledger for key, view in self.engines.items()}

    @cached_property
    def _engine_names(self) -> dict:
        return {key: e.name for key, e in self.kb.engines.items()}

    @cached_property
    def _surfaces(self) -> dict:
        return {key: view.surfaces for key, view in self.engines.items() if view.surfaces is not None}

    def engine_name(self, engine: str) -> str:
        return self.kb.engines[engine].name if engine in self.kb.engines else engine

    def status(self, entry: Entry, engine: str) -> EntryStatus:
        key = (entry.id, id(entry), engine)
        found = self._statuses.get(key)
        if found is None:
            found = self._statuses[key] = self._status(entry, engine)
        return found

    def _status(self, entry: Entry, engine: str) -> EntryStatus:
        view = self.engines.get(engine)
        if view is None:
            return EntryStatus(engine, [], [], [], None, None)
        statuses = history.entry_statuses(view.ledger, entry.id)
        latest = history.status_at(view.ledger, entry.id, view.latest) if view.latest else None
        # a release of `statuses` has the entry
        verified = {v: cast(EntryRecord, view.ledger.entry(v, entry.id)).verified for v, _ in statuses}
        return EntryStatus(engine, statuses, history.segments(history.entry_statuses(view.ledger, entry.id, True)),
                           history.transitions(view.ledger, entry.id), view.latest, latest, verified,
                           *entry_bounds(entry, engine))

    def record(self, entry: Entry, engine: str, version: str) -> EntryRecord | None:
        view = self.engines.get(engine)
        if view is None:
            return None
        return view.ledger.entry(version, entry.id)

    def files_at(self, engine: str, version: str) -> frozenset[str]:
        """The files that exist in a release by the site's own verdicts: a check found them (it holds, is
        contradicted there, or misses only a symbol in them). A link to code goes only to these."""
        key = (engine, version)
        found = self._files.get(key)
        if found is None:
            view = self.engines.get(engine)
            release = view.ledger.releases.get(version) if view else None
            paths = set()
            for record in (release.entries.values() if release else ()):
                for check in record.checks.values():
                    if check.path and (check.verdict in (HOLDS, CHANGED)
                                       or (check.verdict == MISSING and check.reason == "symbol-missing")):
                        paths.add(check.path)
            found = self._files[key] = frozenset(paths)
        return found


def load(kb: KB, entries: list[Entry], ledger: Ledger, base_url: str = "/", edit_base: str | None = None) -> Site:
    engines = {}
    for key, engine in kb.engines.items():
        engine_ledger = ledger.load(key)
        # Statuses as the entries say now: an edited `introduced` or `fixed` shows before the next verify.
        engine_ledger.restatus({e.id: entry_rules(e, key) for e in entries if key in e.engines})
        engines[key] = EngineView(engine, engine_ledger, ledger.load_evidence(key), ledger.load_surfaces(key))
    if edit_base and not edit_base.endswith("/"):
        edit_base += "/"
    site = Site(kb, [], engines, base_url if base_url.endswith("/") else base_url + "/", edit_base,
                written={e.id: e for e in entries})
    across = []
    for entry in entries:  # every page not about one release reads the entry across all of them
        text = site.text_at(entry, None, None)
        across.append(replace(entry, title=text.title, sections=text.sections))
    site.entries = sorted(across, key=lambda e: e.id)
    return site


def check(site: Site) -> None:
    """Refuse data no site can be built from: a base URL that is no path or web URL, an edit URL that is no web
    URL, two entries with one id (one would replace the other's page, badge and JSON)."""
    problem = url_problem(site.base_url, "--base-url") or (
        url_problem(site.edit_base, "--edit-url", web_only=True) if site.edit_base else None)
    if problem:
        raise SiteError(problem)
    seen: dict[str, Entry] = {}
    for entry in site.entries:
        first = seen.setdefault(entry.id, entry)
        if first is not entry:
            raise SiteError(f"two entries have the id {entry.id!r}: {first.file!r} and {entry.file!r}; "
                            "give each its own id (its file name without .md)")


__all__ = ["EngineView", "EntryStatus", "Site", "SiteError", "check", "load"]
