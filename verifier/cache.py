"""Where downloads, clones and cached verdicts live: the user cache directory, and its folders made safely.

GOTCHAS_CACHE_DIR overrides it (tests and CI point it at a folder of their own).

The cache folder is the user's choice and may itself be a link; what is below it
is not trusted: a CI cache restored from elsewhere, or another user's hands, can
plant a link there (`members -> /somewhere/else`). So every folder below the
cache folder that the tool writes in is looked at with lstat, made when missing
(one at a time, never following a link), and refused when it is a link or not a
folder (`real_folder`). A cache folder that is a file or cannot be written is
refused the same way: `CacheFolderError`, exit 3 (the machinery), with the
folder and what to do, never a traceback.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import platformdirs

from .errors import EXIT_ERROR, GotchasError

#: What the user can do about a cache folder that cannot be used.
ADVICE = "set GOTCHAS_CACHE_DIR to a folder this user can write"


class CacheFolderError(GotchasError, exit_code=EXIT_ERROR):
    """A folder of the cache is a link, not a folder, or cannot be made or written; the message says which."""


def _refusal(folder: Path, reason: str) -> CacheFolderError:
    return CacheFolderError(f"cache folder {folder}: {reason}; {ADVICE}")


def _os_reason(exc: OSError) -> str:
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return "a file is in the way of the folder"
    return f"cannot be made ({exc.strerror or exc})"


def real_folder(base: str | os.PathLike, *parts: str) -> Path:
    """`base/parts...`, made when missing, once `base` is a folder this process can write and every folder below
    it on the way is a real folder (not a link, not a file); else CacheFolderError. `base` may be a link (the
    user's own choice of cache folder); the parts below it never are."""
    folder = Path(base)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _refusal(folder, "not a folder" if folder.exists() and not folder.is_dir()
                       else _os_reason(exc)) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _refusal(folder, "cannot be written (read-only)")
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\0" in part:
            raise _refusal(folder / part, "not a plain folder name")
        folder = folder / part
        try:
            os.mkdir(folder)  # never follows a link: an existing one (dangling too) is EEXIST
        except FileExistsError:
            pass
        except OSError as exc:
            raise _refusal(folder, _os_reason(exc)) from None
        try:
            info = os.lstat(folder)
        except OSError as exc:
            raise _refusal(folder, f"cannot be read ({exc.strerror or exc})") from None
        if stat.S_ISLNK(info.st_mode):
            raise _refusal(folder, "a symbolic link, which the cache never writes through (remove it)")
        if not stat.S_ISDIR(info.st_mode):
            raise _refusal(folder, "not a folder (remove it)")
    if parts and not os.access(folder, os.W_OK | os.X_OK):
        raise _refusal(folder, "cannot be written (read-only)")
    return folder


def cache_dir(*parts: str) -> Path:
    """A folder under the cache directory, created on first use: never through a link below the cache folder
    (CacheFolderError, exit 3)."""
    base = os.environ.get("GOTCHAS_CACHE_DIR") or platformdirs.user_cache_dir("gotchas", appauthor=False)
    real_folder(base, *parts)
    return Path(base, *parts)
