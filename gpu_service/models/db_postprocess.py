"""Text boxes from PP-OCR's DB (Differentiable Binarization) probability map.

Adapted from RapidOCR 1.4.4 (rapidocr_onnxruntime/ch_ppocr_det/utils.py, DBPostProcess; Apache License 2.0,
see data/NOTICE), itself from PaddleOCR. Only the path our detector uses is kept: a dilated bitmap and the
"fast" box score (mean probability inside the box's quadrilateral). Kept here, with the detector's ONNX file
in data/, so that text detection needs neither the rapidocr package nor the GUI build of OpenCV it requires.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import pyclipper
from shapely.geometry import Polygon

FloatMap = npt.NDArray[np.float32]
Quad = npt.NDArray[np.int32]

_MIN_SIDE = 3
_DILATION = np.array([[1, 1], [1, 1]], dtype=np.uint8)


class DBPostProcess:
    def __init__(self, *, thresh: float, box_thresh: float, max_candidates: int, unclip_ratio: float) -> None:
        self.thresh = thresh
        self.box_thresh = box_thresh
        self.max_candidates = max_candidates
        self.unclip_ratio = unclip_ratio

    def __call__(self, pred: FloatMap, size: tuple[int, int]) -> list[Quad]:
        """Quadrilaterals (4×2, x then y) in pixels of an image of `size` (height, width), from a 1×1×H×W map."""
        height, width = size
        prob = pred[0, 0]
        mask = np.asarray(cv2.dilate((prob > self.thresh).astype(np.uint8), _DILATION), dtype=np.uint8)
        return self._boxes(prob, mask, width, height)

    def _boxes(self, prob: FloatMap, bitmap: npt.NDArray[np.uint8], dest_w: int, dest_h: int) -> list[Quad]:
        height, width = bitmap.shape
        contours = cv2.findContours(bitmap * 255, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[-2]
        boxes: list[Quad] = []
        for contour in contours[: self.max_candidates]:
            points, side = _mini_box(contour)
            if side < _MIN_SIDE or _score(prob, points.reshape(-1, 2)) < self.box_thresh:
                continue
            box, side = _mini_box(self._unclip(points))
            if side < _MIN_SIDE + 2:
                continue
            box[:, 0] = np.clip(np.round(box[:, 0] / width * dest_w), 0, dest_w)
            box[:, 1] = np.clip(np.round(box[:, 1] / height * dest_h), 0, dest_h)
            boxes.append(box.astype(np.int32))
        return boxes

    def _unclip(self, box: npt.NDArray[Any]) -> npt.NDArray[Any]:
        polygon = Polygon(box)
        distance = polygon.area * self.unclip_ratio / polygon.length
        offset = pyclipper.PyclipperOffset()
        offset.AddPath(box, pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
        return np.array(offset.Execute(distance)).reshape((-1, 1, 2))


def _mini_box(contour: npt.NDArray[Any]) -> tuple[npt.NDArray[np.float32], float]:
    """The minimum-area rectangle's corners, ordered top-left, top-right, bottom-right, bottom-left; its short
    side."""
    rect = cv2.minAreaRect(contour)
    points = sorted(cv2.boxPoints(rect), key=lambda p: float(p[0]))
    left = (0, 1) if points[1][1] > points[0][1] else (1, 0)
    right = (2, 3) if points[3][1] > points[2][1] else (3, 2)
    box = np.array([points[left[0]], points[right[0]], points[right[1]], points[left[1]]], dtype=np.float32)
    return box, float(min(rect[1]))


def _score(prob: FloatMap, box: npt.NDArray[Any]) -> float:
    """Mean probability inside the box."""
    h, w = prob.shape[:2]
    box = box.copy()
    xmin = int(np.clip(np.floor(box[:, 0].min()), 0, w - 1))
    xmax = int(np.clip(np.ceil(box[:, 0].max()), 0, w - 1))
    ymin = int(np.clip(np.floor(box[:, 1].min()), 0, h - 1))
    ymax = int(np.clip(np.ceil(box[:, 1].max()), 0, h - 1))
    mask = np.zeros((ymax - ymin + 1, xmax - xmin + 1), dtype=np.uint8)
    box[:, 0] -= xmin
    box[:, 1] -= ymin
    cv2.fillPoly(mask, [box.reshape(-1, 2).astype(np.int32)], 1)
    return float(cv2.mean(prob[ymin : ymax + 1, xmin : xmax + 1], mask)[0])
