"""Entries × releases: open each release once and evaluate every selected check against it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .evaluate import FileCache, evaluate
from .model import ERROR, CheckResult, Entry, Release, Verdict
from .sources import Source, SourceUnavailable


def selected_checks(entries: Iterable[Entry], engine: str | None = None):
    """(entry, check) pairs, optionally of one engine only."""
    for entry in entries:
        for check in entry.checks:
            if engine is None or check.engine == engine:
                yield entry, check


def verify_release(source: Source, release: Release, pairs: list, cache: FileCache | None = None,
                   progress: Callable[[int], None] | None = None, verdicts=None) -> list[CheckResult]:
    """Every (entry, check) of the source's engine against one release."""
    cache = cache or FileCache()
    try:
        snapshot = source.open(release)
    except SourceUnavailable as exc:
        return [CheckResult(e.id, c, release, Verdict(ERROR, "unavailable", path=c.path, message=str(exc)), e.file)
                for e, c in pairs]
    prefetch = getattr(snapshot, "prefetch", None)
    if prefetch is not None:
        try:
            prefetch(sorted({check.path for _, check in pairs}))
        except SourceUnavailable as exc:
            return [CheckResult(e.id, c, release, Verdict(ERROR, "unavailable", path=c.path, message=str(exc)), e.file)
                    for e, c in pairs]
    results = []
    try:
        for entry, check in pairs:
            results.append(CheckResult(entry.id, check, release, evaluate(check, snapshot, cache, verdicts),
                                       entry.file))
            if progress:
                progress(1)
    finally:
        close = getattr(snapshot, "close", None)
        if close is not None:
            close()
    return results
