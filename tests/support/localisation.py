"""Real photographs placed in real footage, and the boxes found there compared with the true ones: what the
localisation tests of more than one evidence source share."""

from __future__ import annotations

import copy
from collections.abc import Callable

import cv2
import numpy as np
import pytest

from devtools.real_media import (
    kivy_cat_mug,
    opencv_apple,
    skimage_astronaut,
    skimage_chelsea,
    skimage_clock_motion,
    skimage_coffee,
)
from tests.support.placements import FRAME
from tests.support.placements import backgrounds as _backgrounds
from tests.support.placements import pasted as _pasted
from tests.support.placements import read_rgb as _read
from workers.analysis.localisation.common import Located
from workers.analysis.localisation.locator import ProductLocator

PHOTOS = {
    "coffee": skimage_coffee,
    "astronaut": skimage_astronaut,
    "cat": skimage_chelsea,
    "cat_mug": kivy_cat_mug,
}


#: a grey product with too few keypoints for its features to be evidence
PLAIN = {"clock": skimage_clock_motion}


def _photo(name: str) -> np.ndarray:
    path = (PHOTOS | PLAIN)[name]()
    assert path is not None, "python -m devtools.fetch_real_media"
    return _read(path)


def _studio_shot(photo: np.ndarray) -> np.ndarray:
    """The photo as a seller's main image: on a plain white studio background."""
    return cv2.copyMakeBorder(photo, 40, 40, 40, 40, cv2.BORDER_CONSTANT, value=(250, 250, 250))


def _place(
    photo: np.ndarray, background: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, tuple[float, ...]]:
    """The photo turned (±30°), tilted, scaled to 25–70% of the frame's height, re-lit and partly covered,
    pasted on the background; returns the frame and the photo's true box."""
    h, w = photo.shape[:2]
    target_h = rng.uniform(0.25, 0.7) * FRAME[1]
    scale = target_h / h
    angle = rng.uniform(-30, 30)
    turn = cv2.getRotationMatrix2D((w / 2, h / 2), angle, scale)
    corners = cv2.transform(np.array([[[0, 0], [w, 0], [w, h], [0, h]]], np.float32), turn)[0]
    size = corners.max(axis=0) - corners.min(axis=0)
    x = rng.uniform(0, FRAME[0] - size[0])
    y = rng.uniform(0, max(1.0, FRAME[1] - size[1]))
    turn[:, 2] += np.array([x, y]) - corners.min(axis=0)
    tilt = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    squeeze = rng.uniform(0.0, 0.15) * w
    tilted = cv2.getPerspectiveTransform(
        tilt, np.array([[squeeze, 0], [w - squeeze, 0], [w, h], [0, h]], np.float32)
    )
    warp = np.vstack([turn, [0, 0, 1]]) @ tilted
    lit = np.clip(photo.astype(np.float32) * rng.uniform(0.65, 1.25, 3), 0, 255).astype(np.uint8)
    pasted = cv2.warpPerspective(lit, warp, FRAME)
    mask = cv2.warpPerspective(np.full((h, w), 255, np.uint8), warp, FRAME)
    frame = np.where(mask[..., None] > 0, pasted, background)
    outline = cv2.perspectiveTransform(np.array([[[0, 0], [w, 0], [w, h], [0, h]]], np.float32), warp)[0]
    box = (*outline.min(axis=0), *outline.max(axis=0))
    # a "hand": a band of another part of the footage over a fifth of the product
    band = int((box[3] - box[1]) / 5)
    top = int(box[1] + (box[3] - box[1]) / 2)
    frame[top : top + band, int(box[0]) : int(box[2])] = background[:band, : int(box[2]) - int(box[0])]
    return frame, tuple(float(v) for v in box)


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def _area(box: tuple[float, ...]) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


def _inside(box: tuple[float, ...], outer: tuple[float, ...]) -> float:
    """The share of box inside outer."""
    w = max(0.0, min(box[2], outer[2]) - max(box[0], outer[0]))
    h = max(0.0, min(box[3], outer[3]) - max(box[1], outer[1]))
    return w * h / max(1e-9, (box[2] - box[0]) * (box[3] - box[1]))


def _cup_bounds(photo: np.ndarray) -> tuple[slice, slice]:
    """The rows and columns of the coffee photo that the cup and its saucer fill."""
    h, w = photo.shape[:2]
    return slice(0, int(0.9 * h)), slice(int(0.1 * w), int(0.78 * w))


