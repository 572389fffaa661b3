"""The `gotchas` command: parse arguments, call the library, print, exit.

Exit codes (every command):
  0  all good: lint clean, and every verified check holds
  1  something for an author to fix: a lint problem, a check that is changed or missing;
     for verify, an entry that changed status in a newly verified release, or a
     release that contradicts an entry's introduced/fixed
  2  usage: bad arguments, no KB found, the KB's own data is malformed
  3  the machinery failed (a source could not be read) and nothing else is wrong
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__, kb as kb_module, lint, report
from .entries import load_entry
from .evaluate import Budget
from .ledger import DEFAULT_DIR as DEFAULT_LEDGER_DIR, Ledger, LedgerError
from .model import CHANGED, ERROR, MISSING, Release
from .progress import Progress
from .sources import Source, SourceUnavailable
from .sources.directory import DirectorySource
from .helper import Helper
from .verdicts import SearchCache, VerdictCache
from .verify import choose_releases, selected_checks, unavailable, verify_release

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3


class UsageError(Exception):
    pass


class LintRefusal(Exception):
    """A command that writes or runs from entries refused to start: lint reported problems (exit 1, like any
    lint problem: something for an author to fix, not a usage error)."""


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (UsageError, kb_module.KBError) as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LintRefusal as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_FINDINGS
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

    check = _entry_command(commands, "check", "lint entries and verify their checks",
                           "Lint entries (all of the KB by default) and verify each check against a release.")
    check.add_argument("--offline", action="store_true", help="lint only; read no engine code")
    check.add_argument("--changed-since", metavar="REF",
                       help="check only the entries changed since the merge base of REF and HEAD (everything when "
                            "the verifier, the engine registry or the vocabularies changed)")
    check.add_argument("--release", default="latest", metavar="V", help="the release to verify against (default: latest)")
    check.add_argument("--mutate-seconds", type=float, default=60.0, metavar="S",
                       help="with --changed-since: how long `mutate` may take per changed entry (default: 60)")
    check.add_argument("--no-mutate", action="store_true",
                       help="with --changed-since: do not run `mutate` on the changed entries")
    check.add_argument("--format", choices=report.FORMATS, default="text")
    check.set_defaults(run=run_check)

    verify = _entry_command(commands, "verify", "verify entries against every release and record the verdicts in "
                            "the ledger", "Verify entries (all by default) against the releases of each engine and "
                            "update the ledger. Exits 1 when an entry changed status in a newly verified release.")
    verify.add_argument("--release", action="append", metavar="V", help="only this release (repeatable; 'latest')")
    verify.add_argument("--since", metavar="V",
                        help="only releases from V on (default: the engine's `oldest` in gotchas/engines.yaml)")
    verify.add_argument("--new", action="store_true", help="only releases the ledger has not seen")
    verify.add_argument("--ledger", metavar="PATH", help="the ledger folder (default: ledger/ in the KB)")
    verify.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="wait this long for another run's lock on the ledger (default: refuse at once)")
    verify.add_argument("--report", metavar="FILE", help="also write the Markdown report of the run to FILE")
    verify.add_argument("--site-url", default="", metavar="URL", help="the published site, for links in the report")
    verify.add_argument("--format", choices=report.RUN_FORMATS, default="text")
    verify.set_defaults(run=run_verify)

    locate = commands.add_parser(
        "locate", help="where a symbol or code fragment lives in a release",
        description="Every definition of a dotted symbol, and every occurrence of a code fragment "
                    "($NAME and $$$ allowed), in the Python files of one release, with the enclosing symbol.")
    locate.add_argument("engine", metavar="ENGINE")
    locate.add_argument("code", metavar="CODE", help="a symbol (Scheduler.schedule) or a fragment (self.running.pop())")
    locate.add_argument("--release", default="latest", metavar="V", help="the release to search (default: latest)")
    locate.add_argument("--source", default="pypi", metavar="SPEC", help="pypi (default), git:URL_OR_PATH, or dir:PATH")
    locate.add_argument("--limit", type=int, default=50, help="show at most this many places of each kind")
    locate.set_defaults(run=run_locate)

    bisect = commands.add_parser(
        "bisect", help="the commit at which a check flipped, from a git source",
        description="Find the first commit between two releases at which a check changed status, testing only "
                    "commits that touched the check's file. The releases are the last flip the ledger shows, "
                    "or the last flip among the git source's releases, or --between GOOD BAD.")
    bisect.add_argument("id", metavar="ID", help="the entry")
    bisect.add_argument("check", metavar="CHECK", help="the check's id")
    bisect.add_argument("--source", required=True, metavar="git:URL_OR_PATH")
    bisect.add_argument("--between", nargs=2, metavar=("GOOD", "BAD"), help="the two releases to search between")
    bisect.add_argument("--ledger", metavar="PATH", help="the ledger folder (default: ledger/ in the KB)")
    bisect.set_defaults(run=run_bisect)

    trace = commands.add_parser(
        "trace", help="follow a check back through the releases and propose its earlier forms",
        description="For each check of an entry (or one CHECK), walk the engine's releases back from the newest "
                    "where it holds; where it stops holding, look in that release for where the same code went "
                    "(renamed locals as $METAVARIABLES, git's rename detection, the symbol and the fragment "
                    "across the release) and propose the `earlier` form that holds there, with its bounds and the "
                    "lines that show it. --write adds the proposed forms to the entry, leaving the rest of the "
                    "file as it was.")
    trace.add_argument("id", metavar="ENTRY", help="an entry id or file")
    trace.add_argument("check", nargs="?", metavar="CHECK", help="only this check")
    trace.add_argument("--engine", help="only the checks of this engine")
    trace.add_argument("--source", action="append", default=[], metavar="[ENGINE=]SPEC",
                       help="where to read engine code: pypi (default), git:URL_OR_PATH or dir:PATH")
    trace.add_argument("--since", metavar="V",
                       help="walk back to release V (default: the engine's `oldest` in gotchas/engines.yaml)")
    trace.add_argument("--write", action="store_true", help="add the proposed forms to the entry file")
    trace.set_defaults(run=run_trace)

    mutate = commands.add_parser(
        "mutate", help="prove that each check pins its claim, and that no reformat fools it",
        description="For each check that holds at a release (the latest by default), mutate the code it matched "
                    "so that its meaning changes (a literal, an operator, a call, a keyword argument, a statement "
                    "deleted or moved) and run every check of the entry on each mutant: a mutant that no check "
                    "notices survives, and shows what the entry does not pin. Then re-lay the files the checks "
                    "read (ruff format and black at several line lengths, redundant parentheses, trailing commas, "
                    "quotes, comments): a verdict that changes there is a bug of the matcher. Exits 1 when a "
                    "reformat changed a verdict.")
    mutate.add_argument("entries", nargs="*", metavar="ENTRY", help="entry files or ids (default: every entry)")
    mutate.add_argument("--engine", help="only the checks of this engine")
    mutate.add_argument("--source", action="append", default=[], metavar="[ENGINE=]SPEC",
                        help="where to read engine code: pypi (default), git:URL_OR_PATH or dir:PATH")
    mutate.add_argument("--release", default="latest", metavar="V", help="the release (default: latest)")
    mutate.add_argument("--seconds", type=float, default=120.0, metavar="S",
                        help="at most this long per entry and engine (default: 120)")
    mutate.add_argument("--format", choices=("text", "json", "github"), default="text")
    mutate.set_defaults(run=run_mutate)

    site = commands.add_parser(
        "site", help="build the static site from the entries and the ledger",
        description="Render the KB and the ledger into static HTML, JSON, feeds and badges.")
    site.add_argument("--out", default="_site", metavar="DIR", help="the output folder (default: _site; replaced)")
    site.add_argument("--ledger", metavar="PATH", help="the ledger folder (default: ledger/ in the KB)")
    site.add_argument("--base-url", default="/", metavar="URL",
                      help="where the site is published (for feeds, the sitemap and the 404 page; default: /)")
    site.add_argument("--edit-url", metavar="URL",
                      help="base of edit links, e.g. https://github.com/OWNER/REPO/edit/main/ "
                           "(default: from GITHUB_REPOSITORY in GitHub Actions; none elsewhere)")
    site.set_defaults(run=run_site)

    new = commands.add_parser(
        "new", help="scaffold a new entry",
        description="Write gotchas/<id>.md with a valid skeleton. Fields not given as options are asked for "
                    "at the terminal.")
    new.add_argument("--id", help="kebab-case id, also the file name")
    new.add_argument("--title", help="one sentence: what goes wrong")
    new.add_argument("--scheme", help="one of gotchas/schemes.yaml")
    new.add_argument("--engine", dest="engines", action="append", help="an engine (repeatable)")
    new.add_argument("--concept", dest="concepts", action="append", help="a concept (repeatable)")
    new.set_defaults(run=run_new)

    show = commands.add_parser(
        "show", help="an entry's status, ranges and transitions, from the ledger",
        description="An entry's status per engine and release, from the ledger: the ranges of each status, where "
                    "each check holds and in which form, and each transition. --format json gives one record per "
                    "engine and release: {engine, version, status, checks: [{check, verdict, reason, form}]}.")
    show.add_argument("id", metavar="ID")
    show.add_argument("--engine", help="only this engine")
    show.add_argument("--format", choices=("text", "json"), default="text")
    show.add_argument("--ledger", metavar="PATH", help="the ledger folder (default: ledger/ in the KB)")
    show.set_defaults(run=run_show)

    audit = commands.add_parser(
        "audit", help="which gotchas bite a deployment: its engine versions and settings",
        description="List the gotchas that bite a deployment's engine versions, from the knowledge base this "
                    "installation ships (or a checkout, --kb): the engines installed in this environment by "
                    "default, or in another one (--python), pinned in requirements or lock files (-r: "
                    "requirements.txt, pip freeze output, uv.lock, poetry.lock, pylock.toml), or given (--engine). "
                    "A serve command line (--serve) or a start-up log (--serve-log) decides the entries' conditions. "
                    "Exit codes: 0 nothing applies, 1 something applies (see --fail-on), 2 usage, 3 the machinery "
                    "failed (another environment, the KB data).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    audit.add_argument("files", nargs="*", metavar="FILE", help="requirements or lock files, as with -r")
    audit.add_argument("--engine", dest="engines", action="append", default=[], metavar="ENGINE==VERSION",
                       help="audit this engine version (repeatable), e.g. vllm==0.10.0")
    audit.add_argument("--python", metavar="PATH", help="audit the engines installed in another environment, by its "
                                                        "interpreter (it is run to print their versions)")
    audit.add_argument("-r", "--requirements", action="append", default=[], metavar="FILE",
                       help="audit the engines pinned in FILE: requirements or pip freeze output, or a lock file "
                            "named uv.lock, poetry.lock or pylock.toml (repeatable)")
    audit.add_argument("--serve", action="append", default=[], metavar="COMMAND",
                       help="the serve command line, e.g. \"vllm serve MODEL --scheduling-policy priority\" "
                            "(one per engine)")
    audit.add_argument("--serve-log", action="append", default=[], metavar="FILE",
                       help="a server's start-up log: vLLM's 'non-default args: {...}' or SGLang's "
                            "'server_args=ServerArgs(...)' line (one per engine)")
    audit.add_argument("--kb", metavar="DIR", help="read the entries and ledger of this checkout instead of the "
                                                   "knowledge base the installation ships")
    audit.add_argument("--ignore", action="append", default=[], metavar="ID", help="do not report this entry "
                                                                                   "(repeatable)")
    audit.add_argument("--fail-on", choices=("holds", "unverified"), default="holds",
                       help="exit 1 when something bites (holds: 'bites' and 'bites only if', the default), or "
                            "also when an entry is unverified at the release (unverified)")
    audit.add_argument("--format", choices=("text", "json", "markdown", "sarif"), default="text")
    audit.add_argument("--site-url", default="", metavar="URL", help="the published site, for a link to each entry")
    audit.set_defaults(run=run_audit)

    schema = commands.add_parser(
        "schema", help="print the JSON Schema of an entry's front matter",
        description="Print the JSON Schema of front matter, with the KB's vocabularies; "
                    "--write updates gotchas/entry.schema.json.",
    )
    schema.add_argument("--write", action="store_true", help="write gotchas/entry.schema.json instead of printing")
    schema.set_defaults(run=run_schema)
    return parser


def _entry_command(commands, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A command over entries, an engine and sources: what `check` and `verify` share."""
    command = commands.add_parser(name, help=summary, description=description,
                                  epilog=__doc__.split("\n", 2)[2] if __doc__ else None,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("entries", nargs="*", metavar="ENTRY", help="entry files or ids (default: every entry)")
    command.add_argument("--engine", help="only the checks of this engine")
    command.add_argument("--source", action="append", default=[], metavar="[ENGINE=]SPEC",
                         help="where to read engine code: pypi (default), git:URL_OR_PATH or dir:PATH "
                              "(repeat with ENGINE= for several engines)")
    return command


def _kb(args) -> kb_module.KB:
    root = kb_module.find_root()
    if root is None:
        raise UsageError("no knowledge base here: run inside a checkout that has gotchas/engines.yaml")
    return kb_module.load(root)


def _entry_files(kb: kb_module.KB, names: list[str]) -> list[Path]:
    if not names:
        return kb.entry_files()

    def there(path: Path) -> bool:  # a link or a device is there too: the loader refuses it, with its name
        return path.is_symlink() or path.exists() and not path.is_dir()

    files = []
    for name in names:
        path = Path(name)
        if path.suffix == ".md" and there(path):
            files.append(path.absolute())  # not resolve(): the loader must see a link as a link
        elif there(kb.entries_dir / f"{name}.md"):
            files.append(kb.entries_dir / f"{name}.md")
        else:
            raise UsageError(f"no entry {name!r}: give a file or an id from {kb.entries_dir}")
    return files


def _display(kb: kb_module.KB, path: Path) -> str:
    try:
        return path.parent.resolve().joinpath(path.name).relative_to(kb.root.resolve()).as_posix()
    except ValueError:
        return str(path)


SOURCE_KINDS = ("pypi", "git", "dir")


def _make_source(kb: kb_module.KB, engine: str, location: str, progress: Progress | None = None) -> Source:
    """A source from `pypi`, `git:URL_OR_PATH` or `dir:PATH`."""
    kind, _, where = location.partition(":")
    if kind == "pypi" and not where:
        from .sources.pypi import PyPISource

        return PyPISource(kb.engines[engine], progress=progress.download if progress else None)
    if kind == "git" and where:
        from .sources.git import GitSource

        return GitSource(kb.engines[engine], where)
    if kind == "dir" and where:
        if not Path(where).is_dir():
            raise UsageError(f"--source {location}: {where} is not a directory")
        return DirectorySource(engine, where, archive_root=kb.engines[engine].archive_root)
    raise UsageError(f"--source {location}: expected pypi, git:URL_OR_PATH or dir:PATH")


def _source_locations(kb: kb_module.KB, specs: list[str], engine: str | None, engines_needed: set[str],
                      default: str | None = None) -> dict[str, str]:
    """Where each engine is read from (`pypi`, `git:...`, `dir:...`): `--source [ENGINE=]SPEC` options, else
    `default` (when given). The one reading of `--source`."""
    locations: dict[str, str] = {}
    for spec in specs:
        target, sep, location = spec.partition("=")
        if not sep or ":" in target:
            target, location = engine, spec
        if target is None:
            if len(engines_needed) > 1:
                raise UsageError(f"--source {spec}: the checks name several engines "
                                 f"({', '.join(sorted(engines_needed))}); add --engine E, or write --source ENGINE={spec}")
            target = next(iter(engines_needed), None)
            if target is None:
                continue
        if target not in kb.engines:
            raise UsageError(f"--source {spec}: unknown engine {target!r}; engines are: {', '.join(kb.engines)}")
        locations[target] = location
    if default:
        for name in engines_needed - set(locations):
            locations[name] = default
    return locations


def _sources(kb: kb_module.KB, specs: list[str], engine: str | None, engines_needed: set[str],
             default: str | None = None, progress: Progress | None = None) -> dict[str, Source]:
    """The source of each engine, from `--source` options (see `_source_locations`)."""
    return {name: _make_source(kb, name, location, progress)
            for name, location in _source_locations(kb, specs, engine, engines_needed, default).items()}


def _load(kb: kb_module.KB, names: list[str]):
    loaded = [load_entry(path, display=_display(kb, path)) for path in _entry_files(kb, names)]
    diagnostics = [d for item in loaded for d in lint.lint(item, kb)]
    return loaded, diagnostics, [item.entry for item in loaded if item.entry is not None]


def _load_clean(kb: kb_module.KB, names: list[str]):
    """`_load` for the commands that write or run from entries (site, verify, mutate): they do not start while
    lint reports a problem, so that data lint refuses (an id that would leave its folder, a duplicate id, a
    pattern too costly to compile) never reaches a file name, a page or an evaluation."""
    loaded, diagnostics, entries = _load(kb, names)
    if diagnostics:
        for d in diagnostics:
            print(d, file=sys.stderr)
        raise LintRefusal(f"{len(diagnostics)} lint problem(s) above; fix them first (`gotchas check --offline`)")
    return loaded, diagnostics, entries


def _check_engine(kb: kb_module.KB, engine: str | None) -> None:
    if engine and engine not in kb.engines:
        raise UsageError(f"unknown engine {engine!r}; engines are: {', '.join(kb.engines)}")


def _exit_code(diagnostics, results, changed: bool) -> int:
    if diagnostics or changed:
        return EXIT_FINDINGS
    if any(r.verdict.status == ERROR for r in results):
        return EXIT_ERROR
    return EXIT_OK


def run_check(args) -> int:
    kb = _kb(args)
    _check_engine(kb, args.engine)
    names = args.entries
    if args.changed_since:
        from .changes import ChangesError, entries_to_check

        if args.entries:
            raise UsageError("give entries or --changed-since, not both")
        try:
            files = entries_to_check(kb, args.changed_since)
        except ChangesError as exc:
            raise UsageError(str(exc)) from None
        if files == []:
            sys.stdout.write(report.render(args.format, [], [], ["no entry changed"], 0))
            return EXIT_OK
        names = [str(f) for f in files] if files is not None else []
    loaded, diagnostics, entries = _load(kb, names)
    pairs = list(selected_checks(entries, args.engine))
    results, notes = [], []
    if not args.offline:
        engines_needed = {check.engine for _, check in pairs}
        progress = Progress()
        # With no --source, every engine is read from the package index; with some, only those engines.
        sources = _sources(kb, args.source, args.engine, engines_needed,
                           default=None if args.source else "pypi", progress=progress)
        helper = Helper()  # worker processes for evaluating, once there are files enough
        try:
            with Budget(pairs).active():  # a hostile entry spends at most its share of matching time
                _check_engines(sorted(engines_needed), sources, pairs, args, progress, helper, results, notes)
        finally:
            helper.close()
    reports = []
    if args.changed_since and not args.offline and not args.no_mutate and entries and not diagnostics:
        # A pull request: do its checks pin their claims? A surviving mutant is a warning, a reformat that
        # changes a verdict an error (a matcher bug).
        reports = mutate_entries(kb, entries, args.source, args.engine, args.release, args.mutate_seconds)
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


def _check_engines(engines, sources, pairs, args, progress, helper, results, notes) -> None:
    """`gotchas check` against the chosen release of each engine: its results and notes, appended."""
    for engine in engines:
        source = sources.get(engine)
        if source is None:
            notes.append(f"note: {engine} checks not verified: no --source for {engine}")
            continue
        engine_pairs = [p for p in pairs if p[1].engine == engine]
        try:
            release = choose_releases(source.releases(), set(), versions=[args.release])[0]
        except LookupError as exc:
            raise UsageError(f"{engine}: {exc}") from None
        except SourceUnavailable as exc:
            notes.append(f"error: {engine}: cannot list releases: {exc}")
            results.extend(unavailable(engine_pairs, Release(engine, "?"), exc))
            continue
        progress.status(f"{engine} {release.version}: reading {len({c.path for _, c in engine_pairs})} files",
                        force=True)
        results.extend(verify_release(source, release, engine_pairs, relocate=lambda result: True,
                                      helper=helper))
        progress.done()


def run_verify(args) -> int:
    from .run import verify_engines

    kb = _kb(args)
    _check_engine(kb, args.engine)
    loaded, diagnostics, entries = _load_clean(kb, args.entries)
    pairs = list(selected_checks(entries, args.engine))
    engines = [args.engine] if args.engine else sorted({c.engine for _, c in pairs})
    ledger = Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR)
    progress = Progress()
    locations = _source_locations(kb, args.source, args.engine, set(engines), default="pypi")
    sources = {name: _make_source(kb, name, location, progress) for name, location in locations.items()}
    try:
        run = verify_engines(engines, sources, {name: location.partition(":")[0] for name, location in locations.items()},
                             pairs, entries, ledger, oldest={name: kb.engines[name].oldest for name in engines},
                             versions=args.release, since=args.since, new=args.new, prune=not args.entries,
                             wait=args.wait, progress=progress)
    except LookupError as exc:
        raise UsageError(str(exc)) from None
    except LedgerError as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_ERROR
    results = [r for done in run.runs for r in done.results]
    text = report.render_run(args.format, kb, run.runs, run.changes, diagnostics, run.notes, len(loaded), args.site_url,
                             run.problems)
    sys.stdout.write(text)
    if args.report:
        Path(args.report).write_text(report.render_run("markdown", kb, run.runs, run.changes, diagnostics, run.notes,
                                                       len(loaded), args.site_url, run.problems), encoding="utf-8")
    failed_engines = any(n.startswith("error:") for n in run.notes)
    code = _exit_code(diagnostics, results, bool(run.changes) or bool(run.problems))
    return EXIT_ERROR if code == EXIT_OK and failed_engines else code


