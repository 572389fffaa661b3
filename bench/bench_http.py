"""The archive sources' HTTP client on urllib3 against the urllib one it replaced (#19): range requests to one host.

    .venv/bin/python bench/bench_http.py [--old REV] [--runs 5] [--requests 64] [--size 65536]

Serves a file from tests/index_server.py on 127.0.0.1 (HTTP/1.1, keep-alive) in a child process (not to
share the GIL with the client), over plain http and over TLS (a self-signed certificate for 127.0.0.1 made
with the openssl command, given to the client as its cafile), and times `--requests` sequential
HttpClient.get_range calls of `--size` bytes, a new client for each run (its first connection included).
The old client is verifier/sources/_http.py at REV (default: the last urllib one), imported beside the new
(verifier/sources/pypi/http.py).
Both run in the same process, alternating, `--runs` times; medians printed, with the connections the server
accepted per run.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import machine
from tests.index_server import IndexServer, self_signed
from verifier.sources.pypi import http as _http

LAST_URLLIB = "21a00d7"  # the last commit whose _http.py is the urllib client


def old_module(rev: str, folder: Path):
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:verifier/sources/_http.py"],
                            capture_output=True, text=True, check=True).stdout
    path = folder / "_http_old.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("verifier.sources._http_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def serve(certificate: tuple[str, str] | None, content: bytes, port: multiprocessing.Queue, accepted, stop) -> None:
    """The child: serves `content` as /files/blob.bin until `stop` is set, counting connections in `accepted`."""
    with IndexServer(certificate=certificate) as server:
        server.add("blob", "blob.bin", content)
        inner = server._server
        get_request = inner.get_request

        def counting():
            with accepted.get_lock():
                accepted.value += 1
            return get_request()

        inner.get_request = counting
        port.put(inner.server_address[1])
        stop.wait()


def one_run(module, url: str, cafile: str | None, requests: int, size: int) -> float:
    client = module.HttpClient(cafile=cafile)
    started = time.perf_counter()
    for n in range(requests):
        part = client.get_range(url, n * size, size, what="bench")
        assert len(part.body) == size and part.start == n * size
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", default=LAST_URLLIB)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--size", type=int, default=64 * 1024)
    args = parser.parse_args()
    os.environ["no_proxy"] = os.environ["NO_PROXY"] = "127.0.0.1"
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clients = {f"urllib ({args.old})": old_module(args.old, folder), "urllib3 (now)": _http}
        certificate = self_signed(folder)
        content = os.urandom(args.requests * args.size)
        fork = multiprocessing.get_context("fork")
        for scheme in ("http", "https") if certificate else ("http",):  # https needs the openssl command
            port, accepted, stop = fork.Queue(), fork.Value("i", 0), fork.Event()
            served = certificate if scheme == "https" else None
            child = fork.Process(target=serve, args=(served, content, port, accepted, stop))
            child.start()
            url = f"{scheme}://127.0.0.1:{port.get(timeout=30)}/files/blob.bin"
            times: dict[str, list[float]] = {name: [] for name in clients}
            connections: dict[str, int] = {}
            try:
                for run in range(args.runs):
                    order = list(clients.items())
                    for name, module in order if run % 2 == 0 else reversed(order):
                        before = accepted.value
                        cafile = served and served[0]
                        times[name].append(one_run(module, url, cafile, args.requests, args.size))
                        connections[name] = accepted.value - before
            finally:
                stop.set()
                child.join()
            for name, seconds in times.items():
                print(f"{scheme:5}  {name:20}  {args.requests} x {args.size} B: "
                      f"median {statistics.median(seconds):.3f} s"
                      f"  (runs {', '.join(f'{s:.3f}' for s in seconds)})  connections per run {connections[name]}")


if __name__ == "__main__":
    main()
