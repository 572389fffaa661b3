"""Entries × releases: open each release once and evaluate every selected check against it."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from . import __version__, locate, stats
from .evaluate import BUDGET_SPENT
from .helper import Helper
from .ledger import (
    EngineLedger,
    EvidenceUpdate,
    Excerpt,
    Excerpts,
    ReleaseEvidence,
    ReleaseRecord,
    Window,
    version_key,
    window,
)
from .model import ERROR, HOLDS, Check, CheckResult, Entry, Form, Release, Verdict, check_verdict, entry_rules
from .progress import Progress
from .reading import FileCache, Reader, Unknown
from .sources import Source, SourceUnavailable
from .surface import read as surface_read
from .verdicts import VerdictCache

if TYPE_CHECKING:
    from .sources import Snapshot
    from .surface.read import SurfaceSpec
    from .surface.store import EngineSurfaces
    from .verdicts import SearchCache


def selected_checks(entries: Iterable[Entry], engine: str | None = None):
    """(entry, check) pairs, optionally of one engine only."""
    for entry in entries:
        for check in entry.checks:
            if engine is None or check.engine == engine:
                yield entry, check


def unavailable(pairs: list, release: Release, exc: SourceUnavailable) -> list[CheckResult]:
    """Every check of `pairs` that has a form at `release` as `error unavailable`: the source could not be read."""
    found = []
    for e, c in pairs:
        forms = c.forms_at(release.version)
        if forms:
            verdict = Verdict(ERROR, "unavailable", path=forms[0].path, message=str(exc))
            found.append(CheckResult(e.id, c, release, verdict, e.file, forms[0].index))
    return found


@dataclass
class _Layout:
    """What one release evaluates: every form that applies there, by file. Releases within the same bounds
    share one layout."""

    tasks: list[tuple[int, Form]]  # (index into pairs, form), in the order of pairs and forms
    by_path: dict[str, list[int]]  # file -> indices into tasks, in order
    paths: list[str]  # sorted


def _layout(pairs: list, version: str, memo: dict | None) -> tuple[tuple, _Layout]:
    key = tuple(tuple(f.index for f in check.forms_at(version)) for _, check in pairs)
    layouts = memo.setdefault("layouts", {}) if memo is not None else {}
    found = layouts.get(key)
    if found is None:
        tasks = [(i, check.forms[index]) for i, (_, check) in enumerate(pairs) for index in key[i]]
        by_path: dict[str, list[int]] = {}
        for t, (_, form) in enumerate(tasks):
            by_path.setdefault(form.path, []).append(t)
        found = layouts[key] = _Layout(tasks, by_path, sorted(by_path))
    return key, found


def _combine(pairs: list, layout: _Layout, verdicts: list[Verdict], release: Release) -> list[CheckResult]:
    """The check results of a release from the verdicts of its forms (`verdicts[t]` of `layout.tasks[t]`)."""
    by_pair: dict[int, list[tuple[int, Verdict]]] = {}
    for (i, form), verdict in zip(layout.tasks, verdicts):
        by_pair.setdefault(i, []).append((form.index, verdict))
    results = []
    for i, (entry, check) in enumerate(pairs):
        found = check_verdict(by_pair.get(i, ()))
        if found is not None:  # else no form of the check applies here: it has no verdict at this release
            results.append(CheckResult(entry.id, check, release, found[1], entry.file, found[0]))
    return results


class _Files:
    """The forms of one release, evaluated file by file: here, or by a worker process when one is free.

    `found[t]` is set when the verdict of `tasks[t]` is known. A file handed out
    again (a later archive member of the same name replaced it) is evaluated
    again, and an answer about its earlier content that arrives later is dropped.
    Reading and the verdict cache are the `reader`'s: a worker's answers are
    recorded there too.
    """

    def __init__(self, tasks: list[tuple[int, Form]], reader: Reader, helper: Helper | None,
                 progress: Callable[[int], None] | None) -> None:
        self.forms = [form for _, form in tasks]
        self.reader, self.helper, self.progress = reader, helper, progress
        self.found: list[Verdict | None] = [None] * len(tasks)
        self._round = [0] * len(tasks)  # how many times tasks[t] was asked for; an answer names its round

    def check(self, indices: list[int]) -> None:
        """Evaluate the checks `indices`, all on one file."""
        for i in indices:
            self._round[i] += 1
        unknown, content = self._look_up(indices)
        if content is not None:
            token = [(i, self._round[i]) for i in unknown]
            helper = self.helper
            if helper is not None:
                helper.want()
            if helper is None or not helper.submit(token, content.path, content.data, content.sha256,
                                                   [self.forms[i] for i in unknown]):
                self._here(unknown, content)
        self.collect()

    def collect(self, wait: bool = False) -> None:
        """Take what the helper has finished (with `wait`, everything it was given)."""
        if self.helper is None:
            return
        for token, verdicts in (self.helper.wait() if wait else self.helper.results()):
            current = [(i, r) for i, r in token if self._round[i] == r]
            if verdicts is None:  # the helper could not: here, then (the snapshot still has the content)
                unknown, content = self._look_up([i for i, _ in current])
                if content is not None:
                    self._here(unknown, content)
                continue
            answers = dict(zip((i for i, _ in token), verdicts))
            for i, _ in token:
                self.reader.record(self.forms[i], answers[i])
            for i, _ in current:
                self._set(i, answers[i])

    def _look_up(self, indices: list[int]) -> tuple[list[int], Unknown | None]:
        """Set the verdicts of `indices` (checks on one file) known without matching; the others, with
        the content to evaluate them on. The file is read at most once."""
        unknown: list[int] = []
        content: Unknown | None = None
        for i in indices:
            if content is None:
                got = self.reader.known(self.forms[i])
            else:  # the file is read: only the verdict cache can answer for the other checks on it
                got = self.reader.known_on(self.forms[i], content) or content
            if isinstance(got, Unknown):
                unknown.append(i)
                content = got
            else:
                self._set(i, got)
        return unknown, content

    def asked(self, i: int) -> bool:
        return self._round[i] > 0

    def _here(self, indices: list[int], content: Unknown) -> None:
        for i, verdict in zip(indices, self.reader.evaluate_on([self.forms[i] for i in indices], content)):
            self._set(i, verdict)

    def _set(self, i: int, verdict: Verdict) -> None:
        again = self.found[i] is not None
        self.found[i] = verdict
        if self.progress and not again:
            self.progress(1)


def verify_release(source: Source, release: Release, pairs: list, cache: FileCache | None = None,
                   progress: Callable[[int], None] | None = None, verdicts: VerdictCache | None = None,
                   relocate: Callable[[CheckResult], bool] | None = None,
                   evidence: ReleaseEvidence | None = None, parsed: FileCache | None = None,
                   memo: dict | None = None, helper: Helper | None = None,
                   searches: SearchCache | None = None, surface: Callable | None = None,
                   surface_paths: Iterable[str] = ()) -> list[CheckResult]:
    """Every (entry, check) of the source's engine against one release: the forms of each check that apply
    at the release are evaluated, and combined into the check's verdict. A check none of whose forms
    applies has no result.

    For each `changed` or `missing` result that `relocate` picks, the verdict's hint also says
    where in this release the symbol or fragment now lives (a search of the
    whole release, so it is asked only where it is worth it; `searches`, a
    SearchCache, remembers the answers by release and fragment). `parsed` keeps the
    files those searches parse, for the next release, whose files are mostly the same.

    With `evidence` (a ledger.ReleaseEvidence), what the site shows of the lines
    each verdict points at is put in it by "entry/check" (the whole excerpt too,
    with a few lines around, when its `excerpts` is not None), and the commit the
    release holds, when its snapshot names one.

    `memo` (a dict kept from release to release by the caller, for the same
    `pairs`) holds the last release's verdicts and what its files were; a
    release whose files are all the same (by a snapshot's `identities`, named
    without reading them), and that tries the same forms, gets the same
    verdicts without evaluating anything.

    `helper` (a Helper, kept by the caller for the run) evaluates some of the files
    in worker processes while this one evaluates the others.

    `surface(snapshot)`, when given, is called with the release's snapshot once its checks are evaluated (the
    release surface is read there); `surface_paths` are read in the same archive pass as the checks' files.
    """
    stats.count("releases")
    cache = cache or FileCache()
    try:
        snapshot = source.open(release)
    except SourceUnavailable as exc:
        return unavailable(pairs, release, exc)
    try:  # the snapshot is closed however this ends
        key, layout = _layout(pairs, release.version, memo)
        by_path, paths = layout.by_path, layout.paths
        files = _Files(layout.tasks, Reader(snapshot, cache, verdicts), helper, progress)
        found = files.found

        identities = snapshot.identities(paths) if memo is not None else None
        reused = identities is not None and memo is not None and memo.get("identities") == (key, identities)
        if reused and memo is not None:
            found[:] = memo["verdicts"]
            if progress:
                progress(len(found))
        try:
            if not reused:
                # Checks run on each file as soon as the archive pass has it, while the pass goes on; with a
                # pass (new contents, most likely) the helper starts while it reads.
                on_pass = (lambda: helper.expect(len(paths))) if helper is not None else None
                wanted = paths + sorted(set(surface_paths) - set(by_path)) if surface is not None else paths
                for path in snapshot.files(wanted, on_pass):
                    files.check(by_path.get(path, []))
        except SourceUnavailable as exc:  # what was checked during a failed pass counts for nothing
            files.collect(wait=True)  # the helper's answers, about contents read, stay good in `verdicts`
            return unavailable(pairs, release, exc)
        if not reused:
            for indices in by_path.values():  # files the pass did not hand out, or all without a pass
                rest = [i for i in indices if found[i] is None and not files.asked(i)]
                if rest:
                    files.check(rest)
            files.collect(wait=True)
        done = cast("list[Verdict]", found)  # every task has its verdict now
        if memo is not None and not reused:
            if identities is None:
                identities = snapshot.identities(paths)  # after the pass, the store may name what it read
            clean = identities is not None and all(v.status != ERROR for v in done)
            memo.update(identities=(key, identities) if clean else None, verdicts=list(found))
        if memo is not None:
            memo["reused"] = reused
        results = _combine(pairs, layout, done, release)
        if relocate is not None:
            results = locate.with_relocations(results, snapshot, relocate, parsed or FileCache(), searches)
        if evidence is not None:
            whole, windows = _excerpts(results, snapshot, whole=evidence.excerpts is not None)
            if evidence.excerpts is not None:
                evidence.excerpts.update(whole)
            evidence.windows.update(windows)
            commit = snapshot.vendored_commit()  # a vendored engine's: what links to the release's code name
            if commit:
                evidence.commit = commit
        if surface is not None:
            surface(snapshot)
    finally:
        snapshot.close()
    return results


#: Lines shown around the lines a verdict points at.
CONTEXT_LINES = 3


def _excerpts(results: list[CheckResult], snapshot: Snapshot,
              whole: bool) -> tuple[dict[str, Excerpt], dict[str, Window]]:
    """(the lines around each verdict's place, by entry/check, when `whole`; the window of them the site shows
    at any release, `ledger.window`)."""
    found: dict[str, Excerpt] = {}
    windows: dict[str, Window] = {}
    lines_of: dict[str, list[str] | None] = {}  # a file's lines, split once for all the verdicts on it
    for result in results:
        v = result.verdict
        if not v.lines or not v.path:
            continue
        if v.path not in lines_of:
            try:
                data = snapshot.read(v.path)
            except SourceUnavailable:
                data = None
            lines_of[v.path] = data.decode("utf-8", "replace").split("\n") if data is not None else None
        lines = lines_of[v.path]
        if lines is None:
            continue
        key = f"{result.entry}/{result.check.id}"
        windows[key] = window(lines, v.lines)
        if not whole:
            continue
        start = max(1, v.lines[0] - CONTEXT_LINES)
        end = min(len(lines), v.lines[1] + CONTEXT_LINES)
        found[key] = Excerpt(path=v.path, start=start, lines=tuple(lines[start - 1:end]),
                             match=(v.lines[0], v.lines[1]), verdict=v.status)
    return found, windows


class Note(str):
    """A line of a run's notes, printed as it reads; `failed` when it says that something could not be done (an
    engine's releases listed, a release or its surface read): the run then exits 3 (EXIT_ERROR) when nothing
    else is wrong. `Note.error(text)` is such a note, printed `error: TEXT`."""

    failed: bool

    def __new__(cls, text: str, failed: bool = False) -> Note:
        note = super().__new__(cls, text)
        note.failed = failed
        return note

    @classmethod
    def error(cls, text: str) -> Note:
        return cls(f"error: {text}", failed=True)


@dataclass
class EngineRun:
    """What one `verify` run did for one engine."""

    engine: str
    releases: list[Release] = field(default_factory=list)  # verified in this run, in order
    results: list[CheckResult] = field(default_factory=list)
    changed_releases: list[str] = field(default_factory=list)  # whose ledger record changed
    skipped: list[Note] = field(default_factory=list)  # notes on what was left out (each a failure)
    evidence: Excerpts | None = None  # excerpts at the newest release, when it was verified
    windows: dict[str, dict[str, Window]] = field(default_factory=dict)  # version -> entry/check -> its window
    # What `run` writes (verify computes, never writes):
    ledger: EngineLedger | None = None  # the engine's ledger at the end of the run
    ledger_changed: bool = False  # whether `ledger` says more than its file (else the file is not written again)
    surfaces: dict = field(default_factory=dict)  # version -> surface.store.ReleaseSurface read in this run
    stored_surfaces: object | None = None  # the engine's surface file with them (written when `surfaces`)
    evidence_update: EvidenceUpdate | None = None  # what goes into the evidence file, when anything does


def _surface_candidates(spec: SurfaceSpec | None, run: EngineRun, surfaces: EngineSurfaces | None) -> list[str]:
    """The files a release's surface most likely reads, named before its archive is listed: the registry's
    literal paths and the files of the last surface read (this run's, else the newest on file)."""
    if spec is None:
        return []
    last = None
    if run.surfaces:
        last = run.surfaces[list(run.surfaces)[-1]]
    elif surfaces is not None and surfaces.releases:
        last = surfaces.releases[surfaces.versions()[-1]]
    return sorted(set(spec.literal_paths()) | set(last.files if last is not None else ()))


def _stale(version: str, record: ReleaseRecord, pairs: Iterable[tuple[Entry, Check]]) -> bool:
    """Whether a ledger release record lacks a verdict of some check as it is written now (or has one of a
    check that no longer applies there)."""
    for entry, check in pairs:
        found = record.entries.get(entry.id)
        verdict = found.checks.get(check.id) if found is not None else None
        if not check.forms_at(version):
            if verdict is not None:
                return True
        elif verdict is None or verdict.check != check.fingerprint \
                or _refused_for_time(verdict.verdict, verdict.reason, verdict.message):
            return True
    return False


def _refused_for_time(status: str, reason: str | None, message: str | None) -> bool:
    """A verdict a run's time budget refused (it says nothing of the code): the next run tries it again."""
    return status == ERROR and reason == "unavailable" and (message or "").startswith(BUDGET_SPENT)


def _last_statuses(ledger: EngineLedger, before: str | None) -> dict[tuple[str, str], str]:
    """(entry, check) -> its last decided status in the ledger's releases before `before`."""
    statuses: dict[tuple[str, str], str] = {}
    if before is None:
        return statuses
    limit = version_key(before)
    for version in ledger.versions():
        if version_key(version) >= limit:
            break
        for entry, record in ledger.releases[version].entries.items():
            for check, verdict in record.checks.items():
                if verdict.decided:
                    statuses[(entry, check)] = verdict.verdict
    return statuses


def choose_releases(available: list[Release], known: set[str], *, versions: list[str] | None = None,
                    since: str | None = None, new: bool = False) -> list[Release]:
    """The releases a run verifies: named ones, those from `since` on, those not in `known`, or all."""
    if versions:
        by_version = {r.version: r for r in available}
        missing = [v for v in versions if v not in by_version and v != "latest"]
        if missing:
            raise LookupError(f"no release {', '.join(missing)} "
                              f"(known: {', '.join(r.version for r in available[-5:])}, ...)")
        chosen = [available[-1] if v == "latest" else by_version[v] for v in versions]
        return sorted(set(chosen), key=lambda r: version_key(r.version))
    chosen = available
    if since:
        floor = version_key(since)
        chosen = [r for r in chosen if version_key(r.version) >= floor]
    if new:
        chosen = [r for r in chosen if r.version not in known]
    return chosen


def compute_engine(engine: str, source: Source, pairs: list, engine_ledger: EngineLedger, *,
                   versions: list[str] | None = None, since: str | None = None,
                   new: bool = False, source_label: str = "", progress: Progress | None = None,
                   verdicts: VerdictCache | None = None, prune: set[str] | None = None,
                   searches: SearchCache | None = None,
                   surface_spec: SurfaceSpec | None = None, surfaces: EngineSurfaces | None = None) -> EngineRun:
    """Verify `pairs` against the chosen releases of one engine, and say what to write: nothing is written here
    (`run.verify_engine` reads the engine's files, calls this, and writes what it returns).

    `engine_ledger` is the engine's ledger as read; it is updated (`EngineRun.ledger`, with `ledger_changed`).
    `prune`, when given, is every entry id of the KB: the ledger forgets entries not among them.

    With `surface_spec` (surface.read.SurfaceSpec), each release's surface is read in the same pass as its checks'
    files, and the engine's surfaces (`surfaces`, as loaded) get the releases read (`EngineRun.stored_surfaces`);
    with `--new`, a release without a surface record counts as not seen. The evidence of the releases verified
    is `EngineRun.evidence_update`.
    """
    run = EngineRun(engine)
    available = source.releases()
    # With --new, a release counts as seen only when it has a verdict of every check as written now,
    # so that a new or edited entry gets its history filled in by the next scheduled run.
    seen = {v for v in engine_ledger.releases if not _stale(v, engine_ledger.releases[v], pairs)}
    if surface_spec is not None and surfaces is not None:
        seen &= {r.version for r in available if surfaces.current(r)}
    bounds = {entry.id: entry_rules(entry, engine) for entry in {id(e): e for e, _ in pairs}.values()}
    run.releases = choose_releases(available, seen, versions=versions, since=since, new=new)
    cache = FileCache()
    parsed = FileCache()  # files parsed by relocation searches, by content: apart from `cache`, which they would flush
    memo: dict = {}  # the last release's verdicts and files, for a release whose files are all the same
    surface_memo: dict = {}  # the last release's surface, for a release whose surface files are the same
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    last_status = _last_statuses(engine_ledger, run.releases[0].version if run.releases else None)
    newest = available[-1].version if available else None
    helper = Helper()  # worker processes for evaluating, started once there are files to evaluate
    try:
        # A git source keeps its processes from one release to the next until the loop ends.
        with source.batch():
            for index, release in enumerate(run.releases, 1):
                if progress:
                    progress.status(f"{engine} {release.version} ({index}/{len(run.releases)})", force=True)

                def worth_relocating(result: CheckResult, release: Release = release) -> bool:
                    # Where a check stops holding, and at the newest release: the places a reader looks.
                    return release.version == newest or last_status.get((result.entry, result.check.id)) == HOLDS

                # every release's windows; the newest's whole excerpts too
                evidence = ReleaseEvidence(excerpts={} if release.version == newest else None)
                read_surface = None
                if surface_spec is not None and surfaces is not None and not surfaces.current(release):
                    def read_surface(snapshot: Snapshot, release: Release = release):
                        try:
                            run.surfaces[release.version] = surface_read.read_surface(
                                snapshot, surface_spec, release, now, __version__, surface_memo)
                        except SourceUnavailable as exc:
                            run.skipped.append(Note.error(f"{engine} {release.version}: its surface could not be "
                                                          f"read ({exc}); not recorded"))
                results = verify_release(source, release, pairs, cache, verdicts=verdicts, relocate=worth_relocating,
                                         evidence=evidence, parsed=parsed, memo=memo, helper=helper,
                                         searches=searches, surface=read_surface,
                                         surface_paths=_surface_candidates(surface_spec, run, surfaces))
                if evidence.excerpts is not None:
                    run.evidence = Excerpts(release.version, evidence.excerpts)
                if not memo.get("reused"):  # a release carried over leaves every status as it was
                    for result in results:
                        if result.verdict.status != ERROR:
                            last_status[(result.entry, result.check.id)] = result.verdict.status
                run.results.extend(results)
                if verdicts is not None:
                    verdicts.flush()  # one transaction per release
                if results and all(r.verdict.reason == "unavailable" for r in results):
                    # Nothing was learnt about the code; left out so that the next `--new` run tries again.
                    what = "was not verified" if all(_refused_for_time(r.verdict.status, r.verdict.reason,
                                                                      r.verdict.message) for r in results) \
                        else "could not be read"
                    run.skipped.append(Note.error(f"{engine} {release.version} {what} "
                                                  f"({results[0].verdict.message}); not recorded in the ledger"))
                    continue
                run.windows[release.version] = evidence.windows
                if engine_ledger.record(release, results, source_label, now, __version__, bounds,
                                        commit=evidence.commit):
                    run.changed_releases.append(release.version)
    finally:
        helper.close()
    if progress:
        progress.done()
    changed = bool(run.changed_releases)
    changed |= engine_ledger.restatus(bounds)  # an edited `introduced` or `fixed` reaches every release, read or not
    if prune is not None:
        changed |= engine_ledger.drop_entries(prune)
    run.ledger = engine_ledger
    run.ledger_changed = changed or engine_ledger.migrated  # a migrated file is written back as the current format
    if run.surfaces and surfaces is not None:
        surfaces.releases.update(run.surfaces)
    run.stored_surfaces = surfaces
    if run.evidence is not None or run.windows:
        run.evidence_update = EvidenceUpdate(engine, run.evidence, run.windows,
                                             frozenset(entry.id for entry, _ in pairs),
                                             None if prune is None else frozenset(prune), merge=prune is None)
    return run
