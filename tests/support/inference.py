"""The in-process models (gpu_service.local), remembering what each request asked of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gpu_service.local import LocalInference
from gpu_service.priority import PriorityKey


@dataclass(frozen=True)
class Request:
    model: str
    frames: int
    #: the names of the request's context arrays
    context: tuple[str, ...]


class Recording(LocalInference):
    """LocalInference that keeps every request it served, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Request] = []

    def infer(
        self,
        model: str,
        frames: npt.NDArray[np.uint8],
        key: PriorityKey,
        context: Mapping[str, npt.NDArray[Any]] | None = None,
    ) -> dict[str, npt.NDArray[np.float32]]:
        self.requests.append(Request(model, len(frames), tuple(sorted(context or {}))))
        return super().infer(model, frames, key, context)

    def frames(self) -> dict[str, int]:
        """How many frames each model was asked about."""
        counts: Counter[str] = Counter()
        for request in self.requests:
            counts[request.model] += request.frames
        return dict(counts)
