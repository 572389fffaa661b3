"""Verification matrix: how close `gotchas verify` comes to the floor, and how it compares with a naive script.

Issue: *Performance: measured against the alternatives, close to the floor.* Five parts:

  1. matrix   every vLLM check of the KB against every vLLM release since the engine's `oldest`
              (`gotchas verify --engine vllm`, fresh --ledger), download cache and member store warm,
              verdict cache cold and warm; against
                (a) naive: unpack each sdist into a temporary folder (tarfile.extractall, filter="data")
                    and evaluate every check over it with `evaluate()` and a DirectorySource
                    (no member store, no verdict cache, a fresh FileCache per release); measured on
                    one sdist in 3 by default (`--naive-every 1`: all of them, about 4 minutes here)
                    and scaled to every release;
                floor: the distinct (path, content) pairs the checks need, already in memory,
                    each parsed once and each distinct (check, content) evaluated once.
              Targets: product (verdicts cold) <= 1.5x floor; product >= 20x faster than (a).
  2. new      `gotchas verify --engine vllm --new` with a ledger that has every release but the newest
              (the committed ledger minus its newest release), the member store and verdict cache warm
              for the older releases only; and the download of the newest sdist (timed separately,
              into a scratch folder, sha256 checked). Target: download + at most 0.5 s.
  3. cold     first verification of the newest release from its sdist, empty member store and verdict
              cache; against one gzip + tar pass that reads every member. Target: <= 1.3x, peak RSS
              under 300 MB.
  4. scale    a synthetic KB (E entries x 5 checks, 20 files) over R releases of a synthetic git
              repository (tags v1.<r>.0; each file changes every 10 releases), verified with
              `gotchas verify --source git:PATH` (verdicts cold), then `gotchas site`. Sweeps entries
              and releases, plus one repository whose files stop changing after the first releases of
              the sweep (same distinct contents, more releases): time should follow distinct contents.
  5. profile  one more run of the product variant of each part under cProfile (the matrix with cold
              verdicts, `verify --new`, the cold first verification, the largest scale run): time by
              area of the verifier and the functions with the most own time.

Nothing is downloaded but the one timed download of part 2 (`--no-download` skips it). Every
child runs with its own GOTCHAS_CACHE_DIR in a temporary folder, whose `archives` and `members` are
copies of the user cache's made of hard links (the caches write a file by rename, so the user cache
is never changed). What a run did is counted by the verifier itself (`verifier.stats`: releases,
evaluations, archive passes, downloads...), read after the run: nothing in the verifier is wrapped or
replaced, and a timed run that downloaded an archive is refused. Each run is a fresh Python
process, started after `sync`; runs shorter than `--long` seconds are repeated (`--runs`, median
reported). The naive variant runs last, since the gigabytes it unpacks slow what follows it.

    .venv/bin/python bench/bench_matrix.py [--quick] [--runs 3] [--only matrix,new,cold,scale]
                                           [--scale-full] [--profile matrix,new,cold,scale|none] [--verbose] [--keep]

Prints Markdown tables on stdout; exits 0. Not collected by pytest (testpaths = ["tests"]).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from _common import machine, mib  # noqa: E402
from verifier.cache import cache_dir  # noqa: E402
from verifier.sources import SourceUnavailable  # noqa: E402
from verifier.sources.pypi import HttpClient  # noqa: E402

ENGINE = "vllm"
VERBOSE = False


def say(message: str) -> None:
    if VERBOSE:
        print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class _NoDownloads(HttpClient):
    """Index pages and range requests only: children never download a whole archive."""

    def download(self, url, dest, *, what, **kwargs):
        raise SourceUnavailable(f"{what}: not in the archive cache, and the benchmark does not download")


# =====================================================================================================
# Children: each run is one fresh process, `bench_matrix.py --child KIND --spec FILE --out FILE`.
# =====================================================================================================

def _rusage() -> dict:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"rss_kib": own.ru_maxrss, "cpu_s": own.ru_utime + own.ru_stime,
            "children_cpu_s": kids.ru_utime + kids.ru_stime, "children_rss_kib": kids.ru_maxrss}


def _load_pairs(kb_root: str, engine: str):
    from verifier import kb as kb_module
    from verifier.entries import load_entry
    from verifier.verify import selected_checks

    kb = kb_module.load(kb_root)
    entries = [loaded.entry for loaded in (load_entry(p) for p in kb.entry_files()) if loaded.entry is not None]
    return kb, list(selected_checks(entries, engine))


def child_cli(spec: dict) -> dict:
    """One `gotchas` command, in-process after the imports, with what it did (`verifier.stats`); its stdout is
    dropped. A run that downloaded an archive whole (the cache folder's `archives` is a tree of hard links to
    the user cache's, so a download never changes the user cache) is refused by the parent (`_counted`)."""
    from verifier import cli, stats

    os.chdir(spec["cwd"])
    profiler = _profiler(spec)
    out = io.StringIO()
    stats.counts.clear()
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    with contextlib.redirect_stdout(out):
        code = cli.main(spec["argv"])
    if profiler:
        profiler.disable()
    seconds = time.perf_counter() - start
    counts = {key: stats.counts[key] for key in COUNTS}
    if counts["downloads"] and not spec.get("allow_download"):
        raise SystemExit(f"the run downloaded {counts['downloads']} archive(s): the benchmark measures none; "
                         "run `gotchas verify --engine vllm` once to fill the archive cache")
    result = {"seconds": seconds, "exit": code, "counts": counts, "last_line": out.getvalue().strip()[-300:]}
    if profiler:
        result["profile"] = _profile_summary(profiler, seconds)
    return result


#: What a child run reports of `verifier.stats`.
COUNTS = ("releases", "evaluations", "helper_evaluations", "relocation_passes", "relocation_hints", "archive_passes",
          "store_misses", "downloads")


def child_floor(spec: dict) -> dict:
    """The distinct (path, content) pairs from the member store (not timed), then parse + evaluate each once."""
    from verifier import code
    from verifier.evaluate import evaluate_source
    from verifier.sources.archive import MemberStore

    kb, pairs = _load_pairs(spec["kb"], ENGINE)
    engine = kb.engines[ENGINE]
    forms_by_path: dict[str, list] = {}  # every form of every check, by the file it reads
    for _, check in pairs:
        for form in check.forms:
            forms_by_path.setdefault(form.path, []).append(form)
    wanted = {engine.archive_path(p): p for p in forms_by_path if engine.archive_path(p) is not None}
    store = MemberStore(Path(spec["members"]))
    versions: dict[tuple, list[str]] = {}  # (path, content digest) -> the releases that have it
    contents = []
    for release in spec["releases"]:
        found = store.answer(release["sha256"], set(wanted))
        if found is None:
            raise SystemExit(f"floor: the member store lacks {release['version']}")
        for member, data in sorted(found.contents.items()):
            key = (wanted[member], hashlib.sha256(data).digest())
            if key not in versions:
                versions[key] = []
                contents.append((key, wanted[member], data))
            versions[key].append(release["version"])
    evaluations = 0
    start = time.perf_counter()
    for key, path, data in contents:
        source = code.SourceFile(path, data)
        for form in forms_by_path[path]:  # each form once on each content, where it applies to a release of it
            if any(form.applies(v) for v in versions[key]):
                evaluate_source(form, source)
                evaluations += 1
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "distinct_files": len(contents),
            "distinct_bytes": sum(len(d) for _, _, d in contents), "evaluations": evaluations}


