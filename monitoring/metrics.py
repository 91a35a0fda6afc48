"""Prometheus metrics of the CPU workers: per-event facts from Celery's prefork children.

* Per-event facts from Celery's prefork children (items by outcome and error class, stage durations) use
  prometheus_client's multiprocess mode: every child writes its samples to mmap files in
  PROMETHEUS_MULTIPROC_DIR (an emptyDir per pod) and the worker pod's exporter sums the files at scrape time.
  Only counters and histograms live there, never gauges, so a child killed by a hard time limit leaves no stale
  value behind: its counts stay in the sum, which is what they should do. (Pushing every observation to Redis
  instead would cost a round trip per event, lose the per-pod view and need hand-made histogram buckets.)
* Shared state (queues, the ledger's jobs) is jobs/cluster_metrics.py's, read from Redis at scrape time.

The inference daemon's metrics (`reelgen_gpu_*`) are gpu_service/metrics.py's registry on the daemon's port.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.multiprocess import MultiProcessCollector

from core.errors import ConfigError
from monitoring.exporter import HealthCheck, MetricsServer

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

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
