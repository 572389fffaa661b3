"""A built site for tests: fixture entries verified against a local index, then rendered."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from verifier.cli import main

from .conftest import METRICS_PY, SCHED_PY, VALID_ENTRY
from .index_server import IndexServer, make_sdist

OLD_SCHED = SCHED_PY.replace("        request.num_computed_tokens = 0\n", "        request.num_computed_tokens -= 1\n")

SECOND_ENTRY = VALID_ENTRY.replace("id: ops-example", "id: config-prefix-caching-example").replace(
    "title: An example gotcha that is well-formed", "title: Prefix caching is on by default and costs unique prompts").replace(
    "scheme: ops", "scheme: config").replace("concepts: [kv-cache, preemption]", "concepts: [prefix-caching]").replace(
    "Latency climbs.", "Throughput drops for unique prompts while `--enable-prefix-caching` is on.").replace(
    "Add capacity.", "Pass `--no-enable-prefix-caching`, or lower `max_num_seqs` (default 256).")

HOSTILE_ENTRY = VALID_ENTRY.replace("id: ops-example", "id: ops-hostile-markup").replace(
    "title: An example gotcha that is well-formed", 'title: "<script>alert(1)</script> <img src=x onerror=alert(2)>"').replace(
    "Latency climbs.",
    'Raw <script>alert(3)</script> and <img src=x onerror="alert(4)"> and [a link](javascript:alert(5)) '
    "and [data](data:text/html;base64,PHNjcmlwdD4=) and <a href=\"javascript:alert(6)\">x</a>.").replace(
    "    claim: The metric exists.", "    claim: \"<b onmouseover=alert(7)>claim</b>\"")


LONG_LINE = "        # " + "a comment long enough to make the excerpt scroll sideways " * 6 + "\n"


#: The release surface of the fixture releases (the registry's surface files): from 0.1.0 to 0.2.0 a default
#: changes (--gpu-memory-utilization 0.90 -> 0.92), a flag gains a spelling (-tp, then --tp too), one is renamed
#: (--max-seq-len becomes --max-model-len, keeping the old spelling), one is removed and one added; a variable's
#: default changes; a metric and a request field are added; 0.10.0 adds a choice and deprecates a flag.
ARG_UTILS = """
from dataclasses import dataclass

@dataclass
class EngineArgs:
    gpu_memory_utilization: float = 0.90
    tensor_parallel_size: int = 1
    scheduling_policy: str = "fcfs"

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument('--gpu-memory-utilization', type=float,
                            default=EngineArgs.gpu_memory_utilization, help='The fraction of GPU memory to use.')
        parser.add_argument('--tensor-parallel-size', '-tp', type=int, default=EngineArgs.tensor_parallel_size)
        parser.add_argument('--scheduling-policy', choices=['fcfs', 'priority'],
                            default=EngineArgs.scheduling_policy)
        parser.add_argument('--max-seq-len', type=int, default=None, help='Model context length.')
        parser.add_argument('--swap-space', type=float, default=4, help='CPU swap space per GPU, in GiB.')
        parser.add_argument('--enable-prefix-caching', action='store_true', help='Enable prefix caching.')
"""
ENVS = """
import os

environment_variables = {
    # Use the V1 engine.
    "VLLM_USE_V1": lambda: os.getenv("VLLM_USE_V1", "0"),
    "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
}
"""
LOGGERS = """
class PrometheusStatLogger:
    def __init__(self):
        self.counter_num_preempted_reqs = self._counter_cls(
            name="vllm:num_preemptions", documentation="Cumulative number of preemption from the engine.",
            labelnames=labelnames)
"""
PROTOCOL = """
class ChatCompletionRequest(OpenAIBaseModel):
    model: str | None = None
    max_tokens: int | None = None
