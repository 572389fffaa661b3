"""The first commit between two releases at which a check flipped.

Only commits that touched the check's files can flip it, so those are the
candidates; the search is a binary search over them, assuming the check
flips once between the two releases (if it flips back and forth, the commit
found is one at which it flipped, not necessarily the first). A commit is
not a release: at a commit between two releases, the check's forms that
apply at either release are tried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from .errors import EXIT_ERROR, GotchasError
from .model import ERROR, Check, Form, Release, Verdict, check_verdict
from .reading import FileCache, evaluate


@dataclass(frozen=True)
class BisectResult:
    check: Check
    good: Release  # the release where the check had its old status
    bad: Release  # the release where it had the new one
    old: str
    new: str
    commit: str | None  # the first commit with the new status; None when no commit between them touched the file
    verdict: Verdict | None  # the check's verdict at that commit
    tested: int  # commits evaluated
    candidates: int  # commits that touched the file


class BisectError(GotchasError, exit_code=EXIT_ERROR):
    pass


@dataclass(frozen=True)
class Bisected:
    """What `gotchas bisect` found: the releases it bisected between and the check's status at each (`flip`;
    None when the check has one status in every release), the search (`result`; None when there was nothing to
    bisect), and the summary line of the commit found."""

    flip: tuple[Release, Release, str, str] | None
    result: BisectResult | None = None
    summary: str | None = None


def bisect_source(source, check: Check, transitions: list, between: list[str] | None = None) -> Bisected:
    """`gotchas bisect` over a git source: the flip to bisect (`choose_flip`), then the first commit with the new
    status (`bisect`). The source is this function's: it is closed however this ends (LookupError and NoForm
    from `choose_flip`, BisectError, SourceUnavailable)."""
    with source:
        flip = choose_flip(source, check, source.releases(), transitions, between)
        if flip is None or flip[2] == flip[3]:
            return Bisected(flip)
        result = bisect(source, check, *flip)
        return Bisected(flip, result, source.commit_summary(result.commit) if result.commit else None)


def find_flip(source, check: Check, releases: list[Release], cache: FileCache | None = None):
    """The last pair of consecutive releases where the check's status differs (errors skipped)."""
    cache = cache or FileCache()
    previous = None
    flip = None
    for release in releases:
        forms = check.forms_at(release.version)
        if not forms:
            continue
        with source.open(release) as snapshot:
            verdict = status(forms, snapshot, cache)
        if verdict.status == ERROR:
            continue
        if previous is not None and previous[1] != verdict.status:
            flip = (previous[0], release, previous[1], verdict.status)
        previous = (release, verdict.status)
    return flip


def choose_flip(source, check: Check, releases: list[Release], transitions: list, between: list[str] | None = None):
    """(good, bad, old status, new status) to bisect: the two releases `between` names, else the check's last
    transition in the ledger (`transitions`, history.transitions of its entry) when both its releases are
    still there, else the last flip found by evaluating every release; None when the check never flips.

    Raises LookupError for a release of `between` that the source does not have, and NoForm when the check
    has no form that applies at one of them."""
    from .reading import evaluate_check

    by_version = {r.version: r for r in releases}
    if between:
        missing = [v for v in between if v not in by_version]
        if missing:
            raise LookupError(f"no release {', '.join(missing)}")
        good, bad = (by_version[v] for v in between)
        with source.open(good) as a, source.open(bad) as b:
            found = [evaluate_check(check, a), evaluate_check(check, b)]
        if None in found:
            raise NoForm(f"{check.id} has no form that applies in {good.version if found[0] is None else bad.version}")
        first, second = cast("list[tuple[int, Verdict]]", found)  # none is None (above)
        return good, bad, first[1].status, second[1].status
    flips = [t for t in transitions if t.check == check.id]
    if flips and flips[-1].before_version in by_version and flips[-1].after_version in by_version:
        t = flips[-1]
        return by_version[t.before_version], by_version[t.after_version], t.before.verdict, t.after.verdict
    return find_flip(source, check, releases)


class NoForm(Exception):
    """The check has no form that applies at a release it is asked about."""


def bisect(source, check: Check, good: Release, bad: Release, old: str, new: str) -> BisectResult:
    """Binary search over the commits after `good` up to `bad` that touched the check's file."""
    with source.open(good) as start, source.open(bad) as end:
        good_commit, bad_commit = start.commit, end.commit
    forms = tuple(f for f in check.forms if f.applies(good.version) or f.applies(bad.version)) or check.forms
    commits = source.commits_touching(sorted({f.path for f in forms}), good_commit, bad_commit)
    cache = FileCache()
    low, high = 0, len(commits) - 1  # the answer is in commits[low..high], if anywhere
    found: tuple[str, Verdict] | None = None
    tested = 0
    while low <= high:
        middle = (low + high) // 2
        with source.open_commit(commits[middle]) as snapshot:
            verdict = status(forms, snapshot, cache)
        tested += 1
        if verdict.status == ERROR:
            raise BisectError(f"commit {commits[middle][:12]}: {verdict.reason}: {verdict.message}")
        if verdict.status == new:
            found = (commits[middle], verdict)
            high = middle - 1
        else:
            low = middle + 1
    return BisectResult(check, good, bad, old, new, found[0] if found else None, found[1] if found else None,
                        tested, len(commits))


def status(forms: tuple[Form, ...], snapshot, cache: FileCache) -> Verdict:
    """The check's verdict from these of its forms (docs/format.md's rule for several forms)."""
    # at least one form: a verdict
    return cast("tuple[int, Verdict]", check_verdict((f.index, evaluate(f, snapshot, cache)) for f in forms))[1]
