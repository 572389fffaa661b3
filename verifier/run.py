"""A `gotchas verify` run over its engines: under the ledger's lock and the run's time budget, with one
verdict cache and one search cache for all of them; what changed status, and what contradicts an entry's
bounds, once every engine is done."""

from __future__ import annotations

from dataclasses import dataclass, field

from .evaluate import Budget
from .history import bounds_problems, new_status_changes
from .ledger import Ledger
from .model import entry_bounds
from .progress import Progress
from .sources import Source, SourceUnavailable
from .verdicts import SearchCache, VerdictCache
from .verify import EngineRun, verify_engine


@dataclass
class VerifyRun:
    runs: list[EngineRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    changes: list = field(default_factory=list)  # history.StatusChange, in newly verified releases
    problems: list = field(default_factory=list)  # releases that contradict an entry's introduced/fixed


def verify_engines(engines: list[str], sources: dict[str, Source], labels: dict[str, str], pairs: list,
                   entries: list, ledger: Ledger, *, oldest: dict[str, str], versions=None, since=None,
                   new: bool = False, prune: bool = True, wait: bool = False,
                   progress: Progress | None = None) -> VerifyRun:
    """Verify `pairs` engine by engine. Every engine's ledger and evidence is read (and refused, LedgerError,
    when malformed) before any file is written. An engine whose releases cannot be listed is a note; a
    LookupError (no such release) names the engine. The sources are closed at the end."""
    run = VerifyRun()
    verdicts = VerdictCache()
    searches = SearchCache()
    before = {}
    try:
        with ledger.lock(wait=wait), Budget(pairs).active():
            loaded = {engine: ledger.load(engine) for engine in engines}
            old_evidence = {engine: ledger.load_evidence(engine) for engine in engines}
            for engine in engines:
                before[engine] = loaded[engine].copy()
                engine_pairs = [p for p in pairs if p[1].engine == engine]
                try:
                    done = verify_engine(engine, sources[engine], engine_pairs, ledger, versions=versions,
                                         since=since or oldest.get(engine) or None, new=new,
                                         source_label=labels[engine], progress=progress, verdicts=verdicts,
                                         prune={e.id for e in entries} if prune else None,
                                         loaded=loaded[engine], searches=searches,
                                         old_evidence=old_evidence[engine])
                except LookupError as exc:
                    raise LookupError(f"{engine}: {exc}") from None
                except SourceUnavailable as exc:
                    run.notes.append(f"error: {engine}: {exc}; its ledger is unchanged")
                    continue
                run.runs.append(done)
                run.notes.extend(done.skipped)
    finally:
        verdicts.close()
        searches.close()
        for source in sources.values():
            source.close()
    run.changes = [c for done in run.runs
                   for c in new_status_changes(before[done.engine], done.ledger or ledger.load(done.engine),
                                               done.changed_releases)]
    run.problems = [p for done in run.runs for entry in entries
                    for p in bounds_problems(done.ledger or ledger.load(done.engine), entry.id,
                                             *entry_bounds(entry, done.engine), [r.version for r in done.releases])]
    return run
