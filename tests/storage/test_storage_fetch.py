"""Fetcher over real servers on 127.0.0.1: local files, S3 (moto) and HTTP (http.server in a thread).

Loopback is the only address these tests contact. Where a test needs loopback to count as an allowed host, it
exempts exactly 127.0.0.1/32 through Fetcher's exempt_networks; every other private address stays refused.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlparse

import pytest

import storage.addresses
from core.errors import ForbiddenSource, SourceNotFound, SourceTooLarge, SourceUnreachable
from core.settings import Settings
from storage.addresses import forbidden_reason, shown
from storage.cache import NodeCache
from storage.fetch import Fetcher
from storage.http_download import parse_retry_after
from storage.s3 import make_client

LOOPBACK = [ipaddress.ip_network("127.0.0.1/32")]
VIDEO = bytes(range(256)) * 64  # 16 KiB


class _Routes(BaseHTTPRequestHandler):
    """The test server: each path is one behaviour; hits are counted per path+query."""

    hits: Counter[str]
    active: list[int]
    lock: threading.Lock

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        url = urlparse(self.path)
        with self.lock:
            self.hits[self.path] += 1
            hit = self.hits[self.path]
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        route = getattr(self, "route_" + url.path.strip("/").replace("-", "_").replace(".", "_"), None)
        if route is None:
            self._send(404, b"no such route")
            return
        route(hit, query)

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def route_video_mp4(self, hit: int, query: dict[str, str]) -> None:
        self._send(200, VIDEO, {"Content-Type": "video/mp4"})

    def route_gone(self, hit: int, query: dict[str, str]) -> None:
        self._send(410)

    def route_denied(self, hit: int, query: dict[str, str]) -> None:
        self._send(403)

    def route_flaky(self, hit: int, query: dict[str, str]) -> None:
        if hit <= int(query.get("fail", "1")):
            self._send(503, b"try later")
        else:
            self._send(200, VIDEO)

    def route_busy(self, hit: int, query: dict[str, str]) -> None:
        if hit == 1:
            self._send(429, headers={"Retry-After": "1"})
        else:
            self._send(200, VIDEO)

    def route_redirect(self, hit: int, query: dict[str, str]) -> None:
        self._send(302, headers={"Location": query["to"]})

    def route_loop(self, hit: int, query: dict[str, str]) -> None:
        self._send(302, headers={"Location": f"/loop?n={int(query.get('n', '0')) + 1}"})

    def route_declared_huge(self, hit: int, query: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(10**12))
        self.end_headers()
        self._write_quietly(b"x" * 1024)

    def route_endless(self, hit: int, query: dict[str, str]) -> None:
        # No Content-Length: the body ends only when the client hangs up.
        self.send_response(200)
        self.end_headers()
        chunk = b"x" * 65536
        while self._write_quietly(chunk):
            pass

    def route_slow(self, hit: int, query: dict[str, str]) -> None:
        with self.lock:
            self.active.append(1)
            self.active[0] = max(self.active[0], len(self.active) - 1)
        time.sleep(0.3)
        with self.lock:
            self.active.pop()
        self._send(200, b"slow body")

    def _write_quietly(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True


class HttpServer:
    def __init__(self) -> None:
        handler = type("Handler", (_Routes,), {"hits": Counter(), "active": [0], "lock": threading.Lock()})
        self.handler: type[_Routes] = handler
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def hits(self, path: str) -> int:
        return self.handler.hits[path]

    @property
    def max_concurrent(self) -> int:
        return self.handler.active[0]


@pytest.fixture
def http() -> Iterator[HttpServer]:
    server = HttpServer()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "state_dir": tmp_path / "state",
        "cache_dir": tmp_path / "cache",
        "cache_max_bytes": 10 * 2**20,
        "max_source_bytes": 2**20,
        "allow_private_http": False,
        "http_timeout_s": 5.0,
        "cpus": 1,
    }
    values.update(overrides)
    return Settings(**values)


class Sleeps(list[float]):
    """Records the waits the fetcher asks for, instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _fetcher(tmp_path: Path, sleeps: Sleeps | None = None, **kwargs: Any) -> Fetcher:
    settings_overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in Settings.model_fields}
    return Fetcher(
        _settings(tmp_path, **settings_overrides),
        exempt_networks=kwargs.pop("exempt_networks", LOOPBACK),
        backoff_s=0.05,
        sleep=sleeps if sleeps is not None else Sleeps(),
        **kwargs,
    )