def child_naive(spec: dict) -> dict:
    """(a): unpack each sdist whole, then evaluate every check over the folder, release by release."""
    from verifier.reading import FileCache, evaluate_check
    from verifier.sources.directory import DirectorySource

    kb, pairs = _load_pairs(spec["kb"], ENGINE)
    engine = kb.engines[ENGINE]
    scratch = Path(spec["scratch"])
    statuses: dict[str, str] = {}
    unpack_s = evaluate_s = 0.0
    start = time.perf_counter()
    for release in spec["releases"]:
        t0 = time.perf_counter()
        folder = Path(tempfile.mkdtemp(prefix=f"naive-{release['version']}-", dir=scratch))
        with tarfile.open(release["path"], "r:gz") as tar:
            tar.extractall(folder, filter="data")
        tops = [p for p in folder.iterdir() if p.is_dir()]
        root = tops[0] if len(tops) == 1 else folder
        t1 = time.perf_counter()
        source = DirectorySource(ENGINE, root, version=release["version"], archive_root=engine.archive_root)
        snapshot = source.open(source.releases()[0])
        cache = FileCache()
        for entry, check in pairs:
            found = evaluate_check(check, snapshot, release["version"], cache)
            if found is not None:  # else no form of the check applies to this release
                statuses[f"{entry.id}/{check.id}@{release['version']}"] = found[1].status
        t2 = time.perf_counter()
        shutil.rmtree(folder)
        unpack_s += (t1 - t0) + (time.perf_counter() - t2)
        evaluate_s += t2 - t1
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "unpack_s": unpack_s, "evaluate_s": evaluate_s, "statuses": statuses,
            "releases": len(spec["releases"])}