def _close(*things) -> None:
    """Close the caches and sources of a command."""
    for thing in things:
        thing.close()


def run_show(args) -> int:
    kb = _kb(args)
    _check_engine(kb, args.engine)
    path = _entry_files(kb, [args.id])[0]
    loaded = load_entry(path, display=_display(kb, path))
    if loaded.entry is None:
        for d in loaded.diagnostics:
            print(report.terminal(str(d)))
        return EXIT_FINDINGS
    ledger = Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR)
    try:
        if args.format == "json":
            sys.stdout.write(json.dumps(report.show_records(kb, loaded.entry, ledger, args.engine), indent=2) + "\n")
        else:
            sys.stdout.write(report.show_entry(kb, loaded.entry, ledger, args.engine))
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


def run_locate(args) -> int:
    from . import locate

    kb = _kb(args)
    _check_engine(kb, args.engine)
    progress = Progress()
    source = _make_source(kb, args.engine, args.source, progress)
    try:
        release = choose_releases(source.releases(), set(), versions=[args.release])[0]
        snapshot = source.open(release)
        progress.status(f"{args.engine} {release.version}: reading the Python files", force=True)
        files = locate.read_python_files(snapshot)
        progress.done()
    except LookupError as exc:
        raise UsageError(f"{args.engine}: {exc}") from None
    except SourceUnavailable as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"{kb.engines[args.engine].name} {release.version}: {len(files)} Python files")
    found = 0
    if locate.is_symbol(args.code):
        places = locate.find_symbol(snapshot, args.code, files)
        found += len(places)
        print(f"definitions of {args.code}:" if places else f"no definition of {args.code}")
        for place in places[: args.limit]:
            print(f"  {place}")
    places = locate.find_fragment(snapshot, args.code, files)
    found += len(places)
    print(f"occurrences of {args.code!r}: {len(places)}" if places else f"no occurrence of {args.code!r}")
    for place in places[: args.limit]:
        print(f"  {place}")
    if len(places) > args.limit:
        print(f"  ... and {len(places) - args.limit} more (--limit)")
    return EXIT_OK if found else EXIT_FINDINGS


