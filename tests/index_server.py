"""A package index for tests: builds sdists and wheels, and serves them with a PEP 691 JSON
simple index over real HTTP on 127.0.0.1, misbehaving on request.

    with IndexServer() as index:
        index.add("toy", "toy-1.0.tar.gz", make_sdist({"toy/a.py": b"x = 1\\n"}, top="toy-1.0"))
        source = PyPISource(engine, index_url=index.url)

Every answer is logged in `index.log` (path, Range header, status, body bytes
sent, Authorization header), so that tests can say what went over the wire. It
speaks HTTP/1.1 with keep-alive; `index.connections` lists the connections it
accepted. With a `certificate` (see `self_signed`) it speaks https. It also
answers as a forward proxy for plain http (a GET of an absolute URL, logged in
`index.proxied`), and with the redirects in `index.redirects`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import itertools
import json
import re
import socket
import ssl
import subprocess
import tarfile
import threading
import time
import urllib.parse
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock


def make_sdist(files: dict[str, bytes], top: str,
               extra_members: Iterable[tuple[tarfile.TarInfo, bytes | None]] = ()) -> bytes:
    """A .tar.gz holding `files` below the folder `top`, then `extra_members` under their own names, as given."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, content in files.items():
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for info, content in extra_members:
            if content is not None:
                info.size = len(content)
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
    return out.getvalue()


def tar_member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    """A tar header, for hostile members: any name, any type (symlink, hard link, device...)."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


def make_wheel(files: dict[str, bytes], name: str, version: str, *, lie_in_record: Iterable[str] = (),
               compression: int = zipfile.ZIP_DEFLATED, zip64: bool = False,
               duplicate: tuple[str, bytes] | None = None) -> bytes:
    """A wheel holding `files` and a dist-info with a RECORD of their sha256 digests.

    `lie_in_record` names files whose RECORD line gets another file's digest;
    `zip64` writes zip64 end records and zip64 sizes in the central directory;
    `duplicate` (path, content) adds a second member of a name already there.
    """
    dist_info = f"{name}-{version}.dist-info"
    members = dict(files)
    members[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    lies = set(lie_in_record)
    lines = []
    for path, content in members.items():
        digest = hashlib.sha256(b"another file" if path in lies else content).digest()
        lines.append(f"{path},sha256={base64.urlsafe_b64encode(digest).rstrip(b'=').decode()},{len(content)}")
    lines.append(f"{dist_info}/RECORD,,")
    members[f"{dist_info}/RECORD"] = ("\n".join(lines) + "\n").encode()
    out = io.BytesIO()
    limits = (mock.patch.multiple(zipfile, ZIP64_LIMIT=0, ZIP_FILECOUNT_LIMIT=0) if zip64
              else contextlib.nullcontext())
    with limits, zipfile.ZipFile(out, "w", compression=compression) as archive:
        for path, content in members.items():
            archive.writestr(path, content)
        if duplicate:
            archive.writestr(*duplicate)
    return out.getvalue()


def self_signed(folder: Path) -> tuple[str, str] | None:
    """(certificate file, key file) for 127.0.0.1, made in `folder` by the openssl command; None without it."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)],
                       capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return str(cert), str(key)


@dataclass
class Trickle:
    """A slow-loris answer: one byte every `interval` seconds, for `limit` seconds at most (then the connection
    closes, so that a client that never gives up fails a test instead of hanging it)."""

    interval: float = 1.0
    headers: bool = False  # the status line and headers trickle too; else they are sent at once
    endless: bool = False  # no Content-Length, and the body never ends: spaces after it until `limit`
    limit: float = 10.0


@dataclass
class Faults:
    """How the server misbehaves for one file. Counters go down as faults are served."""

    lying_digest: bool = False  # the index lists a sha256 that is not the file's
    truncated: bool = False  # only the first half is served, with a Content-Length that agrees
    lying_size: bool = False  # the index lists a size 1000 bytes larger than the file's
    drop_mid_body: int = 0  # this many answers send half the body, then close the connection
    errors_500: int = 0  # this many answers are HTTP 500
    delay: float = 0.0  # seconds to wait before each answer
    #: Set: the server sends half the body, then waits (10 s at most) until the event is set before the rest;
    #: `released` tells whether it was set in time.
    hold_mid_body: threading.Event | None = None
    released: bool | None = None
    trickle: Trickle | None = None  # the file is sent a byte at a time


