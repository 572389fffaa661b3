"""The `gotchas` command: parse arguments, call the library, print, exit (the exit codes: `_common.EXIT_CODES`).

An error a command ends with is a `verifier.errors.GotchasError`, caught here once: `gotchas: <message>` on
stderr (through the terminal escaper: a message names files and lines from data), and its `exit_code`."""

from __future__ import annotations

import argparse
import sys

from .. import __version__, report
from ..errors import GotchasError
from ..follow import KINDS
from ._common import EXIT_OK, LintRefusal, UsageError, exit_codes_text
from ._explore import run_bisect, run_locate, run_show, run_trace
from ._follow import run_follow
from ._publish import run_audit, run_new, run_schema, run_site
from ._surface import run_diff, run_surface
from ._verify import mutate_entries, run_check, run_mutate, run_verify

__all__ = ["main", "build_parser", "mutate_entries", "UsageError", "LintRefusal"]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return report.printable(args.run, args)
    except GotchasError as exc:
        print(report.terminal(f"gotchas: {exc.message}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gotchas: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gotchas",
        description="Verify a knowledge base of LLM serving-engine gotchas against the engines' source code.",
        epilog=exit_codes_text(),
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
    check.add_argument("--release", default="latest", metavar="V",
                       help="the release to verify against (default: latest)")
    check.add_argument("--mutate-seconds", type=float, default=60.0, metavar="S",
                       help="with --changed-since: how long `mutate` may take per changed entry (default: 60)")
    check.add_argument("--no-mutate", action="store_true",
                       help="with --changed-since: do not run `mutate` on the changed entries")
    check.add_argument("--format", choices=report.choices("check"), default="text")
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
    verify.add_argument("--format", choices=report.choices("verify"), default="text")
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

    follow = commands.add_parser(
        "follow", help="propose the new form of every check a release broke, and write those that keep the claim",
        description="For each check that holds at the release before and is missing or changed at the release, "
                    "look for the form its claim takes there: the same code at another place (a move), or new "
                    "code at the same place or one of those (a text change), aligned with the code that held "
                    "before, with the old and new lines side by side. A text change that drops a number, a "
                    "string, an operator or a keyword of the old code, or lets through a mutant that caught the "
                    "old form, is listed for review and never written. --write makes each proposal that keeps "
                    "the claim (of --kinds) the check's form, moves the old form into `earlier` with `until` "
                    "the release where it held, and re-verifies the entries at the ledger's releases.")
    follow.add_argument("entries", nargs="*", metavar="ENTRY", help="entry ids or files (default: all)")
    follow.add_argument("--engine", help="only the checks of this engine")
    which = follow.add_mutually_exclusive_group()
    which.add_argument("--release", action="append", metavar="V",
                       help="the release the checks broke at (repeatable; default: the newest)")
    which.add_argument("--new", action="store_true", help="every release newer than the ledger's newest")
    follow.add_argument("--write", action="store_true", help="write the proposals that keep the claim")
    follow.add_argument("--kinds", default=",".join(KINDS), metavar="KINDS",
                        help="with --write: the kinds to write, of move,text (default: both; the nightly "
                             "workflow writes moves only)")
    follow.add_argument("--no-mutants", action="store_true",
                        help="do not run the old form's meaning mutants on text proposals (none is then written)")
    follow.add_argument("--report", metavar="FILE", help="also write the proposals as Markdown (the pull "
                                                            "request's body)")
    follow.add_argument("--source", action="append", default=[], metavar="[ENGINE=]SPEC",
                        help="where to read engine code: pypi (default), git:URL_OR_PATH or dir:PATH")
    follow.add_argument("--ledger", metavar="PATH", help="the ledger folder (default: ledger/ in the KB)")
    follow.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="with --write: wait this long for another run's lock on the ledger")
    follow.set_defaults(run=run_follow)

    mutate = commands.add_parser(
        "mutate", help="prove that each check pins its claim, and that no reformat fools it",
        description="For each check that holds at a release (the latest by default), mutate the code it matched "
                    "so that its meaning changes (a literal, an operator, a call, a keyword argument, a statement "
                    "deleted or moved) and run every check of the entry on each mutant: a mutant that no check "
                    "notices survives, and shows what the entry does not pin. Then re-lay the files the checks "
                    "read (Python: ruff format and black at several line lengths, redundant parentheses, "
                    "trailing commas, quotes, comments; C and C++: clang-format in several styles, layout only, "
                    "comments, redundant parentheses, trailing commas): a verdict that changes there is a bug of "
                    "the matcher. Exits 1 when a reformat changed a verdict.")
    mutate.add_argument("entries", nargs="*", metavar="ENTRY", help="entry files or ids (default: every entry)")
    mutate.add_argument("--engine", help="only the checks of this engine")
    mutate.add_argument("--source", action="append", default=[], metavar="[ENGINE=]SPEC",
                        help="where to read engine code: pypi (default), git:URL_OR_PATH or dir:PATH")
    mutate.add_argument("--release", default="latest", metavar="V", help="the release (default: latest)")
    mutate.add_argument("--seconds", type=float, default=120.0, metavar="S",
                        help="at most this long per entry and engine (default: 120)")
    mutate.add_argument("--format", choices=report.choices("mutate"), default="text")
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
    new.add_argument("--severity", help="one of gotchas/severities.yaml: the worst the gotcha does")
    new.add_argument("--engine", dest="engines", action="append", help="an engine (repeatable)")
    new.add_argument("--concept", dest="concepts", action="append", help="a concept (repeatable)")
    new.set_defaults(run=run_new)

    show = commands.add_parser(
        "show", help="an entry's status, ranges and transitions, from the ledger",
        description="An entry's status per engine and release, from the ledger: the ranges of each status, where "
                    "each check holds and in which form, and each transition. --format json gives one record per "
                    "engine and release: {engine, version, status, parts, title, checks: [{check, verdict, "
                    "reason, form, values}]}. --release V prints the entry as it reads at that release: its "
                    "status, the parts that hold, the title and sections with that release's values and "
                    "bounded text, and each check's verdict there.")
    show.add_argument("id", metavar="ID")
    show.add_argument("--engine", help="only this engine")
    show.add_argument("--release", metavar="V", help="the entry as it reads at this release")
    show.add_argument("--format", choices=report.choices("show"), default="text")
    show.add_argument("--ledger", metavar="PATH", help="the ledger folder (default: ledger/ in the KB)")
    show.set_defaults(run=run_show)

    audit = commands.add_parser(
        "audit", help="which gotchas bite a deployment: its engine versions and settings",
        description="List the gotchas that bite a deployment's engine versions, from the knowledge base this "
                    "installation ships (or a checkout, --kb): the engines installed in this environment by "
                    "default, or in another one (--python), declared in the deployment's files or folder (PATH), "
                    "pinned in requirements or lock files (-r: requirements.txt, pip freeze output, uv.lock, "
                    "poetry.lock, pylock.toml), or given (--engine). A version range is audited at every tracked "
                    "release in it. "
                    "A serve command line (--serve) or a start-up log (--serve-log) decides the entries' conditions. "
                    "Findings are ranked by group, then severity (gotchas/severities.yaml), the worst first; each "
                    "says the release that fixes it, and each pinned version what upgrading to the newest tracked "
                    "release clears and brings. "
                    "Exit codes: 0 nothing applies, 1 something applies (see --fail-on), 2 usage or a file that "
                    "cannot be read, 3 the machinery failed (another environment, the KB data), 4 nothing was "
                    "audited (no engine version found, or none at a tracked release).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    audit.add_argument("files", nargs="*", metavar="PATH",
                       help="files or folders where the deployment declares the engine: requirements and constraint "
                            "files, lock files, pyproject.toml, setup.cfg, setup.py, Dockerfiles, docker-compose "
                            "files, Kubernetes/KServe manifests and Helm values, shell scripts, start-up logs, "
                            "collect_env or pip list pastes; a folder is searched for them")
    audit.add_argument("--engine", dest="engines", action="append", default=[], metavar="ENGINE==VERSION",
                       help="audit this engine version (repeatable), e.g. vllm==0.10.0; a llama.cpp build by its "
                            "number (llama-cpp==b4763, or b4763-f777a73e with its commit) is audited as the release "
                            "its commit or recorded build number stands for")
    audit.add_argument("--python", metavar="PATH", help="audit the engines installed in another environment, by its "
                                                        "interpreter (it is run to print their versions)")
    audit.add_argument("-r", "--requirements", action="append", default=[], metavar="FILE",
                       help="audit the engines pinned in FILE: requirements or pip freeze output, or a lock file "
                            "named uv.lock, poetry.lock or pylock.toml (repeatable)")
    audit.add_argument("--serve", action="append", default=[], metavar="COMMAND",
                       help="the serve command line, e.g. \"vllm serve MODEL --scheduling-policy priority\" or "
                            "\"llama-server -m model.gguf -c 8192 --parallel 4\" (one per engine)")
    audit.add_argument("--serve-log", action="append", default=[], metavar="FILE",
                       help="a server's start-up log: vLLM's 'non-default args: {...}' or SGLang's "
                            "'server_args=ServerArgs(...)' line, or llama.cpp's 'build: N (commit)' line, which "
                            "gives its build and no flags (one per engine)")
    audit.add_argument("--kb", metavar="DIR", help="read the entries and ledger of this checkout instead of the "
                                                   "knowledge base the installation ships")
    audit.add_argument("--ignore", action="append", default=[], metavar="ID", help="do not report this entry "
                                                                                   "(repeatable)")
    audit.add_argument("--fail-on", choices=("bites", "holds", "unverified"), default="holds",
                       help="exit 1 when something bites (holds: 'bites' and 'bites only if', the default), only "
                            "when the deployment's settings make it bite (bites), or also when an entry is "
                            "unverified at the release (unverified)")
    audit.add_argument("--nothing-ok", action="store_true",
                       help="exit 0, not 4, when no engine version is found (for hooks that see only some files)")
    audit.add_argument("--format", choices=report.choices("audit"), default="text")
    audit.add_argument("--site-url", default="", metavar="URL", help="the published site, for a link to each entry")
    audit.set_defaults(run=run_audit)

    surface = commands.add_parser(
        "surface", help="a release's flags, environment variables, metrics and request fields, with defaults",
        description="The release surface of one engine release, read statically from its code: command-line "
                    "flags (with defaults, spellings and choices), environment variables (with the defaults the "
                    "code reads them with), Prometheus metrics and OpenAI request fields, each with the file and "
                    "line that define it. A default the engine derives at run time is 'computed: EXPR'. From the "
                    "ledger's surface file (written by `gotchas verify`); a release not in it is read from "
                    "--source (default: the package index) and not recorded.")
    _surface_options(surface)
    surface.add_argument("version", metavar="VERSION", help="the release ('latest': the newest recorded)")
    surface.set_defaults(run=run_surface)

    diff_command = commands.add_parser(
        "diff", help="what changes between two releases: flags, variables, metrics, request fields, entries",
        description="What changes from release FROM to release TO of an engine: flags, environment variables, "
                    "metrics and request fields added, removed, renamed (one spells the other, the same config "
                    "field, or the same help) and changed (default, choices, spellings, deprecation), each with "
                    "its file and line on both sides; then the entries that start or stop biting, with the checks "
                    "whose verdict differs and their lines.")
    _surface_options(diff_command)
    diff_command.add_argument("--name", action="append", default=[], metavar="NAME",
                              help="also show this flag, variable, metric or request field at both releases, "
                                   "changed or not (repeatable)")
    diff_command.add_argument("older", metavar="FROM")
    diff_command.add_argument("newer", metavar="TO")
    diff_command.set_defaults(run=run_diff)

    schema = commands.add_parser(
        "schema", help="print the JSON Schema of an entry's front matter",
        description="Print the JSON Schema of front matter, with the KB's vocabularies; "
                    "--write updates gotchas/entry.schema.json.",
    )
    schema.add_argument("--write", action="store_true", help="write gotchas/entry.schema.json instead of printing")
    schema.set_defaults(run=run_schema)
    return parser


def _surface_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("engine", metavar="ENGINE")
    command.add_argument("--kind", action="append", default=[], metavar="KIND",
                         help="only these kinds: flags, env, metrics, requests (repeatable, or comma-separated)")
    command.add_argument("--format", choices=report.choices(command.prog.rsplit(" ", 1)[-1]),  # surface, diff
                         default="text")
    command.add_argument("--ledger", metavar="PATH", help="the ledger folder (default: ledger/ in the KB)")
    command.add_argument("--source", default="", metavar="SPEC",
                         help="read releases from here instead of the ledger's surface file: pypi, git:URL_OR_PATH "
                              "or dir:PATH")


def _entry_command(commands, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A command over entries, an engine and sources: what `check` and `verify` share."""
    command = commands.add_parser(name, help=summary, description=description,
                                  epilog=exit_codes_text(),
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("entries", nargs="*", metavar="ENTRY", help="entry files or ids (default: every entry)")
    command.add_argument("--engine", help="only the checks of this engine")
    command.add_argument("--source", action="append", default=[], metavar="[ENGINE=]SPEC",
                         help="where to read engine code: pypi (default), git:URL_OR_PATH or dir:PATH "
                              "(repeat with ENGINE= for several engines)")
    return command