def child_untar(spec: dict) -> dict:
    """Floor of a cold first read: one gzip + tar pass that reads every member; and gzip alone."""
    path = spec["path"]
    start = time.perf_counter()
    members = total = 0
    with open(path, "rb") as raw:
        with tarfile.open(fileobj=gzip.GzipFile(fileobj=raw, mode="rb"), mode="r|") as tar:
            for member in tar:
                if member.isreg():
                    total += len(tar.extractfile(member).read())
                    members += 1
    seconds = time.perf_counter() - start
    t0 = time.perf_counter()
    inflated = 0
    with open(path, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb")
        while chunk := stream.read(1 << 20):
            inflated += len(chunk)
    return {"seconds": seconds, "members": members, "member_bytes": total, "gzip_only_s": time.perf_counter() - t0,
            "inflated_bytes": inflated}


CHILDREN = {"cli": child_cli, "floor": child_floor, "naive": child_naive, "untar": child_untar}


def _profiler(spec: dict):
    if not spec.get("profile"):
        return None
    import cProfile
    return cProfile.Profile()


#: Areas of a `gotchas verify` run that do not call one another: (label, (file suffix, function), ...).
#: "reading files for checks" is `Reader.known` minus what it calls of the others.
AREAS = [
    ("evaluating checks (evaluate.evaluate_source)", [("verifier/evaluate.py", "evaluate_source")]),
    ("verdict cache lookups and writes (verdicts.VerdictCache.get/put)",
     [("verifier/verdicts.py", "get"), ("verifier/verdicts.py", "put")]),
    ("relocation hints: every Python file read + searched (locate.with_relocations)",
     [("verifier/locate.py", "with_relocations")]),
    ("archive or store pass for the check paths (pypi.PyPISnapshot.files)",
     [("verifier/sources/pypi/source.py", "files", ("verifier/verify.py", "verify_release"))]),
    ("evidence excerpts at the newest release (verify._excerpts)", [("verifier/verify.py", "_excerpts")]),
    ("ledger: record + write (ledger.EngineLedger.record, Ledger.save/save_evidence)",
     [("verifier/ledger/records.py", "record"), ("verifier/ledger/folder.py", "save"),
      ("verifier/ledger/folder.py", "save_evidence")]),
    ("loading + linting entries (cli._load)", [("verifier/cli/_common.py", "_load")]),
    ("index URL and CA bundle from pip's configuration (pip_config.configured_index_url/configured_cert)",
     [("verifier/sources/pypi/pip_config.py", "configured_index_url"),
      ("verifier/sources/pypi/pip_config.py", "configured_cert")]),
    ("listing releases (source.releases)", [("verifier/sources/pypi/source.py", "releases"),
                                          ("verifier/sources/git/source.py", "releases")]),
    ("report of the run (report.render_run, history.new_status_changes)",
     [("verifier/report/_run.py", "render_run"), ("verifier/history.py", "new_status_changes")]),
]


def _profile_summary(profiler, seconds: float) -> dict:
    import pstats

    stats = pstats.Stats(profiler)
    table = stats.stats  # (file, line, function) -> (primitive calls, calls, own time, cumulative time, callers)

    def cumulative(file_suffix: str, function: str, caller: tuple[str, str] | None = None) -> float:
        """Cumulative time of a function; with `caller`, only of its calls from that function."""
        total = 0.0
        for (f, _, fn), v in table.items():
            if fn != function or not f.endswith(file_suffix):
                continue
            if caller is None:
                total += v[3]
            else:
                total += sum(c[3] for (cf, _, cfn), c in v[4].items() if cfn == caller[1] and cf.endswith(caller[0]))
        return total

    total = sum(v[2] for v in table.values())
    areas = []
    for label, keys in AREAS:
        areas.append([label, sum(cumulative(*key) for key in keys)])
    known = ("verifier/reading.py", "known")
    inner = cumulative("verifier/verdicts.py", "get", known) + cumulative("verifier/reading.py", "_evaluate", known)
    areas.append(["reading files for checks: snapshot.read, sha256 (reading.Reader.known, rest)",
                  max(0.0, cumulative(*known) - inner)])
    areas.append(["everything else", max(0.0, total - sum(a[1] for a in areas))])
    own = sorted(((v[2], v[3], v[1], f, fn) for (f, _, fn), v in table.items()), reverse=True)[:15]
    top = [[_short(f), fn, calls, tt, ct] for tt, ct, calls, f, fn in own]
    return {"total": total, "wall": seconds, "areas": areas, "top_own": top}


def _short(path: str) -> str:
    for marker in ("/work/main/", "site-packages/", "/lib/python3"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def child_main(kind: str, spec_path: Path, out_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    result = CHILDREN[kind](spec)
    from verifier import helper

    helper.reap()  # worker processes, collected after the run: their CPU counts too
    result.update(_rusage())
    out_path.write_text(json.dumps(result))
    return 0


# =====================================================================================================
# Parent: set up, run the children, tabulate.
# =====================================================================================================

@dataclass
class Measured:
    """One variant: every run's figures."""

    label: str
    runs: list[dict] = field(default_factory=list)  # child results, plus "process_s"

    @property
    def times(self) -> list[float]:
        return [r["seconds"] for r in self.runs]

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def process(self) -> float:
        return statistics.median([r["process_s"] for r in self.runs])

    @property
    def cpu(self) -> float:
        return statistics.median([r["cpu_s"] + r["children_cpu_s"] for r in self.runs])

    @property
    def rss_mib(self) -> float:
        return max(r["rss_kib"] for r in self.runs) / 1024

    @property
    def last(self) -> dict:
        return self.runs[-1]


class Bench:
    def __init__(self, args, work: Path) -> None:
        self.args = args
        self.work = work
        self.seq = 0

    def child(self, kind: str, spec: dict, cache: Path | None) -> dict:
        """One fresh process; its result with the parent's wall time of the whole process."""
        self.seq += 1
        spec_path = self.work / "specs" / f"{self.seq:03d}-{kind}.json"
        spec_path.parent.mkdir(exist_ok=True)
        spec_path.write_text(json.dumps(spec))
        out_path = spec_path.with_suffix(".out.json")
        os.sync()  # no writeback of an earlier run's files during this one
        env = dict(os.environ)
        if cache is not None:
            env["GOTCHAS_CACHE_DIR"] = str(cache)
        command = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--spec", str(spec_path),
                   "--out", str(out_path)]
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        process_s = time.perf_counter() - start
        if done.returncode != 0 or not out_path.is_file():
            raise SystemExit(f"bench child {kind} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        result = json.loads(out_path.read_text())
        result["process_s"] = process_s
        if kind == "cli" and result["exit"] not in (0, 1):
            raise SystemExit(f"gotchas {' '.join(spec['argv'])} exited {result['exit']}: {done.stderr[-3000:]}"
                             f"\n{result['last_line']}")
        return result

    def measure(self, label: str, kind: str, make_spec, cache: Path | None, prepare=None,
                runs: int | None = None) -> Measured:
        """Runs until `runs` (default --runs) are done, or once when the first run is longer than --long."""
        measured = Measured(label)
        wanted = runs if runs is not None else self.args.runs
        for i in range(max(1, wanted)):
            if prepare:
                prepare(i)
            result = self.child(kind, make_spec(i), cache)
            measured.runs.append(result)
            say(f"{label}: run {i + 1}: {result['seconds']:.2f} s in process, {result['process_s']:.2f} s process, "
                f"{result['rss_kib'] / 1024:.0f} MiB")
            if result["seconds"] > self.args.long:
                break
        return measured

    def fresh(self, prefix: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.work))


def _link_tree(source: Path, target: Path) -> None:
    """A copy of `source` made of hard links (a plain copy across file systems)."""
    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
    shutil.copytree(source, target, copy_function=link, symlinks=True)


def _cache_folder(folder: Path, shared_archives: Path, members: Path | None = None) -> Path:
    folder.mkdir(parents=True)
    _link_tree(shared_archives, folder / "archives")  # a download would add to this copy, not to the user cache
    if members is not None and members.is_dir():
        _link_tree(members, folder / "members")
    return folder


# -- the plan: what the vLLM parts verify ---------------------------------------------------------------

@dataclass
class Plan:
    kb: Path  # a copy of the KB root (gotchas/ copied, site/ linked), taken at the start
    since: str
    releases: list[dict]  # version, kind, filename, sha256, size, url, path (cached archive or None)
    checks: int
    paths: int
    left_out: list[str]


def make_plan(work: Path) -> Plan:
    from verifier.ledger import version_key
    from verifier.sources import pypi
    from verifier.sources.pypi import downloads as _downloads

    kb_root = work / "kb"
    shutil.copytree(REPO / "gotchas", kb_root / "gotchas")
    shutil.copytree(REPO / "site", kb_root / "site")  # a copy: `gotchas site` refuses a linked folder
    kb, pairs = _load_pairs(str(kb_root), ENGINE)
    engine = kb.engines[ENGINE]
    since = engine.oldest or "0"
    source = pypi.PyPISource(engine, http=_NoDownloads())
    releases, left_out = [], []
    for release in source.releases():
        if version_key(release.version) < version_key(since):
            continue
        archive = source.archive_of(release)
        cached = _downloads.cache_path(archive)
        releases.append({"version": release.version, "kind": archive.kind, "filename": archive.filename,
                         "sha256": archive.sha256, "size": archive.size, "url": archive.url,
                         "path": str(cached) if cached.is_file() else None})
        if archive.kind == "sdist" and not cached.is_file():
            left_out.append(f"{release.version}: {archive.filename} is not in the archive cache")
    return Plan(kb_root, since, releases, len(pairs), len({c.path for _, c in pairs}), left_out)


def store_complete(members: Path, plan: Plan) -> list[str]:
    """Versions whose check members the store cannot answer."""
    from verifier.sources.archive import MemberStore

    kb, pairs = _load_pairs(str(plan.kb), ENGINE)
    engine = kb.engines[ENGINE]
    wanted = {engine.archive_path(c.path) for _, c in pairs} - {None}
    store = MemberStore(members)
    return [r["version"] for r in plan.releases if store.answer(r["sha256"], wanted) is None]


def ledger_statuses(ledger_file: Path) -> dict[str, str]:
    data = json.loads(ledger_file.read_text())
    return {f"{entry}/{check}@{version}": verdict["verdict"]
            for version, record in data["releases"].items()
            for entry, value in record["entries"].items()
            for check, verdict in value["checks"].items()}


# -- part 1: the matrix -----------------------------------------------------------------------------------

def part_matrix(b: Bench, plan: Plan, caches: dict) -> dict:
    warm = caches["warm"]
    db = warm / "verdicts.sqlite3"
    ledgers: list[Path] = []

    def cli_spec(i):
        ledger = b.fresh("ledger-matrix-")
        ledgers.append(ledger)
        return {"argv": ["verify", "--engine", ENGINE, "--ledger", str(ledger)], "cwd": str(plan.kb)}

    def cold(i):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)

    out = {}
    out["cold"] = b.measure("product, verdicts cold", "cli", cli_spec, warm, prepare=cold)
    shutil.copyfile(db, b.work / "verdicts-warm.sqlite3")
    product_statuses = ledger_statuses(ledgers[-1] / f"{ENGINE}.json")

    def warm_db(i):
        cold(i)
        shutil.copyfile(b.work / "verdicts-warm.sqlite3", db)

    out["warm"] = b.measure("product, verdicts warm", "cli", cli_spec, warm, prepare=warm_db)
    out["floor"] = b.measure("floor", "floor", lambda i: {"kb": str(plan.kb), "members": str(warm / "members"),
                                                           "releases": plan.releases}, warm)
    out["results"] = len(product_statuses)
    out["product_statuses"] = product_statuses
    return out


def part_naive(b: Bench, plan: Plan, matrix: dict) -> None:
    """(a), run last of all: it writes gigabytes of unpacked files, whose writeback and page-cache
    reclaim would otherwise slow the variants measured after it."""
    sdists = [r for r in plan.releases if r["kind"] == "sdist" and r["path"]]
    sample = sdists[::b.args.naive_every]
    scratch = b.fresh("naive-")
    matrix["naive"] = b.measure("naive", "naive", lambda i: {"kb": str(plan.kb), "releases": sample,
                                                             "scratch": str(scratch)}, None)
    matrix["naive_sample"] = len(sample)
    matrix["naive_sdists"] = len(sdists)
    naive_statuses = matrix["naive"].last.pop("statuses")
    product_statuses = matrix.pop("product_statuses")
    common = naive_statuses.keys() & product_statuses.keys()
    matrix["agree"] = (len(common), sum(naive_statuses[k] != product_statuses[k] for k in common))


# -- part 2: one new release ------------------------------------------------------------------------------

def part_new(b: Bench, plan: Plan, caches: dict, shared_archives: Path) -> dict:
    from verifier.sources import pypi
    from verifier.sources.pypi import downloads as _downloads

    newest = plan.releases[-1]
    older = plan.releases[:-1]
    out: dict = {"version": newest["version"], "size": newest["size"]}
    warm_db_file = b.work / "verdicts-warm.sqlite3"
    if not warm_db_file.is_file():  # part 1 not run: fill a verdict cache once (not timed)
        say("new: filling a verdict cache first")
        ledger = b.fresh("ledger-fill-")
        b.child("cli", {"argv": ["verify", "--engine", ENGINE, "--ledger", str(ledger)], "cwd": str(plan.kb)},
                caches["warm"])
        shutil.copyfile(caches["warm"] / "verdicts.sqlite3", warm_db_file)

    # The verdict cache as the previous nightly run left it: without the contents first seen in the newest release.
    members = caches["warm"] / "members"

    from verifier import kb as kb_module
    engine = kb_module.load(plan.kb).engines[ENGINE]
    wanted = {engine.archive_path(c.path) for _, c in _load_pairs(str(plan.kb), ENGINE)[1]} - {None}

    def blob_shas(release: dict) -> set[str]:
        """The contents of the check paths in a release, by sha256 (the store's manifest of the archive)."""
        data = json.loads(zlib.decompress((members / f"{release['sha256']}.json.z").read_bytes()))
        return {sha for path, sha in data["members"].items() if path in wanted}

    seen_before = set().union(*(blob_shas(r) for r in older))
    new_contents = blob_shas(newest) - seen_before
    before_db = b.work / "verdicts-before-newest.sqlite3"
    shutil.copyfile(warm_db_file, before_db)
    with sqlite3.connect(before_db) as connection:
        removed = 0
        for sha in new_contents:
            removed += connection.execute("DELETE FROM verdicts WHERE sha256 = ?", (sha,)).rowcount
    connection.close()
    out["new_contents"] = len(new_contents)
    out["removed_verdicts"] = removed

    # The committed ledger without its newest release.
    committed = REPO / "ledger"
    from verifier.ledger import Ledger, encode
    full = Ledger(committed).load(ENGINE)
    assert newest["version"] in full.releases, "the committed ledger lacks the newest release"
    del full.releases[newest["version"]]
    without_newest = encode(full)

    new_cache = caches["new"]
    manifest = new_cache / "members" / f"{newest['sha256']}.json.z"

    def spec(i):
        ledger = b.fresh("ledger-new-")
        shutil.copytree(committed, ledger, dirs_exist_ok=True)
        (ledger / f"{ENGINE}.json").write_text(without_newest)
        return {"argv": ["verify", "--engine", ENGINE, "--new", "--ledger", str(ledger)], "cwd": str(plan.kb)}

    def prepare(i):
        _copy_db(before_db, new_cache)
        manifest.unlink(missing_ok=True)  # the store has never seen the new archive: one pass over it

    out["run"] = b.measure("verify --new", "cli", spec, new_cache, prepare=prepare)
    out["again"] = (spec, prepare, new_cache)
    # The same run when the newest release is already in the store and its verdicts cached: bookkeeping only.
    out["bookkeeping"] = b.measure("verify --new, newest already in store and verdict cache", "cli", spec,
                                   caches["warm"], prepare=lambda i: _copy_db(warm_db_file, caches["warm"]))
    out["again_bookkeeping"] = (spec, lambda i: _copy_db(warm_db_file, caches["warm"]), caches["warm"])
    if b.args.no_download:
        out["download"] = out["downloading"] = None
        return out
    # The download, timed on its own: into a scratch folder, sha256 checked as the product does (median of runs).
    http = HttpClient(cafile=pypi.configured_cert())
    timings = []
    for _ in range(max(1, b.args.runs)):
        scratch = b.fresh("download-")
        start = time.perf_counter()
        try:
            digest = http.download(newest["url"], scratch / newest["filename"], what=newest["filename"],
                                   size=newest["size"], limit=_downloads.MAX_ARCHIVE_BYTES)
            timings.append(time.perf_counter() - start)
            out["download"] = {"seconds": statistics.median(timings), "runs": len(timings),
                               "ok": digest == newest["sha256"]}
        except SourceUnavailable as exc:
            out["download"] = {"error": str(exc)}
            break
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    # The whole nightly case: the sdist is not in the cache, and the run downloads it (reading it as it comes).
    downloading = caches["download"]
    own_manifest = downloading / "members" / f"{newest['sha256']}.json.z"

    def download_spec(i):
        return {**spec(i), "allow_download": True}

    def prepare_download(i):
        _copy_db(before_db, downloading)
        own_manifest.unlink(missing_ok=True)
        for leftover in (downloading / "archives").iterdir():
            leftover.unlink()

    out["downloading"] = b.measure("verify --new, downloading the new sdist in the run", "cli", download_spec,
                                   downloading, prepare=prepare_download)
    return out


def _copy_db(source: Path, cache: Path) -> None:
    db = cache / "verdicts.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, db)


# -- part 3: cold first verification ----------------------------------------------------------------------

def part_cold(b: Bench, plan: Plan, caches: dict) -> dict:
    newest = plan.releases[-1]
    cold = caches["cold"]

    def prepare(i):
        shutil.rmtree(cold / "members", ignore_errors=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{cold / 'verdicts.sqlite3'}{suffix}").unlink(missing_ok=True)

    def spec(i):
        return {"argv": ["verify", "--engine", ENGINE, "--release", newest["version"],
                         "--ledger", str(b.fresh("ledger-cold-"))], "cwd": str(plan.kb)}

    out = {"version": newest["version"], "size": newest["size"]}
    out["run"] = b.measure("first verification, empty store and verdicts", "cli", spec, cold, prepare=prepare)
    out["again"] = (spec, prepare, cold)
    out["untar"] = b.measure("gzip + tar pass reading every member", "untar", lambda i: {"path": newest["path"]}, None)
    return out


# -- part 4: scale ----------------------------------------------------------------------------------------

SYNTH_FILES = 20
SYNTH_SLOTS = 50
#: A file changes at release r when (r + its index) % CHANGE_EVERY == 0: 2 of the 20 files per release.
CHANGE_EVERY = 10

SYNTH_ENGINES = """\
synth:
  name: Synth
  package: synth-engine
  repository: https://example.invalid/synth
  tag_pattern: "v{version}"
  oldest: "1.0.0"
"""

SYNTH_ENTRY = """\
---
id: {id}
title: Synthetic gotcha number {i} of the scale benchmark
scheme: ops
concepts: [scheduling]
engines: [synth]
references:
  - https://example.org/synthetic/{i}
checks:
  - id: defined
    claim: The handler exists.
    path: synth/mod{j:02d}.py
    defines: Worker{k}.handle
  - id: adds
    claim: The handler adds the slot number.
    path: synth/mod{j:02d}.py
    in: Worker{k}.handle
    contains: total = x + {k}
  - id: warns
    claim: The handler warns.
    path: synth/mod{j:02d}.py
    in: Worker{k}.handle
    string: worker {k} is saturated
  - id: limit
    claim: The limit is a number.
    path: synth/mod{j:02d}.py
    matches: 'LIMIT_K{k} = \\d+'
  - id: no-sleep
    claim: The handler never sleeps.
    path: synth/mod{j:02d}.py
    in: Worker{k}.handle
    absent: time.sleep($X)
---

## Symptom

Synthetic symptom {i}.

## Root cause

Synthetic cause {i}.

## Workaround

Synthetic workaround {i}.
"""


def synth_module(j: int, revision: int) -> bytes:
    """Module j at a revision: 50 classes; in each revision a few `adds` checks stop or start holding."""
    out = [f'"""Synthetic module {j}, revision {revision}."""', "import logging", "import time", "",
           "logger = logging.getLogger(__name__)", ""]
    for k in range(SYNTH_SLOTS):
        flipped = revision > 0 and (k + j + revision) % 13 == 0
        out += [f"LIMIT_K{k} = {100 + k + revision}", "", "",
                f"class Worker{k}:",
                "    def handle(self, request, x):",
                "        if request.priority is None:",
                f"            request.priority = {k}",
                f"        total = x {'-' if flipped else '+'} {k}",
                f'        logger.warning("worker {k} is saturated at %d", total)',
                "        return total", "", ""]
    return ("\n".join(out) + "\n").encode()


def _revision(j: int, r: int, freeze: int | None) -> int:
    last = min(r, freeze - 1) if freeze else r
    return sum(1 for q in range(1, last + 1) if (q + j) % CHANGE_EVERY == 0)


def make_synth_repo(path: Path, releases: int, freeze: int | None = None) -> int:
    """A bare repository with one commit per release, tagged v1.<r>.0; the number of distinct (file, content)."""
    subprocess.run(["git", "init", "--bare", "--quiet", "--initial-branch=main", str(path)], check=True)
    importer = subprocess.Popen(["git", "-C", str(path), "fast-import", "--quiet", "--done"], stdin=subprocess.PIPE)
    write = importer.stdin.write
    previous: dict[str, int] = {}
    distinct = set()
    for r in range(releases):
        message = f"release 1.{r}.0\n".encode()
        write(b"commit refs/heads/main\nmark :%d\n" % (r + 1))
        write(b"committer bench <bench@example.invalid> %d +0000\n" % (1_700_000_000 + r * 86_400))
        write(b"data %d\n%s\n" % (len(message), message))
        files = {f"synth/mod{j:02d}.py": (j, _revision(j, r, freeze)) for j in range(SYNTH_FILES)}
        for name, (j, revision) in files.items():
            distinct.add((name, revision))
            if previous.get(name) != revision:
                data = synth_module(j, revision)
                write(b"M 100644 inline %s\ndata %d\n" % (name.encode(), len(data)))
                write(data + b"\n")
        changelog = f"release 1.{r}.0\n".encode()  # every release is a distinct commit
        write(b"M 100644 inline CHANGELOG.md\ndata %d\n%s\n" % (len(changelog), changelog))
        write(b"\nreset refs/tags/v1.%d.0\nfrom :%d\n\n" % (r, r + 1))
        previous = {name: revision for name, (_, revision) in files.items()}
    write(b"done\n")
    importer.stdin.close()
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")
    return len(distinct)


def make_synth_kb(root: Path, entries: int) -> None:
    folder = root / "gotchas"
    folder.mkdir(parents=True)
    for name in ("schemes.yaml", "concepts.yaml"):
        shutil.copyfile(REPO / "gotchas" / name, folder / name)
    (folder / "engines.yaml").write_text(SYNTH_ENGINES)
    shutil.copytree(REPO / "site", root / "site")  # a copy: `gotchas site` refuses a linked folder
    for i in range(entries):
        entry_id = f"synth-entry-{i:04d}"
        (folder / f"{entry_id}.md").write_text(
            SYNTH_ENTRY.format(id=entry_id, i=i, j=i % SYNTH_FILES, k=i // SYNTH_FILES))


@dataclass
class ScaleRun:
    entries: int
    releases: int
    freeze: int | None
    distinct: int = 0
    verify: Measured | None = None
    verify_warm: Measured | None = None
    site: Measured | None = None
    verdict_rows: int = 0
    ledger_bytes: int = 0
    site_bytes: int = 0
    pages: str = ""


def part_scale(b: Bench) -> dict:
    # (entries sweep, at releases), (releases sweep, at entries); then the largest release count again with
    # files that stop changing after the smallest one: as many distinct contents as the smallest, more releases.
    if b.args.scale_full:
        (sweep_e, at_r), (sweep_r, at_e) = ((250, 500, 1000), 100), ((25, 50, 100), 1000)
    elif b.args.quick:
        (sweep_e, at_r), (sweep_r, at_e) = ((50, 100, 200), 5), ((5, 10, 20), 50)
    else:
        (sweep_e, at_r), (sweep_r, at_e) = ((100, 200, 400), 10), ((10, 20, 40), 100)
    configs: list[tuple[int, int, int | None]] = []
    for config in [(e, at_r, None) for e in sweep_e] + [(at_e, r, None) for r in sweep_r] + \
            [(at_e, sweep_r[-1], sweep_r[0])]:
        if config not in configs:
            configs.append(config)
    target_configs = {(at_e, sweep_r[0], None), (at_e, sweep_r[-1], sweep_r[0])}
    runs: list[ScaleRun] = []
    repos: dict[tuple[int, int | None], tuple[Path, int]] = {}
    kbs: dict[int, Path] = {}
    gen_start = time.perf_counter()
    for entries, releases, freeze in configs:
        if (releases, freeze) not in repos:
            path = b.work / "synth" / f"repo-{releases}-{freeze or 'all'}.git"
            path.parent.mkdir(exist_ok=True)
            repos[(releases, freeze)] = (path, make_synth_repo(path, releases, freeze))
        if entries not in kbs:
            kbs[entries] = b.work / "synth" / f"kb-{entries}"
            make_synth_kb(kbs[entries], entries)
    generation_s = time.perf_counter() - gen_start
    largest = max(configs, key=lambda c: (c[0] * c[1], c[2] is None))
    for entries, releases, freeze in configs:
        repo, distinct = repos[(releases, freeze)]
        run = ScaleRun(entries, releases, freeze, distinct)
        label = f"scale E={entries} R={releases}" + (f" frozen after {freeze}" if freeze else "")
        caches: list[Path] = []
        ledgers: list[Path] = []

        def spec(i, repo=repo, entries=entries, ledgers=ledgers):
            ledger = b.fresh("ledger-synth-")
            ledgers.append(ledger)
            return {"argv": ["verify", "--engine", "synth", "--source", f"git:{repo}", "--ledger", str(ledger)],
                    "cwd": str(kbs[entries])}

        def cache_for(i, caches=caches):
            caches.append(b.fresh("cache-synth-"))

        # A fresh cache folder per run: verdicts cold.
        run.verify = Measured(label)
        # The two runs target 4 compares get the usual repeats (when short): single runs vary by tens of percent.
        repeats = b.args.runs if (entries, releases, freeze) in target_configs else b.args.scale_runs
        for i in range(max(1, repeats)):
            cache_for(i)
            result = b.child("cli", spec(i), caches[-1])
            run.verify.runs.append(result)
            say(f"{label}: verify {result['seconds']:.2f} s, {result['rss_kib'] / 1024:.0f} MiB")
            if result["seconds"] > b.args.long:
                break
        db = caches[-1] / "verdicts.sqlite3"
        with contextlib.closing(sqlite3.connect(db)) as connection:
            run.verdict_rows = connection.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
        ledger = ledgers[-1]
        run.ledger_bytes = sum(p.stat().st_size for p in ledger.rglob("*.json"))
        if (entries, releases, freeze) == largest:
            warm_cache = caches[-1]
            run.verify_warm = b.measure(f"{label}, verdicts warm", "cli", spec, warm_cache, runs=1)
        site_out: list[Path] = []

        def site_spec(i, ledger=ledger, entries=entries, site_out=site_out):
            site_out.append(b.fresh("site-"))
            return {"argv": ["site", "--out", str(site_out[-1] / "out"), "--ledger", str(ledger)],
                    "cwd": str(kbs[entries])}

        run.site = b.measure(f"{label}: site", "cli", site_spec, caches[-1], runs=1)
        run.site_bytes = sum(p.stat().st_size for p in (site_out[-1] / "out").rglob("*") if p.is_file())
        run.pages = run.site.last["last_line"].removeprefix("built ").split(" into ")[0]
        runs.append(run)
        for folder in site_out:
            shutil.rmtree(folder, ignore_errors=True)
    return {"runs": runs, "generation_s": generation_s, "largest": largest,
            "profiled": (at_e, sweep_r[-1], sweep_r[0]),
            "by_e": [next(r for r in runs if (r.entries, r.releases, r.freeze) == (e, at_r, None)) for e in sweep_e],
            "by_r": [next(r for r in runs if (r.entries, r.releases, r.freeze) == (at_e, n, None)) for n in sweep_r],
            "frozen": [r for r in runs if r.freeze]}


# -- part 5: profiles -------------------------------------------------------------------------------------

def part_profile(b: Bench, plan: Plan | None, caches: dict | None, results: dict) -> list[tuple[str, dict]]:
    """One more run of each chosen variant under cProfile, set up as in its part."""
    profiles = []
    which = set(b.args.profile.split(","))
    if "matrix" in which and "matrix" in results:
        warm = caches["warm"]
        for suffix in ("", "-wal", "-shm"):
            Path(f"{warm / 'verdicts.sqlite3'}{suffix}").unlink(missing_ok=True)  # verdicts cold, as in part 1
        result = b.child("cli", {"argv": ["verify", "--engine", ENGINE, "--ledger", str(b.fresh("ledger-prof-"))],
                                 "cwd": str(plan.kb), "profile": True}, warm)
        profiles.append(("part 1, product, store warm, verdicts cold", result))

    def again(part: str, key: str, label: str) -> None:
        """The run a part kept under `key` (its spec, its preparation, its cache), once more, profiled."""
        spec, prepare, cache = results[part].pop(key)
        prepare(0)
        profiles.append((label, b.child("cli", {**spec(0), "profile": True}, cache)))

    if "new" in which and "new" in results:
        again("new", "again", "part 2, `verify --new`")
        again("new", "again_bookkeeping", "part 2, `verify --new`, newest already in store and verdict cache")
    if "cold" in which and "cold" in results:
        again("cold", "again", "part 3, first verification of the newest release")
    if "scale" in which and "scale" in results:
        entries, releases, freeze = results["scale"]["profiled"]  # the run where most releases change nothing
        repo = b.work / "synth" / f"repo-{releases}-{freeze or 'all'}.git"
        result = b.child("cli", {"argv": ["verify", "--engine", "synth", "--source", f"git:{repo}",
                                          "--ledger", str(b.fresh("ledger-prof-"))],
                                 "cwd": str(b.work / "synth" / f"kb-{entries}"), "profile": True},
                         b.fresh("cache-prof-"))
        profiles.append((f"part 4, scale E={entries} R={releases}, files frozen after {freeze}, verdicts cold",
                         result))
    return profiles


# -- output -----------------------------------------------------------------------------------------------

def _evals(counts: dict) -> str:
    helped = counts.get("helper_evaluations", 0)
    return f"{counts['evaluations']} evaluations" + (f" ({helped} in the helper process)" if helped else "")


def _row(cells: list) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _times(m: Measured) -> str:
    return f"{m.median:.2f}" + (f" ({min(m.times):.2f}-{max(m.times):.2f})" if len(m.times) > 1 else "")


def print_report(b: Bench, plan: Plan | None, results: dict, loads: tuple, wall: float) -> None:
    print(f"Machine: {machine()}")
    print(f"Load average (1 min) before/after: {loads[0]:.2f} / {loads[1]:.2f}; benchmark wall time {wall:.0f} s")
    if plan is not None:
        kinds = {}
        for r in plan.releases:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        print(f"Workload: {plan.checks} {ENGINE} checks on {plan.paths} paths x {len(plan.releases)} releases "
              f"since {plan.since} ({', '.join(f'{n} {k}s' for k, n in kinds.items())})"
              + (f"; left out: {'; '.join(plan.left_out)}" if plan.left_out else ""))
    print()
    print_main_table(b, plan, results, targets := [])
    print_scale(b, results, targets)
    print_targets_and_profiles(results, targets)


def print_main_table(b: Bench, plan: Plan | None, results: dict, targets: list) -> None:
    args = b.args
    if not {"matrix", "new", "cold"} & results.keys():
        return
    print("Times are seconds inside the measured process, after its imports (median of the runs, min-max); "
          "'process s' is the whole fresh process as a user waits for it (interpreter start, imports, "
          "index page). Peak RSS: the largest of the runs' own process.")
    print()
    print(_row(["part", "variant", "runs", "median s (min-max)", "process s", "CPU s", "peak RSS", "ratio", "note"]))
    print(_row(["---"] * 3 + ["---:"] * 5 + ["---"]))

    if "matrix" in results:
        m = results["matrix"]
        floor, cold, warm, naive = m["floor"], m["cold"], m["warm"], m["naive"]
        scale = m["naive_sdists"] / m["naive_sample"]  # sampled releases: extrapolated to every sdist
        naive_all = naive.median * scale * len(plan.releases) / m["naive_sdists"]
        fl = floor.median
        c_counts = cold.last["counts"]
        w_counts = warm.last["counts"]
        print(_row(["1 matrix", "floor: distinct (path, content) in memory, parse + evaluate each distinct (check, content) once",
                    len(floor.runs), _times(floor), f"{floor.process:.2f}", f"{floor.cpu:.2f}", f"{floor.rss_mib:.0f} MiB",
                    "1.00 x floor", f"{floor.last['distinct_files']} distinct files, {mib(floor.last['distinct_bytes'])}; "
                                    f"{floor.last['evaluations']} evaluations"]))
        print(_row(["1 matrix", "product `gotchas verify`, store warm, verdicts cold", len(cold.runs), _times(cold),
                    f"{cold.process:.2f}", f"{cold.cpu:.2f}", f"{cold.rss_mib:.0f} MiB", f"{cold.median / fl:.2f} x floor",
                    f"{m['results']} results; {_evals(c_counts)}, {c_counts['relocation_passes']} "
                    f"relocation passes ({c_counts['relocation_hints']} hints), {c_counts['archive_passes']} archive passes"]))
        print(_row(["1 matrix", "product `gotchas verify`, store warm, verdicts warm", len(warm.runs), _times(warm),
                    f"{warm.process:.2f}", f"{warm.cpu:.2f}", f"{warm.rss_mib:.0f} MiB", f"{warm.median / fl:.2f} x floor",
                    f"{_evals(w_counts)}, {w_counts['relocation_passes']} relocation passes"]))
        sample_note = (f"measured on {m['naive_sample']} of {m['naive_sdists']} sdists (one in {args.naive_every}), "
                       if m["naive_sample"] != m["naive_sdists"] else f"measured on the {m['naive_sdists']} sdists, ")
        print(_row(["1 matrix", "(a) naive: extractall each sdist + evaluate() over a DirectorySource",
                    len(naive.runs), _times(naive), f"{naive.process:.2f}", f"{naive.cpu:.2f}", f"{naive.rss_mib:.0f} MiB",
                    f"{naive_all / cold.median:.1f} x product cold; {naive_all / warm.median:.0f} x product warm",
                    f"{sample_note}{naive.last['unpack_s']:.1f} s unpacking + {naive.last['evaluate_s']:.1f} s evaluating; "
                    f"ratios use {naive_all:.1f} s, scaled to all {len(plan.releases)} releases; "
                    f"statuses agree with the product on {m['agree'][0] - m['agree'][1]}/{m['agree'][0]}"]))
        targets.append(("1: product (verdicts cold) <= 1.5x floor", f"{cold.median / fl:.2f}x", cold.median / fl <= 1.5))
        targets.append(("1: product >= 20x faster than (a), verdicts cold", f"{naive_all / cold.median:.1f}x",
                        naive_all / cold.median >= 20))
        targets.append(("1: product >= 20x faster than (a), verdicts warm", f"{naive_all / warm.median:.1f}x",
                        naive_all / warm.median >= 20))

    if "new" in results:
        n = results["new"]
        run, book = n["run"], n["bookkeeping"]
        counts = run.last["counts"]
        download = n["download"]
        if download and "seconds" in download:
            dl = (f"download of {n['version']} sdist ({mib(n['size'])}) on its own, median of {download['runs']}: "
                  f"{download['seconds']:.2f} s ({n['size'] / download['seconds'] / 1024 ** 2:.1f} MiB/s), "
                  f"sha256 {'ok' if download['ok'] else 'MISMATCH'}")
        elif download:
            dl = f"download failed: {download['error']}"
        else:
            dl = f"download not measured (--no-download); the archive has {mib(n['size'])}"
        print(_row(["2 new", f"`verify --new`: {n['version']} new (store and verdicts warm for older releases only)",
                    len(run.runs), _times(run), f"{run.process:.2f}", f"{run.cpu:.2f}", f"{run.rss_mib:.0f} MiB", "-",
                    f"{counts['releases']} release verified, {counts['archive_passes']} archive pass, "
                    f"{_evals(counts)} ({n['new_contents']} contents new in {n['version']}), "
                    f"{counts['relocation_passes']} relocation passes; + {dl}"]))
        b_counts = book.last["counts"]
        print(_row(["2 new", "`verify --new`, newest already in store and verdict cache (bookkeeping only)",
                    len(book.runs), _times(book), f"{book.process:.2f}", f"{book.cpu:.2f}", f"{book.rss_mib:.0f} MiB", "-",
                    f"{b_counts['releases']} release verified, {_evals(b_counts)}"]))
        downloading = n["downloading"]
        if downloading is not None:
            d_counts = downloading.last["counts"]
            print(_row(["2 new", f"`verify --new`: {n['version']} new and not downloaded yet: the run downloads its "
                                 f"sdist and reads it as it comes",
                        len(downloading.runs), _times(downloading), f"{downloading.process:.2f}", f"{downloading.cpu:.2f}",
                        f"{downloading.rss_mib:.0f} MiB", "-",
                        f"{d_counts['archive_passes']} archive pass, {_evals(d_counts)}; "
                        f"download alone {download['seconds']:.2f} s" if download and "seconds" in download else "-"]))
        if download and "seconds" in download and downloading is not None:
            dl_s = download["seconds"]
            added = downloading.median - book.median
            targets.append(("2: the incremental cost of one new release at most download + 0.5 s (the run with the "
                            "new sdist downloaded in it, less the same run with nothing new)",
                            f"{added:.2f} s ({downloading.median:.2f} - {book.median:.2f}) against "
                            f"{dl_s:.2f} + 0.5 s", added <= dl_s + 0.5))
            targets.append(("2, a stricter reading: the whole `verify --new` run, download included, at most "
                            "download + 0.5 s",
                            f"{downloading.median:.2f} s in process ({downloading.process:.2f} s whole process) "
                            f"against {dl_s:.2f} + 0.5 s", downloading.median <= dl_s + 0.5))
        else:
            targets.append(("2: `verify --new` <= download + 0.5 s (archive cached, download not measured)",
                            f"{run.median:.2f} s in process ({run.process:.2f} s whole process) + download; "
                            f"{run.median - book.median:.2f} s over the run with nothing new",
                            run.median - book.median <= 0.5))

    if "cold" in results:
        c = results["cold"]
        run, untar = c["run"], c["untar"]
        counts = run.last["counts"]
        print(_row(["3 cold", f"floor: one gzip + tar pass reading every member of {c['version']} sdist",
                    len(untar.runs), _times(untar), f"{untar.process:.2f}", f"{untar.cpu:.2f}", f"{untar.rss_mib:.0f} MiB",
                    "1.00 x floor", f"{untar.last['members']} files, {mib(untar.last['member_bytes'])} from "
                                    f"{mib(c['size'])}; gzip alone {untar.last['gzip_only_s']:.2f} s"]))
        print(_row(["3 cold", f"first verification of {c['version']}: empty store, empty verdicts",
                    len(run.runs), _times(run), f"{run.process:.2f}", f"{run.cpu:.2f}", f"{run.rss_mib:.0f} MiB",
                    f"{run.median / untar.median:.2f} x floor",
                    f"{counts['archive_passes']} archive pass (sha256 of the archive checked once), "
                    f"{_evals(counts)}, {counts['relocation_passes']} relocation passes; "
                    f"{run.median / untar.last['gzip_only_s']:.2f} x gzip alone"]))
        targets.append(("3: first verification <= 1.3x one decompression", f"{run.median / untar.median:.2f}x",
                        run.median / untar.median <= 1.3))
        targets.append(("3: peak RSS < 300 MB", f"{run.rss_mib * 1.048576:.0f} MB ({run.rss_mib:.0f} MiB)",
                        run.rss_mib * 1.048576 < 300))

    print()


def print_scale(b: Bench, results: dict, targets: list) -> None:
    if "scale" in results:
        s = results["scale"]
        print(f"Scale: synthetic KB, 5 checks per entry on {SYNTH_FILES} files of ~{len(synth_module(0, 0)) // 1024} KiB; "
              f"each file changes every {CHANGE_EVERY} releases; in each new revision of a file about 1 in 13 `adds` "
              f"checks flips status. Source git:PATH (tags v1.<r>.0), verdicts cold, fresh ledger; then `gotchas site`. "
              f"Generation took {s['generation_s']:.1f} s (not counted).")
        print()
        print(_row(["entries", "checks", "releases", "distinct contents", "results", "evaluations (verdicts cached)",
                    "relocation hints",
                    "verify s (process s)", "verify CPU s", "ms per 1k results", "peak RSS", "ledger", "site s (process s)", "site RSS",
                    "site"]))
        print(_row(["---:"] * 14 + ["---"]))
        for run in s["runs"]:
            v, st = run.verify, run.site
            counts = v.last["counts"]
            results_n = run.entries * 5 * run.releases
            releases = f"{run.releases}" + (f" (files frozen after {run.freeze})" if run.freeze else "")
            print(_row([run.entries, run.entries * 5, releases, run.distinct, f"{results_n:,}",
                        f"{counts['evaluations']:,} ({run.verdict_rows:,})", counts["relocation_hints"],
                        f"{_times(v)} ({v.process:.1f})", f"{v.cpu:.2f}", f"{v.median / results_n * 1e6:.0f}",
                        f"{v.rss_mib:.0f} MiB", mib(run.ledger_bytes), f"{st.median:.2f} ({st.process:.1f})",
                        f"{st.rss_mib:.0f} MiB", f"{run.pages}; {mib(run.site_bytes)}"]))
            if run.verify_warm is not None:
                w = run.verify_warm
                print(_row([run.entries, run.entries * 5, f"{releases}, verdicts warm", run.distinct, f"{results_n:,}",
                            f"{w.last['counts']['evaluations']:,}", w.last["counts"]["relocation_hints"],
                            f"{_times(w)} ({w.process:.1f})", f"{w.cpu:.2f}", f"{w.median / results_n * 1e6:.0f}",
                            f"{w.rss_mib:.0f} MiB", "", "", "", ""]))
        print()
        by_e, by_r, frozen = s["by_e"], s["by_r"], s["frozen"]
        top_e = by_r[0].entries
        if len(by_e) > 1:
            print(f"- Entries x{by_e[-1].entries / by_e[0].entries:.0f} ({by_e[0].entries} -> {by_e[-1].entries}, "
                  f"R={by_e[0].releases}): verify x{by_e[-1].verify.median / by_e[0].verify.median:.2f}, "
                  f"site x{by_e[-1].site.median / by_e[0].site.median:.2f}.")
        if len(by_r) > 1:
            r0, r1 = by_r[0], by_r[-1]
            print(f"- Releases x{r1.releases / r0.releases:.0f} ({r0.releases} -> {r1.releases}, E={top_e}): distinct "
                  f"contents x{r1.distinct / r0.distinct:.2f}, evaluations "
                  f"x{r1.verify.last['counts']['evaluations'] / max(1, r0.verify.last['counts']['evaluations']):.2f}; "
                  f"verify x{r1.verify.median / r0.verify.median:.2f}, site x{r1.site.median / r0.site.median:.2f}.")
        if frozen and by_r:
            f = frozen[0]
            same_d = next((r for r in by_r if r.releases == f.freeze), by_r[0])
            same_r = next((r for r in by_r if r.releases == f.releases), None)
            line = (f"- Same distinct contents ({f.distinct}), releases x{f.releases / same_d.releases:.0f} "
                    f"({same_d.releases} -> {f.releases} releases, files frozen after {f.freeze}): verify "
                    f"x{f.verify.median / same_d.verify.median:.2f}")
            if same_r is not None:
                line += (f"; against {f.releases} releases whose files keep changing ({same_r.distinct} distinct "
                         f"contents): x{f.verify.median / same_r.verify.median:.2f}")
            print(line + f" (CPU: x{f.verify.cpu / same_d.verify.cpu:.2f}).")
            grows = f.verify.median / same_d.verify.median
            targets.append(("4: verify time follows distinct contents, not releases (met if x4 releases with the "
                            "same contents cost at most x1.25)",
                            f"same contents, x{f.releases / same_d.releases:.0f} releases -> x{grows:.2f} time",
                            grows <= 1.25))
        print()



def print_targets_and_profiles(results: dict, targets: list) -> None:
    if targets:
        print(_row(["target", "measured", "met"]))
        print(_row(["---", "---", "---"]))
        for name, value, met in targets:
            print(_row([name, value, "yes" if met else "no" if met is not None else "?"]))
        print()

    for label, result in results.get("profiles", []):
        prof = result["profile"]
        print(f"Profile: {label}: {result['seconds']:.2f} s under cProfile (profiled functions: {prof['total']:.2f} s)")
        print()
        print(_row(["area (cumulative, areas do not nest)", "s", "share"]))
        print(_row(["---", "---:", "---:"]))
        for name, seconds in sorted(prof["areas"], key=lambda a: -a[1]):
            if seconds >= 0.005 * prof["total"]:
                print(_row([name, f"{seconds:.2f}", f"{seconds / prof['total']:.0%}"]))
        print()
        print(_row(["top own time: file", "function", "calls", "own s", "cumulative s"]))
        print(_row(["---", "---", "---:", "---:", "---:"]))
        for file, function, calls, own, cumulative in prof["top_own"][:12]:
            print(_row([file, function, f"{calls:,}", f"{own:.2f}", f"{cumulative:.2f}"]))
        print()


# -- main -------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    global VERBOSE
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true",
                        help="about 2 minutes: 1 run each, naive on one sdist in 6, small scale sweep, two profiles")
    parser.add_argument("--runs", type=int, help="runs of each variant shorter than --long (default 3; --quick 1)")
    parser.add_argument("--long", type=float, default=20.0,
                        help="a variant whose first run takes longer than this many seconds is run once (default 20)")
    parser.add_argument("--only", default="matrix,new,cold,scale",
                        help="comma-separated parts to run: matrix, new, cold, scale (default: all)")
    parser.add_argument("--naive-every", type=int,
                        help="run the naive variant on every Nth sdist and scale up (default 3; --quick 6; "
                             "1 is every sdist, about 4 minutes here)")
    parser.add_argument("--scale-runs", type=int, default=1,
                        help="runs of each scale configuration shorter than --long (default 1: they take seconds "
                             "to minutes, and the sweep is about growth)")
    parser.add_argument("--scale-full", action="store_true",
                        help="the scale sweep at full size: 250/500/1000 entries at 100 releases, 25/50/100 releases "
                             "at 1000 entries (about half an hour here)")
    parser.add_argument("--profile",
                        help="comma-separated parts whose product run is profiled once more under cProfile: "
                             "matrix, new, cold, scale, or none (default: all four; --quick: matrix,cold)")
    parser.add_argument("--no-download", action="store_true", help="do not time the download of the newest sdist")
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (and say where it is)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--spec", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child, args.spec, args.out)
    VERBOSE = args.verbose
    args.runs = args.runs or (1 if args.quick else 3)
    args.naive_every = args.naive_every or (6 if args.quick else 3)
    args.profile = args.profile or ("matrix,cold" if args.quick else "matrix,new,cold,scale")
    parts = {p.strip() for p in args.only.split(",") if p.strip()}

    shared = cache_dir().resolve()  # before GOTCHAS_CACHE_DIR points elsewhere
    work = Path(tempfile.mkdtemp(prefix="gotchas-matrix-"))
    os.environ["GOTCHAS_CACHE_DIR"] = str(work / "cache-parent")  # the parent reads no cache of its own
    try:
        return _benchmark(args, work, shared, parts)
    finally:
        if args.keep:
            print(f"\n(kept {work})", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _benchmark(args, work: Path, shared: Path, parts: set[str]) -> int:
    start = time.perf_counter()
    load_before = os.getloadavg()[0]
    b = Bench(args, work)
    results: dict = {}
    plan = caches = None
    if parts & {"matrix", "new", "cold"}:
        # The parent's own cache folder links the shared archives too, for the index and the plan.
        _cache_folder(work / "cache-parent", shared / "archives")
        plan = make_plan(work)
        if plan.left_out:
            raise SystemExit(f"archives missing from the user cache ({'; '.join(plan.left_out)}); "
                             f"run `gotchas verify --engine {ENGINE}` once to download them")
        caches = {"warm": _cache_folder(work / "cache-warm", shared / "archives", shared / "members"),
                  "cold": _cache_folder(work / "cache-cold", shared / "archives")}
        missing = store_complete(caches["warm"] / "members", plan)
        if missing:  # fill the private copy of the store once (not timed): reads those archives
            say(f"the member store lacks {len(missing)} releases; filling the benchmark's copy")
            b.child("cli", {"argv": ["verify", "--engine", ENGINE, "--ledger", str(b.fresh("ledger-fill-"))],
                            "cwd": str(plan.kb)}, caches["warm"])
        if "new" in parts:
            caches["new"] = _cache_folder(work / "cache-new", shared / "archives", caches["warm"] / "members")
            # Archives of its own, empty: the run downloads the new sdist (the shared cache is not touched).
            caches["download"] = _cache_folder(work / "cache-download", shared / "archives", caches["warm"] / "members")
            shutil.rmtree(caches["download"] / "archives")
            (caches["download"] / "archives").mkdir()
        say(f"plan: {plan.checks} checks, {len(plan.releases)} releases; caches ready after "
            f"{time.perf_counter() - start:.1f} s")
    if "matrix" in parts:
        results["matrix"] = part_matrix(b, plan, caches)
    if "new" in parts:
        results["new"] = part_new(b, plan, caches, shared / "archives")
    if "cold" in parts:
        results["cold"] = part_cold(b, plan, caches)
    if "scale" in parts:
        results["scale"] = part_scale(b)
    if args.profile != "none":
        results["profiles"] = part_profile(b, plan, caches, results)
    if "matrix" in parts:
        part_naive(b, plan, results["matrix"])
    print_report(b, plan, results, (load_before, os.getloadavg()[0]), time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
