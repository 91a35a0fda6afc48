"""Cheap models for tests, benchmarks of the transport, and smoke checks of a deployment."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import ClassVar

import torch
from torch import Tensor

from gpu_service.registry import ArrayShape, InferenceModel, RequestError, Span, register


class EchoStats(InferenceModel):
    """Per-frame mean of each channel in [0, 1]; with an `image` context, the frame mean minus the image mean.

    Both outputs are easy to recompute with numpy, so they prove that frames, contexts and batching arrive
    intact.
    """

    context_inputs: ClassVar[Mapping[str, int]] = {"image": 3}
    warmup_frame_shape = (32, 32, 3)

    def check(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> None:
        super().check(frames_shape, context)
        if "image" in context and context["image"][0][-1] != 3:
            raise RequestError("context 'image' must be H×W×3")

    def preprocess(self, frames: Tensor) -> Tensor:
        return frames.float().mean(dim=(1, 2)) / 255.0

    def prepare_context(self, context: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return {k: v.float().mean(dim=(0, 1)) / 255.0 for k, v in context.items()}

    def warmup_context(self, device: torch.device) -> dict[str, Tensor]:
        return {}

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        out = {"mean": batch.clone()}
        if spans and "image" in spans[0].context:
            diff = torch.zeros_like(batch)
            for span in spans:
                diff[span.start : span.stop] = batch[span.start : span.stop] - span.context["image"]
            out["image_mean_diff"] = diff
        return out


class Probe(InferenceModel):
    """Each frame's first pixel: reads almost nothing, so a request through it costs the transport alone."""

    warmup_frame_shape = (8, 8, 3)

    def group_key(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> Hashable:
        return ()

    def preprocess(self, frames: Tensor) -> Tensor:
        return frames[:, 0, 0, :].float()

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        return {"first_pixel": batch}


@register("echo_stats")
def _echo_stats() -> InferenceModel:
    return EchoStats()


@register("probe")
def _probe() -> InferenceModel:
    return Probe()
