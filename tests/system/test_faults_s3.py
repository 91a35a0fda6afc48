"""Faults: S3 answering 500/503 or slowly, through a fault-injecting proxy on 127.0.0.1 in front of a real
S3 protocol server (moto): requests are retried, then fail with a named error; a flaky store still gets the
item's clips and manifest, a broken one fails the item with StorageError and writes no manifest."""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from core.errors import SourceUnreachable, StorageError
from storage.s3 import S3Store, download_object, make_client
from tests.support.faults import Leaks, base_env, run_reelgen, small_catalog, summary_failures

#: (method, path, how many such requests came before) -> None to pass through, an HTTP status, or a delay (s)
Rule = Callable[[str, str, int], int | float | None]


@dataclass
class FaultProxy:
    upstream: tuple[str, int]
    rule: Rule = lambda method, path, seen: None
    seen: Counter[tuple[str, str]] = field(default_factory=Counter)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def count(self, method: str, fragment: str) -> int:
        return sum(n for (m, p), n in self.seen.items() if m == method and fragment in p)


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _body(self) -> bytes:
            if self.headers.get("transfer-encoding", "").lower() == "chunked":
                chunks: list[bytes] = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("content-length") or 0))

        def _serve(self) -> None:
            body = self._body()
            key = (self.command, self.path.split("?")[0])
            seen = proxy.seen[key]
            proxy.seen[key] += 1
            action = proxy.rule(self.command, self.path, seen)
            if isinstance(action, int):
                payload = f"<Error><Code>Injected{action}</Code><Message>fault</Message></Error>".encode()
                self.send_response(action)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            if isinstance(action, float):
                time.sleep(action)
            upstream = http.client.HTTPConnection(*proxy.upstream, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"}
            headers["Content-Length"] = str(len(body))
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            upstream.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

    return Handler


@pytest.fixture(scope="module")
def moto() -> Iterator[tuple[str, int]]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield host, int(port)
    server.stop()


@pytest.fixture
def proxy(moto: tuple[str, int]) -> Iterator[FaultProxy]:
    fault = FaultProxy(moto)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fault))
    server.daemon_threads = True
    fault.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fault
    server.shutdown()
    server.server_close()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    values = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
    }
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def _bucket(moto: tuple[str, int]) -> str:
    bucket = f"faults-{uuid.uuid4().hex[:10]}"
    make_client(endpoint_url=f"http://{moto[0]}:{moto[1]}").create_bucket(Bucket=bucket)
    return bucket


def test_persistent_503_is_retried_then_a_storage_error(
    proxy: FaultProxy, moto: tuple[str, int], aws_env: dict[str, str], tmp_path: Path
) -> None:
    bucket = _bucket(moto)
    proxy.rule = lambda method, path, seen: 503 if method == "PUT" else None
    store = S3Store(bucket, "out", client=make_client(endpoint_url=proxy.url, max_attempts=3))
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"x" * 1000)
    with pytest.raises(StorageError, match=r"503|SlowDown|Injected"):
        store.put_file("item/1x1.mp4", clip, "video/mp4")
    assert proxy.count("PUT", "/item/1x1.mp4") == 3  # every attempt botocore was allowed, no more
    with pytest.raises(StorageError):
        store.put_bytes("item/manifest.json", b"{}", "application/json")
    assert store.get_bytes("item/manifest.json") is None  # nothing half-written behind the error


def test_transient_500_is_retried_until_it_succeeds(
    proxy: FaultProxy, moto: tuple[str, int], aws_env: dict[str, str]
) -> None:
    bucket = _bucket(moto)
    proxy.rule = lambda method, path, seen: 500 if method == "PUT" and seen < 2 else None
    store = S3Store(bucket, "out", client=make_client(endpoint_url=proxy.url, max_attempts=3))
    store.put_bytes("item/manifest.json", b'{"ok": 1}', "application/json")
    assert proxy.count("PUT", "/item/manifest.json") == 3
    assert store.get_bytes("item/manifest.json") == b'{"ok": 1}'


