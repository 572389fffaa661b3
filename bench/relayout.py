"""Re-lay the files the KB reads in the latest release of each engine, and count the checks it flips.

For each engine: the files every check of the KB reads (every form that applies at the newest release),
from that release (through the package index and the cache), written into a folder; then, for each
formatter setting, a copy of the folder re-laid by it, and every check evaluated on both. A check that
holds on the original and not on the re-laid copy is a false alarm: a formatter changed how the code
looks, not what it says.

    .venv/bin/python bench/relayout.py [--engine vllm] [--keep DIR]

Settings: ruff format at line lengths 40, 88 and 200, each with and without magic trailing commas
(`skip-magic-trailing-comma`), and black at 40 and 88. Needs `ruff` and `black` on the PATH of the venv
(both in the `test` extra). Prints a Markdown table; exits 0.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from verifier import kb as kb_module  # noqa: E402
from verifier.entries import load_entry  # noqa: E402
from verifier.reading import FileCache, evaluate_check  # noqa: E402
from verifier.sources.directory import DirectorySource  # noqa: E402
from verifier.sources.pypi import PyPISource  # noqa: E402

BIN = Path(sys.executable).parent
SETTINGS = [(f"ruff {n}{' skip-magic' if skip else ''}", [str(BIN / "ruff"), "format", "--line-length", str(n),
             "--config", f"format.skip-magic-trailing-comma = {'true' if skip else 'false'}"])
            for n in (40, 88, 200) for skip in (False, True)]
SETTINGS += [(f"black {n}", [str(BIN / "black"), "--quiet", "--line-length", str(n)]) for n in (40, 88)]


def tree_of(kb, engine: str, checks, folder: Path) -> str:
    source = PyPISource(kb.engines[engine])
    release = source.releases()[-1]
    snapshot = source.open(release)
    paths = {f.path for c in checks for f in c.forms_at(release.version)}
    for path in sorted(paths):
        data = snapshot.read(path)
        if data is None:
            continue
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return release.version


def verdicts(engine: str, folder: Path, version: str, checks, archive_root: str) -> dict[str, str]:
    source = DirectorySource(engine, folder, archive_root="")
    snapshot = source.open(source.releases()[0])
    cache = FileCache()
    found = {}
    for entry_id, check in checks:
        result = evaluate_check(check, snapshot, version, cache)
        if result is not None:
            found[f"{entry_id}/{check.id}"] = result[1].status
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", action="append", help="only this engine (repeatable)")
    parser.add_argument("--keep", help="keep the trees in this folder")
    args = parser.parse_args()
    kb = kb_module.load(REPO)
    entries = [loaded.entry for loaded in (load_entry(p) for p in kb.entry_files()) if loaded.entry]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="relayout-"))
    rows = []
    for engine in args.engine or sorted(kb.engines):
        checks = [(e.id, c) for e in entries for c in e.checks if c.engine == engine]
        original = work / engine / "original"
        version = tree_of(kb, engine, [c for _, c in checks], original)
        before = verdicts(engine, original, version, checks, kb.engines[engine].archive_root)
        holding = {k for k, v in before.items() if v == "holds"}
        for name, command in SETTINGS:
            copy = work / engine / name.replace(" ", "-")
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(original, copy)
            done = subprocess.run([*command, str(copy)], capture_output=True, text=True)
            if done.returncode != 0:
                rows.append((engine, version, name, len(holding), "formatter failed", done.stderr[-300:]))
                continue
            after = verdicts(engine, copy, version, checks, kb.engines[engine].archive_root)
            flipped = sorted(k for k in holding if after.get(k) != "holds")
            rows.append((engine, version, name, len(holding), len(flipped), ", ".join(flipped[:8])
                         + (f" (+{len(flipped) - 8})" if len(flipped) > 8 else "")))
    print("| engine | release | formatter | checks holding | flipped | first flipped |")
    print("| --- | --- | --- | ---: | ---: | --- |")
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