def run_bisect(args) -> int:
    from . import bisect, history

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
    source = _make_source(kb, check.engine, args.source)
    try:
        transitions = [] if args.between else history.transitions(
            Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR).load(check.engine), loaded.entry.id)
        try:
            flip = bisect.choose_flip(source, check, source.releases(), transitions, args.between)
        except LookupError as exc:
            raise UsageError(f"{exc} in {args.source}") from None
        except bisect.NoForm as exc:
            raise UsageError(str(exc)) from None
        if flip is None:
            print(f"{check.id} has the same status in every release of {args.source}; nothing to bisect")
            return EXIT_FINDINGS
        good, bad, old, new = flip
        if old == new:
            print(f"{check.id} is {old} in both {good.version} and {bad.version}; nothing to bisect")
            return EXIT_FINDINGS
        result = bisect.bisect(source, check, good, bad, old, new)
    except bisect.BisectError as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except SourceUnavailable as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"{loaded.entry.id} / {check.id}: {old} in {good.version}, {new} in {bad.version}")
    print(f"  {result.candidates} commits touched {check.path}; {result.tested} tested")
    if result.commit is None:
        print(f"  no commit between them touching {check.path} has the new status")
        source.close()
        return EXIT_FINDINGS
    engine = kb.engines[check.engine]
    print(f"  first commit where it is {new}: {result.commit} {source.commit_summary(result.commit)}")
    print(f"  {engine.repository.rstrip('/').removesuffix('.git')}/commit/{result.commit}")
    v = result.verdict
    if v.reason:
        print(f"  {v.reason}: {v.message or ''}")
    if v.hint:
        print(f"  hint: {v.hint}")
    source.close()
    return EXIT_OK


