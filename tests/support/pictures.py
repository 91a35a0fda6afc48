"""Synthetic pictures with known content: a drawn face."""

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
