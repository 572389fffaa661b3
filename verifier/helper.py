"""Worker processes that evaluate checks, so that a run keeps every core busy.

Evaluating a check against a file is a pure function of the check and the
file's content (`evaluate.evaluate_source`): the same verdict wherever it is
computed. The matching itself holds Python's GIL (tree-sitter's parser and the
tokenizer included), so threads cannot share it out; processes can. A run hands
a pool of workers (`concurrent.futures.ProcessPoolExecutor`) one file at a time
(its path, content and the checks on it that need evaluating) while a worker is
free, and evaluates the other files itself meanwhile: a run of `processes()`
processes is the run and `processes() - 1` workers.

The workers are an optimisation and nothing depends on them: the pool starts
only once a run has files to evaluate (`START_AFTER`), and when it cannot
start, a worker fails, answers nonsense or dies, the run evaluates what it had
handed over itself (after a death or nonsense, everything, without the pool).
`GOTCHAS_PROCESSES=1` keeps every run in one process; so does a machine with
one core.

Workers are started fresh (the `spawn` method: no lock, open ledger or cache of
the run is inherited) from this interpreter, with `PYTHONSAFEPATH` so that the
working folder (a KB checkout, which may hold anything) is not on their path
while they start; on Python 3.10, which cannot do that, a run keeps to one
process. While the run has a time budget (`evaluate.Budget`), each file goes
with what is left of it for those forms: the worker spends it as the run would,
and the run charges its own with the seconds each form took.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_for
from typing import Any

from . import stats
from .model import Form, Verdict

#: Files a run evaluates itself before it starts the pool: small runs never pay for a process.
START_AFTER = 2
#: Files handed to each worker at most before it answers: the next one waits in the pool's queue, so that
#: the worker goes on at once while the run is busy with a file of its own.
DEPTH = 2
#: Processes a run uses at most, whatever the machine has (the run's own included).
MAX_PROCESSES = 32
#: Whether workers can be started without the working folder on their path (`python -P`, 3.11).
SAFE_PATH = sys.version_info >= (3, 11)


def processes() -> int:
    """How many processes a run may use: GOTCHAS_PROCESSES, else one per core (the run's own included)."""
    value = os.environ.get("GOTCHAS_PROCESSES", "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            return 1
    return max(1, os.cpu_count() or 1)


class Helper:
    """The worker pool, as the run sees it: free for a file, busy, or gone.

    `submit` hands it a file when it is `free()`; `results()` gives what it has
    finished, as `(token, verdicts)`, where verdicts None means "evaluate this
    yourself" (a worker failed on it, or the pool is gone). Every submitted token
    comes back exactly once, through `results()` or `wait()`.
    """

    def __init__(self, enabled: bool | None = None) -> None:
        self.workers = min(processes(), MAX_PROCESSES) - 1
        self.enabled = (self.workers > 0 and SAFE_PATH) if enabled is None else enabled
        self.workers = max(1, self.workers)
        self.evaluated = 0  # files the workers evaluated (for benchmarks and tests)
        self.checks_evaluated = 0  # and checks on them
        self._wanted = 0
        self._pool: ProcessPoolExecutor | None = None
        self._dead = False
        # handed over, not taken back yet, in order: future -> (token, checks, and with a budget its forms and it)
        self._busy: dict[Future, tuple[Any, int, list | None, object]] = {}
        self._done: list = []  # answers taken from the pool and not given to the run yet

    # -- the run's side ---------------------------------------------------------------------------------

    def want(self, files: int = 1) -> None:
        """Tell that the run has `files` more to evaluate; the pool starts once more than START_AFTER are."""
        self._wanted += files
        if self._wanted > START_AFTER and self._pool is None and self.enabled and not self._dead:
            self._start()

    def expect(self, files: int) -> None:
        """Tell that up to `files` are coming (an archive pass begins): start now, so as to be ready for them."""
        if files > START_AFTER:
            self.want(files)

    def free(self) -> bool:
        """Whether the pool can take a file now (fewer than DEPTH per worker are waiting)."""
        self._drain()
        return self._pool is not None and not self._dead and len(self._busy) < DEPTH * self.workers

    def submit(self, token, path: str, data: bytes, sha256: str, checks: Sequence[Form]) -> bool:
        """Hand one file over (only when `free()`); False if the pool is gone (evaluate it yourself)."""
        if not self.free():
            return False
        from .evaluate import active_budget

        forms = list(checks)
        budget = active_budget()
        share = budget.share(forms) if budget is not None else None
        try:
            with _safe_path():  # a worker may be started here
                future = self._pool.submit(evaluate_file, path, data, sha256, forms, share)  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - a broken pool, or one that cannot start a worker
            self._die()
            return False
        self._busy[future] = (token, len(forms), forms if budget is not None else None, budget)
        return True

    def results(self) -> list[tuple[Any, list[Verdict] | None]]:
        """What the pool has finished since the last call, without waiting."""
        self._drain()
        done, self._done = self._done, []
        return done

    def wait(self) -> list[tuple[Any, list[Verdict] | None]]:
        """Everything handed over, waiting for the pool to finish it."""
        while self._busy:
            wait_for(list(self._busy), return_when=FIRST_COMPLETED)
            self._drain()
        return self.results()

    def close(self) -> None:
        """End the pool; the run does not wait for its workers to exit. Files still handed over (an interrupted
        run) are given up on, and their workers killed."""
        self._end()

    # -- underneath -------------------------------------------------------------------------------------

    def _end(self) -> None:
        self._dead = True
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if self._busy:
            _kill(pool)
        pool.shutdown(wait=False, cancel_futures=True)
        _ENDED.append(pool)

    def _start(self) -> None:
        try:
            with _safe_path():
                self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=start_worker)
        except Exception:  # noqa: BLE001 - no pool: the run evaluates everything itself
            self._dead = True

    def _drain(self) -> None:
        """Take every finished file, in the order handed over."""
        for future in [f for f in self._busy if f.done()]:
            if future in self._busy:  # not given back by a `_die` meanwhile
                self._take(future)

    def _take(self, future: Future) -> None:
        """One finished file; its answer goes to `_done`."""
        token, checks, forms, budget = self._busy.pop(future)
        error = future.exception()
        reply: Any = None if error is not None else future.result()
        if error is not None and not _failed_here(error):  # the pool is broken: no worker can be trusted now
            self._done.append((token, None))
            self._die()
            return
        if error is None and not (isinstance(reply, tuple) and len(reply) == 2 and self._well_formed(*reply, checks)):
            self._done.append((token, None))
            self._die()  # an answer that is not one: the pool is of no further use
            return
        verdicts, extra = reply if error is None else (None, None)
        if verdicts is not None:
            self.evaluated += 1
            self.checks_evaluated += len(verdicts)
            stats.count("evaluations", len(verdicts))
            stats.count("helper_evaluations", len(verdicts))
            if budget is not None and isinstance(extra, list):  # the seconds each form took, in the worker
                for form, seconds in zip(forms, extra):  # type: ignore[arg-type]
                    budget.charge(form, seconds)  # type: ignore[attr-defined]
        self._done.append((token, verdicts))

    @staticmethod
    def _well_formed(verdicts, extra, checks: int) -> bool:
        """None (evaluate it yourself) with why, or a verdict for each check handed over, and with them nothing
        or the seconds each took."""
        if verdicts is None:
            return isinstance(extra, str)
        return (isinstance(verdicts, list) and len(verdicts) == checks and all(isinstance(v, Verdict) for v in verdicts)
                and (extra is None or (isinstance(extra, list) and len(extra) == checks
                                       and all(type(s) is float and 0 <= s < 1e9 for s in extra))))

    def _die(self) -> None:
        """No more of the pool: everything still handed over comes back to the run."""
        self._done.extend((busy[0], None) for busy in self._busy.values())
        self._busy.clear()
        self._end()


#: Pools ended and maybe not exited yet (`reap`).
_ENDED: list[ProcessPoolExecutor] = []


def reap() -> None:
    """Wait until the workers of every pool ended so far have exited (a benchmark counts their CPU time)."""
    while _ENDED:
        _ENDED.pop().shutdown(wait=True)


def _failed_here(error: BaseException) -> bool:
    """Whether a file's failure is its own (the worker raised, or its answer could not be sent), not the pool's."""
    from concurrent.futures.process import BrokenProcessPool

    return not isinstance(error, BrokenProcessPool)


def _kill(pool: ProcessPoolExecutor) -> None:
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            process.kill()


@contextlib.contextmanager
def _safe_path() -> Iterator[None]:
    """While workers may be started: they begin with `python -c`, which puts the working folder first on
    their path unless PYTHONSAFEPATH is set (they take the run's path once started)."""
    before = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = before


# -- a worker's side ---------------------------------------------------------------------------------------

def start_worker() -> None:
    """A worker's setup: a stray print goes to stderr, not into the run's report; Ctrl-C is the run's to handle
    (it ends the pool)."""
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def evaluate_file(path: str, data: bytes, sha256: str, checks: list, budget=None) -> tuple:
    """`(verdicts, None)` of `checks` on one file, or with a budget `(verdicts, seconds each took)`; `(None, why)`
    if evaluating raised (the run evaluates the file itself, and sees the error there)."""
    from . import code
    from .evaluate import evaluate_source

    try:
        source = code.SourceFile(path, data, sha256)
        if budget is None:
            return [evaluate_source(check, source) for check in checks], None
        shared = budget.adopt(checks)  # the run's budget, as left for these forms: spent here as the run would
        verdicts, seconds = [], []
        for check in checks:
            started = time.perf_counter()
            verdicts.append(evaluate_source(check, source, shared))
            seconds.append(time.perf_counter() - started)
        return verdicts, seconds
    except Exception as exc:  # noqa: BLE001
        return None, f"{type(exc).__name__}: {exc}"
