"""What data may name, and where the tool may read and write: one rule each, used everywhere.

Data names files: an entry id becomes `entries/<id>.html`, an engine key `ledger/<engine>.json`, a
release version `releases/<engine>/<version>.html`, a vocabulary term `concepts/<term>.html`. Two
guards stand between data and the file system, so that a hostile pull request cannot steer a writer:

- at load time, `name_problem` says whether a value may be a name at all (entries, checks, vocabulary
  terms and engine keys are kebab-case; versions are letters, digits and `.+!-_`, never `..`); lint
  reports it with file and line, and `site`/`verify` refuse to start while lint reports errors;
- at write time, `inside` joins a folder and a relative path and refuses anything that would leave
  the folder (an absolute part, `..`, a separator inside a name, a symbolic link on the way), so a
  name that slipped past lint still cannot.

Reads of contributors' files go through `read_regular` (regular files only, never through a symbolic
link, at most `limit` bytes read whatever the file claims); files the tool keeps open for writing
(the ledger's lock) through `open_regular`; files it writes whole (an entry `trace`/`follow --write`
edits, the skeleton `new` writes, what `schema --write` writes) through `write_text_atomically`, and
that, the ledger's files and the member store's through the one writer below it, `replace_file`.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import secrets
import stat
from pathlib import Path

from .errors import EXIT_ERROR, EXIT_USAGE, GotchasError

#: Entry ids, check ids, vocabulary terms, engine keys.
KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: Release versions as ledgers and sources name them (`0.10.1`, `0.10.1+cu126`, `0.5.0rc1`, `HEAD`).
VERSION = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._+!-]*[A-Za-z0-9])?")
#: The longest name: file systems take 255 bytes; a page adds `.html`, a temp file more.
MAX_NAME = 128

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO in place of an entry must not block the open
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class PathError(GotchasError, exit_code=EXIT_USAGE):
    """A path built from data would leave its folder, or a file is not a regular file."""

    def __init__(self, path: object, reason: str, *, link: bool = False) -> None:
        super().__init__(f"{path} {reason}")
        self.reason = reason  # without the path, for a message that names the file already
        self.link = link  # a symbolic link is the reason: the member store words that as a cache folder's refusal


class WriteError(GotchasError, exit_code=EXIT_ERROR):
    """A file could not be written (a full disk, a file-size limit, no permission); the old file is unchanged."""


def name_problem(value: object, kind: str = "id") -> str | None:
    """Why `value` cannot name a file of this kind (`id` or `version`), or None when it can."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > MAX_NAME:
        return f"is {len(value)} characters long; at most {MAX_NAME}"
    if kind == "version":
        if not VERSION.fullmatch(value) or ".." in value:
            return "may hold only letters, digits and '.', '+', '!', '-', '_' (not '..'), and start and end " \
                   "with a letter or digit"
        return None
    if not KEBAB.fullmatch(value):
        return "must be kebab-case (a-z, 0-9, '-')"
    return None


def inside(root: str | os.PathLike, relative: str) -> Path:
    """`root/relative`, refused (PathError) if any part of `relative` could leave `root`.

    `relative` uses '/' between parts. No part may be empty, `.` or `..`, hold a backslash, a NUL or
    a drive colon; no folder on the way from `root` to the result may be a symbolic link (so a link
    committed inside the folder cannot send a write elsewhere). The result itself may not exist yet.
    """
    root = Path(root)
    parts = _plain_parts(root, relative, repr(relative))
    target = root
    for part in parts:
        target = target / part
        if target.is_symlink():
            raise PathError(target, "is a symbolic link; refusing to follow it")
    return target


def _plain_parts(root: str | os.PathLike, relative: str, shown: object) -> list[str]:
    """The parts of `relative`, or PathError when one could leave `root` or is no name a file system takes."""
    parts = relative.split("/")
    for part in parts:
        if part in ("", ".", "..") or any(c in part for c in "\\\0:") or len(part.encode("utf-8", "replace")) > 255:
            raise PathError(shown, f"is not a plain relative path under {root}")
    return parts


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of a regular file, read without following a symbolic link; at most `limit` + 1 bytes.

    Raises PathError for a link, a device, a FIFO or a folder, and OSError when it cannot be read.
    A caller that gets `limit` + 1 bytes knows the file is too large without reading it whole.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    except OSError:
        if os.path.islink(path):
            raise PathError(path, "is a symbolic link; only regular files are read") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise PathError(path, f"is not a regular file ({_kind(mode)}); only regular files are read")
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int) -> bytes:
    """At most `limit` + 1 bytes of an open file, in chunks of 1 MiB: one byte more than the limit tells the
    caller the file is too large without reading it whole."""
    chunks, left = [], limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def open_regular(path: str | os.PathLike, flags: int = os.O_RDWR | os.O_CREAT, mode: int = 0o644) -> int:
    """A file descriptor on a regular file (created when absent), never through a symbolic link."""
    try:
        fd = os.open(path, flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, mode)
    except OSError:
        if os.path.islink(path):
            raise PathError(path, "is a symbolic link; refusing to open it") from None
        raise
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise PathError(path, f"is not a regular file ({_kind(kind)}); refusing to open it")
    if _O_NONBLOCK:
        os.set_blocking(fd, True)
    return fd


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def write_text_atomically(path: str | os.PathLike, text: str | bytes, root: str | os.PathLike, *,
                          exclusive: bool = False, display: str | None = None) -> None:
    """Replace `path` (a file under the folder `root`) with `text`, so that a reader, a crash, a full disk or a
    file-size limit leaves the old file or the new one, never half of one (`replace_file`).

    A symbolic link on the way from `root`, or at `path` itself (dangling or not), is refused (PathError), as is
    a path that is not under `root`; with `exclusive`, so is a `path` that exists at all. A failed write is a
    WriteError that names the file (as `display` when given), and the old file is as it was."""
    shown = display or path
    data = text.encode("utf-8") if isinstance(text, str) else text
    root, target = Path(os.path.abspath(root)), Path(os.path.abspath(path))
    try:
        relative = target.relative_to(root).as_posix()
    except ValueError:
        raise PathError(shown, f"is not under {root}; refusing to write it") from None
    try:
        replace_file(root, relative, data, shown=shown, exclusive=exclusive)
    except OSError as exc:
        raise WriteError(f"{shown}: cannot write: {exc.strerror or exc}; it is unchanged") from None


