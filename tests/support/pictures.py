"""Synthetic pictures with known content: a drawn face, scenes with a salient object."""

from __future__ import annotations

import cv2
import numpy as np


def face_frame(centre: tuple[int, int], size: int, frame: tuple[int, int] = (1280, 720)) -> np.ndarray:
    """A drawn frontal face (skin, hair, brows, eyes, nose, mouth) on a plain background, RGB."""
    bgr = np.full((frame[1], frame[0], 3), 70, np.uint8)
    cx, cy = centre

    def at(fx: float, fy: float) -> tuple[int, int]:
        return cx + round(size * fx), cy + round(size * fy)

    def axes(fx: float, fy: float) -> tuple[int, int]:
        return round(size * fx), round(size * fy)

    cv2.ellipse(bgr, (cx, cy), axes(0.42, 0.55), 0, 0, 360, (150, 175, 215), -1)
    cv2.ellipse(bgr, at(0, -0.35), axes(0.45, 0.25), 0, 180, 360, (30, 30, 40), -1)
    for side in (-1, 1):
        eye = at(side * 0.17, -0.08)
        cv2.ellipse(bgr, (eye[0], eye[1] - round(size * 0.08)), axes(0.1, 0.025), 0, 0, 360, (40, 50, 60), -1)
        cv2.ellipse(bgr, eye, axes(0.08, 0.04), 0, 0, 360, (245, 245, 245), -1)
        cv2.circle(bgr, eye, round(size * 0.035), (30, 20, 20), -1)
    cv2.ellipse(bgr, at(0, 0.1), axes(0.04, 0.1), 0, 0, 360, (120, 145, 185), -1)
    cv2.ellipse(bgr, at(0, 0.28), axes(0.13, 0.04), 0, 0, 360, (60, 60, 150), -1)
    return cv2.cvtColor(cv2.GaussianBlur(bgr, (0, 0), 2), cv2.COLOR_BGR2RGB)


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