def run_trace(args) -> int:
    from . import trace as trace_module
    from .ledger import version_key
    from .rewrite import RewriteError, write_forms

    kb = _kb(args)
    _check_engine(kb, args.engine)
    path = _entry_files(kb, [args.id])[0]
    loaded = load_entry(path, display=_display(kb, path))
    problems = lint.lint(loaded, kb)
    if loaded.entry is None or problems:
        for d in problems:
            print(d)
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
    verdicts, searches = VerdictCache(), SearchCache()
    traces = []
    try:
        for engine in engines:
            source = sources.get(engine)
            if source is None:
                print(f"note: {engine} checks not traced: no --source for {engine}")
                continue
            floor = args.since or kb.engines[engine].oldest or None
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
    except SourceUnavailable as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        _close(verdicts, searches, *sources.values())
    sys.stdout.write(report.trace_text(kb, entry, traces))
    if args.write:
        wrote = 0
        for found, _ in traces:
            if not found.proposals:
                continue
            current = load_entry(path, display=_display(kb, path))  # again: an earlier write moved the lines
            check = next(c for c in current.entry.checks if c.id == found.check.id)
            try:
                write_forms(path, current, check, [p.fields(check) for p in found.proposals])
            except RewriteError as exc:
                print(f"gotchas: {exc}", file=sys.stderr)
                return EXIT_FINDINGS
            wrote += len(found.proposals)
        print(f"wrote {wrote} form{'s' if wrote != 1 else ''} to {_display(kb, path)}" if wrote
              else "nothing to write")
    return EXIT_OK


