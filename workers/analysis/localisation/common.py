"""The terms every evidence source shares: a box, a find in one frame (Located), and the frame size finds are
looked for at."""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from workers.analysis.localisation.calibration import probability
from workers.analysis.localisation.parameters import LOCATE_SIDE
from workers.geometry import scale_box

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class Located:
    """The product in one frame: its box (source pixels) and outline, how sure, and by which evidence."""

    box: Box | None
    confidence: float
    method: str  # "features", "colour", "silhouette", "followed" or "none"
    quad: tuple[tuple[float, float], ...] = ()
    #: by features: the part of the main image seen again in this frame (main-image pixels at TEMPLATE_SIDE),
    #: and the homography (row-major 3×3) taking main-image pixels to the source's; whole_boxes places the
    #: product with them where an occluder hides part of it
    seen: Box | None = None
    homography: tuple[float, ...] = ()
    #: by features, where the product's own pixels in the main image are known (a studio shot's foreground, a
    #: clean cut, a scene's part): their bounds, in the same pixels as seen; whole_boxes completes the box to
    #: them where an occluder hides part of the product in every frame
    whole: Box | None = None

    @property
    def p(self) -> float:
        """The calibrated probability that box is the product (workers.analysis.localisation.calibration)."""
        return probability(self.method, self.confidence) if self.box is not None else 0.0


NOT_FOUND = Located(None, 0.0, "none")


def grown_mask(mask: np.ndarray, share: float) -> np.ndarray:
    """A mask (uint8, set where non-zero) grown on every side by share of its size (the square root of its
    area)."""
    reach = max(1, round(share * math.sqrt(float(np.count_nonzero(mask)))))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * reach + 1, 2 * reach + 1))
    return np.asarray(cv2.dilate(mask, kernel), np.uint8)


def own_bounds(own: np.ndarray) -> tuple[slice, slice]:
    """The rows and columns of the bounding box of a product's own pixels (a 0/255 mask)."""
    x, y, w, h = cv2.boundingRect((own > 0).astype(np.uint8))
    return slice(y, y + h), slice(x, x + w)


def in_source(found: Located | None, shape: tuple[int, ...], source_size: tuple[int, int]) -> Located:
    """A find in a frame of the given shape, in source pixels (NOT_FOUND for None)."""
    if found is None or found.box is None:
        return NOT_FOUND
    sx, sy = source_size[0] / shape[1], source_size[1] / shape[0]
    to_source = np.diag([sx, sy, 1.0])
    return Located(
        scale_box(found.box, sx, sy),
        found.confidence,
        found.method,
        tuple((x * sx, y * sy) for x, y in found.quad),
        found.seen,
        tuple(float(v) for v in (to_source @ np.array(found.homography).reshape(3, 3)).ravel())
        if found.homography
        else (),
        found.whole,
    )


def at_locate_side(frame: np.ndarray) -> np.ndarray:
    """The frame scaled to LOCATE_SIDE on its long side (unless it is within 5 % of it)."""
    scale = LOCATE_SIDE / max(frame.shape[:2])
    if abs(scale - 1) <= 0.05:
        return frame
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return cv2.resize(frame, None, fx=scale, fy=scale, interpolation=interpolation)


def mapped_box(rect: Box, transform: np.ndarray) -> Box:
    """The bounds of a rectangle mapped by a 2×3 transform."""
    corners = np.array(
        [[rect[0], rect[1], 1], [rect[2], rect[1], 1], [rect[2], rect[3], 1], [rect[0], rect[3], 1]]
    )
    at = corners @ transform.T
    return (float(at[:, 0].min()), float(at[:, 1].min()), float(at[:, 0].max()), float(at[:, 1].max()))
