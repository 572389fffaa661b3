"""A second process that evaluates checks, so that a run keeps two cores busy.

Evaluating a check against a file is a pure function of the check and the
file's content (`evaluate.evaluate_source`): the same verdict wherever it is
computed. The matching itself holds Python's GIL (tree-sitter's parser and the
tokenizer included), so threads cannot share it out; a helper process can. A
run hands the helper one file at a time (its path, content and the checks on
it that need evaluating) whenever the helper is free, and evaluates the other
files itself meanwhile.

The helper is an optimisation and nothing depends on it: it starts only once a
run has files to evaluate (`START_AFTER`), and when it cannot start, fails,
answers nonsense or dies, the run evaluates what it had handed over itself and
goes on without it. `GOTCHAS_PROCESSES=1` keeps every run in one process; so
does a machine with one core.

The protocol, over the helper's stdin and stdout: frames of an 8-byte
little-endian length and a pickle. The helper's first frame is READY; each
task `(id, path, content, sha256, forms)` (the forms of checks on that file) is answered by `(id, verdicts,
None)` or, if evaluating raised, `(id, None, why)`. While the run has a time budget (`evaluate.Budget`), a
task carries a sixth item, what is left of it for those forms, and is answered by `(id, verdicts, seconds)`:
the helper spends the budget as the run would, and the run charges its own with the seconds each form took.
Both ends are this package, started by this package (pickles from anyone else are never read).
"""

from __future__ import annotations

import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from .model import Form, Verdict

_HEADER = struct.Struct("<Q")
#: The largest frame either end reads (a task carries one file, at most MAX_FILE_BYTES).
MAX_FRAME = 256 * 1024 * 1024
READY = "ready"
#: Files a run evaluates itself before it starts the helper: small runs never pay for a process.
START_AFTER = 2
#: Files handed to the helper at most before it answers: the next one waits in its pipe, so that it
#: goes on at once while the run is busy with a file of its own.
DEPTH = 2


