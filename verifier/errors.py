"""The one base of the errors a user is shown, and the exit codes they stand for.

Every error a command may end with derives from `GotchasError` and names its exit code on its class line
(`class KBError(GotchasError, exit_code=EXIT_USAGE)`); `gotchas` catches it once (`cli.main`), prints
`gotchas: <message>` on stderr and exits with that code. What each code means is `cli._common.EXIT_CODES`
(the commands' `--help` and docs/format.md are written from it). A command catches an error itself only to do
something of its own with it: lint output, a proposal left unwritten, a ledger failure that is the run's.

This module imports nothing of the package: any layer may raise these.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3


class GotchasError(Exception):
    """An error shown to the user as `gotchas: <message>`, ending the command with `exit_code`: EXIT_USAGE (2)
    for bad arguments, the KB's own data malformed or a file that cannot be read; EXIT_ERROR (3) when the
    machinery failed (a source, another interpreter, the compiled KB); EXIT_FINDINGS (1) for something an
    author fixes in an entry. `message` is the one line, with the file and line where the error has them."""

    exit_code: ClassVar[int] = EXIT_ERROR

    def __init_subclass__(cls, exit_code: int | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if exit_code is not None:
            cls.exit_code = exit_code

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(message, *args)
        self.message = str(message)

    def __str__(self) -> str:
        return self.message


#: The exception classes of the package that are not GotchasErrors, by name, and why: each is a signal between
#: two of its parts, caught where it is raised or one step up and turned into a verdict, a diagnostic, a retry or
#: a GotchasError that names the file it concerns, so none reaches the user as it is. tests/test_errors.py holds
#: every other exception class of verifier/ to derive from GotchasError.
INTERNAL: dict[str, str] = {
    "BudgetExceeded": "code: a fragment's match spent its step budget; evaluate makes it an `invalid` verdict, "
                      "locate and follow skip the candidate",
    "PatternTooDeep": "code: a fragment has too many `$$$`/`$NAME` or recursed too deep; evaluate makes it an "
                      "`invalid` verdict, follow skips the candidate",
    "InvalidPattern": "code: a regex or query beyond its bounds; evaluate and matchers make it an `invalid` "
                      "verdict, lint a G307/G308 diagnostic",
    "Unavailable": "code: the query's process could not run the pattern; an `unavailable` verdict, never kept",
    "Invalid": "matchers: a check that cannot be evaluated as written; evaluate makes it an `invalid` verdict",
    "NoForm": "bisect: choose_flip's answer that a release of --between has no form of the check; `gotchas "
              "bisect` says so as a usage error",
    "_Refused": "_yaml: libyaml's fast path met something it leaves to the checked loader, which reports it",
    "YAMLProblem": "_yaml: a YAML text's problem, with its line, column and lint code but no file; every caller "
                   "turns it into one that names the file (KBError, BuildsError, a G103/G104 diagnostic). _yaml "
                   "imports nothing of the package (tests/test_yaml_fast.py loads it on its own)",
    "_Malformed": "ledger: a value of a ledger file is not what the format has there; raised again as a "
                  "LedgerError that names the file and the place",
    "RangeNotSupported": "sources: the server sent the whole file to a Range request; the reader downloads the "
                         "file instead",
    "_Transient": "sources: a failure another attempt may not meet; retried, then a SourceUnavailable",
    "_Interrupted": "sources: the file being read stopped being the one downloaded (an OSError); the tar reader "
                    "reads the finished file",
    "_Cancelled": "sources: the reader gave up (a BaseException, past any `except Exception`); the download stops "
                  "and removes its partial file",
    "_Unreadable": "sources: git could not read a blob, which a blobless clone may not have fetched yet; the git "
                   "snapshot fetches it from the source's own URL and reads again, else a SourceUnavailable",
}
