"""The runs of the commands over engine releases, apart from their arguments and output (`cli`).

A `gotchas verify` run over its engines: under the ledger's lock and the run's time budget, with one
verdict cache and one search cache for all of them; what changed status, and what contradicts an entry's
bounds, once every engine is done. `check` (one release of each engine), `mutate` and `trace` runs likewise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import EXIT_USAGE, GotchasError
from .evaluate import Budget
from .helper import Helper
from .history import bounds_problems, new_status_changes
from .ledger import EngineLedger, Ledger, version_key
from .model import Release, entry_bounds
from .progress import Progress
from .sources import Source, SourceUnavailable
from .verdicts import SearchCache, VerdictCache
from .verify import EngineRun, Note, choose_releases, compute_engine, unavailable, verify_release

if TYPE_CHECKING:
    from .surface.read import SurfaceSpec
    from .surface.store import EngineSurfaces


@dataclass
class VerifyRun:
    runs: list[EngineRun] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    changes: list = field(default_factory=list)  # history.StatusChange, in newly verified releases
    problems: list = field(default_factory=list)  # releases that contradict an entry's introduced/fixed

    @property
    def failed(self) -> bool:
        """Whether something could not be done (an engine's releases listed, a release read): a note says what."""
        return any(note.failed for note in self.notes)


def verify_engines(engines: list[str], sources: dict[str, Source], labels: dict[str, str], pairs: list,
                   entries: list, ledger: Ledger, *, oldest: dict[str, str], versions=None, since=None,
                   new: bool = False, prune: bool = True, wait: bool = False,
                   progress: Progress | None = None, surface_specs: dict | None = None) -> VerifyRun:
    """Verify `pairs` engine by engine, under the ledger's lock. Every engine's ledger and evidence is read (and
    refused, LedgerError, when malformed) before any file is written; each engine's files are written as soon as
    it is done (`verify_engine`). An engine whose releases cannot be listed is a failed note; a
    release it does not have is a ReleaseNotFound that names the engine. The sources are closed at the end."""
    run = VerifyRun()
    verdicts = VerdictCache()
    searches = SearchCache()
    before = {}
    try:
        with ledger.lock(wait=wait), Budget(pairs).active():
            loaded = {engine: ledger.load(engine) for engine in engines}
            old_evidence = {engine: ledger.load_evidence(engine) for engine in engines}
            specs = surface_specs or {}
            surfaces = {engine: ledger.load_surfaces(engine) for engine in engines if specs.get(engine)}
            for engine in engines:
                before[engine] = loaded[engine].copy()
                engine_pairs = [p for p in pairs if p[1].engine == engine]
                try:
                    done = verify_engine(engine, sources[engine], engine_pairs, ledger, versions=versions,
                                         since=since or oldest.get(engine) or None, new=new,
                                         source_label=labels[engine], progress=progress, verdicts=verdicts,
                                         prune={e.id for e in entries} if prune else None,
                                         loaded=loaded[engine], searches=searches,
                                         old_evidence=old_evidence[engine], surface_spec=specs.get(engine),
                                         surfaces=surfaces.get(engine))
                except LookupError as exc:
                    raise ReleaseNotFound(f"{engine}: {exc}") from None
                except SourceUnavailable as exc:
                    run.notes.append(Note.error(f"{engine}: {exc}; its ledger is unchanged"))
                    continue
                run.runs.append(done)
                run.notes.extend(done.skipped)
    finally:
        verdicts.close()
        searches.close()
        for source in sources.values():
            source.close()
    run.changes = [c for done in run.runs
                   for c in new_status_changes(before[done.engine], loaded[done.engine], done.changed_releases)]
    run.problems = [p for done in run.runs for entry in entries
                    for p in bounds_problems(loaded[done.engine], entry.id,
                                             *entry_bounds(entry, done.engine), [r.version for r in done.releases])]
    return run


def verify_engine(engine: str, source: Source, pairs: list, ledger: Ledger, *, versions: list[str] | None = None,
                  since: str | None = None, new: bool = False, source_label: str = "",
                  progress: Progress | None = None, verdicts: VerdictCache | None = None,
                  prune: set[str] | None = None, loaded: EngineLedger | None = None,
                  searches: SearchCache | None = None, old_evidence: dict | None = None,
                  surface_spec: SurfaceSpec | None = None, surfaces: EngineSurfaces | None = None) -> EngineRun:
    """Verify `pairs` against the chosen releases of one engine (`verify.compute_engine`), then write what it
    found: the engine's ledger once, at the end (when it changed, is of an older format or is not there yet),
    its surface file (when surfaces were read) and its evidence.

    `loaded`, `old_evidence` and `surfaces` are the engine's files when the caller has read them already
    (`loaded` and `surfaces` are updated); else they are read here. Either way they are read (and a file that is
    not what `verify` writes refused, LedgerError) before anything is written. Each file is replaced
    atomically (`ledger.write_atomically`); `verify_engines` holds the ledger's lock around it.
    """
    loaded = loaded if loaded is not None else ledger.load(engine)
    old_evidence = old_evidence if old_evidence is not None else ledger.load_evidence(engine)
    done = compute_engine(engine, source, pairs, loaded, versions=versions, since=since, new=new,
                          source_label=source_label, progress=progress, verdicts=verdicts, prune=prune,
                          searches=searches, surface_spec=surface_spec, surfaces=surfaces)
    if done.ledger_changed or not ledger.path(engine).exists():
        ledger.save(loaded)  # else the file says it all already: not written again
    if done.surfaces and done.stored_surfaces is not None:
        ledger.save_surfaces(done.stored_surfaces)
    if done.evidence_update is not None:
        ledger.write_evidence(done.evidence_update, old=old_evidence)
    return done


class ReleaseNotFound(GotchasError, LookupError, exit_code=EXIT_USAGE):
    """An engine has no release of the version asked for; the message names the engine."""


def chosen_release(engine: str, source: Source, version: str) -> Release:
    """The release `version` ("latest": the newest) of `engine` in `source`, or ReleaseNotFound."""
    try:
        return choose_releases(source.releases(), set(), versions=[version])[0]
    except LookupError as exc:
        raise ReleaseNotFound(f"{engine}: {exc}") from None


def check_engines(engines: list[str], sources: dict[str, Source], pairs: list, version: str,
                  progress: Progress) -> tuple[list, list[Note]]:
    """`gotchas check`: each engine's checks against one release of it (`version`, or "latest"), with the
    relocation hints of every `changed` or `missing` verdict; (results, notes). Under a time budget (a hostile
    entry spends at most its share of matching time), with worker processes once there are files enough."""
    results: list = []
    notes: list[Note] = []
    helper = Helper()
    try:
        with Budget(pairs).active():
            for engine in engines:
                source = sources.get(engine)
                if source is None:
                    notes.append(Note(f"note: {engine} checks not verified: no --source for {engine}"))
                    continue
                engine_pairs = [p for p in pairs if p[1].engine == engine]
                try:
                    release = chosen_release(engine, source, version)
                except SourceUnavailable as exc:
                    notes.append(Note.error(f"{engine}: cannot list releases: {exc}"))
                    results.extend(unavailable(engine_pairs, Release(engine, "?"), exc))
                    continue
                progress.status(f"{engine} {release.version}: reading {len({c.path for _, c in engine_pairs})} "
                                "files", force=True)
                results.extend(verify_release(source, release, engine_pairs, relocate=lambda result: True,
                                              helper=helper))
                progress.done()
    finally:
        helper.close()
    return results, notes


def mutate_entries(entries: list, engines: list[str], sources: dict[str, Source], version: str, seconds: float,
                   progress: Progress) -> list:
    """`gotchas mutate` over entries at one release of each engine: one report per entry and engine. The
    sources are closed at the end."""
    from .mutate import default_formatters, mutate_entry

    formatters = default_formatters()
    reports = []
    try:
        for name in engines:
            source = sources.get(name)
            if source is None:
                continue
            release = chosen_release(name, source, version)
            snapshot = source.open(release)
            try:
                for entry in entries:
                    if any(c.engine == name for c in entry.checks):
                        reports.append(mutate_entry(entry, name, snapshot, release, seconds, formatters,
                                                    lambda text: progress.status(f"mutate: {text}")))
            finally:
                snapshot.close()
                progress.done()
    finally:
        for source in sources.values():
            source.close()
    return reports


def trace_checks(entry, checks: list, sources: dict[str, Source], floors: dict[str, str | None],
                 progress: Progress, note: Callable[[str], None]) -> list:
    """`gotchas trace`: each check's story over the releases of its engine from `floors[engine]` on, as
    (trace, versions). An engine without a source is a `note`. The sources are closed at the end."""
    from . import trace as trace_module

    verdicts, searches = VerdictCache(), SearchCache()
    traces = []
    try:
        for engine in sorted({c.engine for c in checks}):
            source = sources.get(engine)
            if source is None:
                note(f"note: {engine} checks not traced: no --source for {engine}")
                continue
            floor = floors.get(engine)
            releases = [r for r in source.releases()
                        if floor is None or version_key(r.version) >= version_key(floor)]
            walker = trace_module.Walker(source, releases, verdicts, searches,
                                         lambda text: progress.status(f"tracing: {text}", force=True))
            try:
                for check in (c for c in checks if c.engine == engine):
                    traces.append((trace_module.trace_check(entry, check, walker), [r.version for r in releases]))
            finally:
                walker.close()
                progress.done()
    finally:
        closing: list[VerdictCache | SearchCache | Source] = [verdicts, searches, *sources.values()]
        for thing in closing:
            thing.close()
    return traces
