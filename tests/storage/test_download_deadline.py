"""Downloads are bounded as a whole: a deadline, a minimum average rate after a grace period, and a bounded wait
for one of the host's slots. Against a real HTTP server on 127.0.0.1 (exempted from the address policy, as in
test_storage_fetch.py) that sends a byte every TICK seconds, with small limits so each test takes seconds."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core.errors import HostBusy, SourceTooSlow, SourceUnreachable
from core.settings import Settings
from storage.fetch import Fetcher
from storage.http_download import HostSlots

LOOPBACK = [ipaddress.ip_network("127.0.0.1/32")]
TICK = 0.5
#: how long any trickle goes on: long enough to outlast every limit below, short enough that a broken limit
#: fails a test instead of hanging it
TRICKLE_S = 8.0


class _Trickle(BaseHTTPRequestHandler):
    hits: Counter[str]

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self.hits[self.path] += 1
        route = getattr(self, "route_" + self.path.strip("/").replace("-", "_"), None)
        if route is None:
            self.send_error(404)
            return
        route()

    def route_trickle(self) -> None:
        body = int(TRICKLE_S / TICK)
        self._write(f"HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n\r\n".encode())
        self._drip(b"x" * body)

    def route_trickle_unsized(self) -> None:
        # no Content-Length: the body ends when the connection does, so a cut body looks like a whole one
        self._write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        self._drip(b"x" * int(TRICKLE_S / TICK))
        self.close_connection = True

    def route_trickle_headers(self) -> None:
        self._write(b"HTTP/1.1 200 OK\r\nX-Pad: ")
        self._drip(b"p" * int(TRICKLE_S / TICK))
        self._write(b"\r\nContent-Length: 2\r\n\r\nok")

    def route_steady(self) -> None:
        # a slow start, then 2,000 bytes/s for one second: on average over 500 bytes/s from the first second on
        self._write(b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n")
        time.sleep(0.5)
        for _ in range(20):
            if not self._write(b"y" * 100):
                return
            time.sleep(0.05)

    def route_busy(self) -> None:
        self._write(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n")

    def _drip(self, data: bytes) -> None:
        for i in range(len(data)):
            if not self._write(data[i : i + 1]):
                return
            time.sleep(TICK)

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True


class Server:
    def __init__(self) -> None:
        self.handler: type[_Trickle] = type("Handler", (_Trickle,), {"hits": Counter()})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


@pytest.fixture
def http() -> Iterator[Server]:
    server = Server()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _fetcher(tmp_path: Path, **limits: Any) -> Fetcher:
    settings = Settings(
        state_dir=tmp_path / "state",
        cache_dir=tmp_path / "cache",
        http_timeout_s=5.0,
        cpus=1,
        **limits,
    )
    return Fetcher(settings, exempt_networks=LOOPBACK, backoff_s=0.05, host_slots=1)


def _too_slow(fetcher: Fetcher, url: str) -> tuple[float, str]:
    """Seconds until the download failed as SourceTooSlow (it must), and the message."""
    started = time.monotonic()
    with pytest.raises(SourceTooSlow) as caught, fetcher.local_path(url):
        pass
    return time.monotonic() - started, str(caught.value)


def _cached(fetcher: Fetcher) -> list[Path]:
    return sorted((fetcher.cache.root / "data").iterdir())


def test_a_trickling_source_fails_at_the_deadline(tmp_path: Path, http: Server) -> None:
    # the rate is judged only after the deadline: only the deadline can end it
    fetcher = _fetcher(tmp_path, download_deadline_s=2.0, http_min_rate_grace_s=60)
    elapsed, message = _too_slow(fetcher, http.url("/trickle"))
    assert 2.0 <= elapsed < 2.0 + 2 * TICK
    assert "download_deadline_s" in message
    assert http.handler.hits["/trickle"] == 1  # not transient: no retry spends another deadline
    assert _cached(fetcher) == []
    assert not SourceTooSlow.transient


def test_a_source_under_the_minimum_rate_fails_once_the_grace_period_is_over(
    tmp_path: Path, http: Server
) -> None:
    fetcher = _fetcher(
        tmp_path, download_deadline_s=60.0, http_min_rate_bytes_s=100, http_min_rate_grace_s=1.0
    )
    elapsed, message = _too_slow(fetcher, http.url("/trickle"))
    assert 1.0 <= elapsed < 1.0 + 2 * TICK
    assert "http_min_rate_bytes_s" in message
    assert _cached(fetcher) == []


def test_headers_sent_a_byte_at_a_time_are_held_to_the_deadline(tmp_path: Path, http: Server) -> None:
    fetcher = _fetcher(tmp_path, download_deadline_s=1.5, http_min_rate_grace_s=60)
    elapsed, message = _too_slow(fetcher, http.url("/trickle-headers"))
    assert 1.5 <= elapsed < 1.5 + 2 * TICK
    assert "download_deadline_s" in message


def test_a_body_without_length_cut_at_the_deadline_is_not_taken_for_a_whole_one(
    tmp_path: Path, http: Server
) -> None:
    fetcher = _fetcher(tmp_path, download_deadline_s=1.5, http_min_rate_grace_s=60)
    elapsed, message = _too_slow(fetcher, http.url("/trickle-unsized"))
    assert 1.5 <= elapsed < 1.5 + 2 * TICK
    assert "download_deadline_s" in message
    assert _cached(fetcher) == []


def test_a_slow_but_steady_source_is_downloaded(tmp_path: Path, http: Server) -> None:
    fetcher = _fetcher(
        tmp_path, download_deadline_s=5.0, http_min_rate_bytes_s=500, http_min_rate_grace_s=1.0
    )
    with fetcher.local_path(http.url("/steady")) as path:
        assert path.read_bytes() == b"y" * 2000


def test_no_retry_is_started_that_the_deadline_leaves_no_time_for(tmp_path: Path, http: Server) -> None:
    sleeps: list[float] = []
    settings = Settings(state_dir=tmp_path / "state", cpus=1, download_deadline_s=0.5)
    fetcher = Fetcher(settings, exempt_networks=LOOPBACK, sleep=sleeps.append)
    with (
        pytest.raises(SourceUnreachable, match=r"503.*after 1 attempts"),
        fetcher.local_path(http.url("/busy")),
    ):
        pass
    assert sleeps == []  # Retry-After: 1 is past the deadline
    assert http.handler.hits["/busy"] == 1


def test_a_host_whose_slots_stay_taken_fails_the_download_as_host_busy(tmp_path: Path, http: Server) -> None:
    fetcher = _fetcher(tmp_path, http_slot_wait_s=0.5)
    started = time.monotonic()
    with (
        fetcher.http.slots.hold("127.0.0.1", 0),
        pytest.raises(HostBusy, match="http_slot_wait_s"),
        fetcher.local_path(http.url("/steady")),
    ):
        pass
    assert 0.5 <= time.monotonic() - started < 2.0
    assert http.handler.hits["/steady"] == 0
    assert HostBusy.transient  # the task layer retries it: the host may be free by then


def test_a_slot_freed_while_waiting_is_taken(tmp_path: Path) -> None:
    slots = HostSlots(tmp_path / "hosts", per_host=1)
    taken = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with slots.hold("cdn.example", 0):
            taken.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    assert taken.wait(5)
    threading.Timer(0.3, release.set).start()
    started = time.monotonic()
    with slots.hold("cdn.example", 5.0):
        waited = time.monotonic() - started
    thread.join()
    assert 0.2 <= waited < 2.0
    with slots.hold("other.example", 0):  # hosts do not share slots
        pass
