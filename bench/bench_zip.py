"""The zip reader on cached wheels: list the members and read the Python ones a verify run would (#19).

    .venv/bin/python bench/bench_zip.py WHEEL [WHEEL...]   (e.g. two from ~/.cache/gotchas/archives)

Median of 9 runs of: open the reader over the file (by read_range, as for a wheel read by ranges), list
every member, read the first 40 `.py` members by name. Also counts the read_range calls (range requests).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verifier.sources.archive import ZipReader  # noqa: E402


def one(path: str) -> tuple[float, int, int]:
    calls = 0
    with open(path, "rb") as raw:
        size = os.fstat(raw.fileno()).st_size

        def read_range(start: int, length: int) -> bytes:
            nonlocal calls
            calls += 1
            raw.seek(start)
            return raw.read(length)

        started = time.perf_counter()
        reader = ZipReader(read_range, size)
        wanted = sorted(p for p in reader.paths() if p.endswith(".py"))[:40]
        found = reader.read_members(wanted)
        seconds = time.perf_counter() - started
    return seconds, calls, sum(map(len, found.contents.values()))


def main(paths: list[str]) -> None:
    for path in paths:
        runs = [one(path) for _ in range(9)]
        print(f"{Path(path).name[:12]}  {os.path.getsize(path) / 1e6:.1f} MB  median {statistics.median(r[0] for r in runs):.4f} s"
              f"  reads {runs[0][1]}  bytes {runs[0][2]}")


if __name__ == "__main__":
    main(sys.argv[1:])