@dataclass
class Served:
    project: str
    filename: str
    content: bytes
    upload_time: str | None
    yanked: bool | str
    faults: Faults


@dataclass(frozen=True)
class Answer:
    path: str
    range: str | None
    status: int
    sent: int  # body bytes written
    authorization: str | None = None  # the Authorization header of the request


@dataclass
class IndexServer:
    """A PEP 691 index and its files on 127.0.0.1; `range_support=False` answers every GET whole."""

    range_support: bool = True
    json_api: bool = True
    files: dict[str, Served] = field(default_factory=dict)
    log: list[Answer] = field(default_factory=list)
    #: project -> the body its page is served with instead of the one made from its files (hostile pages)
    pages: dict[str, bytes] = field(default_factory=dict)
    #: set: every project page is sent a byte at a time
    page_trickle: Trickle | None = None
    #: path -> the Location a GET of it is answered with, in a 302
    redirects: dict[str, str] = field(default_factory=dict)
    #: (absolute URL, Proxy-Authorization header) of every GET that came as to a proxy
    proxied: list[tuple[str, str | None]] = field(default_factory=list)
    #: the client address of every connection accepted
    connections: list[tuple[str, int]] = field(default_factory=list)
    #: (certificate file, key file): the server speaks https with them (see `self_signed`)
    certificate: tuple[str, str] | None = None

    def __enter__(self) -> IndexServer:
        self._closing = threading.Event()  # ends trickling answers
        self._answering = 0  # GETs begun and not yet logged
        self._logged = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.index = self
        if self.certificate:
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(*self.certificate)
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    @property
    def url(self) -> str:
        """The index URL, as PIP_INDEX_URL would give it."""
        host, port = self._server.server_address[:2]
        return f"{'https' if self.certificate else 'http'}://{host}:{port}/simple"

    def add(self, project: str, filename: str, content: bytes, *, upload_time: str | None = "2024-05-06T07:08:09Z",
            yanked: bool | str = False, faults: Faults | None = None) -> Served:
        served = Served(project, filename, content, upload_time, yanked, faults or Faults())
        self.files[filename] = served
        return served

    def settled(self, timeout: float = 5.0) -> IndexServer:
        """The server once every answer begun is logged: a client may have read an answer whole before."""
        with self._logged:
            self._logged.wait_for(lambda: self._answering == 0, timeout)
        return self

    def answers_for(self, filename: str) -> list[Answer]:
        return [a for a in self.settled().log if a.path == f"/files/{filename}"]

    def project_page(self, project: str) -> dict:
        entries = []
        for served in self.files.values():
            if served.project != project:
                continue
            digest = hashlib.sha256(served.content).hexdigest()
            if served.faults.lying_digest:
                digest = hashlib.sha256(b"not " + served.content).hexdigest()
            entry = {"filename": served.filename, "url": f"../../files/{served.filename}",
                     "hashes": {"sha256": digest}, "yanked": served.yanked,
                     "size": len(served.content) + (1000 if served.faults.lying_size else 0)}
            if served.upload_time:
                entry["upload-time"] = served.upload_time
            entries.append(entry)
        return {"meta": {"api-version": "1.1"}, "name": project, "files": entries}


