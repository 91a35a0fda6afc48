"""How much a daemon has served since it became ready, read from its status: for the end of a run and the
headline benchmark (the GPU-busy fraction and mean batch size; on the CPU, the compute thread's)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu_service.client import ping_or_none


@dataclass(frozen=True)
class DaemonUsage:
    device: str
    batches: int
    frames: int
    #: device time spent in model calls (CUDA events on a GPU, the compute thread's wall time on the CPU)
    busy_s: float
    #: time since the daemon's models were ready
    serving_s: float

    @classmethod
    def from_status(cls, status: Mapping[str, Any]) -> DaemonUsage:
        stats = status["stats"]
        ready_at = stats.get("ready_at")
        serving = float(status["now"]) - float(ready_at) if ready_at is not None else 0.0
        return cls(
            device=str(status["device"]),
            batches=int(stats["batches"]),
            frames=int(stats["frames"]),
            busy_s=float(stats["busy_s"]),
            serving_s=max(0.0, serving),
        )

    @property
    def mean_batch(self) -> float:
        return self.frames / self.batches if self.batches else 0.0

    @property
    def busy_fraction(self) -> float:
        return min(1.0, self.busy_s / self.serving_s) if self.serving_s > 0 else 0.0

    def describe(self) -> str:
        return (
            f"inference on {self.device}: {self.batches} batches of {self.mean_batch:.1f} frames on average, "
            f"busy {self.busy_fraction:.0%} of {self.serving_s:.1f} s"
        )


def read_usage(socket_path: str | os.PathLike[str]) -> DaemonUsage | None:
    """The usage of the daemon at socket_path, or None when no daemon answers there."""
    status = ping_or_none(socket_path)
    return None if status is None else DaemonUsage.from_status(status)
