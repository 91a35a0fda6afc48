"""Regions per frame from one of the daemon's detector models (text, faces): frames in, boxes out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpu_service.priority import PriorityKey
from workers.analysis.scoring import Inference
from workers.geometry import Box, scale_box


def detect_boxes(
    infer: Inference,
    model: str,
    frames_rgb: Sequence[np.ndarray],
    key: PriorityKey,
    *,
    source_size: tuple[int, int] | None = None,
) -> list[list[Box]]:
    """Boxes per frame (frames of one size) from a model answering `boxes` (N × K × 4) and `count` (N).

    Boxes are in the frames' pixels, or in source pixels when source_size (width, height) says how large the
    source is (frames sampled downscaled, as the analysis samples them).
    """
    if not frames_rgb:
        return []
    out = infer.infer(model, np.stack(frames_rgb), key)
    height, width = frames_rgb[0].shape[:2]
    sx, sy = (1.0, 1.0) if source_size is None else (source_size[0] / width, source_size[1] / height)
    return [
        [scale_box((float(b[0]), float(b[1]), float(b[2]), float(b[3])), sx, sy) for b in boxes[: int(count)]]
        for boxes, count in zip(out["boxes"], out["count"], strict=True)
    ]
