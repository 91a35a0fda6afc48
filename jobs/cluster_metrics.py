"""Prometheus metrics of the cluster's shared state, read from Redis at scrape time by `ClusterCollector`: queue
depth per priority sub-queue, unacknowledged messages, each job's progress and items in flight. Served once for
the cluster by the dispatcher's exporter (`serve_metrics`). It is the ledger's own numbers, so it cannot drift
from them and no pod counts it twice. The workers' own figures are monitoring/metrics.py's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import redis
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from core.errors import ConfigError
from core.settings import Settings
from jobs.broker.queues import QUEUE, UNACKED_KEY, queue_keys
from jobs.ledger import JobState, Ledger
from monitoring.exporter import HealthCheck, MetricsServer

log = logging.getLogger(__name__)


class ClusterCollector(Collector):
    """Broker queue depths and the ledger's jobs, read from Redis at each scrape.

    Reports the newest `max_jobs` jobs (the ledger keeps every job; the label set must stay bounded).
    """

    def __init__(self, client: redis.Redis, *, queue: str = QUEUE, max_jobs: int = 20) -> None:
        self.client = client
        self.queue = queue
        self.max_jobs = max_jobs

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("reelgen_redis_up", "1 when the exporter could read Redis at this scrape")
        try:
            families = list(self._read())
        except redis.RedisError as exc:
            log.warning("metrics: cannot read Redis: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _read(self) -> Iterator[Metric]:
        keys = queue_keys(self.queue)
        with self.client.pipeline(transaction=False) as pipe:
            for key in keys.values():
                pipe.llen(key)
            pipe.hlen(UNACKED_KEY)
            *lengths, unacked = pipe.execute()
        depth = GaugeMetricFamily(
            "reelgen_queue_messages",
            "messages waiting in the broker, per Celery queue and priority sub-queue",
            labels=["queue", "priority"],
        )
        for priority, length in zip(keys, lengths, strict=True):
            depth.add_metric([self.queue, str(priority)], int(length))
        yield depth
        unacked_family = GaugeMetricFamily(
            "reelgen_broker_unacked_messages", "messages delivered to workers and not yet acknowledged"
        )
        unacked_family.add_metric([], int(unacked))
        yield unacked_family
        yield from self._jobs()

    def _jobs(self) -> Iterator[Metric]:
        ledger = Ledger(self.client)
        labels = ["job_id", "kind"]
        items = GaugeMetricFamily(
            "reelgen_job_items", "a job's items by ledger counter", labels=[*labels, "counter"]
        )
        catalog = GaugeMetricFamily(
            "reelgen_job_catalog_items", "items in a job's catalog, once counted", labels=labels
        )
        in_flight = GaugeMetricFamily(
            "reelgen_job_items_in_flight", "a job's items admitted and not yet settled", labels=labels
        )
        state = GaugeMetricFamily(
            "reelgen_job_state", "1 for the state a job is in", labels=[*labels, "state"]
        )
        errors = GaugeMetricFamily(
            "reelgen_job_errors", "a job's failed items by error class", labels=[*labels, "error"]
        )
        exhausted = GaugeMetricFamily(
            "reelgen_job_catalog_exhausted",
            "1 once the dispatcher has read the job's whole catalog",
            labels=labels,
        )
        submitted = GaugeMetricFamily(
            "reelgen_job_submitted_timestamp_seconds", "when a job was submitted", labels=labels
        )
        total_in_flight = 0
        for job in ledger.jobs(self.max_jobs):
            job_labels = [job.id, job.kind.value]
            counters = {
                "dispatched": job.dispatched,
                "done": job.done,
                "failed": job.failed,
                "skipped": job.skipped,
                "dead": job.dead,
                "redispatched": job.redispatched,
            }
            for counter, value in counters.items():
                items.add_metric([*job_labels, counter], value)
            if job.total is not None:
                catalog.add_metric(job_labels, job.total)
            in_flight.add_metric(job_labels, job.in_flight)
            for candidate in JobState:
                state.add_metric([*job_labels, candidate.value], 1 if candidate is job.state else 0)
            for error, count in sorted(ledger.error_counts(job.id).items()):
                errors.add_metric([*job_labels, error], count)
            exhausted.add_metric(job_labels, 1 if job.exhausted else 0)
            submitted.add_metric(job_labels, job.submitted_at)
            total_in_flight += job.in_flight if not job.state.finished else 0
        yield from (items, catalog, in_flight, state, errors, exhausted, submitted)
        total = GaugeMetricFamily(
            "reelgen_items_in_flight", "items in flight over the reported unfinished jobs"
        )
        total.add_metric([], total_in_flight)
        yield total


def redis_health(client: redis.Redis) -> HealthCheck:
    def check() -> str | None:
        started = time.monotonic()
        try:
            client.ping()
        except redis.RedisError as exc:
            return f"redis unreachable: {type(exc).__name__}: {exc}"
        log.debug("redis ping %.1f ms", (time.monotonic() - started) * 1000)
        return None

    return check


def serve_metrics(
    port: int, settings: Settings, host: str = "0.0.0.0", health: HealthCheck = lambda: None
) -> MetricsServer:
    """The dispatcher's exporter: cluster state from Redis on /metrics; on /healthz, Redis answering and then
    whatever `health` adds."""
    if settings.redis_url is None:
        raise ConfigError("the metrics exporter needs REELGEN_REDIS_URL")
    client = redis.Redis.from_url(
        settings.redis_url.get_secret_value(), socket_timeout=5, socket_connect_timeout=5
    )
    registry = CollectorRegistry()
    registry.register(ClusterCollector(client))
    redis_ok = redis_health(client)
    return MetricsServer(registry, host, port, health=lambda: redis_ok() or health())
