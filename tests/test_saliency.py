"""Spectral-residual saliency: finds a lone object, ignores text, yields to the main-image match."""

from __future__ import annotations

import cv2
import numpy as np

from workers.saliency import SpectralSaliency, saliency, subject_boxes


def scene(
    object_box: tuple[int, int, int, int], caption: tuple[int, int, int, int] | None = None
) -> np.ndarray:
    rng = np.random.default_rng(2)
    frame = cv2.GaussianBlur(rng.integers(90, 140, (360, 640, 3), dtype=np.uint8), (0, 0), 3)
    x0, y0, x1, y1 = object_box
    cv2.rectangle(frame, (x0, y0), (x1, y1), (230, 40, 40), -1)
    cv2.circle(frame, ((x0 + x1) // 2, (y0 + y1) // 2), (x1 - x0) // 4, (250, 250, 60), -1)
    if caption is not None:
        cx0, cy0, cx1, cy1 = caption
        cv2.rectangle(frame, (cx0, cy0), (cx1, cy1), (10, 10, 10), -1)
        cv2.putText(frame, "SALE", (cx0 + 6, cy1 - 8), cv2.FONT_HERSHEY_DUPLEX, 0.9, (255, 255, 255), 2)
    return frame


def centre_inside(box: tuple[float, float, float, float] | None, truth: tuple[int, int, int, int]) -> bool:
    assert box is not None
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return truth[0] <= cx <= truth[2] and truth[1] <= cy <= truth[3]


def test_lone_object_is_the_salient_blob() -> None:
    for truth in [(60, 80, 160, 220), (420, 150, 540, 300)]:
        (box,) = saliency([scene(truth)])
        assert centre_inside(box, truth)


def test_text_regions_are_left_out() -> None:
    truth, caption = (420, 150, 540, 300), (40, 20, 200, 60)
    frame = scene(truth, caption)
    (box,) = saliency([frame], [[(40.0, 20.0, 200.0, 60.0)]])
    assert centre_inside(box, truth)
    small = cv2.resize(frame, (320, 180), interpolation=cv2.INTER_AREA)
    (scaled,) = saliency([small], [[(40.0, 20.0, 200.0, 60.0)]], source_size=(640, 360))
    assert centre_inside(scaled, truth)


def test_flat_frame_has_no_subject() -> None:
    assert SpectralSaliency()([np.full((360, 640, 3), 128, np.uint8)]) == [None]


def test_match_wins_and_saliency_fills_in() -> None:
    match = (1.0, 2.0, 3.0, 4.0)
    salient = (5.0, 6.0, 7.0, 8.0)
    assert subject_boxes([match, None, None], [salient, salient, None]) == [match, salient, None]
