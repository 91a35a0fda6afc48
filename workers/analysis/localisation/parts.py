"""A main image that is a scene: its parts, one of which the video shows as the product."""

from __future__ import annotations

import cv2
import numpy as np

from workers.analysis.localisation.colour import histogram
from workers.analysis.localisation.common import Located, mapped_box, own_bounds
from workers.analysis.localisation.parameters import (
    CUT_SOLIDITY,
    SCENE_AREA,
    SCENE_COLOURS,
    SCENE_OWN,
    SEGMENT_SIDE,
    TEMPLATE_SIDE,
)


def scene_parts(photo: np.ndarray) -> list[np.ndarray]:
    """The things a scene (an RGB photo) shows, each as its pixels (0/255 at the photo's size), largest first."""
    scale = SEGMENT_SIDE / max(photo.shape[:2])
    small = cv2.GaussianBlur(
        cv2.resize(photo, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA), (0, 0), 1.0
    )
    lab = cv2.cvtColor(small, cv2.COLOR_RGB2LAB).reshape(-1, 3).astype(np.float32)
    # k-means starts at random: a photo must split the same way in every worker
    cv2.setRNGSeed(0)
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 20, 1.0)
    _, labels, _ = cv2.kmeans(lab, SCENE_COLOURS, None, criteria, 3, cv2.KMEANS_PP_CENTERS)  # type: ignore[call-overload]
    labels = labels.reshape(small.shape[:2])
    h, w = labels.shape
    parts: list[tuple[int, np.ndarray]] = []
    for colour in range(SCENE_COLOURS):
        cluster = (labels == colour).astype(np.uint8)
        cluster = cv2.morphologyEx(cluster, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        cluster = cv2.morphologyEx(cluster, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
        count, regions, stats, _ = cv2.connectedComponentsWithStats(cluster)
        for k in range(1, count):
            x, y, bw, bh, area = (int(v) for v in stats[k])
            edges = (x == 0) + (y == 0) + (x + bw == w) + (y + bh == h)
            if not SCENE_AREA[0] <= area / (h * w) <= SCENE_AREA[1] or edges > 1:
                continue
            region = (regions == k).astype(np.uint8)
            contours, _ = cv2.findContours(region, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
            solid = area >= CUT_SOLIDITY * cv2.contourArea(cv2.convexHull(max(contours, key=cv2.contourArea)))
            if solid and _own_colours(small, region) >= SCENE_OWN:
                parts.append((area, region))
    parts.sort(key=lambda part: -part[0])
    size = (photo.shape[1], photo.shape[0])
    return [
        np.asarray(cv2.resize(region * 255, size, interpolation=cv2.INTER_NEAREST), np.uint8)
        for _, region in parts[:SCENE_COLOURS]
    ]


def _own_colours(photo: np.ndarray, region: np.ndarray) -> float:
    """The share of an RGB photo's match to a region's (0/1) hue-saturation histogram that lies in the region."""
    hsv = cv2.cvtColor(photo, cv2.COLOR_RGB2HSV)
    matched = cv2.calcBackProject([hsv], [0, 1], histogram([photo], region), [0, 180, 0, 256], 1)
    return float(matched[region > 0].sum()) / max(float(matched.sum()), 1.0)


def part_transform(photo: np.ndarray, part: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The transform (3×3) from the pixels of a part's locator (the photo cut to the part, at most
    TEMPLATE_SIDE a side) to those of the photo's own (the whole photo, shape)."""
    ys, xs = own_bounds(part)
    inner = min(1.0, TEMPLATE_SIDE / max(ys.stop - ys.start, xs.stop - xs.start))
    outer = shape[1] / photo.shape[1]
    k = outer / inner
    return np.array([[k, 0.0, xs.start * outer], [0.0, k, ys.start * outer], [0.0, 0.0, 1.0]])


def in_photo(found: Located, transform: np.ndarray) -> Located:
    """A part's find, its part of the main image seen and homography the whole photo's (transform: from the
    part's locator's pixels to the photo's)."""
    if found.seen is None or not found.homography:
        return found
    homography = np.array(found.homography).reshape(3, 3) @ np.linalg.inv(transform)
    return Located(
        found.box,
        found.confidence,
        found.method,
        found.quad,
        mapped_box(found.seen, transform[:2]),
        tuple(float(v) for v in homography.ravel()),
        None if found.whole is None else mapped_box(found.whole, transform[:2]),
    )
