"""`gotchas follow`: propose the new form of every check a release broke, and write the ones that keep the claim."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import report, run
from ..entries import load_entry
from ..follow import KINDS, Reader, follow_engine
from ..kb import KB
from ..ledger import DEFAULT_DIR as DEFAULT_LEDGER_DIR
from ..ledger import Ledger, LedgerError, version_key
from ..progress import Progress
from ..sources import Source
from ..surface.read import SurfaceSpec
from ..verdicts import SearchCache, VerdictCache
from ..verify import selected_checks
from ._common import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    UsageError,
    _check_engine,
    _close,
    _display,
    _entry_files,
    _kb,
    _load_clean,
    _make_sources,
    _source_locations,
)


def kinds_of(text: str) -> tuple[str, ...]:
    """`--kinds move,text` as a tuple, each a kind of proposal."""
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise UsageError(f"--kinds takes {', '.join(KINDS)} (comma-separated); not {text!r}")
    return kinds


def run_follow(args: argparse.Namespace) -> int:
    kb = _kb(args)
    _check_engine(kb, args.engine)
    kinds = kinds_of(args.kinds)
    if args.release and args.new:
        raise UsageError("give --release or --new, not both")
    loaded, _, entries = _load_clean(kb, args.entries)
    pairs = list(selected_checks(entries, args.engine))
    engines = [args.engine] if args.engine else sorted({c.engine for _, c in pairs})
    ledger = Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR)
    progress = Progress()
    locations = _source_locations(kb, args.source, args.engine, set(engines), default="pypi")
    sources = _make_sources(kb, locations, progress)
    found = []
    known: set[str] = set()
    unknown: set[str] = set()
    verdicts, searches = VerdictCache(), SearchCache()
    followed = False  # with --write the sources stay open for the re-verification, once everything was followed
    try:
        for engine in engines:
            source = sources[engine]
            oldest = kb.engines[engine].oldest
            releases = [r for r in source.releases() if not oldest or version_key(r.version) >= version_key(oldest)]
            if not releases:
                continue
            by_version = {r.version: r for r in releases}
            if args.release:
                # a release of one engine only (vLLM 0.33.0) is followed where it exists
                targets = [by_version[v] for v in args.release if v in by_version]
                unknown.update(v for v in args.release if v not in by_version)
                known.update(v for v in args.release if v in by_version)
            elif args.new:
                try:
                    seen = set(ledger.load(engine).versions())
                except LedgerError as exc:  # the ledger follow would re-verify: its failure is the run's (3)
                    print(report.terminal(f"gotchas: {exc.message}"), file=sys.stderr)
                    return EXIT_ERROR
                targets = [r for r in releases if r.version not in seen
                           and (not seen or version_key(r.version) > max(version_key(v) for v in seen))]
            else:
                targets = [releases[-1]]
            reader = Reader(source, verdicts, searches)
            try:
                found += follow_engine([e for e in entries if any(c.engine == engine for c in e.checks)], engine,
                                       source, releases, targets, reader, KINDS, not args.no_mutants,
                                       lambda text: progress.status(f"following: {text}"))
            finally:
                reader.close()
                progress.done()
        followed = True
    finally:
        verdicts.close()
        searches.close()
        if not (args.write and followed):  # a return or a failure half-way closes them too
            _close(*sources.values())
    if unknown - known:
        _close(*sources.values())
        raise UsageError(f"no release {', '.join(sorted(unknown - known))} of "
                         f"{' or '.join(kb.engines[e].name for e in engines)}")
    written: dict = {}
    code = EXIT_OK
    try:
        if args.write:
            code = _write(kb, found, kinds, written)
            touched = sorted({f.entry for f in found if written.get((f.entry, f.check.id, f.release)) == "written"})
            if touched:
                labels = {name: location.partition(":")[0] for name, location in locations.items()}
                code = max(code, _reverify(kb, args, touched, engines, sources, labels, ledger, progress))
    finally:
        if args.write:
            _close(*sources.values())
    sys.stdout.write(report.follow_text(found, written, kinds))
    if args.report:
        Path(args.report).write_text(report.follow_markdown(found, written), encoding="utf-8")
    if code == EXIT_OK and any(f.best is None or (args.write and written.get((f.entry, f.check.id, f.release))
                                                  != "written") for f in found):
        code = EXIT_FINDINGS  # something is left for a person
    if any(f.verdict is not None and f.verdict.status == "error" for f in found):
        code = EXIT_ERROR  # a release could not be read: what it says is not known
    return code


def _write(kb: KB, found: list, kinds: tuple[str, ...], written: dict) -> int:
    """Each proposal that keeps its claim and is of `kinds`, written into its entry, in release order."""
    from ..rewrite import RewriteError, write_followed

    code = EXIT_OK
    for item in found:
        key = (item.entry, item.check.id, item.release)
        best = item.best
        if best is None:
            written[key] = "not written: no proposal keeps the claim" if item.proposals else ""
            continue
        if best.kind not in kinds:
            written[key] = f"not written: a {best.kind} proposal (--kinds {','.join(kinds)})"
            continue
        path = _entry_files(kb, [item.entry])[0]
        current = load_entry(path, display=_display(kb, path))
        check = next((c for c in current.entry.checks if c.id == item.check.id), None) if current.entry else None
        if check is None:
            written[key] = "not written: the check is not in the entry any more"
            code = EXIT_FINDINGS
            continue
        try:
            write_followed(path, current, check, best.form, item.held)
        except RewriteError as exc:
            written[key] = f"not written: {exc}"
            code = EXIT_FINDINGS
            continue
        written[key] = "written"
    return code


def _reverify(kb: KB, args: argparse.Namespace, touched: list[str], engines: list[str], sources: dict[str, Source],
              labels: dict[str, str], ledger: Ledger, progress: Progress) -> int:
    """Verify the entries that were written at the releases the ledger has (a release it has not seen is left
    to `gotchas verify --new`, which records it for every entry)."""
    _, _, entries = _load_clean(kb, touched)
    pairs = list(selected_checks(entries, args.engine))
    code = EXIT_OK
    for engine in engines:
        try:
            versions = ledger.load(engine).versions()
        except LedgerError as exc:  # as in `gotchas verify`: the ledger being written failed the run (3)
            print(report.terminal(f"gotchas: {exc.message}"), file=sys.stderr)
            return EXIT_ERROR
        engine_pairs = [p for p in pairs if p[1].engine == engine]
        if not engine_pairs or not versions:
            continue
        try:
            verified = run.verify_engines([engine], sources, labels, engine_pairs, entries, ledger,
                                          oldest={engine: kb.engines[engine].oldest}, versions=versions,
                                          prune=False, wait=args.wait, progress=progress,
                                          surface_specs={engine: SurfaceSpec.of(kb.engines[engine])})
        except (LedgerError, run.ReleaseNotFound) as exc:  # the entries were written: re-verifying them failed (3)
            print(report.terminal(f"gotchas: {exc.message}"), file=sys.stderr)
            return EXIT_ERROR
        print(f"re-verified {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} at the {len(versions)} "
              f"{kb.engines[engine].name} releases of the ledger" +
              (f"; {len(verified.changes)} status change(s)" if verified.changes else ""))
        if verified.failed:
            code = EXIT_ERROR
    return code
