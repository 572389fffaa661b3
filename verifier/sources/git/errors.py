"""Git's failures as messages: what git said, without GitPython's wrapping or a URL's credentials,
with the persistent cat-file processes restarted in step after a failed request."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from git.exc import CommandError, GitError
from gitdb.exc import ODBError

from .. import SourceUnavailable

if TYPE_CHECKING:
    from git import Repo

#: What GitPython raises when git fails; ValueError is how its cat-file wrapper answers "missing".
GIT_ERRORS = (GitError, ODBError, ValueError, OSError)


@contextmanager
def unavailable(what: str) -> Iterator[None]:
    try:
        yield
    except GIT_ERRORS as exc:
        raise SourceUnavailable(f"{what}: {reason(exc)}") from None


def restart_cat_file(repo: Repo) -> str | None:
    """End the persistent cat-file processes, so that the next request starts them afresh and
    in step (a failed request may leave an answer half read); and say what git said if one died.

    GitPython reports a cat-file that died only as an empty answer, with a guess about
    directory ownership; git's own last words are on the dead process's stderr. A process
    that is still fine ends cleanly when its input closes.
    """
    last_words = None
    for command in (repo.git.cat_file_all, repo.git.cat_file_header):
        process = getattr(command, "proc", None)
        if process is None:
            continue
        with suppress(OSError):
            process.stdin.close()
        try:
            status = process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            continue  # clear_cache kills it
        if status != 0 and process.stderr:
            said = [line.strip() for line in process.stderr.read().decode(errors="replace").splitlines()]
            last_words = next((line for line in reversed(said) if line), last_words)
    repo.git.clear_cache()
    return scrub(last_words) if last_words else last_words


def reason(exc: BaseException) -> str:
    """What git said, without GitPython's wrapping (a command line, or bytes reprs), nor credentials."""
    if isinstance(exc, CommandError):
        said = exc.stderr.removeprefix("\n  stderr: '").removesuffix("'")
        lines = [line.strip() for line in said.splitlines() if line.strip()]
        if lines:
            return scrub(lines[-1])
    missing = re.search(r"git returned: b?'(\S+) missing'", str(exc))
    if missing:
        return f"git has no object {missing.group(1)}"
    return scrub(str(exc)) or type(exc).__name__


#: The user information of a URL (`user:token@`), wherever a URL appears in a text.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")


def scrub(text: str) -> str:
    """`text` without the credentials a URL in it may carry (a token may be the user name alone)."""
    return _USERINFO.sub(r"\1", text)