def _cup_mask(photo: np.ndarray) -> np.ndarray:
    """The coffee photo's cup (0/255 over the whole photo): the ellipse filling _cup_bounds."""
    rows, cols = _cup_bounds(photo)
    mask = np.zeros(photo.shape[:2], np.uint8)
    w, h = cols.stop - cols.start, rows.stop - rows.start
    cv2.ellipse(mask, (cols.start + w // 2, rows.start + h // 2), (w // 2, h // 2), 0, 0, 360, 255, -1)
    return mask


def _cup() -> tuple[np.ndarray, np.ndarray]:
    """The cup of the coffee photo, cut out along an ellipse: (its pixels, its mask)."""
    photo = _photo("coffee")
    bounds = _cup_bounds(photo)
    return np.ascontiguousarray(photo[bounds]), np.ascontiguousarray(_cup_mask(photo)[bounds])


def _pasted_photo(
    photo: np.ndarray,
    product: np.ndarray,
    background: np.ndarray,
    rng: np.random.Generator,
    height: float,
    light: tuple[float, float],
) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """The photo pasted whole (_pasted), and the box there of its product (its own pixels, product)."""
    twin = copy.deepcopy(rng)
    frame, _ = _pasted(photo, np.full(photo.shape[:2], 255, np.uint8), background, rng, height, light)
    return frame, _pasted(photo, product, background, twin, height, light)[1]


def _boxed_cups(locator: ProductLocator, seed: int) -> tuple[list[float], list[float]]:
    """The cut-out cup turned (±20°), scaled to 35–70 % of the frame's height and re-lit over real footage, six
    times: per placement, the share of its true box inside the found box, and the found box's area over the
    true box's (placements where nothing is found count as 0 held)."""
    cup, ellipse = _cup()
    rng = np.random.default_rng(seed)
    held, oversize = [], []
    for background in _backgrounds()[:6]:
        frame, truth = _pasted(cup, ellipse, background, rng, rng.uniform(0.35, 0.7) * FRAME[1], (0.7, 1.2))
        found = locator.locate(frame, FRAME).box
        held.append(_inside(truth, found) if found is not None else 0.0)
        if found is not None:
            area = (found[2] - found[0]) * (found[3] - found[1])
            oversize.append(area / ((truth[2] - truth[0]) * (truth[3] - truth[1])))
    return held, oversize


def _covered(frame: np.ndarray, box: tuple[float, ...], cover: np.ndarray, share: float) -> np.ndarray:
    """The frame with the left share of the box covered by a patch of other footage (a hand held in front)."""
    x0, y0, x1, y1 = (int(v) for v in box)
    width = int((x1 - x0) * share)
    out = frame.copy()
    out[y0:y1, x0 : x0 + width] = cover[: y1 - y0, :width]
    return out


def _covered_cups(
    covering: Callable[[int], bool], locator: ProductLocator | None = None
) -> tuple[list[Located], list[tuple[float, float, float, float]], list[bool]]:
    """The cut-out cup over real footage in ten frames, its left 45 % covered by a patch of other footage in
    the frames covering picks: (the locator's finds, the true boxes, which were covered). The locator is the
    coffee photo's unless given."""
    cup, ellipse = _cup()
    locator = locator or ProductLocator(_photo("coffee"))
    rng = np.random.default_rng(17)
    backgrounds = _backgrounds()
    found, truths, covered = [], [], []
    for k in range(10):
        frame, truth = _pasted(
            cup, ellipse, backgrounds[k % len(backgrounds)], rng, rng.uniform(0.5, 0.7) * FRAME[1], (0.8, 1.2)
        )
        if covering(k):
            frame = _covered(frame, truth, backgrounds[(k + 1) % len(backgrounds)], 0.45)
        found.append(locator.locate(frame, FRAME))
        truths.append(truth)
        covered.append(covering(k))
    return found, truths, covered


def _apple() -> tuple[np.ndarray, np.ndarray]:
    """The apple of OpenCV's apple photo (it runs to the photo's edges), cut out along an ellipse: (the
    photo, the ellipse's mask)."""
    path = opencv_apple()
    if path is None:
        pytest.skip("opencv-doc is not unpacked here (python -m devtools.fetch_real_media)")
    photo = _read(path)
    h, w = photo.shape[:2]
    mask = np.zeros((h, w), np.uint8)
    cv2.ellipse(mask, (int(0.49 * w), int(0.55 * h)), (int(0.4 * w), int(0.42 * h)), 0, 0, 360, 255, -1)
    return photo, mask
