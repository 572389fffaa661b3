"""Which way of keeping release code measures best: archive re-reads, the member store, or a local git mirror.

Verifies the KB's checks of one engine (vLLM by default) against every release
since the engine's `oldest`, through:

  (a) archive re-read  PyPISource without the member store: every run decompresses each sdist
                       (and reads wheel members by range request) for the files the checks need;
  (b) member store     PyPISource as shipped: a first run fills the store (cold), later runs read it (warm);
  (c) git mirror       every release's Python files (plus any other file a check names) imported into a
                       local bare repository with `git fast-import`, one commit per release tagged
                       v<version>; then verified through GitSource;

and the floor: the distinct file contents the checks need, already in memory, each parsed and
evaluated once. Also measured: the mirror's optional `git repack`, and a check on a file no check
names yet (the store goes back to every archive; the mirror has it already). Each variant runs in a fresh Python process of its own (as `gotchas verify` would),
so that its peak RSS is its own and per-process state (archive digests checked once per process) is
paid as it would be. Verdict cache cold = an empty SQLite file per run; warm = a copy of one filled
by an earlier run.

Nothing is downloaded: the benchmark gets its own GOTCHAS_CACHE_DIR in a temporary folder, whose
`archives` is a symbolic link to the user cache's (read only; an archive missing there leaves its
release out). A wheel not in that cache is read with range requests, as the product does.

    .venv/bin/python bench/bench_sources.py [--runs 3] [--verbose] [--profile] [--keep]

Prints a Markdown table on stdout; exits 0. Not collected by pytest (testpaths = ["tests"]).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from _common import machine, mib  # noqa: E402
from verifier import code  # noqa: E402
from verifier import kb as kb_module
from verifier.cache import cache_dir  # noqa: E402
from verifier.entries import load_entry  # noqa: E402
from verifier.evaluate import evaluate_source  # noqa: E402
from verifier.ledger import Ledger, version_key  # noqa: E402
from verifier.model import Check, Entry  # noqa: E402
from verifier.run import verify_engine  # noqa: E402
from verifier.sources import SourceUnavailable, pypi  # noqa: E402
from verifier.sources.archive import (  # noqa: E402
    MemberStore,
    ZipReader,
    matches_record,
    parse_record,
    read_tar_members,
    record_path,
)
from verifier.sources.pypi import HttpClient  # noqa: E402
from verifier.sources.pypi import downloads as _downloads  # noqa: E402
from verifier.verdicts import VerdictCache  # noqa: E402
from verifier.verify import selected_checks  # noqa: E402

#: Candidates for a check on a file no KB check names yet, what a new entry brings (scenario "new path"):
#: the first whose path no check of the KB names is used.
NEW_PATH_CANDIDATES = (("vllm/sampling_params.py", "SamplingParams"), ("vllm/outputs.py", "RequestOutput"),
                       ("vllm/pooling_params.py", "PoolingParams"), ("vllm/logger.py", "init_logger"))

VERBOSE = False


def say(message: str) -> None:
    if VERBOSE:
        print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- what is verified -------------------------------------------------------------------------------

@dataclass
class Plan:
    """Fixed once by the parent process, read by every child, so that all variants verify the same thing."""

    engine: str
    kb_root: str  # a copy of the KB's gotchas/ taken at the start (entries are added concurrently)
    since: str
    index_files: dict  # Version -> [ArchiveFile], the index page read once
    releases: list  # Release, as PyPISource lists them, since `since`
    left_out: list[str] = field(default_factory=list)
    new_path: tuple[str, str] | None = None  # (path, symbol) for the "new path" scenario


class _NoDownloads(HttpClient):
    """Range requests and index pages only: the benchmark never writes into the shared archive cache."""

    def download(self, url, dest, *, what, **kwargs):
        raise SourceUnavailable(f"{what}: not in the archive cache, and the benchmark does not download")


def load_pairs(plan: Plan, extra_check: bool = False) -> list:
    kb = kb_module.load(plan.kb_root)
    entries = [loaded.entry for loaded in (load_entry(path) for path in kb.entry_files())
               if loaded.entry is not None]
    pairs = list(selected_checks(entries, plan.engine))
    if extra_check:
        path, symbol = plan.new_path
        check = Check(id="bench-new-path", claim="A check on a file no other check names.", engine=plan.engine,
                      path=path, matcher="defines", pattern=symbol)
        pairs.append((Entry(id="bench-new-path", file="<bench>", checks=(check,)), check))
    return pairs


def pypi_source(plan: Plan, stored: bool) -> pypi.PyPISource:
    kb = kb_module.load(plan.kb_root)
    source = pypi.PyPISource(kb.engines[plan.engine], http=_NoDownloads(), member_store=stored,
                             listing=plan.index_files)
    return source


def timed_verify(source, pairs, plan: Plan, verdict_db: Path, ledger_dir: Path):
    """One `gotchas verify --since` run of one engine, as a fresh process would do it: (seconds, EngineRun)."""
    _downloads.forget_verified()  # a new process checks each cached archive's sha256 once
    verdicts = VerdictCache(verdict_db)
    start = time.perf_counter()
    run = verify_engine(plan.engine, source, pairs, Ledger(ledger_dir), since=plan.since, verdicts=verdicts)
    seconds = time.perf_counter() - start
    verdicts.close()
    return seconds, run


def verdict_table(run) -> dict[str, list]:
    """What a run decided, by entry/check@version, to compare variants with: [verdict, evidence, hint]."""
    return {f"{r.entry}/{r.check.id}@{r.release.version}":
            [[r.verdict.status, r.verdict.reason], [list(r.verdict.lines or ()), r.verdict.symbol], r.verdict.hint]
            for r in run.results}


def compare(table: dict, reference: dict) -> str:
    keys = [k for k in reference.keys() | table.keys() if not k.startswith("bench-new-path/")]
    differ = [sum(1 for k in keys if (table.get(k) or [None] * 3)[i] != (reference.get(k) or [None] * 3)[i])
              for i in range(3)]
    return f"{len(keys)} results; verdicts differ on {differ[0]}, lines/symbol on {differ[1]}, hints on {differ[2]}"


class RelocationCounter:
    """Counts the relocation passes (every Python file of a release read) that verify_engine makes."""

    def __init__(self) -> None:
        from verifier import locate
        self.releases = self.files = 0
        shipped = locate.read_python_files

        def counting(snapshot):
            files = shipped(snapshot)
            self.releases += 1
            self.files += len(files)
            return files
        locate.read_python_files = counting

    def take(self) -> dict:
        figures = {"relocation_releases": self.releases, "relocation_files": self.files}
        self.releases = self.files = 0
        return figures


# -- the git mirror ---------------------------------------------------------------------------------

class _MirroredFiles:
    """Every Python file, and any other file a check names: what the mirror imports of a release."""

    def __init__(self, extra: set[str]) -> None:
        self.extra = frozenset(extra)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and (path.endswith((".py", ".pyi")) or path in self.extra)


def _sdist_files(archive, http, wanted: _MirroredFiles) -> dict[str, bytes]:
    with open(_downloads.local_copy(archive, http, None), "rb") as raw:  # sha256 checked once per process
        found = read_tar_members(raw, wanted)
    return found.contents


def _wheel_files(archive, http, wanted: _MirroredFiles) -> dict[str, bytes]:
    """A wheel's wanted members: from the cache when it was downloaded whole, else by range requests, one
    per member (the product reads at most RANGE_READ_MAX_MEMBERS so, and downloads a bigger read; the
    mirror reads every Python file). Those read by range are checked against RECORD's sha256, as the
    product does."""
    if _downloads.is_cached(archive):  # downloaded whole already: read it there, as the product would
        with open(_downloads.local_copy(archive, http, None), "rb") as raw:
            def read_range(start: int, length: int) -> bytes:
                raw.seek(start)
                return raw.read(length)

            local = ZipReader(read_range, os.fstat(raw.fileno()).st_size)
            return local.read_members({p for p in local.paths() if p in wanted}).contents

    def remote(start: int, length: int) -> bytes:
        return http.get_range(archive.url, start, length, what=archive.filename).body

    zip_file = ZipReader(remote, archive.size)
    manifest = record_path(zip_file.paths())
    if manifest is None:
        raise SystemExit(f"{archive.filename}: a wheel without one *.dist-info/RECORD")
    record = parse_record(zip_file.read_members({manifest}).contents[manifest])
    found = zip_file.read_members({p for p in zip_file.paths() if p in wanted})
    return {p: c for p, c in found.contents.items() if p in record and matches_record(c, record[p])}


def import_mirror(plan: Plan, mirror: Path) -> dict:
    """Import every release of the plan into a new bare repository; figures of what it took."""
    kb = kb_module.load(plan.kb_root)
    engine = kb.engines[plan.engine]
    source = pypi_source(plan, stored=True)
    http = source._http
    check_members = {engine.archive_path(c.path) for _, c in load_pairs(plan)} - {None}
    wanted = _MirroredFiles(check_members)
    subprocess.run(["git", "init", "--bare", "--quiet", "--initial-branch=main", str(mirror)], check=True)
    importer = subprocess.Popen(["git", "-C", str(mirror), "fast-import", "--quiet", "--done"],
                                stdin=subprocess.PIPE)
    write = importer.stdin.write
    previous: dict[str, bytes] = {}
    figures = {"files": 0, "changed_files": 0, "bytes_sent": 0, "read_s": 0.0}
    for mark, release in enumerate(plan.releases, 1):
        archive = source.archive_of(release)
        begin = time.perf_counter()
        members = (_wheel_files if archive.kind == "wheel" else _sdist_files)(archive, http, wanted)
        figures["read_s"] += time.perf_counter() - begin
        files = {engine.repository_path(p): c for p, c in members.items() if "\n" not in p and not p.startswith('"')}
        stamp = _epoch(archive.upload_time)
        message = f"{engine.name} {release.version}: {archive.filename} sha256:{archive.sha256}\n".encode()
        write(b"commit refs/heads/main\nmark :%d\n" % mark)
        write(b"committer gotchas mirror <mirror@gotchas.invalid> %d +0000\n" % stamp)
        write(b"data %d\n%s\n" % (len(message), message))
        for path in sorted(previous.keys() - files.keys()):
            write(b"D %s\n" % path.encode())
        for path, content in files.items():
            if previous.get(path) != content:
                write(b"M 100644 inline %s\ndata %d\n" % (path.encode(), len(content)))
                write(content)
                write(b"\n")
                figures["changed_files"] += 1
                figures["bytes_sent"] += len(content)
        write(b"\nreset refs/tags/%s\nfrom :%d\n\n" % (engine.tag(release.version).encode(), mark))
        figures["files"] += len(files)
        previous = files
        say(f"imported {release.version}: {len(files)} files")
    write(b"done\n")
    importer.stdin.close()
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")
    return figures


def _epoch(timestamp: str | None) -> int:
    import datetime as dt
    if not timestamp:
        return 0
    return int(dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp())


# -- the children: one variant each ------------------------------------------------------------------

def child(mode: str, work: Path, runs: int, long_run: float, profile: bool) -> dict:
    plan: Plan = pickle.loads((work / "plan.pickle").read_bytes())
    out: dict = {"mode": mode, "times": [], "rss_start_kib": _rss_now_kib()}
    db_dir = work / "verdicts"
    db_dir.mkdir(exist_ok=True)

    def verdict_db(warm: bool, i: int) -> Path:
        path = db_dir / f"{mode}-{i}.sqlite3"
        path.unlink(missing_ok=True)
        if warm:
            shutil.copyfile(work / "verdicts-warm.sqlite3", path)
        return path

    def ledger_dir(i: int) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"ledger-{mode}-{i}-", dir=work))

    profiler = None
    if profile:
        import cProfile
        profiler = cProfile.Profile()

    out["cpu"] = []

    def measure(fn):
        for i in range(runs):
            cpu = _cpu_seconds()
            if profiler:
                profiler.enable()
            seconds, extra = fn(i)
            if profiler:
                profiler.disable()
            out["times"].append(seconds)
            out["cpu"].append(_cpu_seconds() - cpu)
            out.update(extra)
            say(f"{mode} run {i + 1}/{runs}: {seconds:.2f} s, {out['cpu'][-1]:.2f} s CPU")
            if seconds > long_run:
                break  # a long run is measured once: repeating it would take the benchmark past a few minutes

    relocations = RelocationCounter()
    variant, _, state = mode.partition(":")
    warm_verdicts = state.endswith("vwarm")
    if variant in ("archive", "store"):
        source = pypi_source(plan, stored=variant == "store")
        pairs = load_pairs(plan, extra_check=state.startswith("newpath"))
        members = Path(os.environ["GOTCHAS_CACHE_DIR"]) / "members"

        def one(i):
            if state.startswith("cold"):
                shutil.rmtree(members, ignore_errors=True)
            seconds, run = timed_verify(source, pairs, plan, verdict_db(warm_verdicts, i), ledger_dir(i))
            return seconds, {"verdicts": verdict_table(run), "verdict_db": str(db_dir / f"{mode}-{i}.sqlite3"),
                             "releases": len(run.releases), "skipped": run.skipped, **relocations.take()}
        measure(one)
        if variant == "store":
            out["disk"] = _disk(members)
    elif variant == "git":
        from verifier.sources.git import GitSource
        kb = kb_module.load(plan.kb_root)
        if state == "repack":
            def one(i):
                mirror = work / "mirror.git"
                start = time.perf_counter()
                subprocess.run(["git", "-C", str(mirror), "repack", "-a", "-d", "-f", "-q"], check=True)
                return time.perf_counter() - start, {"disk": _disk(mirror)}
            measure(one)
        elif state == "import":
            def one(i):
                mirror = work / ("mirror.git" if i == 0 else f"mirror-{i}.git")
                shutil.rmtree(mirror, ignore_errors=True)
                _downloads.forget_verified()
                start = time.perf_counter()
                figures = import_mirror(plan, mirror)
                seconds = time.perf_counter() - start
                return seconds, {"import": figures, "disk": _disk(mirror)}
            measure(one)
        else:
            pairs = load_pairs(plan, extra_check=state.startswith("newpath"))

            def one(i):
                with GitSource(kb.engines[plan.engine], str(work / "mirror.git")) as source:
                    seconds, run = timed_verify(source, pairs, plan, verdict_db(warm_verdicts, i), ledger_dir(i))
                return seconds, {"verdicts": verdict_table(run), "releases": len(run.releases),
                                 "skipped": run.skipped, **relocations.take()}
            measure(one)
    elif variant == "floor":
        contents = floor_inputs(plan)
        out["distinct_files"] = len(contents)
        out["distinct_bytes"] = sum(len(d) for _, d, _ in contents)

        def one(i):
            start = time.perf_counter()
            for path, data, forms in contents:
                source = code.SourceFile(path, data)
                for form in forms:
                    evaluate_source(form, source)
            return time.perf_counter() - start, {}
        measure(one)
    else:
        raise SystemExit(f"unknown mode {mode}")
    usage_self = resource.getrusage(resource.RUSAGE_SELF)
    usage_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["rss_peak_kib"] = usage_self.ru_maxrss
    out["children_rss_peak_kib"] = usage_children.ru_maxrss
    out["cpu_s"] = usage_self.ru_utime + usage_self.ru_stime
    out["children_cpu_s"] = usage_children.ru_utime + usage_children.ru_stime
    if profiler:
        import io
        import pstats
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(14)
        out["profile"] = text.getvalue()
    return out


def floor_inputs(plan: Plan):
    """The distinct (path, content) pairs the checks need over all releases, from the filled member store, each
    with the distinct forms to evaluate on it (a check's forms that apply at a release having that content)."""
    kb = kb_module.load(plan.kb_root)
    engine = kb.engines[plan.engine]
    pairs = load_pairs(plan)
    store = MemberStore()
    source = pypi_source(plan, stored=True)
    forms_of: dict[tuple[str, bytes], dict[int, object]] = {}  # (path, content digest) -> forms, by id
    contents = []
    for release in plan.releases:
        by_path: dict[str, list] = {}
        for _, check in pairs:
            for form in check.forms_at(release.version):
                by_path.setdefault(form.path, []).append(form)
        archive = source.archive_of(release)
        wanted = {engine.archive_path(p): p for p in by_path if engine.archive_path(p) is not None}
        found = store.answer(archive.sha256, set(wanted))
        if found is None:
            raise SystemExit(f"floor: the member store lacks {release.version}; run the store variant first")
        for member, data in found.contents.items():
            key = (wanted[member], hashlib.sha256(data).digest())
            if key not in forms_of:
                forms_of[key] = {}
                contents.append((key, wanted[member], data))
            forms_of[key].update((id(form), form) for form in by_path[wanted[member]])
    return [(path, data, list(forms_of[key].values())) for key, path, data in contents]


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (git)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _rss_now_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _disk(folder: Path) -> int:
    """Bytes a folder takes on disk (allocated blocks), not following links."""
    total = 0
    for root, dirs, files in os.walk(folder):
        for name in files + dirs:
            status = os.lstat(os.path.join(root, name))
            total += status.st_blocks * 512
    return total


# -- the parent: set up, run the children, tabulate ---------------------------------------------------

def make_plan(work: Path, engine_key: str, kb_root: Path) -> Plan:
    shutil.copytree(kb_root / "gotchas", work / "kb" / "gotchas")
    kb = kb_module.load(work / "kb")
    engine = kb.engines[engine_key]
    source = pypi.PyPISource(engine, http=_NoDownloads())
    start = time.perf_counter()
    listed = source.releases()
    say(f"index page of {engine.package}: {time.perf_counter() - start:.2f} s, {len(listed)} releases")
    since = engine.oldest or "0"
    plan = Plan(engine_key, str(work / "kb"), since, source.listing(), [])
    for release in listed:
        if version_key(release.version) < version_key(since):
            continue
        archive = source.archive_of(release)
        if archive.kind == "wheel" and not _downloads.is_cached(archive):
            plan.releases.append(release)  # read by range requests, as the product does
            continue
        path = _downloads.cache_path(archive)
        if not path.is_file() or not _downloads.intact(path, archive):
            plan.left_out.append(f"{release.version}: {archive.filename} is not (intact) in the archive cache")
            continue
        plan.releases.append(release)
    named = {check.path for _, check in load_pairs(plan)}
    plan.new_path = next((c for c in NEW_PATH_CANDIDATES if c[0] not in named), None)
    (work / "plan.pickle").write_bytes(pickle.dumps(plan))
    return plan


def run_child(mode: str, work: Path, runs: int, long_run: float, profile: bool = False,
              cache: Path | None = None) -> dict:
    say(f"starting {mode} (up to {runs} run{'s' if runs > 1 else ''})")
    env = dict(os.environ)
    if cache is not None:
        env["GOTCHAS_CACHE_DIR"] = str(cache)
    command = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--work", str(work),
               "--runs", str(runs), "--long", str(long_run)]
    command += (["--verbose"] if VERBOSE else []) + (["--profile"] if profile else [])
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench child {mode} failed with exit code {done.returncode}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    (work / "results").mkdir(exist_ok=True)
    (work / "results" / f"{mode.replace(':', '_')}{'-profile' if profile else ''}.json").write_text(
        json.dumps(result, indent=1))
    return result


