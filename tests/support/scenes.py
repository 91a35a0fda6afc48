"""Generated scenes for the saliency and subject tests: one object on a soft background, a caption if asked."""

from __future__ import annotations

import cv2
import numpy as np


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
