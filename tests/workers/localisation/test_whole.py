"""Whole boxes over a video: a product covered in some frames, or on the same side in all, is boxed whole, as far
as the evidence of the others or of its photo says."""

from __future__ import annotations

import numpy as np

from tests.support.localisation import _area, _covered_cups, _inside, _photo, _place, _studio_shot
from tests.support.placements import FRAME
from tests.support.placements import backgrounds as _backgrounds
from workers.analysis.localisation.common import NOT_FOUND, Box, Located
from workers.analysis.localisation.locator import ProductLocator
from workers.analysis.localisation.whole import whole_boxes


def _assert_seen_in_part(
    found: list[Located], truths: list[tuple[float, float, float, float]], covered: list[bool]
) -> None:
    """Every cup is found, and the covered frames' own boxes hold about half of it (what completion is for)."""
    assert all(f.box is not None for f in found), [f.box for f in found]
    own = [_inside(t, f.box) for t, f, c in zip(truths, found, covered, strict=True) if c and f.box]
    assert max(own) < 0.7, [round(v, 2) for v in own]


def _assert_whole(
    boxes: list[Box | None], truths: list[tuple[float, float, float, float]], least: float
) -> None:
    """Every box holds the least share of the product or more (the completion is as exact as the homography's
    scale over the part seen), and is not much larger."""
    held = [_inside(t, b) if b is not None else 0.0 for t, b in zip(truths, boxes, strict=True)]
    assert min(held) >= least, [round(v, 2) for v in held]
    oversize = [_area(b) / _area(t) for t, b in zip(truths, boxes, strict=True) if b is not None]
    assert np.median(oversize) < 1.4 and max(oversize) < 1.8, [round(v, 2) for v in oversize]


def test_a_product_partly_covered_in_some_frames_is_boxed_whole_in_all_of_them() -> None:
    """In five of the ten frames a patch covers the cup's left 45 %. Those frames see only the rest again, and
    their own boxes hold only that (about half the product): over the video, the product is as large as the
    frames that see it whole say, and whole_boxes boxes it so in every frame."""
    found, truths, covered = _covered_cups(lambda k: k % 2 == 1)
    _assert_seen_in_part(found, truths, covered)
    _assert_whole(whole_boxes(found, FRAME), truths, 0.85)


def test_a_product_covered_on_the_same_side_in_every_frame_is_boxed_as_its_own_pixels_in_its_photo_say() -> (
    None
):
    """The hand covers the cup's left 45 % in all ten frames, so no frame sees it whole; the cup's own pixels in
    its photo (it cuts out cleanly) say how far it reaches past the part seen, and every box holds 80 % of it or
    more (GrabCut's cut of the photo is a little smaller than the ellipse the cup was pasted by)."""
    found, truths, covered = _covered_cups(lambda k: True)
    _assert_seen_in_part(found, truths, covered)
    assert all(f.whole is not None for f in found)
    _assert_whole(whole_boxes(found, FRAME), truths, 0.8)


def test_whole_boxes_leaves_boxes_alone_without_enough_feature_evidence() -> None:
    photo = _photo("coffee")
    frame, _ = _place(photo, _backgrounds()[0], np.random.default_rng(3))
    found = [ProductLocator(_studio_shot(photo)).locate(frame, FRAME), NOT_FOUND]
    assert whole_boxes(found, FRAME) == [found[0].box, None]
