"""The subject per frame: the main-image match first, then faces, then the salient blob, each fallback run
only on the frames still without a subject."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_service.priority import PriorityKey
from tests.support.inference import Recording
from tests.support.pictures import face_frame
from tests.support.scenes import centre_inside, scene
from workers.analysis.faces import FACE_MODEL
from workers.analysis.saliency import SALIENCY_MODEL
from workers.analysis.subject import find_subjects

KEY = PriorityKey(0.0, 0.0)
SIZE = (640, 360)


@pytest.fixture(scope="module")
def model() -> Recording:
    return Recording()


def test_each_frame_takes_the_most_trusted_source_and_fallbacks_see_only_the_rest(model: Recording) -> None:
    match = (10.0, 20.0, 110.0, 220.0)
    face = face_frame((450, 180), 130, SIZE)
    lone_object = (60, 80, 160, 220)
    blob = scene(lone_object)
    model.requests.clear()
    found = find_subjects(
        model,
        [face, face, blob],
        KEY,
        matched=[match, None, None],
        text_boxes=[[], [], []],
        source_size=SIZE,
    )
    assert found[0] == match
    assert found[1] is not None and centre_inside(found[1], (385, 110, 515, 250))
    assert found[2] is not None and centre_inside(found[2], lone_object)
    # the matched frame went to neither fallback; the face frame did not go on to saliency
    assert model.frames() == {FACE_MODEL: 2, SALIENCY_MODEL: 1}


def test_a_window_the_match_covers_costs_no_fallback(model: Recording) -> None:
    model.requests.clear()
    boxes = [(float(k), 0.0, k + 50.0, 60.0) for k in range(3)]
    frames = [np.zeros((SIZE[1], SIZE[0], 3), np.uint8)] * 3
    found = find_subjects(model, frames, KEY, matched=boxes, text_boxes=[[]] * 3, source_size=SIZE)
    assert found == boxes
    assert model.frames() == {}


def test_a_frame_no_source_finds_stays_without_subject(model: Recording) -> None:
    flat = np.full((SIZE[1], SIZE[0], 3), 128, np.uint8)
    assert find_subjects(model, [flat], KEY, matched=[None], text_boxes=[[]], source_size=SIZE) == [None]
