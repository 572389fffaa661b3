"""What `gotchas site` holds in memory as the KB grows: peak RSS and time of `gotchas site` for a KB of N entries.

The KB of N entries is the real one replicated in a temporary folder laid out as the repository is (gotchas/,
ledger/ with its evidence and surface files, site/): copy 0 is the real entries (76) as they are, copy k the same
entries under the ids `<id>-r<k>`, until there are N. Their verdicts are replicated with them: each release of
each engine's ledger gets the copy's records under its id, and the evidence file its windows and excerpts (keyed
`<id>/<check>`), so a copy's pages show what the original's do. The release surfaces are the real ones (they do not
grow with entries).

The ledger and evidence files of a large copy are over the bounds the ledger folder reads (MAX_LEDGER_BYTES,
MAX_EVIDENCE_BYTES: 2,000 entries make a vLLM ledger of some 100 MiB); the child raises those two bounds, and
nothing else, before it runs the command. Each run is a fresh child (`verifier.cli.main(["site", ...])`, stdout
dropped); its peak RSS is its own `ru_maxrss` (from `os.wait4`, the RUSAGE_CHILDREN figure of that one child), its time
the wall time around it.

    .venv/bin/python bench/site_memory.py [--sizes real,500,2000] [--repeat 1] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: The child: the ledger folder's read bounds raised (a replicated ledger is over them), then the command.
CHILD = """
import sys
from verifier.ledger import folder
folder.MAX_LEDGER_BYTES = folder.MAX_EVIDENCE_BYTES = 1 << 40
from verifier.cli import main
sys.exit(main(["site", "--out", sys.argv[1]]))
"""


def entry_ids(root: Path) -> list[str]:
    return sorted(p.stem for p in (root / "gotchas").glob("*.md"))


def copies(ids: list[str], n: int) -> list[tuple[str, str]]:
    """(original id, id of the copy) for the first n entries of the replicated KB; copy 0 keeps the ids."""
    found = []
    k = 0
    while len(found) < n:
        found += [(i, i if k == 0 else f"{i}-r{k}") for i in ids][:n - len(found)]
        k += 1
    return found


def make_kb(source: Path, target: Path, n: int) -> None:
    """A KB of n entries under `target`, as the module's docstring says."""
    ids = entry_ids(source)
    made = copies(ids, n)
    (target / "gotchas").mkdir(parents=True)
    for path in (source / "gotchas").iterdir():
        if path.suffix != ".md":
            shutil.copy(path, target / "gotchas" / path.name)
    for original, new in made:
        text = (source / "gotchas" / f"{original}.md").read_text(encoding="utf-8")
        text, count = re.subn(rf"(?m)^id: {re.escape(original)}$", f"id: {new}", text, count=1)
        assert count == 1, f"{original}.md: no `id: {original}` line"
        (target / "gotchas" / f"{new}.md").write_text(text, encoding="utf-8")
    shutil.copytree(source / "site", target / "site")
    ledger = target / "ledger"
    shutil.copytree(source / "ledger" / "surface", ledger / "surface")
    (ledger / "evidence").mkdir(parents=True)
    renamed: dict[str, list[str]] = {}
    for original, new in made:
        renamed.setdefault(original, []).append(new)
    for path in sorted((source / "ledger").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for release in data["releases"].values():
            release["entries"] = {new: record for original, record in release["entries"].items()
                                  for new in renamed.get(original, ())}
        (ledger / path.name).write_text(json.dumps(data, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    for path in sorted((source / "ledger" / "evidence").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for part in ("at", "windows", "checks"):
            if isinstance(data.get(part), dict):
                data[part] = {f"{new}/{check}": value for key, value in data[part].items()
                              for entry, _, check in [key.partition("/")] for new in renamed.get(entry, ())}
        (ledger / "evidence" / path.name).write_text(json.dumps(data, ensure_ascii=False, sort_keys=True),
                                                     encoding="utf-8")


def run_site(kb: Path, out: Path) -> tuple[float, int, str]:
    """(seconds, peak RSS in bytes, what the command printed) of one `gotchas site` in a fresh child. The peak is
    that child's own (`os.wait4` gives its resource usage, as RUSAGE_CHILDREN would if it were the only one)."""
    if out.exists():
        shutil.rmtree(out)
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], cwd=kb, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        printed, errors = stdout.read().decode(errors="replace"), stderr.read().decode(errors="replace")
    if child.returncode != 0:
        raise SystemExit(f"gotchas site failed in {kb} (exit {child.returncode}):\n{errors[-3000:]}")
    return seconds, usage.ru_maxrss * 1024, printed.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="real,500,2000",
                        help="entries of each KB, comma-separated, smallest first (`real`: the real KB's count)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size (the median is reported)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary KBs and sites (their folder is printed)")
    args = parser.parse_args()
    print(machine())
    work = Path(tempfile.mkdtemp(prefix="site-memory-"))
    try:
        print("| entries | runs | site s (median, min-max) | peak RSS MiB (median, min-max) | RSS per entry | output |")
        print("| ---: | ---: | ---: | ---: | ---: | --- |")
        real = len(entry_ids(ROOT))
        for n in (real if s == "real" else int(s) for s in args.sizes.split(",")):
            kb = work / f"kb-{n}"
            make_kb(ROOT, kb, n)
            times, peaks = [], []
            printed = ""
            for _ in range(args.repeat):
                seconds, peak, printed = run_site(kb, kb / "_site")
                times.append(seconds)
                peaks.append(peak)
            mib = [p / 2 ** 20 for p in peaks]
            print(f"| {n} | {args.repeat} | {statistics.median(times):.1f} ({min(times):.1f}-{max(times):.1f}) | "
                  f"{statistics.median(mib):,.0f} ({min(mib):,.0f}-{max(mib):,.0f}) | "
                  f"{statistics.median(peaks) / n / 1024:,.0f} KiB | {printed} |", flush=True)
            if not args.keep:
                shutil.rmtree(kb)
    finally:
        if args.keep:
            print(f"kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