def _cached_files(fetcher: Fetcher) -> list[Path]:
    return sorted((fetcher.cache.root / "data").iterdir())


# --- local files


def test_local_file_is_used_in_place(tmp_path: Path) -> None:
    video = tmp_path / "media" / "a.mp4"
    video.parent.mkdir()
    video.write_bytes(VIDEO)
    fetcher = _fetcher(tmp_path)
    for text in (str(video), video.as_uri()):
        with fetcher.local_path(text) as path:
            assert path == video.resolve()
    assert _cached_files(fetcher) == []


def test_local_missing_or_not_a_file_is_not_found(tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path)
    with (
        pytest.raises(SourceNotFound, match="does not exist"),
        fetcher.local_path(str(tmp_path / "nope.mp4")),
    ):
        pass
    with pytest.raises(SourceNotFound, match="not a regular file"), fetcher.local_path(str(tmp_path)):
        pass


def test_local_file_over_the_limit_is_too_large(tmp_path: Path) -> None:
    video = tmp_path / "big.mp4"
    video.write_bytes(b"x" * 101)
    fetcher = _fetcher(tmp_path, max_source_bytes=100)
    with pytest.raises(SourceTooLarge, match="101 bytes"), fetcher.local_path(str(video)):
        pass


def test_unsupported_scheme_is_forbidden(tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path)
    with pytest.raises(ForbiddenSource, match="ftp"), fetcher.local_path("ftp://example.com/a.mp4"):
        pass


# --- S3


