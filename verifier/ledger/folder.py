"""The ledger folder on disk (`Ledger`): finding, reading, locking and atomically replacing its files.

One JSON file per engine (`ledger/<engine>.json`); beside it, `ledger/evidence/<engine>.json` keeps
the lines each check points at in the newest release, and what the site shows of them at every release, and
`ledger/surface/<engine>.json` the release surface. A file is replaced atomically (temp file, fsync,
rename), so a killed run leaves each engine's file exactly as before or exactly as after. A lock file keeps two
runs from writing at once.

Reading trusts nothing: a file is read only when it is a regular file (never
through a symbolic link) of at most MAX_LEDGER_BYTES, and its values then go
through `codec.decode`, which refuses a bad file before anything is written. Files
are found with `safety.inside`: an engine key is a name, and the ledger
folder, its evidence folder and its lock are never links. What the files say is `codec`'s.

Part of `verifier.ledger`, which re-exports its public names.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl  # POSIX only, like O_NOFOLLOW and the bounded query child: README, "Platforms"
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from ..safety import PathError, inside, name_problem, open_regular, read_regular, replace_file
from .codec import (
    RESTORE,
    LedgerError,
    decode,
    decode_evidence,
    evidence_text,
    excerpts_json,
    ledger_text,
    merge_evidence,
    parse,
)
from .records import EngineLedger, EvidenceUpdate, Window

DEFAULT_DIR = "ledger"
EVIDENCE_DIR = "evidence"
SURFACE_DIR = "surface"
LOCK_FILE = ".lock"
#: The largest ledger file read (the committed ones are about 2.4 MB); a larger one is refused, read no further.
MAX_LEDGER_BYTES = 64 << 20
#: The largest evidence file read (the committed ones are about 3 MB: excerpts of every release).
MAX_EVIDENCE_BYTES = 16 << 20
#: How much of the lock file (who holds it) is read.
_LOCK_TEXT = 200


def _read(path: Path, limit: int) -> str | None:
    """The text of a regular file of at most `limit` bytes, read without following a link; None when there is no
    file; LedgerError for anything else."""
    try:
        data = read_regular(path, limit)
    except FileNotFoundError:
        return None
    except PathError as exc:
        raise LedgerError(f"{exc}; {RESTORE}") from None
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise LedgerError(f"{path}: larger than {limit >> 20} MiB, which no file `verify` writes is; read no further; "
                          f"{RESTORE}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LedgerError(f"{path}: not UTF-8 text (at byte {exc.start}); {RESTORE}") from None


class Ledger:
    """The ledger folder: one file per engine, and the evidence folder beside them."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)

    def _inside(self, relative: str, engine: str | None = None) -> Path:
        """`folder/relative`, or LedgerError: the engine is not a name, the folder or a folder on the way is a link."""
        if engine is not None:
            problem = name_problem(engine, "id")
            if problem is not None:
                raise LedgerError(f"engine {engine!r} {problem}; no ledger file is named after it")
        if self.folder.is_symlink():
            raise LedgerError(f"{self.folder} is a symbolic link; the ledger is read and written only in a folder "
                              "of its own")
        try:
            return inside(self.folder, relative)
        except PathError as exc:
            raise LedgerError(str(exc)) from None

    def path(self, engine: str) -> Path:
        return self._inside(f"{engine}.json", engine)

    def engines(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json")
                      if name_problem(p.stem, "id") is None) if self.folder.is_dir() else []

    def load(self, engine: str) -> EngineLedger:
        path = self.path(engine)
        text = _read(path, MAX_LEDGER_BYTES)
        if text is None:
            return EngineLedger(engine)
        return decode(parse(text, str(path)), engine, str(path))

    def save(self, ledger: EngineLedger) -> None:
        """Replace the engine's file atomically; refused (the file unchanged) when a release version or an id
        could not be read back."""
        path = self.path(ledger.engine)
        write_atomically(path, ledger_text(ledger, str(path)), root=self.folder, limit=MAX_LEDGER_BYTES,
                         what="a ledger file")

    # Evidence: the lines each check points at in the newest release, for the site.

    def evidence_path(self, engine: str) -> Path:
        return self._inside(f"{EVIDENCE_DIR}/{engine}.json", engine)

    def load_evidence(self, engine: str) -> dict:
        """The engine's evidence, checked (LedgerError when it is not what `verify` writes); when there is none, an
        empty one."""
        path = self.evidence_path(engine)
        text = _read(path, MAX_EVIDENCE_BYTES)
        if text is None:
            return {"engine": engine, "version": None, "checks": {}}
        return decode_evidence(parse(text, str(path)), engine, str(path))

    def save_evidence(self, evidence: dict | None, merge: bool = False, old: dict | None = None,
                      engine: str | None = None, windows: Mapping[str, Mapping[str, Window]] | None = None,
                      entries: set[str] | None = None,
                      keep: set[str] | None = None) -> None:
        """Replace an engine's evidence file: `evidence` (the newest release's excerpts; None: those of `old`);
        with `merge`, keep other entries' excerpts of the same release (from `old`, the evidence as read before,
        else as read now).

        `windows` (version -> entry/check -> (first line, lines)) are the excerpts of every release verified, of
        the checks of `entries`: at those releases they replace what `old` had of those entries; what it had of
        other releases and entries stays, except entries not in `keep` when it is given (a run of the whole KB)."""
        engine = engine or cast(dict, evidence)["engine"]  # the one or the other is given
        path = self.evidence_path(engine)
        if merge or evidence is None or windows:
            old = old if old is not None else self.load_evidence(engine)
        write_atomically(path, evidence_text(merge_evidence(evidence, engine, old, merge, windows or {},
                                                            entries or set(), keep), str(path)),
                         root=self.folder, limit=MAX_EVIDENCE_BYTES, what="an evidence file")

    def write_evidence(self, update: EvidenceUpdate, old: dict | None = None) -> None:
        """`save_evidence` of what a run found (`verify.EngineRun.evidence_update`); `old`: the evidence as read
        before the run."""
        self.save_evidence(None if update.newest is None else excerpts_json(update.engine, update.newest),
                           merge=update.merge, old=old, engine=update.engine, windows=update.windows,
                           entries=set(update.entries), keep=None if update.keep is None else set(update.keep))

    # The release surface: every flag, variable, metric and request field of each release (verifier.surface).

    def surface_path(self, engine: str) -> Path:
        return self._inside(f"{SURFACE_DIR}/{engine}.json", engine)

    def load_surfaces(self, engine: str):
        """The engine's release surfaces (surface.store.EngineSurfaces), checked: LedgerError when the file is not
        what `verify` writes; when there is none, an empty one."""
        from ..surface import store

        path = self.surface_path(engine)
        text = _read(path, store.MAX_SURFACE_BYTES)
        if text is None:
            return store.EngineSurfaces(engine)
        try:
            return store.decode(parse(text, str(path)), engine, str(path))
        except store.SurfaceError as exc:
            raise LedgerError(str(exc)) from None

    def save_surfaces(self, surfaces) -> None:
        from ..surface import store

        text = store.encode(surfaces)
        path = self.surface_path(surfaces.engine)
        if len(text.encode()) > store.MAX_SURFACE_BYTES:
            raise LedgerError(f"{path}: not written: {len(text) >> 20} MiB is more than the "
                              f"{store.MAX_SURFACE_BYTES >> 20} MiB a surface file may hold")
        write_atomically(path, text, root=self.folder)

    @contextlib.contextmanager
    def lock(self, wait: float = 0.0):
        """Hold the ledger's lock; wait up to `wait` seconds for another run to finish, else refuse. The lock is a
        regular file in the folder, opened without following a link (a link committed there is refused)."""
        self._inside(LOCK_FILE)  # the folder is no link
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{self.folder}: cannot make the ledger folder: {exc.strerror or exc}") from None
        path = self._inside(LOCK_FILE)
        try:
            fd = open_regular(path, os.O_RDWR | os.O_CREAT)
        except PathError as exc:
            raise LedgerError(f"{exc}; the lock must be a regular file: delete it and re-run") from None
        except OSError as exc:
            what = "is not a regular file (a folder)" if exc.errno == errno.EISDIR else \
                f"cannot be opened: {exc.strerror or exc}"
            raise LedgerError(f"{path} {what}; the lock must be a regular file: delete it and re-run") from None
        try:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise LedgerError(f"{path}: cannot lock: {exc}") from None
                    if time.monotonic() >= deadline:
                        said = os.pread(fd, _LOCK_TEXT, 0).decode("utf-8", "replace")
                        holder = "".join(c if c.isprintable() else "?" for c in said.strip()) or "another process"
                        raise LedgerError(f"the ledger in {self.folder} is locked by {holder}; "
                                          "wait for that run to finish (or pass --wait SECONDS)") from None
                    time.sleep(0.1)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"gotchas run pid {os.getpid()}\n".encode(), 0)
            yield self
        finally:
            os.close(fd)


