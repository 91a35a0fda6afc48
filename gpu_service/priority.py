"""Where an inference request stands in the daemon's queue: what a worker sends with each request and the
scheduler orders by (gpu_service/scheduler.py). Its own module, so the media stages that pass it along import
neither the scheduler nor the client."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class PriorityKey:
    """Where a request stands; the daemon adds the arrival order itself."""

    job_submitted_at: float
    item_first_request_at: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.job_submitted_at) and math.isfinite(self.item_first_request_at)):
            raise ValueError(f"priority key {self} must be finite")
