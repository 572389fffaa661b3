"""Prose lint over a whole KB (#27): the G501-G505 findings of every entry, counted by code, and the time
`compile_kb` takes (the median of three runs).

Before and after, with today's rules on both:

    git worktree add /tmp/before27 aaf4187
    PYTHONPATH=. python bench/prose_lint.py /tmp/before27
    PYTHONPATH=. python bench/prose_lint.py .

With `--list`, every finding is printed. The rules are this checkout's (`PYTHONPATH`); the entries, ledger and
release surfaces are those of the KB given. `--compile` also times compile_kb with the KB's own verifier (run it
with PYTHONPATH set to that KB for its own code).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from pathlib import Path

from verifier import kb as kb_module
from verifier.entries import load_entry
from verifier.ledger import Ledger
from verifier.surface.lint import condition_problems, condition_setting_problems, surface_problems


def findings(root: Path) -> list:
    kb = kb_module.load(root)
    ledger = Ledger(root / "ledger")
    ledgers = {e: ledger.load(e) for e in kb.engines}
    surfaces = {e: ledger.load_surfaces(e) for e in kb.engines}
    found = []
    for path in kb.entry_files():
        entry = load_entry(path, display=f"gotchas/{path.name}").entry
        if entry is None:
            continue
        found += surface_problems(entry, path, ledgers, surfaces)
        found += condition_problems(entry, ledgers, surfaces) + condition_setting_problems(entry, ledgers, surfaces)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    found = findings(args.root)
    counts = collections.Counter(d.code for d in found)
    print(f"{len(found)} findings in {len({d.path for d in found})} entries: {dict(sorted(counts.items()))}")
    if args.list:
        for d in found:
            print(d)
    if args.compile:
        from verifier.compiled import compile_kb

        times = []
        for _ in range(3):
            start = time.perf_counter()
            compile_kb(args.root)
            times.append(time.perf_counter() - start)
        print(f"compile_kb: median {statistics.median(times):.2f} s of {len(times)}")


if __name__ == "__main__":
    main()
