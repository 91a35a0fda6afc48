"""Turning a source URI from a catalog into a local file a decoder can open.

Local paths are used in place, by the real path the catalog's source policy checked (storage/sources.py);
s3:// and http(s):// sources are downloaded once per node into the NodeCache and pinned there for as long as
the caller's `with fetcher.local_path(uri) as path:` block runs (a context manager, not a plain path, because a
cached file could otherwise be evicted before a decoder opens it).

HTTP sources are untrusted input, so:
- byte limit (max_source_bytes) from Content-Length and again while streaming;
- SSRF: unless allow_private_http, every address a host resolves to must be public, checked again on every
  redirect hop (redirects are followed by hand, at most max_redirects), and the socket actually connected is
  vetted before a byte is sent, which closes the DNS-rebinding gap between our lookup and the client's own.
  Proxies from the environment are ignored (trust_env=False): through a proxy the connected peer says nothing
  about the final host. An IPv6 address that carries an IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64) is judged
  by that IPv4 address too, since that is where its packets are delivered;
- retries with exponential backoff on connection errors and 5xx, Retry-After honoured (bounded) on 429/503;
- time: a deadline for the whole download (download_deadline_s: attempts, backoff and slot waits included) and,
  after a grace period, a minimum average rate per attempt (http_min_rate_bytes_s), both breaches SourceTooSlow.
  Per-read timeouts alone do not bound a source that sends a byte every few seconds;
- at most `host_slots` concurrent downloads per host across all processes of the node (flock'ed slot files),
  waited for at most http_slot_wait_s (then HostBusy, transient).
"""

from __future__ import annotations

import contextlib
import email.utils
import fcntl
import hashlib
import ipaddress
import logging
import os
import random
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urljoin, urlparse

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError

