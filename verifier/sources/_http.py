"""A small HTTP client on urllib for the archive sources: GET, Range requests, downloads.

Every socket operation has a timeout; connection errors, resets, timeouts,
bodies cut short and HTTP 5xx/429 answers are retried a few times with
exponential backoff; everything else, and the last failure, becomes
SourceUnavailable naming what was fetched and what happened.

A timeout per socket operation does not bound a request: a server that sends
a byte every few seconds (a slow loris) keeps every read short and the request
going forever. So each request also has a deadline for all of it, retries,
backoff and redirects included (REQUEST_DEADLINE; DOWNLOAD_DEADLINE for a
whole archive): connecting waits no longer than what is left of it, and when
it passes, a watchdog shuts down the request's sockets whatever the request is
waiting for (TLS handshake, headers, body), and the request fails with
SourceUnavailable. Waits it does not cut short: name resolution (the system
resolver bounds it) and a CONNECT through an https proxy (the socket timeout
bounds each of its reads).

Only http and https are spoken (no file:, ftp: or data: URLs, also not through
redirects). Credentials written in a URL (`https://user:token@host/...`) are
sent as Basic authorization to that host only and never appear in a message.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from .. import __version__
from . import SourceUnavailable

#: progress(done_bytes, total_bytes or None, label): called as a download goes.
Progress = Callable[[int, int | None, str], None]

#: The longest a request (an index page, a range of a wheel) may take in all, in seconds.
REQUEST_DEADLINE = 300.0
#: The longest downloading an archive whole may take in all, in seconds (a 400 MB wheel at 250 KB/s).
DOWNLOAD_DEADLINE = 1800.0

_RETRY_STATUSES = {429, 500, 502, 503, 504}
_CHUNK = 1024 * 1024
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class RangeNotSupported(Exception):
    """The server answered a Range request with the whole file (200) instead of a part."""


class _Transient(Exception):
    """A failure that another attempt may not meet."""


@dataclass(frozen=True)
class Fetched:
    body: bytes
    url: str  # after redirects: the base for relative links in the body
    content_type: str


@dataclass(frozen=True)
class Part:
    """The answer to a Range request: `body` starts at byte `start` of a file of `total` bytes."""

    body: bytes
    start: int
    total: int | None


class HttpClient:
    """GETs with timeouts, deadlines and retries.

    `timeout` bounds every socket operation (connect, each read), in seconds;
    REQUEST_DEADLINE a whole request and DOWNLOAD_DEADLINE a whole download,
    every attempt included (read when the request starts); `attempts` is how
    many times a transient failure is tried in all; the delay before attempt
    n+1 is `backoff * 2**(n-1)` seconds.
    """

    def __init__(self, *, timeout: float = 30.0, attempts: int = 4, backoff: float = 0.5,
                 cafile: str | None = None) -> None:
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self._credentials: dict[str, str] = {}  # netloc -> Authorization header value
        self._opener = _http_only_opener(ssl.create_default_context(cafile=cafile))

    def get(self, url: str, *, what: str, accept: str | None = None, limit: int) -> Fetched:
        """The whole body of `url`, at most `limit` bytes."""
        headers = {"Accept": accept} if accept else {}

        def attempt() -> Fetched:
            with self._open(url, headers, what) as response:
                body = _read_exactly_declared(response, limit, what)
                return Fetched(body, _redact(response.geturl()), response.headers.get("Content-Type", ""))

        return self._retrying(attempt, what, REQUEST_DEADLINE)

    def get_range(self, url: str, start: int | None, length: int, *, what: str) -> Part:
        """`length` bytes of `url` from `start`, or its last `length` bytes when `start` is None.

        Raises RangeNotSupported, without reading the body, when the server
        answers with the whole file.
        """
        spec = f"bytes=-{length}" if start is None else f"bytes={start}-{start + length - 1}"

        def attempt() -> Part:
            with self._open(url, {"Range": spec}, what) as response:
                if response.status == 200:
                    raise RangeNotSupported(f"{what}: the server does not answer range requests")
                if response.status != 206:
                    raise SourceUnavailable(f"{what}: HTTP {response.status} to a range request")
                first, last, total = _content_range(response.headers.get("Content-Range", ""), what)
                if start is not None and first != start:
                    raise SourceUnavailable(f"{what}: asked for bytes from {start}, the server sent from {first}")
                body = _read_exactly_declared(response, length, what)
                if len(body) != last - first + 1:
                    raise _Transient(f"{len(body)} bytes received of {last - first + 1}")
                return Part(body, first, total)

        return self._retrying(attempt, what, REQUEST_DEADLINE)

    def download(self, url: str, dest: str | os.PathLike, *, what: str, size: int | None, limit: int,
                 progress: Progress | None = None, on_write: Callable[[int, int], None] | None = None) -> str:
        """Stream `url` into the file `dest` (created or emptied), fsync it, and answer its sha256 (hex).

        A body that ends short is fetched again from the start; one that does
        not have the `size` the index announced is refused. `on_write(attempt,
        written)` is told, after each piece, how many bytes of `dest` this
        attempt (1, 2, ...) has written: a reader may follow the file as it grows.
        """
        attempts = 0

        def attempt() -> str:
            nonlocal attempts
            attempts += 1
            digest = hashlib.sha256()
            done = 0
            with self._open(url, {}, what) as response, open(dest, "wb") as out:
                declared = _declared_length(response)
                if declared is not None and size is not None and declared != size:
                    raise SourceUnavailable(f"{what}: the server sends {declared} bytes, the index says {size}")
                total = size if size is not None else declared
                while True:
                    chunk = _read_chunk(response)
                    if not chunk:
                        break
                    done += len(chunk)
                    if done > min(limit, total if total is not None else limit):
                        raise SourceUnavailable(f"{what}: more than the {total or limit} bytes expected")
                    digest.update(chunk)
                    out.write(chunk)
                    if on_write:
                        out.flush()
                        on_write(attempts, done)
                    if progress:
                        progress(done, total, what)
                if declared is not None and done < declared:
                    raise _Transient(f"the connection closed after {done} of {declared} bytes")
                if size is not None and done != size:
                    raise SourceUnavailable(f"{what}: {done} bytes received, the index says {size} (a truncated file?)")
                out.flush()
                os.fsync(out.fileno())
            return digest.hexdigest()

        return self._retrying(attempt, what, DOWNLOAD_DEADLINE, "download")

    def _retrying(self, attempt, what: str, seconds: float, kind: str = "request"):
        """`attempt()`, tried again after transient failures, all of it within `seconds`.

        Whatever an attempt ends with once the deadline has passed (an answer too:
        a body without a Content-Length cut short by the watchdog looks whole) is
        refused as the deadline's failure.
        """
        with _Deadline(seconds) as deadline:
            for number in range(1, self.attempts + 1):
                if deadline.remaining() <= 0:
                    raise deadline.failure(what, kind)
                try:
                    result = attempt()
                except Exception as exc:
                    if deadline.expired or deadline.remaining() <= 0:  # the watchdog, or a timeout cut to the end
                        raise deadline.failure(what, kind) from None
                    if not isinstance(exc, _Transient):
                        raise
                    if number == self.attempts:
                        tries = f" (tried {number} times)" if number > 1 else ""
                        raise SourceUnavailable(f"{what}: {exc}{tries}") from None
                    time.sleep(max(0.0, min(self.backoff * 2 ** (number - 1), deadline.remaining())))
                    continue
                if deadline.expired:
                    raise deadline.failure(what, kind)
                return result
        raise AssertionError("unreachable")

    def _open(self, url: str, headers: dict[str, str], what: str) -> http.client.HTTPResponse:
        """The response to a GET; transient failures raise _Transient, the others SourceUnavailable."""
        url = self._remember_credentials(url)
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise SourceUnavailable(f"{what}: {_redact(url)} is not an http or https URL")
        request = urllib.request.Request(url, headers={"User-Agent": f"gotchas/{__version__}", **headers})
        auth = self._credentials.get(urllib.parse.urlsplit(url).netloc)
        if auth:
            request.add_unredirected_header("Authorization", auth)  # never sent on to another host
        try:
            return self._opener.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            exc.close()
            problem = f"HTTP {exc.code} {exc.reason} from {_redact(exc.url or url)}"
            if exc.code == 416:
                problem += ": the file is shorter than the bytes asked for"
            if exc.code in _RETRY_STATUSES:
                raise _Transient(problem) from None
            raise SourceUnavailable(f"{what}: {problem}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, ssl.SSLCertVerificationError):
                raise SourceUnavailable(f"{what}: {_redact(url)}: {exc.reason}") from None
            raise _Transient(f"cannot connect to {_host(url)}: {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(f"{_host(url)}: {_describe(exc)}") from None

    def _remember_credentials(self, url: str) -> str:
        parts = urllib.parse.urlsplit(url)
        if parts.username is None:
            return url
        secret = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        netloc = parts.netloc.rpartition("@")[2]
        self._credentials[netloc] = "Basic " + base64.b64encode(secret.encode()).decode("ascii")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class _Deadline:
    """The end of one request: past it, a watchdog shuts down every socket the request opened.

    While a deadline is entered, connections opened in its thread (`_Watched*Connection`)
    register their socket with it. It keeps a duplicate of each: shutting a duplicate down
    stops the connection itself, also once TLS has taken over the original socket object.
    """

    _current = threading.local()

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._end = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True
        self._outer: _Deadline | None = None

    @classmethod
    def current(cls) -> _Deadline | None:
        return getattr(cls._current, "deadline", None)

    def __enter__(self):  # -> _Deadline
        self._outer = _Deadline.current()
        _Deadline._current.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()
        _Deadline._current.deadline = self._outer
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def remaining(self) -> float:
        return self._end - time.monotonic()

    def watch(self, sock: socket.socket) -> None:
        duplicate = sock.dup()
        with self._lock:
            self._sockets.append(duplicate)
            if self.expired:
                _shut_down(duplicate)

    def failure(self, what: str, kind: str) -> SourceUnavailable:
        return SourceUnavailable(f"{what}: not done after {self.seconds:g} seconds, the deadline for a {kind}; "
                                 "the server sends too slowly or stalls")

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut_down(sock)


def _shut_down(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already


class _WatchedHTTPConnection(http.client.HTTPConnection):
    """A connection whose socket the current deadline watches, and whose connect waits no longer than it."""

    def connect(self) -> None:
        deadline = _Deadline.current()
        if deadline is not None and isinstance(self.timeout, (int, float)):
            self.timeout = max(0.001, min(self.timeout, deadline.remaining()))
        super().connect()
        if deadline is not None:
            deadline.watch(self.sock)


class _WatchedHTTPSConnection(http.client.HTTPSConnection, _WatchedHTTPConnection):
    """HTTPSConnection.connect calls _WatchedHTTPConnection.connect (the MRO), then shakes hands: watched too."""


class _WatchedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_WatchedHTTPConnection, req)


class _WatchedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(context=context)
        self._tls = context

    def https_open(self, req):
        return self.do_open(_WatchedHTTPSConnection, req, context=self._tls)


def _http_only_opener(context: ssl.SSLContext) -> urllib.request.OpenerDirector:
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(),
                    _WatchedHTTPHandler(), _WatchedHTTPSHandler(context),
                    urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPRedirectHandler(),
                    urllib.request.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def _read_chunk(response: http.client.HTTPResponse, size: int = _CHUNK) -> bytes:
    try:
        return response.read(size)
    except (OSError, http.client.HTTPException) as exc:
        raise _Transient(f"reading the body: {_describe(exc)}") from None


def _read_exactly_declared(response: http.client.HTTPResponse, limit: int, what: str) -> bytes:
    """The body, refused past `limit` bytes; one shorter than its Content-Length is transient."""
    declared = _declared_length(response)
    if declared is not None and declared > limit:
        raise SourceUnavailable(f"{what}: {declared} bytes, over the {limit}-byte limit")
    chunks, received = [], 0
    while True:
        chunk = _read_chunk(response, min(_CHUNK, limit + 1 - received))
        if not chunk:
            break
        chunks.append(chunk)
        received += len(chunk)
        if received > limit:
            raise SourceUnavailable(f"{what}: more than the {limit}-byte limit")
    if declared is not None and received < declared:
        raise _Transient(f"the connection closed after {received} of {declared} bytes")
    return b"".join(chunks)


def _declared_length(response: http.client.HTTPResponse) -> int | None:
    value = response.headers.get("Content-Length")
    return int(value) if value and value.strip().isdigit() else None


def _content_range(value: str, what: str) -> tuple[int, int, int | None]:
    m = _CONTENT_RANGE.fullmatch(value.strip())
    if not m or int(m.group(2)) < int(m.group(1)):
        raise SourceUnavailable(f"{what}: unreadable Content-Range {value!r} in a partial answer")
    total = None if m.group(3) == "*" else int(m.group(3))
    return int(m.group(1)), int(m.group(2)), total


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, http.client.IncompleteRead):
        return "the connection closed in the middle of the body"
    if isinstance(exc, (ConnectionResetError, http.client.RemoteDisconnected)):
        return "the connection was closed by the server"
    return str(exc) or type(exc).__name__


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).hostname or "the server"


def _redact(url: str) -> str:
    """`url` without the credentials it may carry."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
