"""A plain grey product: too few keypoints and no colours of its own, so it is found by its outline standing out,
never by the grey footage that only shares its colours."""

from __future__ import annotations

import cv2
import numpy as np

from devtools.real_media import mgt_dancer
from tests.support.localisation import _inside, _iou, _photo, _studio_shot
from tests.support.placements import FRAME
from tests.support.placements import backgrounds as _backgrounds
from tests.support.placements import pasted as _pasted
from workers.analysis.localisation.locator import ProductLocator


def test_a_grey_plain_product_is_not_found_on_grey_footage_by_its_colours() -> None:
    """A grey clock (too few keypoints for features) against real street footage that never shows it: its
    colours would match every grey wall and road, so the locator says not found rather than box one."""
    locator = ProductLocator(_studio_shot(_photo("clock")))
    assert not locator.textured
    found = [locator.locate(frame, (FRAME[0], FRAME[1])) for frame in _backgrounds()]
    assert [f.box for f in found] == [None] * len(found)


def _clock_cut_along_its_rim() -> tuple[np.ndarray, np.ndarray, ProductLocator]:
    """The grey clock of skimage's photo, cut out along its rim: its pixels, the rim's mask, and a locator for
    it on a white studio shot."""
    photo = _photo("clock")
    h, w = photo.shape[:2]
    clock = np.ascontiguousarray(photo[int(0.27 * h) : int(0.75 * h), int(0.28 * w) : int(0.72 * w)])
    rim = np.zeros(clock.shape[:2], np.uint8)
    centre, axes = (clock.shape[1] // 2, clock.shape[0] // 2), (clock.shape[1] // 2, clock.shape[0] // 2)
    cv2.ellipse(rim, centre, axes, 0, 0, 360, 255, -1)
    locator = ProductLocator(_studio_shot(np.where(rim[..., None] > 0, clock, 250).astype(np.uint8)))
    assert not locator.textured and not locator.colourful
    return clock, rim, locator


def test_a_plain_grey_product_is_found_by_its_silhouette_where_it_stands_out() -> None:
    """A grey clock cut out along its rim, on a white studio shot, held in front of a dancer's studio screen
    (real footage), turned and re-lit: too few keypoints and no colours to go by, but its outline stands out
    from the pixels round it. Most placements are found, a found box lies on the clock, and frames without it
    find nothing (nor do the street's, in the test above)."""
    clock, rim, locator = _clock_cut_along_its_rim()
    rng = np.random.default_rng(3)
    backgrounds = _backgrounds(mgt_dancer, 200)
    found = []
    for background in backgrounds:
        frame, truth = _pasted(clock, rim, background, rng, rng.uniform(0.3, 0.7) * FRAME[1], (0.75, 1.2))
        located = locator.locate(frame, FRAME)
        found.append(located.method == "silhouette" and _iou(located.box or truth, truth) > 0.6)
        assert located.box is None or _inside(located.box, truth) >= 0.8, (truth, located)
    assert sum(found) >= 5, found
    assert all(locator.locate(b, FRAME).box is None for b in backgrounds)


def test_a_plain_grey_product_held_close_is_found_by_its_silhouette_where_it_runs_past_the_frame() -> None:
    """The grey clock held close to the camera, half the frame's height, running a little past its left or right
    edge in front of the dancer's screen: its silhouette is searched also where part of it and of the ring round
    it lies off screen, over the pixels on screen, and its box is the part on screen. Searched on screen only,
    none of these frames is found; where the dancer or the screen's shading is in the ring, the clock's outline
    does not stand out from it, so most are not found either way."""
    clock, rim, locator = _clock_cut_along_its_rim()
    rng = np.random.default_rng(5)
    found = []
    for k, background in enumerate(_backgrounds(mgt_dancer, 50)):
        scale = rng.uniform(0.45, 0.6) * FRAME[1] / clock.shape[0]
        w, h = clock.shape[1] * scale, clock.shape[0] * scale
        past = rng.uniform(0.04, 0.08)
        x, y = (-past * w, FRAME[0] - (1 - past) * w)[k % 2], rng.uniform(0, FRAME[1] - h)
        move = np.array([[scale, 0, x], [0, scale, y]])
        mask = cv2.warpAffine(rim, move, FRAME, flags=cv2.INTER_NEAREST)
        frame = np.where(mask[..., None] > 0, cv2.warpAffine(clock, move, FRAME), background)
        ys, xs = np.nonzero(mask)
        truth = (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))
        located = locator.locate(frame, FRAME)
        found.append(located.method == "silhouette" and _iou(located.box or truth, truth) > 0.7)
        assert located.box is None or _inside(located.box, truth) >= 0.8, (truth, located)
    assert sum(found) >= 5, found
