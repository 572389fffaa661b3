"""A formatter never changes a verdict: files re-laid by ruff format and black, at several line lengths, with
and without magic trailing commas, keep every check that held holding (FORMAT.md, "Comparing code")."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verifier.code import SourceFile
from verifier.evaluate import evaluate_source
from verifier.model import Form

FORMATTERS = {
    **{f"ruff-{n}{'-skip-magic' if skip else ''}": [
        sys.executable, "-m", "ruff", "format", "--quiet", "--line-length", str(n),
        "--config", f"format.skip-magic-trailing-comma = {'true' if skip else 'false'}"]
       for n in (40, 88, 200) for skip in (False, True)},
    **{f"black-{n}": [sys.executable, "-m", "black", "--quiet", "--line-length", str(n)] for n in (40, 88)},
}

# Code of the shapes the KB's checks read, written the way a project might before a formatter touches it.
SCHEDULER = textwrap.dedent('''\
    from .request import Request, RequestStatus


    class Scheduler:
        def __init__(self, config, max_num_seqs=256, policy="fcfs", *, log_stats=False, enable_caching=True):
            self.max_num_running_reqs = config.max_num_seqs if config is not None else max_num_seqs
            self.policy, self.log_stats = policy, log_stats
            self.enable_caching = (enable_caching)
            self.waiting, self.running = [], []

        def schedule(self, scheduled_timestamp):
            while self.running and not self.kv_cache_manager.can_allocate(self.running[0]):
                if self.policy == "priority":
                    preempted_req = max(self.running, key=lambda r: (r.priority, r.arrival_time))
                    self.running.remove(preempted_req)
                else:
                    preempted_req = self.running.pop()
                self._preempt_request(preempted_req, scheduled_timestamp, drop_stale_output=self.log_stats and self.enable_caching)
            if len(self.running) >= self.max_num_running_reqs or self.waiting == [] or self.max_num_running_reqs == 0:
                return {"scheduled": [], "preempted": [r.request_id for r in self.running if r.status == RequestStatus.PREEMPTED]}
            return {"scheduled": [r.request_id for r in self.running], "preempted": []}

        def _preempt_request(self, request: Request, timestamp: float, drop_stale_output: bool = False) -> None:
            assert request.status == RequestStatus.RUNNING, "only a running request can be preempted"
            self.kv_cache_manager.free(request)
            request.status = RequestStatus.PREEMPTED
            request.num_computed_tokens = 0
            self.waiting.prepend_request(request)
            logger.warning("Request %s was preempted by %s because the KV cache is full; it will be recomputed", request.request_id, "recompute")


    def create_request_queue(policy: "SchedulingPolicy") -> "RequestQueue":
        if policy == SchedulingPolicy.PRIORITY:
            return PriorityRequestQueue()
        elif policy == SchedulingPolicy.FCFS:
            return FCFSRequestQueue()
        else:
            raise ValueError(f"Unknown scheduling policy: {policy}")


    class CacheConfig:
        gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1, description="The fraction of GPU memory to be used for the model executor")
        block_size: int | None = None
        max_loras: int = Field(default=1, ge=1)
''')

CHECKS = [
    ("contains", "request.num_computed_tokens = 0", "Scheduler._preempt_request", "request.status = RequestStatus.PREEMPTED"),
    ("contains", "preempted_req = self.running.pop()", "Scheduler.schedule", None),
    ("contains", "max(self.running, key=lambda $R: ($R.priority, $R.arrival_time))", "Scheduler.schedule", None),
    ("contains", "self._preempt_request(preempted_req, $$$)", "Scheduler.schedule", None),
    ("contains", "self._preempt_request($$$, drop_stale_output=$X)", "Scheduler.schedule", None),
    ("contains", "if len(self.running) >= self.max_num_running_reqs or $$$:\n    return $$$", "Scheduler.schedule", None),
    ("contains", 'logger.warning("Request %s was preempted by %s because the KV cache is full; it will be recomputed", $$$)',
     "Scheduler._preempt_request", None),
    ("contains", "elif policy == SchedulingPolicy.FCFS:\n    return FCFSRequestQueue()", "create_request_queue", None),
    ("contains", "gpu_memory_utilization: float = Field(default=0.92, $$$)", "CacheConfig", None),
    ("contains", "max_loras: int = Field(default=1, $$$)", "CacheConfig", None),
    ("contains", "self.enable_caching = enable_caching", "Scheduler.__init__", None),
    ("contains", "self.policy, self.log_stats = policy, log_stats", "Scheduler.__init__", None),
    ("contains", "def _preempt_request(self, request: Request, timestamp: float, drop_stale_output: bool = False) -> None:",
     "Scheduler", None),
    ("contains", "if self.policy == \"priority\"", "Scheduler.schedule", None),
    ("absent", "request.num_computed_tokens = 1", "Scheduler._preempt_request", None),
    ("string", "it will be recomputed", "Scheduler._preempt_request", None),
]


def verdicts(path: Path) -> list[str]:
    source = SourceFile("pkg/sched.py", path.read_bytes())
    return [evaluate_source(Form("vllm", "pkg/sched.py", matcher, pattern, scope, after), source).status
            for matcher, pattern, scope, after in CHECKS]


@pytest.mark.parametrize("formatter", sorted(FORMATTERS))
def test_a_formatter_changes_no_verdict(tmp_path, formatter):
    original = tmp_path / "sched.py"
    original.write_text(SCHEDULER)
    assert verdicts(original) == ["holds"] * len(CHECKS)
    relaid = tmp_path / "relaid.py"
    shutil.copy(original, relaid)
    done = subprocess.run([*FORMATTERS[formatter], str(relaid)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert relaid.read_text() != SCHEDULER  # the formatter did re-lay it
    assert verdicts(relaid) == ["holds"] * len(CHECKS)


def test_what_a_formatter_does_not_do_still_changes_a_verdict(tmp_path):
    """The same checks are not blind: an edit of meaning in the re-laid file is caught."""
    relaid = tmp_path / "relaid.py"
    relaid.write_text(SCHEDULER.replace("request.num_computed_tokens = 0", "request.num_computed_tokens = 1"))
    subprocess.run([*FORMATTERS["ruff-40"], str(relaid)], check=True, capture_output=True)
    found = verdicts(relaid)
    assert found[0] == "changed" and found[14] == "changed" and found.count("holds") == len(CHECKS) - 2


@pytest.mark.network
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_kb_on_the_latest_real_release_survives_its_reformatting(engine, tmp_path):
    """bench/relayout.py, as a test: every holding check of the KB still holds once the files it reads in the
    engine's latest release are re-laid (ruff at 40 columns, the harshest, and black at 40)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import relayout  # noqa: E402

    from verifier import kb as kb_module
    from verifier.entries import load_entry

    from .conftest import REPO

    kb = kb_module.load(REPO)
    entries = [loaded.entry for loaded in (load_entry(p) for p in kb.entry_files()) if loaded.entry]
    checks = [(e.id, c) for e in entries for c in e.checks if c.engine == engine]
    original = tmp_path / "original"
    version = relayout.tree_of(kb, engine, [c for _, c in checks], original)
    before = relayout.verdicts(engine, original, version, checks, "")
    holding = {k for k, v in before.items() if v == "holds"}
    assert len(holding) > 50
    for name in ("ruff-40", "black-40"):
        copy = tmp_path / name
        shutil.copytree(original, copy)
        subprocess.run([*FORMATTERS[name], str(copy)], check=True, capture_output=True)
        after = relayout.verdicts(engine, copy, version, checks, "")
        assert sorted(k for k in holding if after.get(k) != "holds") == [], name
