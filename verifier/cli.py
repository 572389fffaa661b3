"""The `gotchas` command: parse arguments, call the library, print, exit.

Exit codes (every command):
  0  all good: lint clean, and every verified check holds
  1  something for an author to fix: a lint problem, or a check that changed
  2  usage: bad arguments, no KB found, the KB's own data is malformed
  3  the machinery failed (a source could not be read) and nothing else is wrong
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__, kb as kb_module, lint, report
from .entries import load_entry
from .model import CHANGED, ERROR
from .sources import Source, SourceUnavailable
from .sources.directory import DirectorySource
from .verify import selected_checks, verify_release

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3


class UsageError(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (UsageError, kb_module.KBError) as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gotchas: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gotchas",
        description="Verify a knowledge base of LLM serving-engine gotchas against the engines' source code.",
        epilog=__doc__.split("\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gotchas {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser(
        "check", help="lint entries and verify their checks",
        description="Lint entries (all of the KB by default) and verify each check against a release.",
        epilog=__doc__.split("\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("entries", nargs="*", metavar="ENTRY", help="entry files or ids (default: every entry)")
    check.add_argument("--engine", help="verify only the checks of this engine")
    check.add_argument("--source", action="append", default=[], metavar="[ENGINE=]dir:PATH",
                       help="where to read engine code: a local checkout of the engine's repository "
                            "(repeat with ENGINE= for several engines)")
    check.add_argument("--offline", action="store_true", help="lint only; read no engine code")
    check.add_argument("--format", choices=report.FORMATS, default="text")
    check.set_defaults(run=run_check)

    schema = commands.add_parser(
        "schema", help="print the JSON Schema of an entry's front matter",
        description="Print the JSON Schema of front matter, with the KB's vocabularies; "
                    "--write updates gotchas/entry.schema.json.",
    )
    schema.add_argument("--write", action="store_true", help="write gotchas/entry.schema.json instead of printing")
    schema.set_defaults(run=run_schema)
    return parser


def _kb(args) -> kb_module.KB:
    root = kb_module.find_root()
    if root is None:
        raise UsageError("no knowledge base here: run inside a checkout that has gotchas/engines.yaml")
    return kb_module.load(root)


def _entry_files(kb: kb_module.KB, names: list[str]) -> list[Path]:
    if not names:
        return kb.entry_files()
    files = []
    for name in names:
        path = Path(name)
        if path.suffix == ".md" and path.is_file():
            files.append(path.resolve())
        elif (kb.entries_dir / f"{name}.md").is_file():
            files.append(kb.entries_dir / f"{name}.md")
        else:
            raise UsageError(f"no entry {name!r}: give a file or an id from {kb.entries_dir}")
    return files


def _display(kb: kb_module.KB, path: Path) -> str:
    try:
        return path.resolve().relative_to(kb.root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _sources(kb: kb_module.KB, specs: list[str], engine: str | None, engines_needed: set[str]) -> dict[str, Source]:
    sources: dict[str, Source] = {}
    for spec in specs:
        target, sep, location = spec.partition("=")
        if not sep or ":" in target:
            target, location = engine, spec
        if target is None:
            if len(engines_needed) > 1:
                raise UsageError(f"--source {spec}: the checks name several engines ({', '.join(sorted(engines_needed))}); "
                                 "add --engine E, or write --source ENGINE=dir:PATH")
            target = next(iter(engines_needed), None)
            if target is None:
                continue
        if target not in kb.engines:
            raise UsageError(f"--source {spec}: unknown engine {target!r}; engines are: {', '.join(kb.engines)}")
        kind, _, where = location.partition(":")
        if kind != "dir" or not where:
            raise UsageError(f"--source {spec}: expected dir:PATH")
        if not Path(where).is_dir():
            raise UsageError(f"--source {spec}: {where} is not a directory")
        sources[target] = DirectorySource(target, where, archive_root=kb.engines[target].archive_root)
    return sources


def run_check(args) -> int:
    kb = _kb(args)
    if args.engine and args.engine not in kb.engines:
        raise UsageError(f"unknown engine {args.engine!r}; engines are: {', '.join(kb.engines)}")
    loaded = [load_entry(path, display=_display(kb, path)) for path in _entry_files(kb, args.entries)]
    diagnostics = [d for item in loaded for d in lint.lint(item, kb)]
    entries = [item.entry for item in loaded if item.entry is not None]
    pairs = list(selected_checks(entries, args.engine))
    results, notes = [], []
    if not args.offline:
        engines_needed = {check.engine for _, check in pairs}
        sources = _sources(kb, args.source, args.engine, engines_needed)
        for engine in sorted(engines_needed):
            source = sources.get(engine)
            if source is None:
                notes.append(f"note: {engine} checks not verified: no source for {engine} (give --source {engine}=dir:PATH)")
                continue
            try:
                release = source.releases()[-1]
            except (SourceUnavailable, IndexError) as exc:
                raise UsageError(f"{engine}: {exc or 'no release'}") from None
            results.extend(verify_release(source, release, [p for p in pairs if p[1].engine == engine]))
    sys.stdout.write(report.render(args.format, diagnostics, results, notes, len(loaded)))
    statuses = {r.verdict.status for r in results}
    if diagnostics or CHANGED in statuses:
        return EXIT_FINDINGS
    if ERROR in statuses:
        return EXIT_ERROR
    return EXIT_OK


def run_schema(args) -> int:
    from . import schema

    kb = _kb(args)
    text = schema.render(kb)
    if args.write:
        (kb.entries_dir / schema.SCHEMA_FILE).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK
