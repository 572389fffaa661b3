"""What the release surface costs (#25): extraction per release, and `verify --new` on one new release with and
without it, in one run.

1. Extraction: for each of a spread of releases of each engine, the surface files are read from the member store
   (they are there after one `gotchas verify`), then `extract` runs on them; the time of `extract` alone is
   reported per release, with the number of files and items (median of `--repeat` runs per release).
2. `verify --new`: for each engine, a copy of the committed ledger and surface file without its newest release,
   then `gotchas verify --new --engine ENGINE` into it, alternating runs
   without the surface (the verifier as before #25) and with it; medians and their ratio. First with the caches
   warm (archive, member store and verdicts), then cold: a cache of the run's own holding only the archives (hard
   links), as on a runner that keeps its downloads: the archive is read again and every check evaluated.

    .venv/bin/python bench/bench_surface.py [--repeat 5] [--releases 8]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine  # noqa: E402
from verifier import kb as kb_module  # noqa: E402
from verifier.ledger import Ledger, version_key  # noqa: E402
from verifier.sources.pypi import PyPISource  # noqa: E402
from verifier.surface.extract import extract  # noqa: E402
from verifier.surface.model import KINDS  # noqa: E402
from verifier.surface.read import SurfaceSpec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def spread(versions: list[str], n: int) -> list[str]:
    if len(versions) <= n:
        return versions
    return [versions[round(i * (len(versions) - 1) / (n - 1))] for i in range(n)]


def extraction(kb, engine: str, n: int, repeat: int) -> list[tuple[str, int, int, float]]:
    spec = SurfaceSpec.of(kb.engines[engine])
    source = PyPISource(kb.engines[engine])
    stored = Ledger(ROOT / "ledger").load_surfaces(engine)
    rows = []
    try:
        by_version = {r.version: r for r in source.releases()}
        for version in spread(stored.versions(), n):
            snapshot = source.open(by_version[version])
            try:
                chosen = spec.select(snapshot.paths())
                wanted = sorted({p for paths in chosen.values() for p in paths})
                snapshot.prefetch(wanted)
                contents = {p: d for p in wanted if (d := snapshot.read(p)) is not None}
            finally:
                snapshot.close()
            by_kind = {k: {p: contents[p] for p in chosen.get(k, []) if p in contents} for k in KINDS}
            primary = [p for p in spec.primary if p in contents]
            times, items = [], []
            for _ in range(repeat):
                start = time.perf_counter()
                items = extract(by_kind, primary)
                times.append(time.perf_counter() - start)
            rows.append((version, len(contents), len(items), statistics.median(times)))
    finally:
        source.close()
    return rows


def _cold_cache(folder: Path) -> None:
    """A cache of its own for one run: the user cache's archives (hard links: nothing is downloaded), and no
    verdicts and no member store, as on a runner that keeps only its downloads."""
    import os

    from verifier import cache

    archives = Path(cache.cache_dir()) / "archives"
    shutil.copytree(archives, folder / "archives", copy_function=os.link)
    os.environ["GOTCHAS_CACHE_DIR"] = str(folder)


def verify_new(repeat: int, engine: str = "vllm", cold: bool = False) -> tuple[float, float, str]:
    from verifier.cli import main

    kb = kb_module.load(ROOT)
    source = PyPISource(kb.engines[engine])
    newest = source.releases()[-1].version
    source.close()
    committed = Ledger(ROOT / "ledger")
    times = {"without": [], "with": []}
    for _ in range(repeat):
        for variant in ("without", "with"):
            with tempfile.TemporaryDirectory() as folder:
                saved_cache = os.environ.get("GOTCHAS_CACHE_DIR")
                if cold:
                    _cold_cache(Path(folder) / "cache")
                target = Path(folder) / "ledger"
                shutil.copytree(ROOT / "ledger", target)
                ledger = Ledger(target)
                surfaces = committed.load_surfaces(engine)
                surfaces.releases.pop(newest, None)
                ledger.save_surfaces(surfaces)
                engine_ledger = ledger.load(engine)
                if newest in engine_ledger.releases:
                    del engine_ledger.releases[newest]
                    ledger.save(engine_ledger)
                argv = ["verify", "--new", "--engine", engine, "--ledger", str(target)]
                if variant == "without":
                    import verifier.cli._verify as cli_verify

                    saved = cli_verify.SurfaceSpec.of
                    cli_verify.SurfaceSpec.of = staticmethod(lambda engine: None)  # the verifier as before #25
                try:
                    start = time.perf_counter()
                    with contextlib.redirect_stdout(io.StringIO()):
                        main(argv)
                    times[variant].append(time.perf_counter() - start)
                finally:
                    if variant == "without":
                        cli_verify.SurfaceSpec.of = saved
                    if cold:
                        if saved_cache is None:
                            os.environ.pop("GOTCHAS_CACHE_DIR", None)
                        else:
                            os.environ["GOTCHAS_CACHE_DIR"] = saved_cache
    return statistics.median(times["without"]), statistics.median(times["with"]), newest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--releases", type=int, default=8)
    args = parser.parse_args()
    print(machine())
    kb = kb_module.load(ROOT)
    for engine in ("vllm", "sglang"):
        rows = extraction(kb, engine, args.releases, args.repeat)
        print(f"\n{engine}: extraction (median of {args.repeat})")
        print("| release | files | items | extract |")
        print("|---|---:|---:|---:|")
        for version, files, items, seconds in sorted(rows, key=lambda r: version_key(r[0])):
            print(f"| {version} | {files} | {items} | {seconds:.2f} s |")
        print(f"median over releases: {statistics.median(r[3] for r in rows):.2f} s")
    for cold in (False, True):
        for engine in ("vllm", "sglang"):
            without, with_, newest = verify_new(args.repeat, engine, cold)
            caches = "verdicts and members cold (archives at hand)" if cold else "caches warm"
            print(f"\nverify --new --engine {engine} on {newest}, {caches} (median of {args.repeat}): without the "
                  f"surface {without:.2f} s, with it {with_:.2f} s ({with_ / without:.2f}x)")


if __name__ == "__main__":
    main()
