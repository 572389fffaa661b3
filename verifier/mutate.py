"""`gotchas mutate`: does each check pin its whole claim, and does no reformat fool it?

For every check that holds at a release, the code it matched is mutated in ways
that change its meaning (the literal changed, the comparison negated, the call
renamed, a keyword argument dropped, the statement deleted, two statements
swapped...), and every check of the entry is run on each mutant: a mutant that no
check notices *survives*, and says what the entry does not pin. The files the
checks read are also mutated in ways that change nothing (re-laid by ruff format
and black at several line lengths, redundant parentheses, trailing commas, the
other quotes, comments between statements): a verdict that changes on one of
those is a bug of the matcher, never of the entry.

This module runs the entry's checks on the mutants and says what changed; the
mutants themselves are made in `verifier.mutants` (from tree-sitter's tree of the
file, as text edits; a mutant that does not parse as well as the original is
dropped), and their names are importable from here too; those of C and C++ files
in `verifier.mutants_cpp` (from tree-sitter-cpp's tree, re-laid by clang-format
when it is installed). Other files are not mutated. Time is bounded per entry
(`seconds`): what is not reached is said.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import mutants_cpp
from .matchers import REGISTRY
from .model import HOLDS, Check, Entry, Release, Verdict, language_of
from .mutants import MAX_MEANING, MEANING, NEUTRAL, Mutant, default_formatters, meaning_mutants, neutral_mutants
from .reading import FileCache, evaluate_check
from .sources import Snapshot, SourceUnavailable

if TYPE_CHECKING:
    from .model import Form

__all__ = ["MAX_MEANING", "MEANING", "NEUTRAL", "EntryReport", "Mutant", "Outcome", "default_formatters",
           "meaning_mutants", "mutate_entry", "neutral_mutants"]


@dataclass
class Outcome:
    """One mutant, and what the entry's checks said about it."""

    mutant: Mutant
    check: str  # the check whose code it was made from (meaning), or "" (neutral: the whole file)
    before: dict[str, str]  # check id -> verdict on the original
    after: dict[str, str]  # check id -> verdict on the mutant

    @property
    def changed(self) -> list[str]:
        """The checks that held on the original and do not on the mutant."""
        return [c for c, v in self.before.items() if v == HOLDS and self.after.get(c) != HOLDS]

    @property
    def caught(self) -> bool:
        return bool(self.changed)

    def diff(self, original: str) -> str:
        lines = difflib.unified_diff(original.splitlines(), self.mutant.text.splitlines(), self.mutant.path,
                                     self.mutant.path, n=0, lineterm="")
        return "\n".join(list(lines)[2:12])

    def to_json(self, entry: str, engine: str, version: str) -> dict:
        return {"entry": entry, "engine": engine, "version": version, "check": self.check,
                "mutant": self.mutant.id, "kind": self.mutant.kind, "description": self.mutant.description,
                "path": self.mutant.path, "line": self.mutant.line,
                "verdict_before": self.before.get(self.check) if self.check else None,
                "verdict_after": self.after.get(self.check) if self.check else None,
                "changed_checks": self.changed, "caught": self.caught}


@dataclass
class EntryReport:
    entry: Entry
    engine: str
    release: Release
    outcomes: list[Outcome] = field(default_factory=list)
    originals: dict[str, str] = field(default_factory=dict)  # path -> original text
    holding: list[str] = field(default_factory=list)  # checks that held at the release
    #: Checks whose form that held compares code as written (a fragment that is not Python, a regex): a
    #: reformat may break them by design; the remedy is to write them as Python.
    as_written: set[str] = field(default_factory=set)
    not_holding: dict[str, str] = field(default_factory=dict)  # check -> its verdict (not mutated)
    notes: list[str] = field(default_factory=list)

    def meaning(self, check: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.mutant.kind == MEANING and o.check == check]

    @property
    def neutral_flips(self) -> list[Outcome]:
        """Rewrites that change nothing and changed the verdict of a check that compares code by structure:
        a bug of the matcher."""
        return [o for o in self.outcomes if o.mutant.kind == NEUTRAL and set(o.changed) - self.as_written]

    @property
    def layout_bound(self) -> list[Outcome]:
        """Rewrites that changed the verdict only of checks that compare code as written: a check to rewrite."""
        return [o for o in self.outcomes if o.mutant.kind == NEUTRAL and o.caught
                and not set(o.changed) - self.as_written]

    @property
    def survivors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.mutant.kind == MEANING and not o.caught]


class _Overlay(Snapshot):
    """A snapshot with one file replaced (nothing else of the snapshot's: its other operations are the defaults)."""

    def __init__(self, snapshot: Snapshot, path: str, text: str) -> None:
        self.snapshot, self.path, self.data = snapshot, path, text.encode("utf-8")
        self.release = snapshot.release

    def read(self, path: str) -> bytes | None:
        return self.data if path == self.path else self.snapshot.read(path)


