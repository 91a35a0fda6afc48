"""The daemon's Prometheus metrics, in a registry of their own so several daemons can share a process."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from monitoring.exporter import HealthCheck, MetricsServer

_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
OUTCOMES = ("ok", "rejected", "failed", "cancelled", "unavailable")


class DaemonMetrics:
    def __init__(self, device: str) -> None:
        self.registry = CollectorRegistry()
        labels = {"device": device}
        r = self.registry
        self.queue_depth = Gauge(
            "reelgen_gpu_queue_depth", "requests waiting to be batched", ["device"], registry=r
        ).labels(**labels)
        self.queue_frames = Gauge(
            "reelgen_gpu_queue_frames", "frames waiting to be batched", ["device"], registry=r
        ).labels(**labels)
        self.batch_frames = Histogram(
            "reelgen_gpu_batch_frames",
            "real frames per model call",
            ["device"],
            buckets=_BATCH_BUCKETS,
            registry=r,
        ).labels(**labels)
        self.batch_padding = Counter(
            "reelgen_gpu_padding_frames", "frames added to reach a bucket", ["device"], registry=r
        ).labels(**labels)
        self.queue_wait = Histogram(
            "reelgen_gpu_queue_wait_seconds",
            "per batch: how long its longest-waiting request waited",
            ["device"],
            buckets=_SECONDS,
            registry=r,
        ).labels(**labels)
        self.compute = Histogram(
            "reelgen_gpu_compute_seconds",
            "per batch: device time of the model call",
            ["device"],
            buckets=_SECONDS,
            registry=r,
        ).labels(**labels)
        self.busy = Counter(
            "reelgen_gpu_busy_seconds", "device time spent on model calls", ["device"], registry=r
        ).labels(**labels)
        self._requests = Counter(
            "reelgen_gpu_requests", "requests by outcome", ["device", "outcome"], registry=r
        )
        self.requests = {o: self._requests.labels(device=device, outcome=o) for o in OUTCOMES}
        self.slots_in_use = Gauge(
            "reelgen_gpu_slots_in_use", "shared-memory slots leased", ["device"], registry=r
        ).labels(**labels)
        self.slots_total = Gauge("reelgen_gpu_slots", "shared-memory slots", ["device"], registry=r).labels(
            **labels
        )
        self.slot_waiters = Gauge(
            "reelgen_gpu_slot_waiters", "lease requests waiting for a free slot", ["device"], registry=r
        ).labels(**labels)
        self._registry_labels = labels

    def add_gpu_gauges(
        self,
        utilization: Callable[[], float],
        memory_used: Callable[[], float],
        memory_total: Callable[[], float],
    ) -> None:
        labels = self._registry_labels
        r = self.registry
        Gauge("reelgen_gpu_utilization_ratio", "GPU busy fraction (NVML)", ["device"], registry=r).labels(
            **labels
        ).set_function(utilization)
        Gauge(
            "reelgen_gpu_memory_used_bytes", "GPU memory reserved by the daemon", ["device"], registry=r
        ).labels(**labels).set_function(memory_used)
        Gauge("reelgen_gpu_memory_total_bytes", "GPU memory", ["device"], registry=r).labels(
            **labels
        ).set_function(memory_total)

    def serve(self, port: int, host: str, health: HealthCheck) -> int:
        """Start /metrics and /healthz; returns the bound port (useful with port 0)."""
        return MetricsServer(self.registry, host, port, health).port
