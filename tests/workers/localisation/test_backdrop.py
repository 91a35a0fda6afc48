"""A main image's own pixels: a photo of one thing cuts out, and a plain border round a scene does not make it a
studio shot."""

from __future__ import annotations

import cv2
import numpy as np

from devtools.real_media import opencv_rubberwhale
from tests.support.localisation import _apple, _area, _boxed_cups, _covered_cups, _cup, _photo
from tests.support.placements import FRAME
from tests.support.placements import read_rgb as _read
from workers.analysis.localisation.backdrop import cut_out
from workers.analysis.localisation.locator import ProductLocator
from workers.analysis.localisation.whole import whole_boxes


def test_a_main_image_with_a_plain_border_around_a_whole_scene_boxes_only_the_product() -> None:
    """A plain border does not make a studio shot: here it frames a scene of two things, the cup (the product)
    and a cat print beside it. The video shows only the cup; the box is the cup's, not the scene's outline."""
    cup, cat = _cup()[0], _photo("cat")
    cat = cv2.resize(cat, (cat.shape[1] * cup.shape[0] // cat.shape[0], cup.shape[0]))
    scene = cv2.copyMakeBorder(
        np.hstack([cup, cat]), 40, 40, 40, 40, cv2.BORDER_CONSTANT, value=(250, 250, 250)
    )
    held, oversize = _boxed_cups(ProductLocator(scene), seed=13)
    assert min(held) >= 0.85, [round(v, 2) for v in held]
    assert np.median(oversize) < 1.5, [round(v, 2) for v in oversize]
    # the scene's outline is not the product's whole extent either: the cup covered on the same side in every
    # frame is completed as far as the frames that see more of it say, not as far as the cat print
    found, truths, _ = _covered_cups(lambda k: k % 2 == 1, ProductLocator(scene))
    boxes = whole_boxes(found, FRAME)
    oversize = [_area(b) / _area(t) for t, b in zip(truths, boxes, strict=True) if b is not None]
    assert np.median(oversize) < 1.4, [round(v, 2) for v in oversize]


def test_only_a_photo_of_one_thing_cuts_out() -> None:
    """A photo to its edges of one object cuts out as that object; one of a shelf of toys (a teal whale among
    letters, a shell and a box) cuts ragged and gives no product pixels."""
    photo, ellipse = _apple()
    cut = cut_out(photo)
    assert cut is not None
    assert 0.3 < cut.mean() / 255 < 0.8
    # the cut lies on the apple: most of it inside the apple's ellipse, and no corner of the photo
    assert (cut & ellipse).sum() / cut.sum() > 0.85
    assert not any(cut[y, x] for y in (0, -1) for x in (0, -1))
    whale = opencv_rubberwhale()
    assert whale is not None, "python -m devtools.fetch_real_media"
    assert cut_out(_read(whale)) is None