@pytest.fixture
def s3_client(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    client = make_client(endpoint_url=s3_endpoint)
    client.create_bucket(Bucket="sources")
    return client


def test_s3_source_is_downloaded_once_into_the_cache(tmp_path: Path, s3_client: Any) -> None:
    s3_client.put_object(Bucket="sources", Key="v/a.mp4", Body=VIDEO)
    fetcher = _fetcher(tmp_path, s3_client=s3_client)
    with fetcher.local_path("s3://sources/v/a.mp4") as path:
        assert path.read_bytes() == VIDEO
        assert path.parent == tmp_path / "cache" / "data"
    s3_client.delete_object(Bucket="sources", Key="v/a.mp4")
    with fetcher.local_path("s3://sources/v/a.mp4") as again:  # served from the cache, S3 no longer has it
        assert again.read_bytes() == VIDEO


def test_s3_source_over_the_limit_leaves_no_entry(tmp_path: Path, s3_client: Any) -> None:
    s3_client.put_object(Bucket="sources", Key="big.mp4", Body=b"x" * 2000)
    fetcher = _fetcher(tmp_path, s3_client=s3_client, max_source_bytes=1000)
    with pytest.raises(SourceTooLarge), fetcher.local_path("s3://sources/big.mp4"):
        pass
    assert _cached_files(fetcher) == []


def test_s3_missing_key_is_not_found(tmp_path: Path, s3_client: Any) -> None:
    fetcher = _fetcher(tmp_path, s3_client=s3_client)
    with pytest.raises(SourceNotFound), fetcher.local_path("s3://sources/missing.mp4"):
        pass
    with pytest.raises(SourceNotFound, match="needs a key"), fetcher.local_path("s3://sources/"):
        pass


def test_cached_entry_is_rechecked_against_a_lower_limit(tmp_path: Path, s3_client: Any) -> None:
    s3_client.put_object(Bucket="sources", Key="mid.mp4", Body=b"x" * 2000)
    cache = NodeCache(tmp_path / "shared-cache", 10**6)
    with Fetcher(_settings(tmp_path), cache, s3_client=s3_client).local_path("s3://sources/mid.mp4") as path:
        assert path.stat().st_size == 2000
    stricter = Fetcher(_settings(tmp_path, max_source_bytes=1000), cache, s3_client=s3_client)
    with pytest.raises(SourceTooLarge), stricter.local_path("s3://sources/mid.mp4"):
        pass


# --- HTTP


def test_http_file_is_downloaded_and_cached(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path)
    for _ in range(2):
        with fetcher.local_path(http.url("/video.mp4")) as path:
            assert path.read_bytes() == VIDEO
            assert path.suffix == ""
    assert http.hits("/video.mp4") == 1


@pytest.mark.parametrize("path", ["/missing", "/gone"])
def test_http_404_and_410_are_not_found(tmp_path: Path, http: HttpServer, path: str) -> None:
    sleeps = Sleeps()
    with pytest.raises(SourceNotFound, match="HTTP 4"), _fetcher(tmp_path, sleeps).local_path(http.url(path)):
        pass
    assert http.hits(path) == 1
    assert sleeps == []


def test_http_other_client_errors_are_not_retried(tmp_path: Path, http: HttpServer) -> None:
    with pytest.raises(SourceUnreachable, match="403"), _fetcher(tmp_path).local_path(http.url("/denied")):
        pass
    assert http.hits("/denied") == 1


def test_http_503_then_200_is_retried(tmp_path: Path, http: HttpServer) -> None:
    sleeps = Sleeps()
    with _fetcher(tmp_path, sleeps).local_path(http.url("/flaky?fail=2")) as path:
        assert path.read_bytes() == VIDEO
    assert http.hits("/flaky?fail=2") == 3
    # exponential backoff with jitter: attempt n waits within [b*2^(n-1)/2, b*2^(n-1)], b = 0.05
    assert len(sleeps) == 2
    assert 0.025 <= sleeps[0] <= 0.05 and 0.05 <= sleeps[1] <= 0.1


def test_http_persistent_5xx_becomes_unreachable(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path, max_attempts=3)
    with (
        pytest.raises(SourceUnreachable, match="after 3 attempts"),
        fetcher.local_path(http.url("/flaky?fail=9")),
    ):
        pass
    assert http.hits("/flaky?fail=9") == 3
    assert _cached_files(fetcher) == []


def test_http_429_honours_retry_after(tmp_path: Path, http: HttpServer) -> None:
    sleeps = Sleeps()
    with _fetcher(tmp_path, sleeps).local_path(http.url("/busy")) as path:
        assert path.read_bytes() == VIDEO
    assert sleeps == [1.0]


def test_retry_after_is_bounded(tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path, max_retry_after_s=5.0)
    assert fetcher.http._delay(1, 3600.0) == 5.0
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0


def test_http_redirect_is_followed(tmp_path: Path, http: HttpServer) -> None:
    start = "/redirect?to=/video.mp4"
    with _fetcher(tmp_path).local_path(http.url(start)) as path:
        assert path.read_bytes() == VIDEO
    assert http.hits(start) == 1 and http.hits("/video.mp4") == 1


def test_http_redirect_loop_is_bounded(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path, max_redirects=3)
    with (
        pytest.raises(SourceUnreachable, match="more than 3 redirects"),
        fetcher.local_path(http.url("/loop")),
    ):
        pass
    assert sum(n for p, n in http.handler.hits.items() if p.startswith("/loop")) == 4


def test_http_declared_length_over_the_limit(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path)
    with (
        pytest.raises(SourceTooLarge, match="1000000000000 bytes"),
        fetcher.local_path(http.url("/declared-huge")),
    ):
        pass
    assert _cached_files(fetcher) == []


def test_http_endless_body_is_cut_at_the_limit(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path, max_source_bytes=300_000)
    with pytest.raises(SourceTooLarge, match="exceeds the limit"), fetcher.local_path(http.url("/endless")):
        pass
    assert _cached_files(fetcher) == []


def test_http_per_host_downloads_are_capped(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path, host_slots=1)
    errors: list[BaseException] = []

    def fetch(n: int) -> None:
        try:
            with fetcher.local_path(http.url(f"/slow?n={n}")):
                pass
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=fetch, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(n for p, n in http.handler.hits.items() if p.startswith("/slow")) == 3
    assert http.max_concurrent == 1


# --- SSRF


def test_loopback_is_refused_without_contacting_it(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path, exempt_networks=[])
    with pytest.raises(ForbiddenSource, match="loopback"), fetcher.local_path(http.url("/video.mp4")):
        pass
    with pytest.raises(ForbiddenSource), fetcher.local_path(http.url("/video.mp4", host="localhost")):
        pass
    assert http.hits("/video.mp4") == 0


def test_allow_private_http_lets_loopback_through(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path, exempt_networks=[], allow_private_http=True)
    with fetcher.local_path(http.url("/video.mp4")) as path:
        assert path.read_bytes() == VIDEO


@pytest.mark.parametrize(
    "target",
    ["http://127.0.0.2:{port}/video.mp4", "http://[::1]:{port}/video.mp4", "http://0.0.0.0:{port}/video.mp4"],
)
def test_redirect_to_a_private_address_is_refused(tmp_path: Path, http: HttpServer, target: str) -> None:
    # 127.0.0.1 plays the allowed public host; the redirect points at other loopback addresses, never exempted
    start = "/redirect?to=" + quote(target.format(port=http.port), safe="")
    fetcher = _fetcher(tmp_path)
    with pytest.raises(ForbiddenSource), fetcher.local_path(http.url(start)):
        pass
    assert http.hits(start) == 1
    assert http.hits("/video.mp4") == 0
    assert _cached_files(fetcher) == []


def test_redirect_to_another_scheme_is_refused(tmp_path: Path, http: HttpServer) -> None:
    for target in ("file:///etc/passwd", "s3://bucket/key", "ftp://127.0.0.1/x"):
        fetcher = _fetcher(tmp_path)
        with (
            pytest.raises(ForbiddenSource, match="only http"),
            fetcher.local_path(http.url("/redirect?to=" + target)),
        ):
            pass


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_dns_rebinding_is_caught_at_connect(
    tmp_path: Path, http: HttpServer, monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    # Our own lookup is made to answer a public address; the connection still lands on loopback and is refused
    # before any request is sent (for https: before the TLS handshake).
    monkeypatch.setattr(
        storage.addresses, "resolve", lambda host, port: [ipaddress.ip_address("93.184.216.34")]
    )
    fetcher = _fetcher(tmp_path, exempt_networks=[])
    url = f"{scheme}://127.0.0.1:{http.port}/video.mp4"
    with pytest.raises(ForbiddenSource, match="loopback"), fetcher.local_path(url):
        pass
    assert http.hits("/video.mp4") == 0


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("172.16.5.4", "private"),
        ("169.254.169.254", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "non-global"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("ff02::1", "multicast"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        # IPv6 addresses that carry an IPv4 one are judged by it (and then as IPv6 addresses themselves)
        ("2002:7f00:1::", "loopback (127.0.0.1 in a 6to4 address)"),
        ("2002:a9fe:a9fe::1", "link-local (169.254.169.254 in a 6to4 address)"),
        ("2002:0a00:0001:1::1", "private (10.0.0.1 in a 6to4 address)"),
        # Teredo: server 65.54.227.120, client 127.0.0.1 stored XOR 0xffffffff
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback (127.0.0.1 in a Teredo address)"),
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private (10.0.0.1 in a Teredo address)"),
        ("64:ff9b::a9fe:a9fe", "link-local (169.254.169.254 in a NAT64 address)"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
        ("2002:5db8:d822::1", None),  # 6to4 of the public 93.184.216.34
    ],
)
def test_forbidden_reason(address: str, reason: str | None) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) == reason


def test_a_6to4_address_of_loopback_is_refused_naming_what_it_carries(tmp_path: Path) -> None:
    policy = _fetcher(tmp_path, exempt_networks=[]).http.policy
    with pytest.raises(
        ForbiddenSource, match=r"2002:7f00:1:: is loopback \(127\.0\.0\.1 in a 6to4 address\)"
    ):
        policy.check_address(ipaddress.ip_address("2002:7f00:1::"), "http://[2002:7f00:1::]/v.mp4")


def test_urls_in_messages_lose_credentials_and_signatures() -> None:
    url = "https://user:secret@cdn.example:8443/a/b.mp4?X-Amz-Signature=abc123"
    assert shown(url) == "https://cdn.example:8443/a/b.mp4?..."
    assert shown("http://[::1]/v.mp4") == "http://[::1]/v.mp4"


def test_refusal_message_does_not_echo_the_query(tmp_path: Path, http: HttpServer) -> None:
    fetcher = _fetcher(tmp_path, exempt_networks=[])
    with pytest.raises(ForbiddenSource) as caught, fetcher.local_path(http.url("/video.mp4?token=s3cr3t")):
        pass
    assert "s3cr3t" not in str(caught.value)