def replace_file(root: str | os.PathLike, relative: str, data: bytes, *, shown: object, exclusive: bool = False,
                 make_folders: bool = False, root_may_be_link: bool = True, over_link: bool = False,
                 stale: str | None = None) -> None:
    """Replace `root/relative` with `data`: the one atomic write of the tool, which `write_text_atomically`, the
    ledger's files and the member store go through, each wording its own errors.

    `relative` uses '/' between parts, none of which may leave `root` (as in `inside`). Every folder from `root`
    down is opened from the one before it without following a link (made first when missing, with
    `make_folders`), so a symbolic link on the way, planted before or swapped in while the caller checked, is
    refused and nothing is written through it; `root` itself is followed only when `root_may_be_link`. The data
    goes to a temporary file beside the target (created with O_EXCL, never through a link), is fsynced, given the
    old file's mode (or the umask's, for a new file) and renamed over the target; then the folder is fsynced. A
    link at the target is refused, or with `over_link` renamed over (never followed); with `exclusive`, a target
    that exists at all is refused. `stale` (a glob) names the temporary files a killed run left beside the
    target, removed before the write: only a caller that holds a lock on the folder may pass it.

    Refusals are PathErrors naming `shown`, `link` set when a symbolic link is the reason. A failed write is the
    OSError itself: the old file is as it was and no temporary file is left."""
    *folders, name = _plain_parts(root, relative, shown)
    if make_folders:
        with contextlib.suppress(FileExistsError):  # a link or a file there is refused just below
            os.makedirs(root, exist_ok=True)
    try:
        folder = os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC | (0 if root_may_be_link else _O_NOFOLLOW))
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _not_a_folder(shown, str(root), root, None) from None
        raise
    temp: str | None = None
    try:
        for part in folders:  # each folder opened from the one before it: a link swapped in meanwhile is refused
            if make_folders:
                with contextlib.suppress(FileExistsError):  # mkdir never follows a link, dangling or not
                    os.mkdir(part, dir_fd=folder)
            try:
                child = os.open(part, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=folder)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _not_a_folder(shown, repr(part), part, folder) from None
                raise
            os.close(folder)
            folder = child
        try:
            old = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        else:
            if stat.S_ISLNK(old.st_mode) and (exclusive or not over_link):
                raise PathError(shown, "is a symbolic link; refusing to write through it", link=True)
            if not stat.S_ISREG(old.st_mode) and not stat.S_ISLNK(old.st_mode):
                raise PathError(shown, f"is not a regular file ({_kind(old.st_mode)}); refusing to replace it")
            if exclusive:
                raise PathError(shown, "exists already; refusing to replace it")
            mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else 0o666 & ~_umask()
        if stale is not None:
            for left in fnmatch.filter(os.listdir(folder), stale):
                if left == name:
                    continue
                with contextlib.suppress(OSError):
                    os.unlink(left, dir_fd=folder)
        temp = f".{name[:100]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:  # a link is never made over an existing name: whatever appeared meanwhile is kept
            try:
                os.link(temp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            except FileExistsError:
                raise PathError(shown, "exists already; refusing to replace it") from None
            except OSError as exc:  # a file system without hard links: the name was checked just before
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS):
                    raise
                os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
            else:
                os.unlink(temp, dir_fd=folder)
        else:
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)  # renames over a link, never through
        temp = None
        with contextlib.suppress(OSError):
            os.fsync(folder)
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
        os.close(folder)


def _not_a_folder(shown: object, label: str, path: str | os.PathLike, folder: int | None) -> PathError:
    """The refusal of a folder on the way that could not be opened as one: a link (Linux says ENOTDIR for one, others
    ELOOP), or a file."""
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.stat(path, dir_fd=folder, follow_symlinks=False).st_mode):
            return PathError(shown, f"has {label} on its way, which is a symbolic link; refusing to write through "
                                    "it", link=True)
    return PathError(shown, f"has {label} on its way, which is not a folder; refusing to write through it")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