def run_mutate(args) -> int:
    kb = _kb(args)
    _check_engine(kb, args.engine)
    loaded, diagnostics, entries = _load_clean(kb, args.entries)
    reports = mutate_entries(kb, entries, args.source, args.engine, args.release, args.seconds)
    sys.stdout.write(report.mutate_report(args.format, kb, reports))
    return EXIT_FINDINGS if any(r.neutral_flips for r in reports) else EXIT_OK


def mutate_entries(kb: kb_module.KB, entries, specs, engine: str | None, version: str, seconds: float) -> list:
    """`gotchas mutate` over entries: one report per entry and engine (used by `check --changed-since` too)."""
    from .mutate import default_formatters, mutate_entry

    engines = sorted({c.engine for e in entries for c in e.checks if engine is None or c.engine == engine})
    progress = Progress()
    sources = _sources(kb, specs, engine, set(engines), default="pypi", progress=progress)
    formatters = default_formatters()
    reports = []
    try:
        for name in engines:
            source = sources.get(name)
            if source is None:
                continue
            try:
                release = choose_releases(source.releases(), set(), versions=[version])[0]
                snapshot = source.open(release)
            except LookupError as exc:
                raise UsageError(f"{name}: {exc}") from None
            try:
                for entry in entries:
                    if any(c.engine == name for c in entry.checks):
                        reports.append(mutate_entry(entry, name, snapshot, release, seconds, formatters,
                                                    lambda text: progress.status(f"mutate: {text}")))
            finally:
                snapshot.close()
                progress.done()
    finally:
        _close(*sources.values())
    return reports