class _Handler(BaseHTTPRequestHandler):
    server_version = "TestIndex/1"
    #: Keep-alive, as real indexes: every answer has a Content-Length, or is HTTP/1.0 and closes the connection.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else a kept-alive connection waits for a delayed ACK between head and body

    @property
    def index(self) -> IndexServer:
        return self.server.index

    def log_message(self, format, *args) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.index.connections.append(self.client_address)

    def do_GET(self) -> None:
        with self.index._logged:
            self.index._answering += 1
        try:
            self._get()
        finally:
            with self.index._logged:
                self.index._answering -= 1
                self.index._logged.notify_all()

    def _get(self) -> None:
        if self.path.startswith("http://"):  # as a proxy: the only host it forwards to is itself
            self.index.proxied.append((self.path, self.headers.get("Proxy-Authorization")))
            self.path = urllib.parse.urlsplit(self.path)._replace(scheme="", netloc="").geturl()
        if self.path in self.index.redirects:
            return self._answer(302, b"", headers={"Location": self.index.redirects[self.path]})
        m = re.fullmatch(r"/simple/([^/]+)/", self.path)
        if m:
            return self._project_page(m.group(1))
        m = re.fullmatch(r"/files/([^/]+)", self.path)
        served = self.index.files.get(m.group(1)) if m else None
        if served is None:
            return self._answer(404, b"not found")
        self._file(served)

    def _project_page(self, project: str) -> None:
        if project in self.index.pages:
            body = self.index.pages[project]
        elif not any(s.project == project for s in self.index.files.values()):
            return self._answer(404, b"no such project")
        elif not self.index.json_api:
            return self._answer(200, b"<html><body>links</body></html>", "text/html")
        else:
            body = json.dumps(self.index.project_page(project)).encode()
        if self.index.page_trickle:
            return self._trickle(200, body, "application/vnd.pypi.simple.v1+json", self.index.page_trickle)
        self._answer(200, body, "application/vnd.pypi.simple.v1+json")

    def _file(self, served: Served) -> None:
        faults = served.faults
        if faults.delay:
            time.sleep(faults.delay)
        if faults.errors_500 > 0:
            faults.errors_500 -= 1
            return self._answer(500, b"try again")
        content = served.content[:len(served.content) // 2] if faults.truncated else served.content
        status, body, headers = 200, content, {}
        requested = self.headers.get("Range")
        if requested and self.index.range_support:
            start, end = _byte_range(requested, len(content))
            if start >= len(content):
                return self._answer(416, b"", headers={"Content-Range": f"bytes */{len(content)}"})
            status, body = 206, content[start:end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
        if faults.drop_mid_body > 0:
            faults.drop_mid_body -= 1
            return self._drop_mid_body(status, body, headers)
        if faults.trickle:
            return self._trickle(status, body, "application/octet-stream", faults.trickle, headers)
        self._answer(status, body, "application/octet-stream", headers, hold=faults)

    def _answer(self, status: int, body: bytes, content_type: str = "text/plain",
                headers: dict[str, str] | None = None, hold: Faults | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        sent = 0
        held = hold is not None and hold.hold_mid_body is not None
        try:
            for at in range(0, len(body), 65536):
                if held and at >= len(body) // 2:
                    self.wfile.flush()
                    hold.released = hold.hold_mid_body.wait(10)
                    held = False
                self.wfile.write(body[at:at + 65536])
                sent += len(body[at:at + 65536])
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client hung up (it asked for a range and got the whole file)
        self._record(status, sent)

    def _drop_mid_body(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        half = body[:len(body) // 2]
        self.wfile.write(half)
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True
        self._record(status, len(half))

    def _trickle(self, status: int, body: bytes, content_type: str, trickle: Trickle,
                 headers: dict[str, str] | None = None) -> None:
        """The answer one byte every `trickle.interval` seconds, until `trickle.limit` or the client hangs up."""
        head = [f"HTTP/1.0 {status} {self.responses[status][0]}", f"Content-Type: {content_type}"]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        if not trickle.endless:
            head.append(f"Content-Length: {len(body)}")
        head_bytes = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        pieces = [body, itertools.repeat(32) if trickle.endless else ()]
        sent, end = 0, time.monotonic() + trickle.limit
        self.close_connection = True
        try:
            if trickle.headers:
                pieces.insert(0, head_bytes)
            else:
                self.wfile.write(head_bytes)
            for byte in itertools.chain.from_iterable(pieces):
                if self.index._closing.wait(trickle.interval) or time.monotonic() > end:
                    break
                self.wfile.write(bytes((byte,)))
                sent += 1
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up
        self._record(status, sent)

    def _record(self, status: int, sent: int) -> None:
        self.index.log.append(Answer(self.path, self.headers.get("Range"), status, sent,
                                     self.headers.get("Authorization")))

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()


def _byte_range(spec: str, size: int) -> tuple[int, int]:
    """First and last byte of a single `bytes=` range (suffix ranges too), clamped to the file."""
    m = re.fullmatch(r"bytes=(\d*)-(\d*)", spec.strip())
    if not m or not (m.group(1) or m.group(2)):
        raise ValueError(f"unsupported range {spec!r}")
    if not m.group(1):
        return max(0, size - int(m.group(2))), size - 1
    end = int(m.group(2)) if m.group(2) else size - 1
    return int(m.group(1)), min(end, size - 1)
