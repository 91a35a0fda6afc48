"""Per-frame scores for one item, computed by the inference daemon's `template_match` model.

Workers send frames already scaled to ANALYSIS_WIDTH (the model needs no more), with the product's main image
trimmed of its studio background as context, and map the model's boxes back to source pixels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import cv2
import numpy as np
import numpy.typing as npt

from gpu_service.scheduler import PriorityKey

ANALYSIS_WIDTH = 384
SCORER_MODEL = "template_match"


class Inference(Protocol):
    """The daemon client's call (gpu_service.client.InferenceClient; gpu_service.local.LocalInference)."""

    def infer(
        self,
        model: str,
        frames: npt.NDArray[np.uint8],
        key: PriorityKey,
        context: Mapping[str, npt.NDArray[Any]] | None = None,
    ) -> dict[str, npt.NDArray[np.float32]]: ...


def frame_value(match: float, quality: float) -> float:
    """A frame's worth for the highlight: the product's presence first, its look as a tie-breaker."""
    return match + 0.15 * quality


@dataclass(frozen=True)
class FrameScore:
    t: float
    match: float
    quality: float
    #: where the product best matched, in source pixels (x0, y0, x1, y1)
    box: tuple[float, float, float, float] | None

    @property
    def value(self) -> float:
        return frame_value(self.match, self.quality)


def product_template(main_image: np.ndarray) -> np.ndarray:
    """The main image trimmed of its plain studio background (the colour of its border)."""
    border = np.concatenate([main_image[0], main_image[-1], main_image[:, 0], main_image[:, -1]])
    background = np.median(border, axis=0)
    distance = np.abs(main_image.astype(np.int16) - background.astype(np.int16)).max(axis=2)
    ys, xs = np.nonzero(distance > 24)
    if len(xs) < 16:
        return main_image
    return np.ascontiguousarray(main_image[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1])


def score_frames(
    infer: Inference,
    frames: Sequence[tuple[float, np.ndarray]],
    template: np.ndarray,
    key: PriorityKey,
    source_size: tuple[int, int],
) -> list[FrameScore]:
    """Score (t, rgb) analysis frames against the trimmed product image; boxes in source pixels."""
    if not frames:
        return []
    batch = np.stack([rgb for _, rgb in frames])
    out = infer.infer(SCORER_MODEL, batch, key, {"image": template})
    width, height = source_size
    scale = np.array([width, height, width, height], dtype=np.float64)
    scores = []
    for i, (t, _) in enumerate(frames):
        match = float(out["match"][i])
        box = tuple(float(v) for v in out["box"][i] * scale) if match > 0 else None
        scores.append(FrameScore(t, match, float(out["quality"][i]), box))  # type: ignore[arg-type]
    return scores


def shot_signature(rgb: np.ndarray) -> np.ndarray:
    """A small normalised hue/saturation histogram; consecutive frames of one shot have similar ones."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1], None, [16, 8], [0, 180, 0, 256]).ravel()
    return (hist / max(1.0, float(hist.sum()))).astype(np.float32)
