"""What this process's runs did, counted: releases verified, checks evaluated, archive passes and so on.

Counting costs a dictionary update at each event, and no event is more frequent
than an evaluation of a check. The benchmarks read the counts after a run
(`bench/bench_matrix.py`); they say nothing about verdicts and nothing reads them
to decide one.

    releases            releases a run verified (`verify.verify_release`)
    evaluations         checks evaluated against a file's content, here or in a worker process
    helper_evaluations  those of them that a worker process evaluated
    archive_passes      passes over an sdist (`sources.archive.read_tar_members`)
    store_misses        lookups of an archive's members that the member store could not answer whole
    downloads           archives downloaded whole into the cache
    relocation_passes   times a run read every Python file of a release, to say where code went
    relocation_hints    relocation hints asked for
"""

from __future__ import annotations

from collections import Counter

counts: Counter[str] = Counter()


def count(event: str, times: int = 1) -> None:
    counts[event] += times
