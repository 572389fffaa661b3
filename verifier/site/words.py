"""Statuses, verdicts and reasons in a reader's words: the badges, and the legend they link to."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import CHANGED, ERROR, HOLDS, MISSING, NOT_AFFECTED, UNVERIFIED

#: Entry statuses and check verdicts, in words and icons (never colour alone).
STATUS_WORDS = {NOT_AFFECTED: "not affected", HOLDS: "holds", CHANGED: "changed", UNVERIFIED: "unverified",
                MISSING: "missing", ERROR: "error", None: "not verified"}
STATUS_ICONS = {NOT_AFFECTED: "○", HOLDS: "✓", CHANGED: "✗", UNVERIFIED: "?", MISSING: "?", ERROR: "!", None: "–"}


_ICONS_BY_WORD = {STATUS_WORDS[k]: icon for k, icon in STATUS_ICONS.items()}


def word(status: str | None) -> str:
    return STATUS_WORDS.get(status, str(status))


def css(status: str | None) -> str:
    """The class suffix of a status: its word with hyphens."""
    return word(status).replace(" ", "-")


@dataclass(frozen=True)
class Term:
    anchor: str
    name: str
    kind: str  # what it applies to, in words
    meaning: str
    action: str = ""

    @property
    def icon(self) -> str:
        """The badge's icon of a status or a verdict ("" for a reason)."""
        return "" if self.anchor.startswith("reason-") else _ICONS_BY_WORD.get(self.name, "")


#: An entry's status at one release (what a release page groups by).
STATUS_TERMS = (
    Term("status-holds", "holds", "an entry, at a release",
         "The gotcha bites this release: every claim of the entry was checked against this release's source "
         "code and is true there.",
         "Read the entry's workaround."),
    Term("status-unverified", "unverified", "an entry, at a release",
         "Not every claim could be checked in this release, and none is contradicted: the code a check looks at "
         "is not where the check looks (it may have moved), or could not be read. The page says how many claims "
         "were verified (\"3 of 4 claims verified\"). This never means \"does not apply\".",
         "Treat it as probably biting; the verified claims say how far."),
    Term("status-changed", "changed", "an entry, at a release",
         "A claim is contradicted by this release's code: the place the check looks at is there, but what the "
         "claim says is not. The gotcha may be gone, fixed or different in this release. At the oldest releases "
         "the site tracks, \"changed\" usually means the code had not yet taken the shape the claim describes: the "
         "gotcha may not exist yet, or existed in another form that no check describes.",
         "Read the contradicted claim on the entry page before relying on the workaround."),
    Term("status-not-affected", "not affected", "an entry, at a release",
         "The entry states that its gotcha began in a later release (introduced) or was fixed by an earlier one "
         "(fixed). Its claims are not checked here.",
         "Nothing to do for this release."),
    Term("status-not-verified", "not verified", "an entry, at a release",
         "The release has no verdict for this entry yet (the entry is newer than the last verification)."),
)

#: One check's verdict at one release.
VERDICT_TERMS = (
    Term("verdict-holds", "holds", "a claim (check), at a release",
         "The claim is true in this release's code; the site shows the file, the lines and the function it found."),
    Term("verdict-changed", "changed", "a claim (check), at a release",
         "The check found its file (and its function, if it names one), and the claim is not true there."),
    Term("verdict-missing", "missing", "a claim (check), at a release",
         "The file or the function the check looks in is not in this release. This says nothing about the "
         "behaviour: the code may have moved or been renamed."),
    Term("verdict-error", "error", "a claim (check), at a release",
         "The verifier could not read or evaluate the check for this release. This says nothing about the code."),
    Term("verdict-not-verified", "not verified", "a claim (check), at a release",
         "The check has no verdict at this release: none of its forms applies here (the claim belongs to other "
         "releases, by its own since or until), or the release has not been verified since the check was written."),
)

#: Why a check is not `holds`.
REASON_TERMS = (
    Term("reason-not-found", "not-found", "changed",
         "The code the claim names does not occur where the check looks."),
    Term("reason-out-of-order", "out-of-order", "changed",
         "Both pieces of code the claim names occur, but not in the order it says."),
    Term("reason-not-adjacent", "not-adjacent", "changed",
         "Both pieces of code occur in order, but not one right after the other, as the claim requires."),
    Term("reason-present", "present", "changed",
         "Code the claim says is absent is present in this release."),
    Term("reason-file-missing", "file-missing", "missing",
         "The file the check reads is not in this release."),
    Term("reason-symbol-missing", "symbol-missing", "missing",
         "The file is there, but not the function or class the check looks in."),
    Term("reason-unavailable", "unavailable", "error",
         "The release's source could not be read: a network failure, a corrupt download, or a file the archive "
         "does not ship."),
    Term("reason-invalid", "invalid", "error",
         "The check cannot be evaluated: a pattern that does not compile, or a check on a function in a file "
         "that is not Python."),
    Term("reason-unparsable", "unparsable", "error",
         "The file has syntax errors where the check looks."),
    Term("reason-budget", "budget", "error",
         "Matching spent its time budget for the entry or for the run (the message says \"time budget\"); the "
         "check was not evaluated that time and will be at the next run."),
)

_ANCHORS = {t.name: t.anchor for t in REASON_TERMS}


def status_anchor(status: str | None) -> str:
    return f"status-{css(status)}"


def verdict_anchor(verdict: str | None) -> str:
    return f"verdict-{css(verdict)}"


def reason_anchor(reason, message: str | None = None) -> str:
    if message and "time budget" in message:
        return "reason-budget"
    return _ANCHORS.get(reason, "reasons")