def _cache_with_archives(folder: Path, shared_archives: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "archives").symlink_to(shared_archives, target_is_directory=True)
    return folder


@dataclass
class Row:
    label: str
    result: dict
    reference: str | None  # the label of the (b) row this one is compared with
    disk: str = ""
    note: str = ""


def main(argv: list[str] | None = None) -> int:
    global VERBOSE
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each warm variant (default 3)")
    parser.add_argument("--cold-runs", type=int, default=1,
                        help="runs of each cold variant: filling the store, importing the mirror (default 1)")
    parser.add_argument("--long", type=float, default=20.0,
                        help="a variant whose first run takes longer than this many seconds is run once (default 20)")
    parser.add_argument("--engine", default="vllm")
    parser.add_argument("--kb", type=Path, default=REPO, help="the folder holding gotchas/ (default: this repository)")
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    parser.add_argument("--profile", action="store_true",
                        help="afterwards, one more run of each variant under cProfile; top functions on stderr")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (and say where it is)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    VERBOSE = args.verbose
    if args.child:
        print(json.dumps(child(args.child, args.work, args.runs, args.long, args.profile)))
        return 0

    shared_archives = cache_dir("archives").resolve()  # before GOTCHAS_CACHE_DIR points elsewhere
    work = Path(tempfile.mkdtemp(prefix="gotchas-bench-"))
    os.environ["GOTCHAS_CACHE_DIR"] = str(_cache_with_archives(work / "cache", shared_archives))
    try:
        return _benchmark(args, work, shared_archives)
    finally:
        for link in work.glob("cache*/archives"):
            link.unlink()
        if args.keep:
            print(f"\n(kept {work})", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _benchmark(args, work: Path, shared_archives: Path) -> int:
    start_all = time.perf_counter()
    load_before = os.getloadavg()
    plan = make_plan(work, args.engine, args.kb)  # checks every archive's sha256: the page cache is warm for all
    pairs = load_pairs(plan)
    paths = {c.path for _, c in pairs}
    runs, cold, long_run = max(1, args.runs), max(1, args.cold_runs), args.long
    say(f"{len(pairs)} {args.engine} checks on {len(paths)} paths, {len(plan.releases)} releases since {plan.since}")

    results: dict[str, dict] = {}
    results["store:cold"] = run_child("store:cold", work, cold, long_run)
    shutil.copyfile(results["store:cold"]["verdict_db"], work / "verdicts-warm.sqlite3")
    for mode in ("store:warm-vcold", "store:warm-vwarm", "archive:vcold", "archive:vwarm", "git:import",
                 "git:repack", "git:warm-vcold", "git:warm-vwarm", "floor:", "git:newpath-vwarm"):
        results[mode] = run_child(mode, work, 1 if mode == "git:repack" else cold if mode == "git:import" else runs,
                                  long_run)
    # (b) when a new check names a file the store never read: back to every archive (on a copy of the store).
    newpath_cache = _cache_with_archives(work / "cache-newpath", shared_archives)
    shutil.copytree(work / "cache" / "members", newpath_cache / "members")
    results["store:newpath-vwarm"] = run_child("store:newpath-vwarm", work, 1, long_run, cache=newpath_cache)
    load_after = os.getloadavg()

    source = pypi_source(plan, stored=True)
    archives = [_downloads.cache_path(source.archive_of(r)) for r in plan.releases]
    archive_bytes = sum(path.stat().st_size for path in archives if path.is_file())
    kinds = [source.archive_of(r) for r in plan.releases]
    read_as = (f"{sum(a.kind == 'sdist' for a in kinds)} sdists, "
               f"{sum(a.kind == 'wheel' and _downloads.is_cached(a) for a in kinds)} wheels from the archive cache, "
               f"{sum(a.kind == 'wheel' and not _downloads.is_cached(a) for a in kinds)} wheels by range requests")
    figures = results["git:import"]["import"]
    floor = results["floor:"]
    new_path = plan.new_path[0] if plan.new_path else "?"
    rows = [
        Row("floor: distinct contents in memory, parse + evaluate each once", floor, None,
            note=f"{floor['distinct_files']} distinct (path, content), {mib(floor['distinct_bytes'])}"),
        Row("(a) archive re-read, verdicts cold", results["archive:vcold"], "store:warm-vcold",
            disk=f"0 (keeps the archives: {mib(archive_bytes)})"),
        Row("(a) archive re-read, verdicts warm", results["archive:vwarm"], "store:warm-vwarm", disk="0 (same)"),
        Row("(b) member store, cold (fills it), verdicts cold", results["store:cold"], None,
            disk=f"{mib(results['store:cold']['disk'])} members (+ the archives)"),
        Row("(b) member store, warm, verdicts cold", results["store:warm-vcold"], "store:warm-vcold", disk="same"),
        Row("(b) member store, warm, verdicts warm", results["store:warm-vwarm"], "store:warm-vwarm", disk="same"),
        Row("(b) warm store + 1 check on a new path, verdicts warm", results["store:newpath-vwarm"],
            "store:warm-vwarm", note=f"{new_path}: back to every archive"),
        Row("(c) git mirror: import all .py (cold)", results["git:import"], "store:cold",
            disk=f"{mib(results['git:import']['disk'])} mirror",
            note=f"{figures['changed_files']:,} blobs sent for {figures['files']:,} files, "
                 f"{mib(figures['bytes_sent'])}; of which reading archives {figures['read_s']:.0f} s"),
        Row("(c) git mirror: repack -a -d -f (optional, once)", results["git:repack"], None,
            disk=f"{mib(results['git:repack']['disk'])} mirror", note="the warm runs below read the repacked mirror"),
        Row("(c) git mirror, warm, verdicts cold", results["git:warm-vcold"], "store:warm-vcold", disk="same"),
        Row("(c) git mirror, warm, verdicts warm", results["git:warm-vwarm"], "store:warm-vwarm", disk="same"),
        Row("(c) warm mirror + 1 check on a new path, verdicts warm", results["git:newpath-vwarm"],
            "store:warm-vwarm", note=f"{new_path}: no re-import"),
    ]
    floor_median = statistics.median(floor["times"])
    print(f"Machine: {machine()}")
    print(f"Load average (1 min) before/after: {load_before[0]:.1f} / {load_after[0]:.1f}")
    print(f"Workload: {len(pairs)} {args.engine} checks on {len(paths)} paths x {len(plan.releases)} releases "
          f"since {plan.since} ({read_as})" + (f"; left out: {'; '.join(plan.left_out)}" if plan.left_out else ""))
    print()
    print("| variant | runs | median s | min-max s | CPU s | x floor | x (b) | peak RSS | git RSS | on disk | note |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for row in rows:
        times = row.result["times"]
        median = statistics.median(times)
        ref = statistics.median(results[row.reference]["times"]) if row.reference else None
        git_rss = row.result.get("children_rss_peak_kib", 0)
        print(f"| {row.label} | {len(times)} | {median:.2f} | {min(times):.2f}-{max(times):.2f} "
              f"| {statistics.median(row.result['cpu']):.2f} | {median / floor_median:,.2f} "
              f"| {f'{median / ref:,.2f}' if ref else '-'} | {row.result['rss_peak_kib'] / 1024:,.0f} MiB "
              f"| {f'{git_rss / 1024:,.0f} MiB' if git_rss else '-'} | {row.disk} | {row.note} |")
    print()
    print(f"x (b): against the (b) row with the same verdict-cache state; the import against the cold store run. "
          f"Peak RSS: the variant's own Python process ({floor['rss_start_kib'] / 1024:,.0f} MiB after imports); "
          f"git RSS: the largest git process it waited for. CPU: process + waited-for children, median run.")
    print()
    print("Results against those of the cold store run, and relocation passes (every Python file of a release "
          "read, for the hint of a check that stopped holding):")
    reference = results["store:cold"]["verdicts"]
    for mode, result in results.items():
        if "verdicts" not in result:
            continue
        print(f"- {mode}: {compare(result['verdicts'], reference)}; relocation passes: "
              f"{result['relocation_releases']} releases, {result['relocation_files']:,} files read")
        for note in result.get("skipped", []):
            print(f"  {note}")
    print(f"(benchmark wall time {time.perf_counter() - start_all:.0f} s)")

    if args.profile:
        for mode in ("archive:vwarm", "store:warm-vwarm", "git:warm-vwarm", "store:warm-vcold", "git:import"):
            profiled = run_child(mode, work, 1, long_run, profile=True)
            print(f"\n=== cProfile, {mode} (by own time) ===\n{profiled['profile']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
