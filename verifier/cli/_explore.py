"""The commands that look into entries and engine code: `show`, `locate`, `bisect` and `trace`."""

from __future__ import annotations

import argparse
import sys
from typing import cast

from .. import lint, report, run
from ..entries import load_entry
from ..ledger import DEFAULT_DIR as DEFAULT_LEDGER_DIR
from ..ledger import Ledger
from ..model import Entry, Verdict
from ..progress import Progress
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    LintRefusal,
    UsageError,
    _check_engine,
    _display,
    _entry_files,
    _kb,
    _make_source,
    _sources,
)


def _say(line: object) -> None:
    """Print one line built from data (a file name of the engine's code, a commit message, a source given as an
    argument) on the terminal through `report.terminal`: ESC, CSI and the rest shown as their escapes, a newline in
    the data shown too, a lone surrogate written as its escape."""
    print(report.terminal(str(line), lines=False))


def run_show(args: argparse.Namespace) -> int:
    kb = _kb(args)
    _check_engine(kb, args.engine)
    path = _entry_files(kb, [args.id])[0]
    loaded = load_entry(path, display=_display(kb, path))
    if loaded.entry is None:
        for d in loaded.diagnostics:
            _say(d)
        return EXIT_FINDINGS
    ledger = Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR)
    release = getattr(args, "release", None)
    sys.stdout.write(report.writer("show", args.format)(kb, loaded.entry, ledger, args.engine, release))
    return EXIT_OK


def run_locate(args: argparse.Namespace) -> int:
    from .. import locate

    kb = _kb(args)
    _check_engine(kb, args.engine)
    progress = Progress()
    found = locate.locate_in(_make_source(kb, args.engine, args.source, progress),  # closed by locate_in
                             lambda source: run.chosen_release(args.engine, source, args.release), args.code,
                             lambda text: progress.status(text, force=True))
    progress.done()
    _say(f"{kb.engines[args.engine].name} {found.release.version}: {found.python_files} Python files, "
          f"{found.cpp_files} C and C++ files")
    if found.definitions is not None:
        places = found.definitions
        _say(f"definitions of {args.code}:" if places else f"no definition of {args.code}")
        for place in places[: args.limit]:
            _say(f"  {place}")
    places = found.occurrences
    _say(f"occurrences of {args.code!r}: {len(places)}" if places else f"no occurrence of {args.code!r}")
    for place in places[: args.limit]:
        _say(f"  {place}")
    if len(places) > args.limit:
        _say(f"  ... and {len(places) - args.limit} more (--limit)")
    return EXIT_OK if found.definitions or found.occurrences else EXIT_FINDINGS


def run_bisect(args: argparse.Namespace) -> int:
    from .. import bisect, history

    kb = _kb(args)
    path = _entry_files(kb, [args.id])[0]
    loaded = load_entry(path, display=_display(kb, path))
    if loaded.entry is None:
        raise UsageError(f"{args.id}: the entry cannot be read; run `gotchas check {args.id}`")
    check = next((c for c in loaded.entry.checks if c.id == args.check), None)
    if check is None:
        raise UsageError(f"{args.id} has no well-formed check {args.check!r}; "
                         f"checks: {', '.join(c.id for c in loaded.entry.checks)}")
    if not args.source.startswith("git:"):
        raise UsageError("bisect needs a git source: --source git:URL_OR_PATH")
    transitions = [] if args.between else history.transitions(
        Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR).load(check.engine), loaded.entry.id)
    try:  # the source is bisect_source's: closed however it ends
        found = bisect.bisect_source(_make_source(kb, check.engine, args.source), check, transitions, args.between)
    except LookupError as exc:  # a release of --between the source does not have: said with the source
        raise UsageError(f"{exc} in {args.source}") from None
    except bisect.NoForm as exc:
        raise UsageError(str(exc)) from None
    if found.flip is None:
        _say(f"{check.id} has the same status in every release of {args.source}; nothing to bisect")
        return EXIT_FINDINGS
    good, bad, old, new = found.flip
    result = found.result
    if result is None:  # the same status at both
        _say(f"{check.id} is {old} in both {good.version} and {bad.version}; nothing to bisect")
        return EXIT_FINDINGS
    _say(f"{loaded.entry.id} / {check.id}: {old} in {good.version}, {new} in {bad.version}")
    _say(f"  {result.candidates} commits touched {check.path}; {result.tested} tested")
    if result.commit is None:
        _say(f"  no commit between them touching {check.path} has the new status")
        return EXIT_FINDINGS
    engine = kb.engines[check.engine]
    _say(f"  first commit where it is {new}: {result.commit} {found.summary}")
    _say(f"  {engine.repository.rstrip('/').removesuffix('.git')}/commit/{result.commit}")
    v = cast(Verdict, result.verdict)  # a commit found: its verdict with it
    if v.reason:
        _say(f"  {v.reason}: {v.message or ''}")
    if v.hint:
        _say(f"  hint: {v.hint}")
    return EXIT_OK


def run_trace(args: argparse.Namespace) -> int:
    from ..rewrite import reread, write_forms

    kb = _kb(args)
    _check_engine(kb, args.engine)
    path = _entry_files(kb, [args.id])[0]
    loaded = load_entry(path, display=_display(kb, path))
    problems = lint.lint(loaded, kb)
    if loaded.entry is None or problems:
        for d in problems:
            _say(d)
        raise LintRefusal(f"{args.id}: fix the entry's lint problems first (`gotchas check --offline {args.id}`)")
    entry = loaded.entry
    checks = [c for c in entry.checks if (args.check is None or c.id == args.check)
              and (args.engine is None or c.engine == args.engine)]
    if not checks:
        raise UsageError(f"{entry.id} has no check {args.check!r}" + (f" of {args.engine}" if args.engine else "")
                         + f"; checks: {', '.join(c.id for c in entry.checks)}")
    engines = sorted({c.engine for c in checks})
    progress = Progress()
    sources = _sources(kb, args.source, args.engine, set(engines), default="pypi", progress=progress)
    floors = {engine: args.since or kb.engines[engine].oldest or None for engine in engines}
    traces = run.trace_checks(entry, checks, sources, floors, progress, _say)
    sys.stdout.write(report.trace_text(kb, entry, traces))
    if args.write:
        wrote = 0
        for found, _ in traces:
            if not found.proposals:
                continue
            current = reread(path, loaded, display=_display(kb, path))  # again (a write moved lines); or RewriteError
            check = next(c for c in cast(Entry, current.entry).checks if c.id == found.check.id)
            write_forms(path, current, check, [p.fields(check) for p in found.proposals])  # or RewriteError (1)
            wrote += len(found.proposals)
        _say(f"wrote {wrote} form{'s' if wrote != 1 else ''} to {_display(kb, path)}" if wrote
              else "nothing to write")
    return EXIT_OK
