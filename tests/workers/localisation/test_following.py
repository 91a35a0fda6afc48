"""Following a product the features lose for a moment (a swing) from the sample that found it, and never onto the
background it left."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from devtools.real_media import opencv_orange
from tests.support.localisation import _covered, _cup, _inside, _iou, _photo
from tests.support.placements import FRAME
from tests.support.placements import backgrounds as _backgrounds
from tests.support.placements import pasted as _pasted
from tests.support.placements import read_rgb as _read
from workers.analysis.localisation.common import NOT_FOUND, Located
from workers.analysis.localisation.following import _found_again, follow
from workers.analysis.localisation.locator import ProductLocator
from workers.analysis.localisation.parameters import FOLLOW_STEPS
from workers.analysis.localisation.whole import whole_boxes


def _two_a_second(count: int) -> list[float]:
    """The times of count samples at the pipeline's default rate."""
    return [k / 2 for k in range(count)]


def _swung(
    frame: np.ndarray, box: tuple[float, ...], background: np.ndarray, shift: tuple[int, int], blur: int
) -> tuple[np.ndarray, tuple[float, ...]]:
    """The product in box moved by shift and blurred along its motion over blur pixels (a quick swing of the
    hand), over the background; with its true box there."""
    moved = cv2.warpAffine(frame, np.array([[1, 0, shift[0]], [0, 1, shift[1]]], np.float32), FRAME)
    kernel = np.zeros((blur, blur), np.float32)
    kernel[blur // 2, :] = 1.0 / blur
    smeared = cv2.filter2D(moved, -1, kernel)
    at = (box[0] + shift[0], box[1] + shift[1], box[2] + shift[0], box[3] + shift[1])
    inside = np.zeros(FRAME[::-1], bool)
    inside[int(at[1]) : int(at[3]), int(at[0]) : int(at[2])] = True
    return np.where(inside[..., None], smeared, background), at


@pytest.mark.parametrize("seed", range(4))
def test_a_product_its_features_lose_in_a_swing_is_followed_from_the_sample_that_found_it(seed: int) -> None:
    """The cup found in one sample, then swung: moved and motion-blurred over 15 px in the next three, where
    its keypoints are gone (the locator finds nothing, or a blob of the cup's reds that misses its saucer). The
    two samples after the one that found it box the cup where it went; the third is too far from any find to
    trust (FOLLOW_STEPS), and keeps what the locator found there."""
    cup, ellipse = _cup()
    background = _backgrounds()[seed % 5]
    rng = np.random.default_rng(seed)
    frame, truth = _pasted(cup, ellipse, background, rng, 0.5 * FRAME[1], (0.9, 1.1))
    frames, truths = [frame], [tuple(truth)]
    for k in range(1, 4):
        swung, at = _swung(frame, truth, background, (6 * k, 2 * k), 15)
        frames.append(swung)
        truths.append(at)
    locator = ProductLocator(_photo("coffee"))
    found = [locator.locate(f, FRAME) for f in frames]
    assert found[0].method == "features" and all(f.method in ("none", "colour") for f in found[1:])
    followed = follow(frames, found, FRAME, _two_a_second(len(frames)))
    for k in range(1, FOLLOW_STEPS + 1):
        box = followed[k].box
        assert followed[k].method == "followed" and box is not None and _iou(box, truths[k]) > 0.8, (k, box)
        assert 0 < followed[k].confidence < found[0].confidence
    assert FOLLOW_STEPS == 2 and followed[3] == found[3]


def test_a_product_found_only_later_is_followed_back_to_the_samples_before() -> None:
    cup, ellipse = _cup()
    background = _backgrounds()[1]
    frame, truth = _pasted(cup, ellipse, background, np.random.default_rng(3), 0.5 * FRAME[1], (0.9, 1.1))
    swung, at = _swung(frame, truth, background, (-8, 0), 21)
    locator = ProductLocator(_photo("coffee"))
    found = [locator.locate(swung, FRAME), locator.locate(frame, FRAME)]
    followed = follow([swung, frame], found, FRAME, _two_a_second(2))
    assert followed[0].box is not None and _iou(followed[0].box, at) > 0.8, followed[0].box


@pytest.mark.parametrize("name", ["coffee", "orange"])
def test_a_product_that_left_the_frame_is_not_followed_onto_the_background_it_stood_on(name: str) -> None:
    """The sample next to one that found the product shows the same footage without it (it was taken away, or
    not yet brought in), or other footage (a cut): its pixels are nowhere there. A smooth, round product's
    shading (an orange's) correlates with smooth shading anywhere in the footage, in grey levels, and was
    followed onto it before its colour was compared (this test's orange case failed); its colour is not there."""
    path = opencv_orange() if name == "orange" else None
    photo = _read(path) if path is not None else _photo(name)
    locator = ProductLocator(photo)
    whole = np.full(photo.shape[:2], 255, np.uint8)
    backgrounds = _backgrounds()
    rng = np.random.default_rng(5)
    tried = 0
    for k in range(25):
        background = backgrounds[k % 5]
        frame, _ = _pasted(photo, whole, background, rng, rng.uniform(0.5, 0.7) * FRAME[1], (0.8, 1.2))
        found = locator.locate(frame, FRAME)
        if found.box is None:
            continue
        for before in (background, backgrounds[(k + 1) % 5]):
            followed = follow(
                [before, frame], [locator.locate(before, FRAME), found], FRAME, _two_a_second(2)
            )
            assert followed[0] == NOT_FOUND, (k, followed[0].box)
            tried += 1
    assert tried >= 40


def test_a_followed_box_of_a_partly_covered_product_is_boxed_whole() -> None:
    """A followed sample carries the part of the main image seen and the homography moved with the product, so
    that whole_boxes completes its box as it completes the sample's it was followed from: here the sample that
    found the cup had a hand over its left 45 %, and the followed one is boxed whole too."""
    cup, ellipse = _cup()
    backgrounds = _backgrounds()
    locator = ProductLocator(_photo("coffee"))
    rng = np.random.default_rng(11)
    frames: list[np.ndarray] = []
    truths: list[tuple[float, ...]] = []
    for k in range(4):
        frame, truth = _pasted(
            cup, ellipse, backgrounds[k], rng, rng.uniform(0.5, 0.7) * FRAME[1], (0.8, 1.2)
        )
        frames.append(frame)
        truths.append(truth)
    covered = _covered(frames[3], truths[3], backgrounds[0], 0.45)
    swung, at = _swung(covered, truths[3], backgrounds[3], (6, 2), 21)
    frames[3:] = [covered, swung]
    truths.append(at)
    found = [locator.locate(f, FRAME) for f in frames]
    assert all(f.box is not None for f in found[:4]) and found[4].box is None
    followed = follow(frames, found, FRAME, _two_a_second(len(frames)))
    assert followed[4].box is not None and followed[4].homography and followed[4].seen == found[3].seen
    own = _inside(truths[4], followed[4].box)
    whole = whole_boxes(followed, FRAME)[4]
    assert whole is not None and own < 0.7 and _inside(truths[4], whole) >= 0.85, (own, whole)


def test_a_flat_patch_is_found_again_nowhere() -> None:
    """A plain product close up, then the camera on a plain wall of the same colour: a flat patch correlates
    with any plain wall as well as with itself (normalised cross-correlation 1 everywhere), so where it is
    found again says nothing, and it is not looked for (the way back, which a tie of sizes happens to send
    elsewhere here, is no guard against it)."""
    w, h = FRAME
    frame = _backgrounds()[0].copy()
    box = (0.0, 0.0, 0.6 * w, 0.6 * h)
    frame[: int(box[3]), : int(box[2])] = (200, 120, 40)
    wall = np.full_like(frame, (200, 120, 40))
    assert _found_again(frame, box, wall, 0.5) is None
    found = [Located(box, 0.9, "features"), NOT_FOUND]
    assert follow([frame, wall], found, FRAME, _two_a_second(2))[1] == NOT_FOUND