def run_site(args) -> int:
    import os
    from urllib.parse import quote

    from . import site
    from .safety import PathError, inside

    kb = _kb(args)
    loaded, diagnostics, entries = _load_clean(kb, [])
    edit = args.edit_url
    if edit is None and os.environ.get("GITHUB_REPOSITORY"):
        server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
        ref = quote(os.environ.get("GITHUB_REF_NAME") or "main", safe="/")  # a branch name may hold '"' or '<'
        edit = f"{server}/{quote(os.environ['GITHUB_REPOSITORY'], safe='/')}/edit/{ref}/"
    out = Path(args.out)
    try:
        data = site.load(kb, entries, Ledger(args.ledger or kb.root / DEFAULT_LEDGER_DIR), args.base_url, edit)
        builder = site.build(data, inside(kb.root, "site/templates"), inside(kb.root, "site/assets"), out)
    except (LedgerError, site.SiteError, PathError) as exc:  # the data, or --out, --base-url: nothing is built
        raise UsageError(str(exc)) from None
    print(f"built {len(builder.pages)} pages and {len(builder.files)} other files into {out}")
    return EXIT_OK


def run_new(args) -> int:
    from . import scaffold

    kb = _kb(args)
    given = {k: getattr(args, k) for k in ("id", "title", "scheme", "engines", "concepts") if getattr(args, k)}
    ask = input if sys.stdin.isatty() else None
    try:
        fields = scaffold.gather(kb, given, ask)
    except scaffold.ScaffoldError as exc:
        raise UsageError(f"{exc} (give it as an option, or run `gotchas new` at a terminal)") from None
    except EOFError:
        raise UsageError("no answer") from None
    path = kb.entries_dir / f"{fields['id']}.md"
    path.write_text(scaffold.skeleton(fields["id"], fields["title"], fields["scheme"], fields["engines"],
                                      fields["concepts"]), encoding="utf-8")
    print(f"wrote {_display(kb, path)}; fill it in, then run `gotchas check {fields['id']}`")
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


