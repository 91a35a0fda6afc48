"""The locator over a run of samples: the frames scaled up (a costly search) only where that can find a tiny
product."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.support.localisation import _cup_mask, _iou, _pasted_photo, _photo
from tests.support.placements import backgrounds as _backgrounds
from workers.analysis.localisation.features import FeatureSource
from workers.analysis.localisation.locator import ProductLocator


def test_a_run_of_samples_is_searched_scaled_up_around_where_that_finds_a_tiny_product(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twelve samples, the product 36 px tall in the middle six and a street alone in the rest: it is found in
    all six. The frames scaled up (a search costing twice the rest) are searched in every other street-only
    sample, and in the first one past the product, where the search outwards from it stops."""
    photo = _photo("coffee")
    cup, locator = _cup_mask(photo), ProductLocator(photo)
    rng = np.random.default_rng(9)
    streets = [cv2.resize(b, (768, 432), interpolation=cv2.INTER_LINEAR) for b in _backgrounds(every=25)]
    frames, truths = [], []
    for k in range(12):
        street = streets[k % len(streets)]
        frame, truth = (
            _pasted_photo(photo, cup, street, rng, 36.0, (0.8, 1.2)) if 3 <= k < 9 else (street.copy(), None)
        )
        frames.append(frame)
        truths.append(truth)
    searched: list[int] = []
    fine = FeatureSource.fine

    def counted(self: FeatureSource, frame: np.ndarray, grey: np.ndarray | None = None) -> object:
        searched.append(next(k for k, f in enumerate(frames) if f is frame))
        return fine(self, frame, grey)

    monkeypatch.setattr(FeatureSource, "fine", counted)
    found = locator.locate_all(frames, (768, 432))
    held = [f.box is not None and _iou(f.box, t) > 0.5 for f, t in zip(found, truths, strict=True) if t]
    assert held == [True] * 6, held
    assert [f.box for f, t in zip(found, truths, strict=True) if t is None] == [None] * 6
    assert sorted(k for k in searched if truths[k] is None) == [0, 2, 9, 10]
    assert all(locator.locate(frame, (768, 432), fine=False).box is None for frame in frames)
