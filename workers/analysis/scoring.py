"""Per-frame scores for one item, computed by the inference daemon's scorer model.

Workers send frames already scaled to ANALYSIS_WIDTH (the model needs no more), with the product's main image
trimmed of its studio background as context, and map the model's boxes back to source pixels. The scorer is
OutputConfig.scorer: "template" (the default `template_match` model, no downloaded weights) or "clip" (the
`clip` model, which also takes the item's title and description as UTF-8 bytes and gives no boxes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import cv2
import numpy as np
import numpy.typing as npt

from core.errors import ConfigError
from gpu_service.priority import PriorityKey

ANALYSIS_WIDTH = 384
# the analysed picture's long side at most: a 9:16 picture at ANALYSIS_WIDTH, so taller ones are narrower
ANALYSIS_LONG_SIDE = 683
SCORER_MODEL = "template_match"
# CLIP reads at most 77 tokens; more bytes than this only cost shared memory.
MAX_TEXT_BYTES = 2048


@dataclass(frozen=True)
class ScorerSpec:
    #: the daemon model that scores frames
    model: str
    #: whether the item's title and description go along as context "text"
    takes_text: bool


SCORERS: dict[str, ScorerSpec] = {
    "template": ScorerSpec(SCORER_MODEL, takes_text=False),
    "clip": ScorerSpec("clip", takes_text=True),
}


def scorer_spec(name: str) -> ScorerSpec:
    try:
        return SCORERS[name]
    except KeyError:
        raise ConfigError(f"unknown scorer {name!r}; choose one of {sorted(SCORERS)}") from None


def item_text(title: str, description: str = "") -> str:
    """What a text-reading scorer sees: the title first, so CLIP's 77-token cut drops description, not title."""
    return "\n".join(part.strip() for part in (title, description) if part and part.strip())


def scorer_context(spec: ScorerSpec, template: np.ndarray, text: str) -> dict[str, npt.NDArray[Any]]:
    context: dict[str, npt.NDArray[Any]] = {"image": template}
    data = text.encode("utf-8")[:MAX_TEXT_BYTES].decode("utf-8", errors="ignore").encode("utf-8")
    if spec.takes_text and data:
        # A copy: np.frombuffer over bytes is read-only, which torch.from_numpy warns about in-process.
        context["text"] = np.frombuffer(data, dtype=np.uint8).copy()
    return context


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
    *,
    scorer: str = "template",
    text: str = "",
) -> list[FrameScore]:
    """Score (t, rgb) analysis frames against the trimmed product image (and `text`, for scorers that read
    it); boxes in source pixels, None where the scorer has none (a non-finite box) or found nothing."""
    spec = scorer_spec(scorer)
    if not frames:
        return []
    batch = np.stack([rgb for _, rgb in frames])
    out = infer.infer(spec.model, batch, key, scorer_context(spec, template, text))
    width, height = source_size
    scale = np.array([width, height, width, height], dtype=np.float64)
    scores = []
    for i, (t, _) in enumerate(frames):
        match = float(out["match"][i])
        found = match > 0 and bool(np.isfinite(out["box"][i]).all())
        box = tuple(float(v) for v in out["box"][i] * scale) if found else None
        scores.append(FrameScore(t, match, float(out["quality"][i]), box))  # type: ignore[arg-type]
    return scores


def frame_looks(
    infer: Inference, frames: Sequence[tuple[float, np.ndarray]], key: PriorityKey
) -> list[FrameScore]:
    """How (t, rgb) analysis frames look, from the template scorer asked without the product's image: its
    quality alone, no match and no box. For frames where other evidence already places the product."""
    if not frames:
        return []
    out = infer.infer(SCORER_MODEL, np.stack([rgb for _, rgb in frames]), key, {})
    return [FrameScore(t, 0.0, float(q), None) for (t, _), q in zip(frames, out["quality"], strict=True)]


def shot_signature(rgb: np.ndarray) -> np.ndarray:
    """A small normalised hue/saturation histogram; consecutive frames of one shot have similar ones."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1], None, [16, 8], [0, 180, 0, 256]).ravel()
    return (hist / max(1.0, float(hist.sum()))).astype(np.float32)