def write_atomically(target: Path, text: str, *, root: Path | None = None, limit: int | None = None,
                     what: str = "the file") -> None:
    """Replace `target` with `text` so that a reader or a crash sees the old file or the new one, never half
    (`safety.replace_file`). The folders from `root` (the ledger folder; by default `target`'s) down to `target`'s
    are made when missing and are never a link, `root` included, not even one swapped in after `Ledger.path`
    checked them.

    With `limit` (the bound its reader enforces), a text larger than that is not written (LedgerError, `target`
    unchanged): a file that every later command would refuse is never made. A temporary file that a run killed
    mid-write left beside `target` is removed (the caller holds the ledger's lock)."""
    if limit is not None and (size := len(text.encode("utf-8", "surrogatepass"))) > limit:
        raise LedgerError(f"{target}: not written: {size} bytes, more than the {_size(limit)} {what} may hold "
                          "(a larger one is refused when read); it is unchanged. Track fewer releases (the "
                          "engine's `oldest` in gotchas/engines.yaml) or verify fewer entries")
    base = Path(os.path.abspath(root if root is not None else target.parent))
    try:
        relative = Path(os.path.abspath(target)).relative_to(base).as_posix()
    except ValueError:
        raise LedgerError(f"{target}: not under the ledger folder {base}; not written") from None
    try:  # `.vllm.*.tmp`: the temporary files of `vllm.json` (`.vllm.json.<hex>.tmp`), and those of older runs
        replace_file(base, relative, text.encode("utf-8"), shown=target, make_folders=True, root_may_be_link=False,
                     stale=f".{target.stem}.*.tmp")
    except PathError as exc:
        raise LedgerError(str(exc)) from None
    except OSError as exc:
        raise LedgerError(f"{target}: cannot write: {exc.strerror or exc}; it is unchanged") from None


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else f"{limit} bytes"