def run_audit(args) -> int:
    from . import audit, compiled, deployment

    try:
        if args.kb:
            if kb_module.find_root(args.kb) != Path(args.kb).resolve():
                raise UsageError(f"--kb {args.kb}: not a checkout of the knowledge base (no gotchas/engines.yaml)")
            data = compiled.compile_kb(args.kb)
        else:
            data = compiled.load_packaged()
            if data is None:  # an editable install, or a run from a checkout: its own KB
                root = kb_module.find_root(Path(__file__).resolve().parent.parent)
                if root is None:
                    print("gotchas: this installation ships no compiled knowledge base; give --kb DIR",
                          file=sys.stderr)
                    return EXIT_ERROR
                data = compiled.compile_kb(root)
    except compiled.CompiledKBError as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_ERROR
    packages = {key: engine["package"] for key, engine in data["engines"].items()}
    known = {e["id"] for e in data["entries"]}
    unknown = [i for i in args.ignore if i not in known]
    if unknown:
        raise UsageError(f"--ignore: no entry {', '.join(map(repr, unknown))}")
    notes: list[str] = []
    try:
        settings: dict[str, deployment.Settings] = {}
        given = [deployment.parse_log(path) for path in args.serve_log]
        only = args.engines[0].partition("==")[0].strip().lower() if len(args.engines) == 1 else None
        given += [deployment.parse_serve(line, only if only in packages else None) for line in args.serve]
        for found in given:
            if found.engine in settings:
                raise UsageError(f"{found.origin}: a second set of {found.engine} settings "
                                 f"(after {settings[found.engine].origin}); audit one deployment at a time")
            settings[found.engine] = found
        installed = deployment.from_specs(args.engines, packages)
        if args.python:
            installed += deployment.from_python(args.python, packages)
        for path in [*args.requirements, *args.files]:
            installed += deployment.from_file(path, packages, notes)
        if not (args.engines or args.python or args.requirements or args.files):
            logged = [deployment.Installed(s.engine, s.version, s.origin) for s in given if s.version]
            installed = logged or deployment.from_environment(packages)
    except deployment.DeploymentError as exc:
        raise UsageError(str(exc)) from None
    except deployment.EnvironmentFailed as exc:
        print(f"gotchas: {exc}", file=sys.stderr)
        return EXIT_ERROR
    result = audit.audit(data, installed, settings, set(args.ignore))
    result.notes[:0] = notes
    sys.stdout.write(audit.render(args.format, data, result, args.site_url))
    return EXIT_FINDINGS if audit.failing(result, args.fail_on) else EXIT_OK
