"""Prometheus metrics of the CPU workers and of the cluster's shared state (broker queues, the job ledger).

Two kinds of figure, collected two ways:

* Per-event facts from Celery's prefork children (items by outcome and error class, stage durations) use
  prometheus_client's multiprocess mode: every child writes its samples to mmap files in
  PROMETHEUS_MULTIPROC_DIR (an emptyDir per pod) and the worker pod's exporter sums the files at scrape time.
  Only counters and histograms live there, never gauges, so a child killed by a hard time limit leaves no stale
  value behind: its counts stay in the sum, which is what they should do. (Pushing every observation to Redis
  instead would cost a round trip per event, lose the per-pod view and need hand-made histogram buckets.)
* Shared state (queue depth per priority sub-queue, unacknowledged messages, each job's progress and items in
  flight) is read from Redis at scrape time by `ClusterCollector`, served once for the cluster by the
  dispatcher's exporter (`serve_metrics`). It is the ledger's own numbers, so it cannot drift from them and no
  pod counts it twice.

The inference daemon's metrics (`reelgen_gpu_*`) are gpu_service/metrics.py's registry on the daemon's port.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import redis
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from jobs.ledger import JobState, Ledger
from monitoring.exporter import HealthCheck, MetricsServer
from reelgen.errors import ConfigError

if TYPE_CHECKING:
    from reelgen.settings import Settings

log = logging.getLogger(__name__)

# The broker layout of jobs/celery_app.py (queue "reelgen", priority_steps 0..9, sep ":"); kombu names the
# priority-p list "<queue><sep><p>" and priority 0 plain "<queue>". tests/test_metrics.py checks they agree.
QUEUE = "reelgen"
PRIORITIES = tuple(range(10))
SEP = ":"
UNACKED_KEY = "unacked"  # kombu's Redis hash of delivered, unacknowledged messages

Outcome = Literal["done", "failed", "retried"]
OUTCOMES: tuple[Outcome, ...] = ("done", "failed", "retried")
_ERROR_CLASS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_STAGE_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800)


# --- worker-side facts (multiprocess-safe) -------------------------------------------------------------------


@dataclass(frozen=True)
class _WorkerMetrics:
    items: Counter
    stage_seconds: Histogram
    stage_cpu: Counter


_worker_metrics: _WorkerMetrics | None = None
_worker_lock = threading.Lock()


def _metrics() -> _WorkerMetrics:
    # Created on first use, in the process that observes, and in a registry of their own: the dispatcher
    # imports this module too and must not export empty worker series.
    global _worker_metrics
    with _worker_lock:
        if _worker_metrics is None:
            registry = CollectorRegistry(auto_describe=True)
            _worker_metrics = _WorkerMetrics(
                items=Counter(
                    "reelgen_items",
                    "items settled by workers, by outcome and error class ('' when done)",
                    ["outcome", "error"],
                    registry=registry,
                ),
                stage_seconds=Histogram(
                    "reelgen_stage_seconds",
                    "wall seconds of one pipeline stage run (prepare, analyse, render)",
                    ["stage"],
                    buckets=_STAGE_SECONDS,
                    registry=registry,
                ),
                stage_cpu=Counter(
                    "reelgen_stage_cpu_seconds",
                    "CPU seconds of the worker process spent in a pipeline stage",
                    ["stage"],
                    registry=registry,
                ),
            )
        return _worker_metrics


def count_item(outcome: Outcome, error_class: str = "") -> None:
    """Count one item settling. Call it only where the ledger says the transition happened (once per item)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome {outcome!r} is not one of {OUTCOMES}")
    # the label set must stay bounded: error classes are exception class names, anything else is folded
    error = error_class if not error_class or _ERROR_CLASS.match(error_class) else "Other"
    _metrics().items.labels(outcome=outcome, error=error).inc()


def observe_stage(stage: str, wall_s: float, cpu_s: float | None = None) -> None:
    """Record one run of a pipeline stage: its wall time and, when known, the CPU time it took."""
    metrics = _metrics()
    metrics.stage_seconds.labels(stage=stage).observe(max(0.0, wall_s))
    if cpu_s is not None:
        metrics.stage_cpu.labels(stage=stage).inc(max(0.0, cpu_s))


def multiproc_dir() -> Path | None:
    value = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return Path(value) if value else None


def worker_registry(directory: Path) -> CollectorRegistry:
    """A registry that sums every process's samples in `directory` (the prefork children's files)."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return registry


def reset_multiproc_dir(directory: Path) -> None:
    """Empty the samples folder. Run in the worker's main process before it forks its children."""
    directory.mkdir(parents=True, exist_ok=True)
    for entry in directory.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def install_worker_metrics(port: int, host: str = "0.0.0.0", health: HealthCheck = lambda: None) -> None:
    """Serve the worker pod's /metrics and /healthz from the Celery main process (call before the worker
    starts); the server starts once the worker is ready to take tasks.

    Needs PROMETHEUS_MULTIPROC_DIR set in the environment before Python starts (prometheus_client picks its
    value store at import), so every child writes its samples where this exporter reads them.
    """
    from celery.signals import worker_init, worker_ready

    directory = multiproc_dir()
    if directory is None:
        raise ConfigError("worker metrics need PROMETHEUS_MULTIPROC_DIR (a folder private to this worker)")

    def on_init(**_: Any) -> None:
        reset_multiproc_dir(directory)

    def on_ready(**_: Any) -> None:
        server = MetricsServer(worker_registry(directory), host, port, health)
        log.info("worker metrics on port %d", server.port)

    worker_init.connect(on_init, weak=False)
    worker_ready.connect(on_ready, weak=False)


# --- cluster state from Redis --------------------------------------------------------------------------------


def queue_keys(queue: str = QUEUE, priorities: Iterable[int] = PRIORITIES, sep: str = SEP) -> dict[int, str]:
    """{priority: Redis list name} as kombu's Redis transport names them."""
    return {p: f"{queue}{sep}{p}" if p else queue for p in priorities}


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