def test_a_slow_store_times_out_into_named_errors(
    proxy: FaultProxy, moto: tuple[str, int], aws_env: dict[str, str], tmp_path: Path
) -> None:
    bucket = _bucket(moto)
    direct = make_client(endpoint_url=f"http://{moto[0]}:{moto[1]}")
    direct.put_object(Bucket=bucket, Key="src/v.mp4", Body=b"v" * 100)
    proxy.rule = lambda method, path, seen: 1.5
    client = make_client(endpoint_url=proxy.url, max_attempts=2, read_timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(StorageError, match=r"[Tt]imeout|timed out"):
        S3Store(bucket, "out", client=client).put_bytes("k/manifest.json", b"{}", "application/json")
    with pytest.raises(SourceUnreachable, match=r"[Tt]imeout|timed out"):
        download_object(client, bucket, "src/v.mp4", tmp_path / "v.mp4", max_bytes=1000, deadline_s=60)
    assert time.monotonic() - started < 15  # bounded: attempts x timeout, not the 60 s default
    assert proxy.count("GET", "/src/v.mp4") == 2


def test_source_download_answering_503_is_source_unreachable(
    proxy: FaultProxy, moto: tuple[str, int], aws_env: dict[str, str], tmp_path: Path
) -> None:
    bucket = _bucket(moto)
    proxy.rule = lambda method, path, seen: 503
    with pytest.raises(SourceUnreachable):
        download_object(
            make_client(endpoint_url=proxy.url, max_attempts=2),
            bucket,
            "src/v.mp4",
            tmp_path / "v",
            max_bytes=10,
            deadline_s=60,
        )
    assert SourceUnreachable.transient  # the task layer retries it before failing the item
    assert proxy.count("GET", "/src/v.mp4") == 2


def test_a_run_against_a_flaky_and_a_broken_store(
    proxy: FaultProxy, moto: tuple[str, int], aws_env: dict[str, str], tmp_path: Path
) -> None:
    """Through the proxy: every PUT under doomed/ answers 503, the first two clip PUTs under flaky/ 500."""
    bucket = _bucket(moto)
    folder = tmp_path / "catalog"
    catalog = small_catalog(folder, 2, seconds=2.0, prefix="x")
    catalog.write_text(catalog.read_text().replace('"x-0"', '"flaky"').replace('"x-1"', '"doomed"'))

    def rule(method: str, path: str, seen: int) -> int | None:
        if method == "PUT" and "/doomed/" in path:
            return 503
        if method == "PUT" and "/flaky/" in path and path.endswith(".mp4") and seen < 2:
            return 500
        return None

    proxy.rule = rule
    env = base_env(
        tmp_path,
        **aws_env,
        REELGEN_OUT=f"s3://{bucket}/out",
        REELGEN_S3_ENDPOINT_URL=proxy.url,
        REELGEN_S3_REGION="us-east-1",
        REELGEN_TASK_RETRIES="0",
    )
    leaks = Leaks(env["REELGEN_STATE_DIR"], temp_dirs=[tmp_path / "tmp", tmp_path / "state"])
    result = run_reelgen(["run", str(catalog)], env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert summary_failures(result.stdout) == {"doomed": "StorageError"}, result.stdout
    assert proxy.count("PUT", "/out/doomed/1x1.mp4") == 5  # botocore's bounded attempts (storage.s3)
    direct = make_client(endpoint_url=f"http://{moto[0]}:{moto[1]}")
    keys = {o["Key"] for o in direct.list_objects_v2(Bucket=bucket, Prefix="out/").get("Contents", [])}
    assert {"out/flaky/manifest.json", "out/flaky/1x1.mp4"} <= keys
    assert not [k for k in keys if k.startswith("out/doomed/")]
    manifest = json.loads(direct.get_object(Bucket=bucket, Key="out/flaky/manifest.json")["Body"].read())
    assert manifest["outputs"][0]["uri"] == f"s3://{bucket}/out/flaky/1x1.mp4"
    leaks.check()