def processes() -> int:
    """How many processes a run may use: GOTCHAS_PROCESSES, else 2 on a machine with more than one core."""
    value = os.environ.get("GOTCHAS_PROCESSES", "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            return 1
    return 2 if (os.cpu_count() or 1) > 1 else 1


def _command() -> list[str]:
    """How the helper is started: this interpreter, this package."""
    return [sys.executable, "-m", "verifier.helper"]


def _write_frame(stream, payload) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read_frame(stream):
    """The next frame's object; None at the end of the stream. Raises ValueError on a malformed frame."""
    header = stream.read(_HEADER.size)
    if not header:
        return None
    if len(header) != _HEADER.size:
        raise ValueError("a frame header cut short")
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME:
        raise ValueError(f"a frame of {length} bytes")
    data = stream.read(length)
    if len(data) != length:
        raise ValueError("a frame cut short")
    return pickle.loads(data)


class Helper:
    """The helper process, as the run sees it: free or busy with one file, or gone.

    `submit` hands it a file when it is `free()`; `results()` gives what it has
    finished, as `(token, verdicts)`, where verdicts None means "evaluate this
    yourself" (the helper failed on it, or died). Every submitted token comes
    back exactly once, through `results()` or `wait()`.
    """

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = processes() > 1 if enabled is None else enabled
        self.evaluated = 0  # files the helper evaluated (for benchmarks and tests)
        self.checks_evaluated = 0  # and checks on them
        self._wanted = 0
        self._process: subprocess.Popen | None = None
        self._replies: queue.Queue = queue.Queue()
        self._ready = False
        self._dead = False
        # task id -> (token, checks, and with a time budget its forms and the budget), not answered yet, in order
        self._busy: dict[int, tuple[object, int, list | None, object]] = {}
        self._done: list = []  # answers taken from the replies and not given to the run yet
        self._next_id = 0
        self._outbox: queue.Queue = queue.Queue()

    # -- the run's side ---------------------------------------------------------------------------------

    def want(self, files: int = 1) -> None:
        """Tell that the run has `files` more to evaluate; the helper starts once more than START_AFTER are."""
        self._wanted += files
        if self._wanted > START_AFTER and self._process is None and self.enabled and not self._dead:
            self._start()

    def expect(self, files: int) -> None:
        """Tell that up to `files` are coming (an archive pass begins): start now, so as to be ready for them."""
        if files > START_AFTER:
            self.want(files)

    def free(self) -> bool:
        """Whether the helper can take a file now (it has fewer than DEPTH to do)."""
        self._drain()
        return self._ready and not self._dead and len(self._busy) < DEPTH

    def submit(self, token, path: str, data: bytes, sha256: str, checks: Sequence[Form]) -> bool:
        """Hand one file over (only when `free()`); False if the helper is gone (evaluate it yourself)."""
        if not self.free():
            return False
        from .evaluate import active_budget

        self._next_id += 1
        forms = list(checks)
        budget = active_budget()
        task = (self._next_id, path, data, sha256, forms)
        if budget is not None:
            task += (budget.share(forms),)
        self._busy[self._next_id] = (token, len(forms), forms if budget is not None else None, budget)
        self._outbox.put(task)  # written by a thread: never waits here
        return True

    def results(self) -> list[tuple[object, list[Verdict] | None]]:
        """What the helper has finished since the last call, without waiting."""
        self._drain()
        done, self._done = self._done, []
        return done

    def wait(self) -> list[tuple[object, list[Verdict] | None]]:
        """Everything handed over, waiting for the helper to finish it."""
        while self._busy:
            self._take(self._replies.get())
        return self.results()

    def close(self) -> None:
        process, self._process = self._process, None
        self._dead = True
        if process is None:
            return
        if self._busy:  # given up on (an interrupted run): not worth finishing
            process.kill()
        self._outbox.put(None)  # the writer closes the helper's input after the last task: the helper ends
        # ... by itself, while the run goes on; a thread collects it (the run does not wait for its exit).
        threading.Thread(target=_reap, args=(process,), name="helper exit", daemon=True).start()

    # -- underneath -------------------------------------------------------------------------------------

    def _start(self) -> None:
        package_parent = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
        try:
            # Started in the package's own folder: `-m` puts the working folder first on sys.path, and the
            # run's (a KB checkout, say) may hold anything.
            self._process = subprocess.Popen(_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                             cwd=package_parent)
        except OSError:
            self._dead = True
            return
        threading.Thread(target=self._read, args=(self._process.stdout,), name="helper replies", daemon=True).start()
        threading.Thread(target=self._write, args=(self._process.stdin,), name="helper tasks", daemon=True).start()

    def _write(self, stream) -> None:
        try:
            while (task := self._outbox.get()) is not None:
                _write_frame(stream, task)
        except (OSError, ValueError, pickle.PicklingError):  # the helper is gone: its replies end, and say so
            pass
        try:
            stream.close()
        except OSError:
            pass

    def _read(self, stream) -> None:
        try:
            while (reply := _read_frame(stream)) is not None:
                self._replies.put(reply)
        except Exception:  # noqa: BLE001 - anything malformed: the helper is of no further use
            pass
        self._replies.put(None)

    def _drain(self) -> None:
        while True:
            try:
                reply = self._replies.get_nowait()
            except queue.Empty:
                return
            self._take(reply)

    def _take(self, reply) -> None:
        """One reply from the helper; an answer goes to `_done`."""
        if reply == READY and not self._ready:
            self._ready = True
            return
        oldest = next(iter(self._busy), None)
        if (not isinstance(reply, tuple) or len(reply) != 3 or oldest is None or reply[0] != oldest
                or not self._well_formed(reply[1], reply[2], self._busy[oldest][1])):
            self._die()  # the end of its replies, or one that is not an answer to its oldest task
            self._done.extend((busy[0], None) for busy in self._busy.values())
            self._busy.clear()
            return
        token, _, forms, budget = self._busy.pop(oldest)
        if reply[1] is not None:
            self.evaluated += 1
            self.checks_evaluated += len(reply[1])
            if budget is not None and isinstance(reply[2], list):  # the seconds each form took, in the helper
                for form, seconds in zip(forms, reply[2]):
                    budget.charge(form, seconds)
        self._done.append((token, reply[1]))

    @staticmethod
    def _well_formed(verdicts, extra, checks: int) -> bool:
        """None (evaluate it yourself), or a verdict for each check handed over, and with them nothing or the
        seconds each took."""
        if verdicts is None:
            return True
        return (isinstance(verdicts, list) and len(verdicts) == checks and all(isinstance(v, Verdict) for v in verdicts)
                and (extra is None or (isinstance(extra, list) and len(extra) == checks
                                       and all(type(s) is float and 0 <= s < 1e9 for s in extra))))

    def _die(self) -> None:
        if not self._dead:
            self._dead = True
            if self._process is not None:
                self._process.kill()


def _reap(process: subprocess.Popen) -> None:
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout:
        process.stdout.close()


# -- the helper's side ------------------------------------------------------------------------------------

def serve(stdin, stdout) -> None:
    """Answer tasks from `stdin` on `stdout` until `stdin` ends."""
    from . import code
    from .evaluate import evaluate_source

    _write_frame(stdout, READY)
    while (task := _read_frame(stdin)) is not None:
        task_id, path, data, sha256, checks, *budget = task
        try:
            source = code.SourceFile(path, data, sha256)
            if budget:  # the run's budget, as left for these forms: spent here as the run would
                shared = budget[0].adopt(checks)
                verdicts, seconds = [], []
                for check in checks:
                    started = time.perf_counter()
                    verdicts.append(evaluate_source(check, source, shared))
                    seconds.append(time.perf_counter() - started)
                reply = (task_id, verdicts, seconds)
            else:
                reply = (task_id, [evaluate_source(check, source) for check in checks], None)
        except Exception as exc:  # noqa: BLE001 - the run evaluates this file itself, and sees the error there
            reply = (task_id, None, f"{type(exc).__name__}: {exc}")
        _write_frame(stdout, reply)


def main() -> int:
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot corrupt the protocol
    try:
        serve(sys.stdin.buffer, protocol)
    except (KeyboardInterrupt, BrokenPipeError):  # the run was interrupted, or ended without closing
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