def mutate_entry(entry: Entry, engine: str, snapshot: Snapshot, release: Release, seconds: float = 120.0,
                 formatters: dict[str, list[str]] | None = None,
                 progress: Callable[[str], None] | None = None,
                 cpp_formatters: dict[str, list[str]] | None = None) -> EntryReport:
    """Mutants of the code the entry's checks of `engine` matched at `release`, and of the files they read.

    `formatters` re-lay Python files (`mutants.default_formatters` by default), `cpp_formatters` C and C++ files
    (`mutants_cpp.default_formatters`: clang-format's styles), which are also re-laid in the engine's own
    `.clang-format` when the release has one."""
    report = EntryReport(entry, engine, release)
    checks = [c for c in entry.checks if c.engine == engine and c.forms_at(release.version)]
    deadline = time.monotonic() + seconds
    before = _verdicts(checks, snapshot, release.version)
    report.holding = [c for c, v in before.items() if v[1].status == HOLDS]
    for check in checks:
        if check.id in report.holding:
            form = check.forms[before[check.id][0]]
            if not _structural(form):
                report.as_written.add(check.id)
    report.not_holding = {c: v[1].status for c, v in before.items() if v[1].status != HOLDS}
    plain = {c: v[1].status for c, v in before.items()}

    def run(mutant: Mutant, check: str) -> None:
        # Only the checks that read the mutated file can see it: the others keep their verdicts.
        readers = [c for c in checks if any(f.path == mutant.path for f in c.forms_at(release.version))]
        overlay = _Overlay(snapshot, mutant.path, mutant.text)
        after = dict(plain)
        after.update({c: v[1].status for c, v in _verdicts(readers, overlay, release.version).items()})
        report.outcomes.append(Outcome(mutant, check, plain, after))

    def mutants():
        """(mutant, the check whose code it changes, or "" for a neutral one), meaning mutants first."""
        for check in checks:
            if check.id not in report.holding:
                continue
            index, verdict = before[check.id]
            form = check.forms[index]
            path = verdict.path or form.path
            text = _text(snapshot, path, report)
            if text is not None and language_of(path) in ("python", "cpp"):
                yield from ((m, check.id) for m in meaning_mutants(form, verdict, text))
        for path in sorted({(before[c][1].path or "") for c in report.holding} - {""}):
            text = _text(snapshot, path, report)
            if text is None:
                continue
            if language_of(path) == "python":
                yield from ((m, "") for m in neutral_mutants(path, text, formatters))
            elif language_of(path) == "cpp":
                yield from ((m, "") for m in _cpp_neutral(snapshot, path, text, cpp_formatters, report))

    for mutant, check_id in mutants():
        if time.monotonic() > deadline:
            report.notes.append(f"time bound ({seconds:.0f} s) reached: not every mutant was run")
            break
        if progress:
            progress(f"{entry.id} {check_id or mutant.path}: {mutant.description}")
        run(mutant, check_id)
    return report


def _cpp_neutral(snapshot: Snapshot, path: str, text: str, formatters: dict[str, list[str]] | None,
                 report: EntryReport):
    """`mutants_cpp.neutral_mutants` of a C or C++ file, in the engine's own style too (the `.clang-format`
    nearest the file, as clang-format finds it); the report says when clang-format is missing."""
    if mutants_cpp.clang_format() is None and mutants_cpp.CLANG_FORMAT_MISSING not in report.notes:
        report.notes.append(mutants_cpp.CLANG_FORMAT_MISSING)
    return mutants_cpp.neutral_mutants(path, text, formatters, _style_file(snapshot, path))


def _style_file(snapshot: Snapshot, path: str) -> str | None:
    """The text of the `.clang-format` in the folder of `path` or the nearest above it, in the release."""
    parts = path.split("/")[:-1]
    for depth in range(len(parts), -1, -1):
        try:
            data = snapshot.read("/".join([*parts[:depth], ".clang-format"]))
        except SourceUnavailable:
            data = None
        if data is not None:
            return data.decode("utf-8", "replace")
    return None


def _structural(form: Form) -> bool:
    """Whether a form compares what code says (its fragments parse as Python; any fragment of a C or C++ file,
    compared token by token), not how it is laid out."""
    from .code import fragment

    matcher = REGISTRY.get(form.matcher)
    if matcher is None or matcher.validate is not None:  # a regex or a query reads the text as it is
        return matcher is not None and form.matcher == "query"
    if language_of(form.path) == "cpp":
        return True
    if matcher.code and not fragment(form.pattern).structural:
        return False
    return form.after is None or fragment(form.after).structural


def _verdicts(checks: list[Check], snapshot: Snapshot, version: str) -> dict[str, tuple[int, Verdict]]:
    files = FileCache()
    found = {}
    for check in checks:
        result = evaluate_check(check, snapshot, version, files)
        if result is not None:
            found[check.id] = result
    return found


def _text(snapshot: Snapshot, path: str, report: EntryReport) -> str | None:
    if path in report.originals:
        return report.originals[path]
    try:
        data = snapshot.read(path)
    except SourceUnavailable:
        return None
    if data is None:
        return None
    report.originals[path] = text = data.decode("utf-8", "replace")
    return text
