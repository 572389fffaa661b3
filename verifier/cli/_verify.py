"""The commands that verify checks: `check` (one release; lint; mutants for a pull request), `verify` (every
release, into the ledger) and `mutate`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import kb as kb_module
from .. import report, run
from ..ledger import DEFAULT_DIR as DEFAULT_LEDGER_DIR
from ..ledger import Ledger, LedgerError
from ..model import CHANGED, MISSING, Diagnostic, Entry
from ..progress import Progress
from ..surface.read import SurfaceSpec
from ..verify import selected_checks
from ._common import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    UsageError,
    _check_engine,
    _close,
    _exit_code,
    _kb,
    _load,
    _load_clean,
    _make_sources,
    _source_locations,
)


def run_check(args: argparse.Namespace) -> int:
    kb = _kb(args)
    _check_engine(kb, args.engine)
    names = args.entries
    if args.changed_since:
        from ..changes import entries_to_check

        if args.entries:
            raise UsageError("give entries or --changed-since, not both")
        files = entries_to_check(kb, args.changed_since)
        if files == []:
            sys.stdout.write(report.render(args.format, [], [], ["no entry changed"], 0))
            return EXIT_OK
        names = [str(f) for f in files] if files is not None else []
    loaded, diagnostics, entries = _load(kb, names)
    pairs = list(selected_checks(entries, args.engine))
    results: list = []
    notes: Sequence[str] = []
    reports = []
    if not args.offline:
        diagnostics = diagnostics + _surface_diagnostics(kb, entries, args)
        engines_needed = {check.engine for _, check in pairs}
        given = _source_locations(kb, args.source, args.engine, engines_needed)  # the one reading of --source
        progress = Progress()
        # With no --source, every engine is read from the package index; with some, only those engines.
        sources = _make_sources(kb, given if args.source else dict.fromkeys(engines_needed, "pypi"), progress)
        try:
            results, notes = run.check_engines(sorted(engines_needed), sources, pairs, args.release, progress)
        finally:
            _close(*sources.values())
        if args.changed_since and not args.no_mutate and entries and not diagnostics:
            # A pull request: do its checks pin their claims? A surviving mutant is a warning, a reformat that
            # changes a verdict an error (a matcher bug). Engines without a --source: from the package index.
            reports = _mutated(kb, entries, engines_needed, {**dict.fromkeys(engines_needed, "pypi"), **given},
                               args.release, args.mutate_seconds)
    if args.format == "json" and reports:
        records = json.loads(report.render("json", diagnostics, results, notes, len(loaded)))
        records += json.loads(report.mutate_report("json", kb, reports))
        sys.stdout.write(json.dumps(records, indent=2) + "\n")
    else:
        sys.stdout.write(report.render(args.format, diagnostics, results, notes, len(loaded)))
        if reports and args.format != "junit":
            sys.stdout.write(report.mutate_report("github" if args.format == "github" else "text", kb, reports))
    flipped = any(r.neutral_flips for r in reports)
    return _exit_code(diagnostics, results,
                      flipped or any(r.verdict.status in (CHANGED, MISSING) for r in results))


def _surface_diagnostics(kb: kb_module.KB, entries: list[Entry], args: argparse.Namespace) -> list:
    """G501 (surface.lint) over the entries, from the committed ledger and surface files."""
    from ..surface.lint import condition_problems, condition_setting_problems, surface_problems

    ledger = Ledger(getattr(args, "ledger", None) or kb.root / DEFAULT_LEDGER_DIR)
    engines = sorted({e for entry in entries for e in entry.engines if e in kb.engines})
    try:
        ledgers = {e: ledger.load(e) for e in engines}
        surfaces = {e: ledger.load_surfaces(e) for e in engines}
    except LedgerError as exc:
        return [Diagnostic(str(ledger.folder), 1, "G501", f"the ledger cannot be read: {exc}")]
    found = []
    for entry in entries:
        path = Path(entry.file) if Path(entry.file).is_absolute() else kb.root / entry.file
        if not path.exists():
            path = Path(entry.file)
        found.extend(surface_problems(entry, path, ledgers, surfaces))
        found.extend(condition_problems(entry, ledgers, surfaces))
        found.extend(condition_setting_problems(entry, ledgers, surfaces))
    return sorted(found, key=lambda d: (d.path, d.line, d.code))


def run_verify(args: argparse.Namespace) -> int:
    kb = _kb(args)
    _check_engine(kb, args.engine)
    loaded, diagnostics, entries = _load_clean(kb, args.entries)
    pairs = list(selected_checks(entries, args.engine))
    engines = [args.engine] if args.engine else sorted({c.engine for _, c in pairs})
    ledger = Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR)
    progress = Progress()
    locations = _source_locations(kb, args.source, args.engine, set(engines), default="pypi")
    sources = _make_sources(kb, locations, progress)
    labels = {name: location.partition(":")[0] for name, location in locations.items()}
    try:
        verified = run.verify_engines(engines, sources, labels, pairs, entries, ledger,
                                      oldest={name: kb.engines[name].oldest for name in engines},
                                      versions=args.release, since=args.since, new=args.new, prune=not args.entries,
                                      wait=args.wait, progress=progress,
                                      surface_specs={name: SurfaceSpec.of(kb.engines[name]) for name in engines})
    except LedgerError as exc:  # the ledger is what verify writes: its failure is the run's (3), not the data's (2)
        print(report.terminal(f"gotchas: {exc.message}"), file=sys.stderr)
        return EXIT_ERROR
    results = [r for done in verified.runs for r in done.results]

    def rendered(form: str) -> str:
        return report.render_run(form, kb, verified.runs, verified.changes, diagnostics, verified.notes, len(loaded),
                                 args.site_url, verified.problems)

    sys.stdout.write(rendered(args.format))
    if args.report:
        # backslashreplace: a lone surrogate that reached the report some other way than through verifier.md
        Path(args.report).write_text(rendered("markdown"), encoding="utf-8", errors="backslashreplace")
    code = _exit_code(diagnostics, results, bool(verified.changes) or bool(verified.problems))
    return EXIT_ERROR if code == EXIT_OK and verified.failed else code


def run_mutate(args: argparse.Namespace) -> int:
    kb = _kb(args)
    _check_engine(kb, args.engine)
    loaded, diagnostics, entries = _load_clean(kb, args.entries)
    reports = mutate_entries(kb, entries, args.source, args.engine, args.release, args.seconds)
    sys.stdout.write(report.mutate_report(args.format, kb, reports))
    return EXIT_FINDINGS if any(r.neutral_flips for r in reports) else EXIT_OK


def mutate_entries(kb: kb_module.KB, entries: list[Entry], specs: list[str], engine: str | None, version: str,
                   seconds: float) -> list:
    """`gotchas mutate` over entries: one report per entry and engine; `specs`, the `--source` options (engines
    without one are read from the package index)."""
    engines = {c.engine for e in entries for c in e.checks if engine is None or c.engine == engine}
    return _mutated(kb, entries, engines, _source_locations(kb, specs, engine, engines, default="pypi"), version,
                    seconds)


def _mutated(kb: kb_module.KB, entries: list[Entry], engines: set[str], locations: dict[str, str], version: str,
             seconds: float) -> list:
    progress = Progress()
    sources = _make_sources(kb, locations, progress)
    return run.mutate_entries(entries, sorted(engines), sources, version, seconds, progress)
