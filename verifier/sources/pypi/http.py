"""A small HTTP client on urllib3 for the archive sources: GET, Range requests, downloads.

Why urllib3: urllib sends `Connection: close`, so every request paid for a new
connection and TLS handshake; urllib3 keeps them alive in pools. 64 range
requests of 64 KiB to one host on loopback (bench/bench_http.py, medians of 5,
same run, several runs of it): urllib 0.15-0.30 s over http, 0.53-0.64 s over
https (64 connections); urllib3 0.07-0.13 s and 0.10-0.13 s (one). One
PoolManager per client, thread-safe (the PyPI source reads from several threads).

Every socket operation has a timeout; connection errors, resets, timeouts,
bodies cut short and HTTP 5xx/429 answers are retried a few times with
exponential backoff by the loop here (urllib3's own retries are off); a
kept-alive connection the server closes just as it is used costs one such
attempt. Everything else, and the last failure, becomes SourceUnavailable
naming what was fetched and what happened.

A timeout per socket operation does not bound a request: a server that sends
a byte every few seconds (a slow loris) keeps every read short. So each
request also has a deadline for all of it, retries, backoff and redirects
included (REQUEST_DEADLINE; DOWNLOAD_DEADLINE for a whole archive):
connecting waits no longer than what is left of it, and when it passes, a
watchdog shuts down the sockets the request uses, new or from the pool,
whatever it waits for (TLS handshake, a proxy's CONNECT, headers, body), and
the request fails with SourceUnavailable (deadline.py). Only name resolution
is not cut short (the system resolver bounds it).

Only http and https are spoken (no file:, ftp: or data: URLs, also not through
redirects, which are followed here, 10 at most, as urllib did). Credentials
written in a URL (`https://user:token@host/...`) are sent as Basic
authorization to that host only (not on a redirect) and never appear in a
message. Proxies are the environment's, read as urllib reads them
(http_proxy, https_proxy, no_proxy; one ProxyManager each). Certificates are
verified with `ssl.create_default_context(cafile)`, as before. Bodies are
taken as sent (no Content-Encoding decoding), as with urllib.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import os
import re
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import urllib3
from urllib3.exceptions import ConnectTimeoutError, HTTPError, LocationValueError, ProtocolError, ProxyError, SSLError

from ... import __version__
from .. import SourceUnavailable
from .deadline import Deadline, watched

#: progress(done_bytes, total_bytes or None, label): called as a download goes.
Progress = Callable[[int, int | None, str], None]

#: The longest a request (an index page, a range of a wheel) may take in all, in seconds.
REQUEST_DEADLINE = 300.0
#: The longest downloading an archive whole may take in all, in seconds (a 400 MB wheel at 250 KB/s).
DOWNLOAD_DEADLINE = 1800.0

_RETRY_STATUSES = {429, 500, 502, 503, 504}
_REDIRECTS = {301, 302, 303, 307, 308}
_MAX_REDIRECTS = 10
_POOL_SIZE = 32
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
        self._tls = ssl.create_default_context(cafile=cafile)
        self._direct = watched(urllib3.PoolManager(maxsize=_POOL_SIZE, ssl_context=self._tls))
        self._proxies = urllib.request.getproxies()  # read once, as urllib's ProxyHandler did
        self._through: dict[str, urllib3.ProxyManager] = {}  # proxy URL -> its pools
        self._lock = threading.Lock()

    def get(self, url: str, *, what: str, accept: str | None = None, limit: int) -> Fetched:
        """The whole body of `url`, at most `limit` bytes."""
        headers = {"Accept": accept} if accept else {}

        def attempt() -> Fetched:
            with self._open(url, headers, what) as (response, final_url):
                body = _read_exactly_declared(response, limit, what)
                return Fetched(body, final_url, response.headers.get("Content-Type", ""))

        return self._retrying(attempt, what, REQUEST_DEADLINE)

    def get_range(self, url: str, start: int | None, length: int, *, what: str) -> Part:
        """`length` bytes of `url` from `start`, or its last `length` bytes when `start` is None.

        Raises RangeNotSupported, without reading the body, when the server
        answers with the whole file.
        """
        spec = f"bytes=-{length}" if start is None else f"bytes={start}-{start + length - 1}"

        def attempt() -> Part:
            with self._open(url, {"Range": spec}, what) as (response, _):
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
            with self._open(url, {}, what) as (response, _), open(dest, "wb") as out:
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
        with Deadline(seconds) as deadline:
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

    @contextlib.contextmanager
    def _open(self, url: str, headers: dict[str, str], what: str) -> Iterator[tuple[urllib3.BaseHTTPResponse, str]]:
        """The 2xx answer to a GET and the URL it came from, redirects followed; on leaving, the connection goes
        back to the pool when the body was read whole, else it is closed. Transient failures raise _Transient,
        the others SourceUnavailable."""
        url = self._remember_credentials(url)
        headers = {"User-Agent": f"gotchas/{__version__}", **headers}
        auth = self._credentials.get(urllib.parse.urlsplit(url).netloc)
        hop_headers = {**headers, "Authorization": auth} if auth else headers  # never sent on a redirect
        for hops in range(_MAX_REDIRECTS + 1):
            if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
                raise SourceUnavailable(f"{what}: {_redact(url)} is not an http or https URL")
            response = self._send(url, hop_headers, what)
            location = response.headers.get("Location") or response.headers.get("URI")
            if response.status not in _REDIRECTS or not location:
                break
            _let_go(response)
            if hops == _MAX_REDIRECTS:
                raise SourceUnavailable(f"{what}: HTTP {response.status} from {url}: more than {hops} redirects")
            url, hop_headers = _redirect_target(url, location, what), headers
        try:
            if response.status >= 300:
                problem = f"HTTP {response.status} {response.reason or ''}".rstrip() + f" from {url}"
                if response.status == 416:
                    problem += ": the file is shorter than the bytes asked for"
                if response.status in _RETRY_STATUSES:
                    raise _Transient(problem)
                raise SourceUnavailable(f"{what}: {problem}")
            yield response, url
        finally:
            _let_go(response)

    def _send(self, url: str, headers: dict[str, str], what: str) -> urllib3.BaseHTTPResponse:
        """One GET of `url` (no credentials in it), its body not read yet."""
        deadline = Deadline.current()
        seconds = max(0.001, min(self.timeout, deadline.remaining())) if deadline else self.timeout
        try:
            return self._pools_for(url).urlopen(
                "GET", url, headers=headers, redirect=False, retries=False, preload_content=False, decode_content=False,
                enforce_content_length=False, timeout=urllib3.Timeout(connect=seconds, read=seconds))
        except HTTPError as exc:
            if isinstance(_cause(exc), ssl.SSLCertVerificationError):  # no other attempt will be trusted either
                raise SourceUnavailable(f"{what}: {url}: {_cause(exc)}") from None
            if isinstance(exc, LocationValueError):  # a URL urllib3 cannot parse, a proxy of another scheme
                raise SourceUnavailable(f"{what}: {url}: {exc}") from None
            if isinstance(exc, (ConnectTimeoutError, ProxyError, SSLError)):  # NewConnectionError is one too
                raise _Transient(f"cannot connect to {_host(url)}: {_describe(exc)}") from None
            raise _Transient(f"{_host(url)}: {_describe(exc)}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(f"{_host(url)}: {_describe(exc)}") from None

    def _pools_for(self, url: str) -> urllib3.PoolManager:
        """The direct pools, or those of the proxy the environment names for `url` (no_proxy read each time)."""
        parts = urllib.parse.urlsplit(url)
        proxy = self._proxies.get(parts.scheme)
        if not proxy or urllib.request.proxy_bypass(parts.netloc):
            return self._direct
        with self._lock:
            if proxy not in self._through:
                self._through[proxy] = _proxy_pools(proxy, self._tls)
            return self._through[proxy]

    def _remember_credentials(self, url: str) -> str:
        parts = urllib.parse.urlsplit(url)
        if parts.username is None:
            return url
        secret = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        netloc = parts.netloc.rpartition("@")[2]
        self._credentials[netloc] = "Basic " + base64.b64encode(secret.encode()).decode("ascii")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _proxy_pools(proxy: str, tls: ssl.SSLContext) -> urllib3.ProxyManager:
    """Pools through `proxy` as urllib reads it: `host:port` alone is an http proxy, `user:password@` in it
    Basic proxy authorization."""
    parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    auth = {}
    if parts.username and parts.password:
        secret = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password)}"
        auth = urllib3.make_headers(proxy_basic_auth=secret)
    pools = urllib3.ProxyManager(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}", proxy_headers=auth,
                                 proxy_ssl_context=tls, maxsize=_POOL_SIZE, ssl_context=tls)
    return watched(pools)


def _redirect_target(url: str, location: str, what: str) -> str:
    try:
        return _redact(urllib.parse.urljoin(url, location.strip()))
    except ValueError:  # an unbalanced bracket in the host...
        raise SourceUnavailable(f"{what}: {url} redirects to an unreadable URL") from None


def _let_go(response: urllib3.BaseHTTPResponse) -> None:
    """Done with `response`: a connection whose body was read whole is back in the pool already; close any other."""
    response.close()
    response.release_conn()


def _read_chunk(response: urllib3.BaseHTTPResponse, size: int = _CHUNK) -> bytes:
    try:
        return response.read(size, decode_content=False)
    except (HTTPError, OSError, http.client.HTTPException) as exc:
        raise _Transient(f"reading the body: {_describe(exc)}") from None


def _read_exactly_declared(response: urllib3.BaseHTTPResponse, limit: int, what: str) -> bytes:
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


def _declared_length(response: urllib3.BaseHTTPResponse) -> int | None:
    value = response.headers.get("Content-Length")
    return int(value) if value and value.strip().isdigit() else None


def _content_range(value: str, what: str) -> tuple[int, int, int | None]:
    m = _CONTENT_RANGE.fullmatch(value.strip())
    if not m or int(m.group(2)) < int(m.group(1)):
        raise SourceUnavailable(f"{what}: unreadable Content-Range {value!r} in a partial answer")
    total = None if m.group(3) == "*" else int(m.group(3))
    return int(m.group(1)), int(m.group(2)), total


def _cause(exc: BaseException) -> BaseException:
    """The error under urllib3's wrappers (ProtocolError, ProxyError, SSLError; a failed connect's OSError)."""
    while True:
        if isinstance(exc, ConnectTimeoutError):
            inner = exc.__cause__
        elif isinstance(exc, (ProtocolError, ProxyError, SSLError)):
            inner = next((arg for arg in exc.args if isinstance(arg, BaseException)), None)
        else:
            inner = None
        if inner is None:
            return exc
        exc = inner


def _describe(exc: BaseException) -> str:
    exc = _cause(exc)
    if isinstance(exc, (TimeoutError, urllib3.exceptions.TimeoutError)):
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
