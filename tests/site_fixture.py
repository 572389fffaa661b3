"""A built site for tests: fixture entries verified against a local index, then rendered."""

from __future__ import annotations

import contextlib
import functools
import http.server
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


def sdist(version: str, sched: str = SCHED_PY) -> bytes:
    sched = sched + LONG_LINE  # evidence excerpts must stay usable (and accessible) when they scroll
    return make_sdist({"pkg/sched.py": sched.encode(), "pkg/metrics.py": METRICS_PY.encode()}, top=f"vllm-{version}")


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


@pytest.fixture(scope="module")
def built_site(tmp_path_factory, kb_root_module):
    """(KB folder, site folder) after verifying three fixture releases and building the site."""
    kb = kb_root_module
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
        assert main(["verify", "--engine", "vllm"]) == 1
        assert main(["site", "--out", str(out), "--base-url", "https://gotchas.example/"]) == 0
    return kb, out


@pytest.fixture(scope="module")
def kb_root_module(tmp_path_factory):
    import re
    import shutil

    from .conftest import REPO

    root = tmp_path_factory.mktemp("kb")
    (root / "gotchas").mkdir()
    for name in ("schemes.yaml", "concepts.yaml"):
        shutil.copy(REPO / "gotchas" / name, root / "gotchas" / name)
    registry = (REPO / "gotchas" / "engines.yaml").read_text()
    (root / "gotchas" / "engines.yaml").write_text(re.sub(r"(?m)^  oldest: .*\n", "", registry))
    shutil.copytree(REPO / "site", root / "site")
    (root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY.replace(
        "Latency climbs.", "Latency climbs and `vllm:num_preemptions` rises."))
    (root / "gotchas" / "config-prefix-caching-example.md").write_text(SECOND_ENTRY)
    (root / "gotchas" / "ops-hostile-markup.md").write_text(HOSTILE_ENTRY)
    return root


@pytest.fixture(scope="module")
def real_site(tmp_path_factory):
    """The site of the real KB and its committed ledger."""
    from .conftest import REPO

    out = tmp_path_factory.mktemp("real") / "_site"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        assert main(["site", "--out", str(out)]) == 0
    return out
