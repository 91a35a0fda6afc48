"""Faces in the analysed frames, found by the daemon's `faces` model (OpenCV's Haar cascade, no download).

A face is a subject: where the main image does not match, the crop keeps the faces in view before it falls
back to the most salient blob.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from gpu_service.priority import PriorityKey
from workers.analysis.detection import detect_boxes
from workers.analysis.scoring import Inference
from workers.geometry import Box

FACE_MODEL = "faces"
#: frames go to the detector this wide: a cascade's cost grows with the pixel count, and faces that steer a
#: crop are large (the model ignores those under a twelfth of the frame height)
FACE_WIDTH = 480


def detect_faces(
    infer: Inference, frames_rgb: Sequence[np.ndarray], key: PriorityKey, *, source_size: tuple[int, int]
) -> list[list[Box]]:
    """Faces per frame (frames of one size), in source pixels."""
    if not frames_rgb:
        return []
    height, width = frames_rgb[0].shape[:2]
    if width > FACE_WIDTH:
        size = (FACE_WIDTH, max(2, round(height * FACE_WIDTH / width)))
        frames_rgb = [cv2.resize(f, size, interpolation=cv2.INTER_AREA) for f in frames_rgb]
    return detect_boxes(infer, FACE_MODEL, frames_rgb, key, source_size=source_size)


def faces_box(faces: Sequence[Box]) -> Box | None:
    """One subject box holding every face of a frame, or None without faces."""
    if not faces:
        return None
    return (
        min(f[0] for f in faces),
        min(f[1] for f in faces),
        max(f[2] for f in faces),
        max(f[3] for f in faces),
    )
