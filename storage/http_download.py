"""Downloading an http(s) source into the node cache, bounded: byte limit, per-host slots across the node's
processes, retries with backoff and Retry-After, a deadline for the whole download and a minimum rate per
attempt, every connection vetted by the address policy (storage/addresses.py). See storage/fetch.py.
"""

from __future__ import annotations

import contextlib
import email.utils
import fcntl
import hashlib
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin, urlparse

import requests
from urllib3.exceptions import HTTPError

from core.errors import (
    HostBusy,
    SourceNotFound,
    SourceTooLarge,
    SourceTooSlow,
    SourceUnreachable,
)
from core.private import private_dir
from storage.addresses import AddressPolicy, guarded_adapter, scrubbed, shown

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_GONE = frozenset({404, 410})
_SLOT_POLL_S = 0.1


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