"""


def surface_files(version: str) -> dict[str, bytes]:
    args, envs, loggers, protocol = ARG_UTILS, ENVS, LOGGERS, PROTOCOL
    if version != "0.1.0":
        args = args.replace("gpu_memory_utilization: float = 0.90", "gpu_memory_utilization: float = 0.92").replace(
            "'--tensor-parallel-size', '-tp'", "'--tensor-parallel-size', '-tp', '--tp'").replace(
            "'--max-seq-len', type=int", "'--max-model-len', '--max-seq-len', type=int").replace(
            "        parser.add_argument('--swap-space', type=float, default=4, help='CPU swap space per GPU, in GiB.')\n",
            "        parser.add_argument('--kv-cache-dtype', default='auto', help='Data type of the KV cache.')\n")
        envs = envs.replace('os.getenv("VLLM_USE_V1", "0")', 'os.getenv("VLLM_USE_V1", "1")')
        loggers += ('        self.gauge = prometheus_client.Gauge(name="vllm:num_requests_running", '
                    'documentation="Running.", labelnames=["model_name"])\n')
        protocol += "    priority: int = 0\n"
    if version == "0.10.0":
        args = args.replace("choices=['fcfs', 'priority']", "choices=['fcfs', 'priority', 'lifo']").replace(
            "help='Enable prefix caching.'", "help='Enable prefix caching.', deprecated=True")
    return {"vllm/engine/arg_utils.py": args.encode(), "vllm/envs.py": envs.encode(),
            "vllm/v1/metrics/loggers.py": loggers.encode(), "vllm/entrypoints/openai/protocol.py": protocol.encode()}


def sdist(version: str, sched: str = SCHED_PY) -> bytes:
    sched = sched + LONG_LINE  # evidence excerpts must stay usable (and accessible) when they scroll
    return make_sdist({"pkg/sched.py": sched.encode(), "pkg/metrics.py": METRICS_PY.encode(),
                       **surface_files(version)}, top=f"vllm-{version}")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:
        pass


@contextlib.contextmanager
def serve(folder: Path):
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def verified_site(tmp_path_factory, kb: Path, more=(), site_args=()) -> Path:
    """The site of `kb` built after `verify` read, from an index on 127.0.0.1, the three fixture vLLM releases
    (0.1.0, where OLD_SCHED changes a claim, 0.2.0, 0.10.0) and `more` ((engine, version, sdist, upload time))."""
    out = tmp_path_factory.mktemp("site") / "_site"
    with pytest.MonkeyPatch.context() as patch, IndexServer() as index:
        patch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        patch.setenv("no_proxy", "127.0.0.1")
        patch.setenv("NO_PROXY", "127.0.0.1")
        patch.setenv("PIP_INDEX_URL", index.url)
        patch.chdir(kb)
        index.add("vllm", "vllm-0.1.0.tar.gz", sdist("0.1.0", OLD_SCHED), upload_time="2024-01-02T00:00:00Z")
        index.add("vllm", "vllm-0.2.0.tar.gz", sdist("0.2.0"), upload_time="2024-02-03T00:00:00Z")
        index.add("vllm", "vllm-0.10.0.tar.gz", sdist("0.10.0"), upload_time="2024-03-04T00:00:00Z")
        for engine, version, data, when in more:
            index.add(engine, f"{engine}-{version}.tar.gz", data, upload_time=when)
        for engine in ["vllm", *dict.fromkeys(engine for engine, *_ in more)]:
            assert main(["verify", "--engine", engine]) in (0, 1)
        assert main(["site", "--out", str(out), *site_args]) == 0
    return out


@pytest.fixture(scope="module")
def built_site(tmp_path_factory, kb_root_module):
    """(KB folder, site folder) after verifying three fixture releases and building the site."""
    kb = kb_root_module
    return kb, verified_site(tmp_path_factory, kb, site_args=("--base-url", "https://gotchas.example/"))


@pytest.fixture(scope="module")
def kb_root_module(tmp_path_factory):
    from .conftest import make_kb

    root = make_kb(tmp_path_factory.mktemp("kb") / "kb", site=True)
    (root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY.replace(
        "Latency climbs.", "Latency climbs and `vllm:num_preemptions` rises."))
    (root / "gotchas" / "config-prefix-caching-example.md").write_text(SECOND_ENTRY)
    (root / "gotchas" / "ops-hostile-markup.md").write_text(HOSTILE_ENTRY)
    return root


#: The browser the site's browser tests drive: Debian's chromium here and in CI; GOTCHAS_CHROMIUM names another
#: (GitHub's runners have google-chrome). None: not here (the modules that need it skip, except under CI).
CHROMIUM = os.environ.get("GOTCHAS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def browser():
    """One chromium for a module's browser tests (Playwright is imported only by the tests that ask for it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()
