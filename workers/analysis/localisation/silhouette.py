"""Evidence by outline: a plain product's silhouette standing out from the pixels round it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from workers.analysis.localisation.common import Box, Located
from workers.analysis.localisation.parameters import (
    FLAT_NOISE,
    RING_SEEN,
    SILHOUETTE_CONTRAST,
    SILHOUETTE_RING,
    SILHOUETTE_SEEN,
    SILHOUETTE_SHARES,
    SILHOUETTE_SIDE,
)
from workers.geometry import scale_box


@dataclass(frozen=True)
class _Ring:
    """The silhouette at one size (inside, 0/1) and the ring round it (around, 0/1), in templates padded by
    pad on every side, for one size of frame: how far (rows, columns) the templates may lie past its edges, and
    at each such place how many of their pixels are on screen (at least 1) and whether enough are to count."""

    inside: np.ndarray
    around: np.ndarray
    pad: int
    reach: tuple[int, int]
    inside_seen: np.ndarray
    around_seen: np.ndarray
    counted: np.ndarray


def _rings(silhouette: np.ndarray, height: int, width: int) -> list[_Ring]:
    """The silhouette (0/1) and its ring at each of SILHOUETTE_SHARES that can be seen enough in a height×width
    frame."""
    out = []
    for share in SILHOUETTE_SHARES:
        k = share * min(height, width) / max(silhouette.shape)
        w, h = max(4, round(silhouette.shape[1] * k)), max(4, round(silhouette.shape[0] * k))
        pad = max(2, round(SILHOUETTE_RING * max(w, h)))
        inside = np.zeros((h + 2 * pad, w + 2 * pad), np.float32)
        inside[pad : pad + h, pad : pad + w] = cv2.resize(silhouette, (w, h), interpolation=cv2.INTER_NEAREST)
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * pad + 1, 2 * pad + 1))
        around = cv2.dilate(inside, kernel) - inside
        # counted where the templates lie anywhere on the frame, then only as far past its edges as that needs
        *_, anywhere = _on_screen(inside, around, (height, width), inside.shape)
        if not anywhere.any():
            break
        reach = _reach(anywhere, inside.shape, (height, width))
        out.append(_Ring(inside, around, pad, reach, *_on_screen(inside, around, (height, width), reach)))
    return out


def _on_screen(
    inside: np.ndarray, around: np.ndarray, shape: tuple[int, int], reach: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At each place of the templates in a frame of the given shape padded by reach (rows, columns): how many
    pixels of inside and of around are on screen (at least 1), and whether enough of both are to count."""
    (dy, dx), screen = reach, np.ones(shape, np.float32)
    padded = cv2.copyMakeBorder(screen, dy, dy, dx, dx, cv2.BORDER_CONSTANT)
    inside_seen = cv2.matchTemplate(padded, inside, cv2.TM_CCORR)
    around_seen = cv2.matchTemplate(padded, around, cv2.TM_CCORR)
    counted = (inside_seen >= SILHOUETTE_SEEN * inside.sum()) & (around_seen >= RING_SEEN * around.sum())
    return np.maximum(inside_seen, 1), np.maximum(around_seen, 1), counted


def _reach(counted: np.ndarray, template: tuple[int, ...], frame: tuple[int, int]) -> tuple[int, int]:
    """How far (rows, columns) past the frame's edges a template of the given shape lies at the furthest places
    counted, places in the frame padded by the template's own shape."""
    out = []
    for axis in (0, 1):
        places = np.flatnonzero(np.any(counted, axis=1 - axis))
        out.append(max(0, template[axis] - int(places[0]), int(places[-1]) - frame[axis]))
    return out[0], out[1]


def _standing_out(rings: Sequence[_Ring], grey: np.ndarray, scale: float) -> Located | None:
    """The place and size where the inside of a ring stands out most from the ring in a grey frame (float32,
    the frame scaled by scale), its box (the part on screen) in the frame's pixels; None below
    SILHOUETTE_CONTRAST."""
    if not rings:
        return None
    height, width = grey.shape
    # one frame padded for the ring reaching furthest; each ring searches its own reach of it
    top, side = (max(n) for n in zip(*(ring.reach for ring in rings), strict=True))
    padded = cv2.copyMakeBorder(grey, top, top, side, side, cv2.BORDER_CONSTANT)
    squared = padded * padded
    best: tuple[float, Box] | None = None
    for ring in rings:
        dy, dx = ring.reach
        reach = (slice(top - dy, top + height + dy), slice(side - dx, side + width + dx))
        near, near_squared = np.ascontiguousarray(padded[reach]), np.ascontiguousarray(squared[reach])
        mean_in, var_in = _moments(near, near_squared, ring.inside, ring.inside_seen)
        mean_around, var_around = _moments(near, near_squared, ring.around, ring.around_seen)
        contrast = (mean_in - mean_around) ** 2 / (var_in + var_around + FLAT_NOISE)
        contrast[~ring.counted] = 0
        _, peak, _, (x, y) = cv2.minMaxLoc(contrast)
        if best is None or peak > best[0]:
            h, w = (n - 2 * ring.pad for n in ring.inside.shape)
            left, upper = x - dx + ring.pad, y - dy + ring.pad
            on_screen = (max(0, left), max(0, upper), min(width, left + w), min(height, upper + h))
            best = (float(peak), scale_box(on_screen, 1 / scale, 1 / scale))
    if best is None or best[0] < SILHOUETTE_CONTRAST:
        return None
    peak, box = best
    return Located(box, 0.3 * min(1.0, peak / (2 * SILHOUETTE_CONTRAST)), "silhouette")


def _moments(
    grey: np.ndarray, squared: np.ndarray, mask: np.ndarray, seen: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The mean and variance of the grey levels under mask (0/1) at every place in a frame padded with zeros,
    over the pixels on screen (seen at each place)."""
    mean = cv2.matchTemplate(grey, mask, cv2.TM_CCORR) / seen
    return mean, np.maximum(cv2.matchTemplate(squared, mask, cv2.TM_CCORR) / seen - mean * mean, 0.0)


class SilhouetteSource:
    """The product's outline (its own pixels, 0/1, in their bounding box), set against a ring round it at a few
    sizes per frame size (built once for each size of frame the videos have); `find` per frame."""

    def __init__(self, silhouette: np.ndarray) -> None:
        self._silhouette = silhouette
        self._rings: dict[tuple[int, int], list[_Ring]] = {}

    def find(self, frame: np.ndarray) -> Located | None:
        """Where a plain product's silhouette stands out from the pixels round it in an RGB frame, at one of a
        few sizes: a grey or dark product held against a wall differs from it in brightness, over the shape of
        the product. Upright only: turned in the hand, a round or cylindrical product keeps its outline."""
        scale = SILHOUETTE_SIDE / max(frame.shape[:2])
        small = cv2.resize(frame, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        grey = cv2.cvtColor(small, cv2.COLOR_RGB2GRAY).astype(np.float32)
        rings = self._rings.get(grey.shape[:2])
        if rings is None:
            rings = self._rings[grey.shape[:2]] = _rings(self._silhouette, *grey.shape[:2])
        return _standing_out(rings, grey, scale)
