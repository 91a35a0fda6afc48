"""The product's whole box over a video, where an occluder cuts some frames' boxes short."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import cv2
import numpy as np

from workers.analysis.localisation.common import Box, mapped_box
from workers.analysis.localisation.parameters import AGREEING_SAMPLES, WHOLE_QUANTILE
from workers.geometry import box_union


class Sighting(Protocol):
    """What whole_boxes needs of a frame's find: a Located, or a record carrying its fields."""

    @property
    def box(self) -> Box | None: ...
    @property
    def seen(self) -> Box | None: ...
    @property
    def homography(self) -> tuple[float, ...]: ...
    @property
    def whole(self) -> Box | None: ...


def whole_boxes(found: Sequence[Sighting], source_size: tuple[int, int]) -> list[Box | None]:
    """The product's box per frame, whole where part of it is hidden.

    A frame where a hand covers half the product sees only the other half again, and its box holds only that;
    the product is as large as the frames that see it whole say. Its extent in the main image is taken over the
    frames found by features (each side at WHOLE_QUANTILE), and holds the product's own pixels in the main image
    where they are known (Located.whole: a hand may cover the same side in every frame); in a frame that saw
    less of it, the box grows on
    each side by as much as the missing part reaches past the part seen, mapped into the frame by the
    similarity (turn, scale, shift) nearest the frame's homography over the part seen. A homography fitted to
    keypoints on one side of a product extrapolates its perspective wildly past them (mapping the whole extent
    by it gave boxes over 1.5 times the product's in a sixth of the frames, and ones still short of it beside
    a hand); its turn and scale over the part seen are sound. Frames located otherwise, or not at all, keep
    their box."""
    extents = np.array([f.seen for f in found if f.seen is not None and f.homography], np.float64)
    if len(extents) < AGREEING_SAMPLES:
        return [f.box for f in found]
    x0, y0 = np.quantile(extents[:, :2], 1 - WHOLE_QUANTILE, axis=0)
    x1, y1 = np.quantile(extents[:, 2:], WHOLE_QUANTILE, axis=0)
    own = next((f.whole for f in found if f.whole is not None), None)
    if own is not None:
        x0, y0, x1, y1 = box_union((x0, y0, x1, y1), own)
    width, height = source_size
    boxes: list[Box | None] = []
    for f in found:
        if f.box is None or f.seen is None or not f.homography:
            boxes.append(f.box)
            continue
        seen = f.seen
        joined = (min(x0, seen[0]), min(y0, seen[1]), max(x1, seen[2]), max(y1, seen[3]))
        similar = _similarity_over(np.array(f.homography).reshape(3, 3), seen)
        (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = (mapped_box(r, similar) for r in (joined, seen))
        boxes.append(
            (
                max(0.0, f.box[0] - (bx0 - ax0)),
                max(0.0, f.box[1] - (by0 - ay0)),
                min(float(width), f.box[2] + (ax1 - bx1)),
                min(float(height), f.box[3] + (ay1 - by1)),
            )
        )
    return boxes


def _similarity_over(homography: np.ndarray, rect: Box) -> np.ndarray:
    """The similarity (2×3) nearest the homography over a grid of the rectangle's points."""
    xs, ys = np.meshgrid(np.linspace(rect[0], rect[2], 5), np.linspace(rect[1], rect[3], 5))
    points = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)
    mapped = cv2.perspectiveTransform(points.reshape(-1, 1, 2), homography).reshape(-1, 2)
    # least squares of x' = a·x − b·y + c, y' = b·x + a·y + d
    rows = np.concatenate(
        [
            np.stack([points[:, 0], -points[:, 1], np.ones(len(points)), np.zeros(len(points))], axis=1),
            np.stack([points[:, 1], points[:, 0], np.zeros(len(points)), np.ones(len(points))], axis=1),
        ]
    )
    (a, b, c, d), *_ = np.linalg.lstsq(rows, np.concatenate([mapped[:, 0], mapped[:, 1]]), rcond=None)
    return np.array([[a, -b, c], [b, a, d]])
