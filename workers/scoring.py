"""Per-frame scores for one item: how strongly the product's main image is present, and frame quality.

Pure functions over RGB arrays; nothing here touches files, queues or models' storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

ANALYSIS_WIDTH = 192
# Product heights tried, as fractions of the frame height, in geometric steps of ~12%: correlation of a textured
# product falls off fast when the template's scale is off by more than that.
TEMPLATE_SCALES = tuple(round(0.2 * 1.12**k, 3) for k in range(14))


@dataclass(frozen=True)
class FrameScore:
    t: float
    match: float
    quality: float
    #: where the product best matched, in source pixels (x0, y0, x1, y1)
    box: tuple[float, float, float, float] | None

    @property
    def value(self) -> float:
        return self.match + 0.15 * self.quality


def product_template(main_image: np.ndarray) -> np.ndarray:
    """The main image trimmed of its plain studio background (the colour of its border)."""
    border = np.concatenate([main_image[0], main_image[-1], main_image[:, 0], main_image[:, -1]])
    background = np.median(border, axis=0)
    distance = np.abs(main_image.astype(np.int16) - background.astype(np.int16)).max(axis=2)
    ys, xs = np.nonzero(distance > 24)
    if len(xs) < 16:
        return main_image
    return main_image[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]


def _small(rgb: np.ndarray) -> tuple[np.ndarray, float]:
    scale = ANALYSIS_WIDTH / rgb.shape[1]
    size = (ANALYSIS_WIDTH, max(8, round(rgb.shape[0] * scale)))
    return cv2.resize(rgb, size, interpolation=cv2.INTER_AREA), scale


def frame_quality(small_rgb: np.ndarray) -> float:
    """0..1: sharp, well exposed frames score high; black, blown-out or flat frames low."""
    gray = cv2.cvtColor(small_rgb, cv2.COLOR_RGB2GRAY)
    mean = float(gray.mean()) / 255.0
    exposure = 1.0 - min(1.0, abs(mean - 0.5) / 0.45)
    sharpness = float(cv2.Laplacian(gray, cv2.CV_32F).var())
    sharp = min(1.0, np.log1p(sharpness) / np.log1p(1000.0))
    return float(exposure * sharp)


def match_product(small_rgb: np.ndarray, template: np.ndarray) -> tuple[float, tuple[int, int, int, int]]:
    """Best normalised cross-correlation of the template over a few scales; (score, box in small pixels)."""
    frame_h, frame_w = small_rgb.shape[:2]
    best = (-1.0, (0, 0, 0, 0))
    aspect = template.shape[1] / template.shape[0]
    for scale in TEMPLATE_SCALES:
        th = max(8, round(frame_h * scale))
        tw = max(8, round(th * aspect))
        if th >= frame_h or tw >= frame_w:
            continue
        resized = cv2.resize(template, (tw, th), interpolation=cv2.INTER_AREA)
        result = cv2.matchTemplate(small_rgb, resized, cv2.TM_CCOEFF_NORMED)
        _, peak, _, (x, y) = cv2.minMaxLoc(result)
        # prominence: at equal likeness, the bigger appearance shows the product better
        weighted = float(peak) * (0.85 + 0.15 * scale / TEMPLATE_SCALES[-1])
        if weighted > best[0]:
            best = (weighted, (x, y, x + tw, y + th))
    return best


def score_frames(frames: Sequence[tuple[float, np.ndarray]], main_image: np.ndarray) -> list[FrameScore]:
    """Score each (t, rgb) frame against the product's main image."""
    template = product_template(main_image)
    scores: list[FrameScore] = []
    for t, rgb in frames:
        small, scale = _small(rgb)
        match, (x0, y0, x1, y1) = match_product(small, template)
        box = (x0 / scale, y0 / scale, x1 / scale, y1 / scale) if match > 0 else None
        scores.append(FrameScore(t, max(0.0, match), frame_quality(small), box))
    return scores


def shot_signature(rgb: np.ndarray) -> np.ndarray:
    """A small normalised colour histogram; consecutive frames of one shot have similar ones."""
    small, _ = _small(rgb)
    hsv = cv2.cvtColor(small, cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1], None, [16, 8], [0, 180, 0, 256]).ravel()
    return (hist / max(1.0, float(hist.sum()))).astype(np.float32)
