"""What the commands share: finding the KB and its entries, reading `--source`, loading and linting entries,
the exit codes (what each means) and the command line's own errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from .. import kb as kb_module
from .. import lint
from ..entries import load_entry
from ..errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, GotchasError
from ..model import ERROR, CheckResult, Diagnostic
from ..progress import Progress
from ..sources import Source
from ..sources.directory import DirectorySource

#: `audit` found no engine version to audit (at a tracked release): not a pass (pip-audit and osv-scanner do so).
EXIT_NOTHING_AUDITED = 4

#: What each exit code means (0-3: verifier.errors, which every GotchasError's `exit_code` is one of): the
#: commands' `--help` and docs/format.md are written from this table.
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "all good: lint clean, and every verified check holds; for audit, no gotcha applies",
    EXIT_FINDINGS: "something for an author to fix: a lint problem, a check that is changed or missing; for verify, "
                   "an entry that changed status in a newly verified release, or a release that contradicts an "
                   "entry's introduced/fixed; for audit, a gotcha that applies (see --fail-on)",
    EXIT_USAGE: "usage: bad arguments, no KB found, the KB's own data is malformed, a file that cannot be read",
    EXIT_ERROR: "the machinery failed (a source could not be read) and nothing else is wrong",
    EXIT_NOTHING_AUDITED: "audit only: nothing was audited (no engine version found, or none at a tracked "
                          "release), which is not a pass",
}


def exit_codes_text() -> str:
    """The exit codes as the commands' `--help` prints them."""
    import textwrap

    lines = ["Exit codes (every command):"]
    for code, meaning in EXIT_CODES.items():
        lines += textwrap.wrap(meaning, 100, initial_indent=f"  {code}  ", subsequent_indent="     ")
    return "\n".join(lines)


class UsageError(GotchasError, exit_code=EXIT_USAGE):
    """Bad arguments, or no KB here (exit 2)."""


class LintRefusal(GotchasError, exit_code=EXIT_FINDINGS):
    """A command that writes or runs from entries refused to start: lint reported problems (exit 1, like any
    lint problem: something for an author to fix, not a usage error)."""


def _kb(args: argparse.Namespace) -> kb_module.KB:
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
        from ..sources.pypi import PyPISource

        return PyPISource(kb.engines[engine], progress=progress.download if progress else None)
    if kind == "git" and where:
        from ..sources.git import GitSource

        return GitSource(kb.engines[engine], where)
    if kind == "dir" and where:
        if not Path(where).is_dir():
            raise UsageError(f"--source {location}: {where} is not a directory")
        return DirectorySource(engine, where, archive_root=kb.engines[engine].archive_root,
                               vendored_at=kb.engines[engine].vendored_at)
    raise UsageError(f"--source {location}: expected pypi, git:URL_OR_PATH or dir:PATH")


def _source_locations(kb: kb_module.KB, specs: list[str], engine: str | None, engines_needed: set[str],
                      default: str | None = None) -> dict[str, str]:
    """Where each engine is read from (`pypi`, `git:...`, `dir:...`): `--source [ENGINE=]SPEC` options, else
    `default` (when given). The one reading of `--source`."""
    locations: dict[str, str] = {}
    target: str | None  # the engine a spec names, if any
    for spec in specs:
        target, sep, location = spec.partition("=")
        if not sep or ":" in target:
            target, location = engine, spec
        if target is None:
            if len(engines_needed) > 1:
                raise UsageError(f"--source {spec}: the checks name several engines "
                                 f"({', '.join(sorted(engines_needed))}); add --engine E, or write "
                                 f"--source ENGINE={spec}")
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
    return _make_sources(kb, _source_locations(kb, specs, engine, engines_needed, default), progress)


def _make_sources(kb: kb_module.KB, locations: dict[str, str], progress: Progress | None = None) -> dict[str, Source]:
    """A source for each engine of `locations` (engine -> `pypi`, `git:...` or `dir:...`)."""
    return {name: _make_source(kb, name, location, progress) for name, location in locations.items()}


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


def _exit_code(diagnostics: Sequence[Diagnostic], results: Iterable[CheckResult], changed: bool) -> int:
    if diagnostics or changed:
        return EXIT_FINDINGS
    if any(r.verdict.status == ERROR for r in results):
        return EXIT_ERROR
    return EXIT_OK


def _close(*things) -> None:
    """Close the caches and sources of a command."""
    for thing in things:
        thing.close()
