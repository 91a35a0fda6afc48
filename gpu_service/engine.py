"""The daemon's compute engine: a batch of host frames through a model on the device, and the outputs back.

On CUDA each batch's host-to-device copies run on a copy stream while the previous batch computes on another;
the models normalise frames on the device. Only the daemon's compute thread calls it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from gpu_service import registry

log = logging.getLogger("gpu_service.daemon")

Events = tuple[torch.cuda.Event, torch.cuda.Event]


class Engine:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        self.copy_stream: torch.cuda.Stream | None = None
        self.compute_stream: torch.cuda.Stream | None = None

    def prepare(self) -> None:
        """Make the device current and create the streams, on the compute thread."""
        if self.cuda:
            torch.cuda.set_device(self.device)
            self.copy_stream = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
            self.compute_stream = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]

    def run(
        self,
        model: registry.InferenceModel,
        frames: Sequence[torch.Tensor],
        contexts: Sequence[Mapping[str, torch.Tensor]],
        bucket: int,
    ) -> tuple[dict[str, torch.Tensor], tuple[torch.cuda.Event, torch.cuda.Event] | None]:
        with torch.inference_mode():
            if not self.cuda:
                return forward(model, frames, contexts, bucket), None
            assert self.copy_stream is not None and self.compute_stream is not None
            with torch.cuda.stream(self.copy_stream):
                dev_frames = [f.to(self.device, non_blocking=True) for f in frames]
                dev_contexts = [
                    {k: v.to(self.device, non_blocking=True) for k, v in c.items()} for c in contexts
                ]
            self.compute_stream.wait_stream(self.copy_stream)
            for t in [*dev_frames, *(v for c in dev_contexts for v in c.values())]:
                # Allocated on the copy stream, used on the compute one: keep the allocator from reusing them.
                t.record_stream(self.compute_stream)
            begin = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            with torch.cuda.stream(self.compute_stream):
                begin.record()
                outputs = forward(model, dev_frames, dev_contexts, bucket)
                end.record()
            return outputs, (begin, end)

    def warm_up(self, models: Mapping[str, registry.LoadedModel], buckets: Sequence[int]) -> None:
        """Run each model at each bucket size before reporting ready, so first requests pay no set-up cost."""
        for loaded in models.values():
            model = loaded.module
            h, w, c = model.warmup_frame_shape
            for bucket in buckets:
                frames = torch.zeros((bucket, h, w, c), dtype=torch.uint8)
                outputs_to_host(*self.run(model, [frames], [model.warmup_context(self.device)], bucket))
            log.info("warmed up %s at buckets %s", loaded.name, buckets)


def forward(
    model: registry.InferenceModel,
    frames: Sequence[torch.Tensor],
    contexts: Sequence[Mapping[str, torch.Tensor]],
    bucket: int,
) -> dict[str, torch.Tensor]:
    rows = [model.preprocess(f) for f in frames]
    spans: list[registry.Span] = []
    start = 0
    for r, ctx in zip(rows, contexts, strict=True):
        spans.append(registry.Span(start, start + r.shape[0], model.prepare_context(ctx)))
        start += r.shape[0]
    tail = rows[0].shape[1:]
    if any(r.shape[1:] != tail for r in rows):
        raise RuntimeError(
            f"{type(model).__name__}.preprocess gave rows of different shapes; "
            "its group_key must separate them"
        )
    if len(rows) == 1 and start == bucket:
        batch = rows[0]
    else:
        batch = rows[0].new_zeros((max(bucket, start), *tail))
        for r, span in zip(rows, spans, strict=True):
            batch[span.start : span.stop] = r
    outputs = model(batch, spans)
    for name, value in outputs.items():
        if value.shape[0] != batch.shape[0]:
            raise RuntimeError(f"output {name!r} has {value.shape[0]} rows for a batch of {batch.shape[0]}")
    return {name: value[:start] for name, value in outputs.items()}


def outputs_to_host(
    outputs: Mapping[str, torch.Tensor], events: Events | None = None
) -> dict[str, np.ndarray[Any, np.dtype[np.float32]]]:
    """The outputs as host arrays; with the events of a CUDA run, once its compute stream has reached the end one.

    The copy to the host runs on the current stream, which does not wait for the compute stream the outputs were
    written on: without the wait it may read them half-written, and the events cannot yet be timed.
    """
    if events is not None:
        events[1].synchronize()
    # Copies: on the CPU an output could otherwise still view a slot that is about to be overwritten.
    return {k: np.array(v.detach().to("cpu", torch.float32).numpy(), copy=True) for k, v in outputs.items()}