from reelgen.errors import (
    ForbiddenSource,
    HostBusy,
    SourceNotFound,
    SourceTooLarge,
    SourceTooSlow,
    SourceUnreachable,
)
from reelgen.private import private_dir
from storage.cache import NodeCache
from storage.s3 import download_object, make_client
from storage.uri import Scheme, Uri, parse_uri

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_CHUNK = 1 << 20
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_GONE = frozenset({404, 410})
_SLOT_POLL_S = 0.1
# RFC 6052's well-known prefix: a NAT64 gateway delivers to the IPv4 address in the last 32 bits
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def shown(url: str) -> str:
    """url for messages and logs: without user info and query, which may carry credentials or signatures."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parsed.port}" if parsed.port else ""
    except ValueError:
        port = ""
    query = "?..." if parsed.query else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path}{query}"


def scrubbed(text: str, url: str) -> str:
    """text (e.g. an HTTP client's error message, which quotes the request path) without url's password and
    query, which may carry credentials or signatures."""
    parsed = urlparse(url)
    for secret in (parsed.query, parsed.password):
        if secret:
            text = text.replace(secret, "...")
    return text


def carried_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address a 6to4, Teredo (its client, un-XORed) or NAT64 address delivers to, with the kind."""
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    if address.teredo is not None:
        return "Teredo", address.teredo[1]
    if address in _NAT64:
        return "NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def forbidden_reason(address: IPAddress) -> str | None:
    """Why address may not be fetched from when private addresses are refused, or None if it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            # the IPv4 address itself, written in IPv6 notation
            address = address.ipv4_mapped
        elif (carried := carried_ipv4(address)) is not None:
            kind, ipv4 = carried
            reason = forbidden_reason(ipv4)
            if reason is not None:
                return f"{reason} ({ipv4} in a {kind} address)"
    checks = (
        # the specific flags first: Python's is_private also covers several of them
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("unspecified", address.is_unspecified),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        # catches shared (100.64/10), documentation and other special ranges the flags above miss
        ("non-global", not address.is_global),
    )
    return next((name for name, hit in checks if hit), None)


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address host resolves to (IP literals resolve to themselves)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise SourceUnreachable(f"host {host!r} does not resolve: {exc}") from exc
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


class AddressPolicy:
    """Which hosts HTTP sources may come from."""

    def __init__(self, allow_private: bool, exempt: Sequence[IPNetwork] = ()) -> None:
        self.allow_private = allow_private
        self.exempt = tuple(exempt)

    def check_address(self, address: IPAddress, where: str) -> None:
        if self.allow_private or any(address in net for net in self.exempt):
            return
        reason = forbidden_reason(address)
        if reason is not None:
            raise ForbiddenSource(
                f"{where}: host address {address} is {reason}; "
                "set REELGEN_ALLOW_PRIVATE_HTTP=1 to fetch from private networks"
            )

    def check_url(self, url: str) -> None:
        parsed = urlparse(url)
        if parsed.scheme.lower() not in ("http", "https") or not parsed.hostname:
            raise ForbiddenSource(
                f"{shown(url)}: only http(s) URLs with a host may be fetched (or redirected to)"
            )
        try:
            port = parsed.port or (443 if parsed.scheme.lower() == "https" else 80)
        except ValueError as exc:
            raise ForbiddenSource(f"{shown(url)}: bad port: {exc}") from exc
        if self.allow_private:
            return
        for address in resolve(parsed.hostname, port):
            self.check_address(address, shown(url))

    def check_peer(self, sock: socket.socket, host: str) -> None:
        """Vet the address a socket actually connected to (the HTTP client resolved the host again)."""
        if self.allow_private:
            return
        peer = ipaddress.ip_address(str(sock.getpeername()[0]).split("%")[0])
        self.check_address(peer, f"connection to {host}")


def guarded_adapter(policy: AddressPolicy, adopt: Callable[[socket.socket], None]) -> HTTPAdapter:
    """A requests adapter whose every new connection is vetted by policy before a byte is sent, then handed to
    adopt (a _Watchdog, which may have to shut it down).

    This is what closes DNS rebinding: a host that resolved to a public address for check_url and to a private
    one for the client's own lookup is refused here. It overrides urllib3's connection factory (`_new_conn`),
    a private hook, stable since urllib3 1.x; tests exercise it.
    """

    def vetted(sock: socket.socket, host: str) -> socket.socket:
        try:
            policy.check_peer(sock, host)
        except BaseException:
            sock.close()
            raise
        adopt(sock)
        return sock

    class Connection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return vetted(super()._new_conn(), self.host)

    class TLSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return vetted(super()._new_conn(), self.host)

    class Pool(HTTPConnectionPool):
        ConnectionCls = Connection

    class TLSPool(HTTPSConnectionPool):
        ConnectionCls = TLSConnection

    class Adapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": Pool, "https": TLSPool}

    return Adapter(max_retries=0)


class HostSlots:
    """At most `per_host` holders per host across every process using the same folder."""

    def __init__(self, root: Path, per_host: int) -> None:
        if per_host < 1:
            raise ValueError("per_host must be at least 1")
        self.root = root
        self.per_host = per_host
        private_dir(root)

    @contextlib.contextmanager
    def hold(self, host: str, wait_s: float) -> Iterator[None]:
        """One of host's slots for the block; HostBusy if none frees up within wait_s."""
        stem = hashlib.sha256(host.lower().encode()).hexdigest()[:24]
        fds = [
            os.open(self.root / f"{stem}.{i}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            for i in range(self.per_host)
        ]
        try:
            give_up = time.monotonic() + wait_s
            # Polled: flock cannot wait with a timeout. The jitter keeps waiters from polling in lockstep.
            while not any(_try_flock(fd) for fd in fds):
                left = give_up - time.monotonic()
                if left <= 0:
                    raise HostBusy(
                        f"{host}: all {self.per_host} download slots of this node stayed taken for {wait_s:.1f} s "
                        "(http_slot_wait_s); the task retries later"
                    )
                time.sleep(min(left, random.uniform(0.5, 1.5) * _SLOT_POLL_S))
            yield
        finally:
            for fd in fds:
                os.close(fd)


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date); None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class _Watchdog:
    """Ends an HTTP attempt that runs past the download's deadline or, once the grace period is over, averages
    less than the minimum rate, by shutting its sockets down: that wakes whichever read is blocked on them, which
    then fails or ends, and `check` names the breach.

    A thread, because checks between reads would not do: the HTTP client reads the status line and headers without
    returning to us, and a source sending a byte at a time never lets a single read time out.
    """

    def __init__(self, url: str, deadline: float, deadline_s: float, min_rate: float, grace_s: float) -> None:
        self.url = url
        self.deadline = deadline
        self.deadline_s = deadline_s
        self.min_rate = min_rate
        self.grace_s = grace_s
        self.started = time.monotonic()
        #: body bytes so far; written by the reading thread only
        self.received = 0
        self._breach: str | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="download-watchdog", daemon=True)

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        self._thread.join()

    def adopt(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self._breach is not None:
                _shut(sock)

    def check(self) -> None:
        """SourceTooSlow if the attempt was ended: its reads then look like a dropped connection or a short body."""
        if self._breach is not None:
            raise SourceTooSlow(self._breach)

    def _watch(self) -> None:
        while not self._done.wait(max(0.0, self._due() - time.monotonic())):
            breach = self._judge(time.monotonic())
            if breach is not None:
                with self._lock:
                    self._breach = breach
                    for sock in self._sockets:
                        _shut(sock)
                return

    def _due(self) -> float:
        # the average falls under the minimum once more time has passed than the bytes so far make up for
        return min(self.deadline, self.started + max(self.grace_s, self.received / self.min_rate))

    def _judge(self, now: float) -> str | None:
        if now >= self.deadline:
            return (
                f"{shown(self.url)}: not downloaded within {self.deadline_s:g} s (download_deadline_s); "
                f"{self.received} bytes had arrived"
            )
        # called at _due, never before the grace period is over
        elapsed = now - self.started
        if self.received < self.min_rate * elapsed:
            return (
                f"{shown(self.url)}: {self.received / elapsed:.0f} bytes/s on average over {elapsed:.1f} s, "
                f"under the minimum of {self.min_rate:g} (http_min_rate_bytes_s)"
            )
        return None


def _shut(sock: socket.socket) -> None:
    # shutdown, not close: the descriptor stays the client's to close, so it cannot be reused meanwhile
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class HttpDownloader:
    """One http(s) source to one local file, under the policies in the module docstring."""

    def __init__(
        self,
        policy: AddressPolicy,
        slots: HostSlots,
        *,
        timeout_s: float,
        max_bytes: int,
        deadline_s: float,
        min_rate_bytes_s: float,
        rate_grace_s: float,
        slot_wait_s: float,
        max_attempts: int = 4,
        backoff_s: float = 0.5,
        max_retry_after_s: float = 30.0,
        max_redirects: int = 5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = policy
        self.slots = slots
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.deadline_s = deadline_s
        self.min_rate_bytes_s = min_rate_bytes_s
        self.rate_grace_s = rate_grace_s
        self.slot_wait_s = slot_wait_s
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_retry_after_s = max_retry_after_s
        self.max_redirects = max_redirects
        self._sleep = sleep

    def download(self, url: str, dest: Path) -> int:
        host = urlparse(url).hostname or ""
        deadline = time.monotonic() + self.deadline_s
        last: _Retryable | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                wait_s = max(0.0, min(self.slot_wait_s, deadline - time.monotonic()))
                with self.slots.hold(host, wait_s):
                    return self._attempt(url, dest, deadline)
            except _Retryable as exc:
                last = exc
                if attempt == self.max_attempts:
                    break
                delay = self._delay(attempt, exc.retry_after)
                if time.monotonic() + delay >= deadline:
                    break
                log.warning("fetch %s: %s; retry %d in %.2fs", shown(url), exc, attempt, delay)
                self._sleep(delay)
        raise SourceUnreachable(f"{shown(url)}: {last} (gave up after {attempt} attempts)")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        # Jitter keeps the node's workers from retrying a recovering host in lockstep.
        ceiling = self.backoff_s * 2 ** (attempt - 1)
        return random.uniform(ceiling / 2, ceiling)

    def _attempt(self, url: str, dest: Path, deadline: float) -> int:
        watchdog = _Watchdog(url, deadline, self.deadline_s, self.min_rate_bytes_s, self.rate_grace_s)
        with watchdog, requests.Session() as session:
            session.trust_env = False
            adapter = guarded_adapter(self.policy, watchdog.adopt)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            try:
                response = self._open(session, url, deadline)
                with response:
                    self._check_status(response, url)
                    written = self._stream(response, url, dest, watchdog)
            except _Retryable:
                watchdog.check()
                raise
            # a body cut short by the watchdog can end like a whole one (no Content-Length)
            watchdog.check()
            return written

    def _open(self, session: requests.Session, url: str, deadline: float) -> requests.Response:
        for _hop in range(self.max_redirects + 1):
            self.policy.check_url(url)
            # the watchdog can only end connections that are open: a connect is bounded by the deadline here
            timeout = min(self.timeout_s, max(deadline - time.monotonic(), 0.01))
            try:
                response = session.get(
                    url,
                    stream=True,
                    allow_redirects=False,
                    timeout=timeout,
                    headers={"Accept-Encoding": "identity"},
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                raise _Retryable(f"connection failed: {scrubbed(str(exc), url)}") from exc
            if response.status_code not in _REDIRECTS or "location" not in response.headers:
                return response
            response.close()
            url = urljoin(url, response.headers["location"])
        raise SourceUnreachable(f"{shown(url)}: more than {self.max_redirects} redirects")

    def _check_status(self, response: requests.Response, url: str) -> None:
        status = response.status_code
        if status == 200:
            return
        if status in _GONE:
            raise SourceNotFound(f"{shown(url)}: HTTP {status}")
        if status == 429 or status >= 500:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise _Retryable(f"HTTP {status}", retry_after)
        raise SourceUnreachable(f"{shown(url)}: HTTP {status} {response.reason}")

    def _stream(self, response: requests.Response, url: str, dest: Path, watchdog: _Watchdog) -> int:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise SourceTooLarge(
                f"{shown(url)} is {declared} bytes, over the limit of {self.max_bytes} (max_source_bytes)"
            )
        written = 0
        try:
            with open(dest, "wb") as out:
                # read1 returns what one read of the socket gave: the watchdog counts bytes as they arrive
                while chunk := response.raw.read1(_CHUNK, decode_content=True):
                    written += len(chunk)
                    watchdog.received = written
                    if written > self.max_bytes:
                        raise SourceTooLarge(
                            f"{shown(url)} exceeds the limit of {self.max_bytes} bytes (max_source_bytes)"
                        )
                    out.write(chunk)
        except HTTPError as exc:
            raise _Retryable(f"download interrupted: {scrubbed(str(exc), url)}") from exc
        return written


class FetchSettings(Protocol):
    """The settings a Fetcher reads, and nothing else of the application's (reelgen.settings.Settings has them)."""

    @property
    def resolved_cache_dir(self) -> Path: ...
    @property
    def cache_max_bytes(self) -> int: ...
    @property
    def allow_private_http(self) -> bool: ...
    @property
    def allow_local_sources(self) -> bool | None: ...
    @property
    def http_timeout_s(self) -> float: ...
    @property
    def max_source_bytes(self) -> int: ...
    @property
    def download_deadline_s(self) -> float: ...
    @property
    def http_min_rate_bytes_s(self) -> int: ...
    @property
    def http_min_rate_grace_s(self) -> float: ...
    @property
    def http_slot_wait_s(self) -> float: ...


class Fetcher:
    """Local files for source URIs: `with fetcher.local_path(uri) as path: ...`."""

    def __init__(
        self,
        settings: FetchSettings,
        cache: NodeCache | None = None,
        *,
        s3_client: Any | None = None,
        exempt_networks: Sequence[IPNetwork] = (),
        host_slots: int = 4,
        max_attempts: int = 4,
        backoff_s: float = 0.5,
        max_retry_after_s: float = 30.0,
        max_redirects: int = 5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.cache = (
            cache if cache is not None else NodeCache(settings.resolved_cache_dir, settings.cache_max_bytes)
        )
        self._s3_client = s3_client
        self.http = HttpDownloader(
            AddressPolicy(settings.allow_private_http, exempt_networks),
            HostSlots(self.cache.root / "hosts", host_slots),
            timeout_s=settings.http_timeout_s,
            max_bytes=settings.max_source_bytes,
            deadline_s=settings.download_deadline_s,
            min_rate_bytes_s=settings.http_min_rate_bytes_s,
            rate_grace_s=settings.http_min_rate_grace_s,
            slot_wait_s=settings.http_slot_wait_s,
            max_attempts=max_attempts,
            backoff_s=backoff_s,
            max_retry_after_s=max_retry_after_s,
            max_redirects=max_redirects,
            sleep=sleep,
        )

    @contextlib.contextmanager
    def local_path(self, uri_text: str) -> Iterator[Path]:
        """A local file holding the source; cached downloads stay pinned until the block exits.

        A catalog's sources come here as its source policy left them (storage/sources.py): local ones by the
        real path that was checked against the catalog's folder.
        """
        uri = parse_uri(uri_text)
        if uri.scheme is Scheme.FILE:
            yield self._check_size(self._regular_file(self._checked_local(uri)), uri.raw)
            return
        with self.cache.open(uri.raw, self._filler(uri)) as path:
            # An entry cached under an older, larger limit must not slip past the current one.
            yield self._check_size(path, uri.raw)

    def _filler(self, uri: Uri) -> Callable[[Path], None]:
        if uri.scheme is Scheme.S3:
            return lambda dest: self._fetch_s3(uri, dest)
        return lambda dest: self._fetch_http(uri, dest)

    def _fetch_s3(self, uri: Uri, dest: Path) -> None:
        if not uri.path:
            raise SourceNotFound(f"{uri.raw}: an s3 source needs a key (s3://bucket/key)")
        download_object(
            self._s3(),
            uri.authority,
            uri.path,
            dest,
            max_bytes=self.settings.max_source_bytes,
            deadline_s=self.settings.download_deadline_s,
        )

    def _fetch_http(self, uri: Uri, dest: Path) -> None:
        self.http.download(uri.raw, dest)

    def _s3(self) -> Any:
        if self._s3_client is None:
            self._s3_client = make_client()
        return self._s3_client

    def _checked_local(self, uri: Uri) -> Path:
        if self.settings.allow_local_sources is False:
            raise ForbiddenSource(
                f"{uri.raw}: local sources are refused here (REELGEN_ALLOW_LOCAL_SOURCES=false)"
            )
        path = uri.local_path
        # A path that no longer is its own real path had a link put on its way after the policy checked it (or
        # never passed the policy): refused, not followed.
        if os.path.realpath(path) != str(path):
            raise ForbiddenSource(
                f"{uri.raw}: a local source is opened only by its real path, with no symbolic link or '..' on the way"
            )
        return path

    @staticmethod
    def _regular_file(path: Path) -> Path:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError as exc:
            raise SourceNotFound(f"{path} does not exist") from exc
        except OSError as exc:
            raise SourceNotFound(f"{path} cannot be read: {exc}") from exc
        if not stat.S_ISREG(mode):
            raise SourceNotFound(f"{path} is not a regular file")
        return path

    def _check_size(self, path: Path, where: str) -> Path:
        size = path.stat().st_size
        if size > self.settings.max_source_bytes:
            limit = self.settings.max_source_bytes
            raise SourceTooLarge(f"{where} is {size} bytes, over the limit of {limit} (max_source_bytes)")
        return path
