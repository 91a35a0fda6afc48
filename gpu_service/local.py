"""Registry models run in the calling process, with the client's `infer` signature.

For baselines that must use the very same model as the daemon (the naive design in bench/e2e.py) and for tests
of a model's numbers; pipeline workers never use this: they never import torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from gpu_service import registry
from gpu_service.priority import PriorityKey
from gpu_service.registry import LoadedModel, Span


class LocalInference:
    def __init__(
        self, device: str = "cpu", modules: tuple[str, ...] = (), weights: Mapping[str, str] | None = None
    ) -> None:
        self.device = torch.device(device)
        self.weights = dict(weights or {})
        registry.import_modules(modules)
        self._models: dict[str, LoadedModel] = {}

    def _model(self, name: str) -> LoadedModel:
        if name not in self._models:
            self._models[name] = registry.create(name, self.device, self.weights.get(name))
        return self._models[name]

    @torch.inference_mode()
    def infer(
        self,
        model: str,
        frames: npt.NDArray[np.uint8],
        key: PriorityKey,
        context: Mapping[str, npt.NDArray[Any]] | None = None,
    ) -> dict[str, npt.NDArray[np.float32]]:
        module = self._model(model).module
        shapes = {k: (tuple(v.shape), str(v.dtype)) for k, v in (context or {}).items()}
        module.check(tuple(frames.shape), shapes)
        batch = module.preprocess(torch.from_numpy(np.ascontiguousarray(frames)).to(self.device))
        ctx = module.prepare_context(
            {k: torch.from_numpy(np.ascontiguousarray(v)).to(self.device) for k, v in (context or {}).items()}
        )
        outputs = module(batch, [Span(0, len(frames), ctx)])
        return {k: v.float().cpu().numpy() for k, v in outputs.items()}
