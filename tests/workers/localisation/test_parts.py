"""A product shown among other things in its photo: the scene is found nowhere, the part of it the video shows is."""

from __future__ import annotations

import numpy as np

from tests.support.localisation import _iou
from tests.support.placements import FRAME
from tests.support.placements import backgrounds as _backgrounds
from tests.support.placements import pasted as _pasted
from tests.support.placements import whale_on_shelf as _whale
from workers.analysis.localisation.locator import ProductLocator


def test_a_product_shown_among_other_things_in_its_photo_is_found_as_the_thing_the_video_shows() -> None:
    """The whale alone, turned and re-lit over a street (real footage), with the whole shelf as the main image:
    the shelf is found in no frame, so the locator takes the part of it the samples show. The whale is boxed in
    7 of 8 samples or more (where its colours are not found as the photo shows them, they are under other
    lights: 3 of 8 without); a run of samples of the street alone finds nothing."""
    scene, whale, ellipse = _whale()
    locator = ProductLocator(scene)
    rng = np.random.default_rng(4)
    streets = _backgrounds(every=25)
    frames, truths = [], []
    for street in streets[:8]:
        frame, truth = _pasted(whale, ellipse, street, rng, rng.uniform(0.3, 0.6) * FRAME[1], (0.8, 1.2))
        frames.append(frame)
        truths.append(truth)
    found = locator.locate_all(frames, FRAME)
    assert all(locator.locate(frame, FRAME).box is None for frame in frames)
    held = [f.box is not None and _iou(f.box, t) > 0.5 for f, t in zip(found, truths, strict=True)]
    assert sum(held) >= 7, held
    assert all(f.box is None for f in locator.locate_all(streets, FRAME))
