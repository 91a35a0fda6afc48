"""Faces through the daemon's `faces` model (OpenCV's Haar cascade) and their place among the subject sources."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from gpu_service import registry
from gpu_service.local import LocalInference
from gpu_service.models.faces import builtin_cascade_path
from gpu_service.priority import PriorityKey
from reelgen.digests import file_digest
from reelgen.errors import ConfigError
from workers.faces import FACE_WIDTH, detect_faces, faces_box

KEY = PriorityKey(0.0, 0.0)


@pytest.fixture(scope="module")
def model() -> LocalInference:
    return LocalInference()


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


def test_a_face_is_found_where_it_is_drawn_in_source_pixels(model: LocalInference) -> None:
    frames = [face_frame((400, 360), 300), face_frame((900, 300), 220)]
    found = detect_faces(model, frames, KEY, source_size=(1280, 720))
    for faces, (cx, cy) in zip(found, [(400, 360), (900, 300)], strict=True):
        assert len(faces) == 1
        x0, y0, x1, y1 = faces[0]
        assert x0 < cx < x1 and y0 < cy < y1
    # frames sent smaller than the source: boxes still come back in source pixels
    small = [cv2.resize(f, (640, 360), interpolation=cv2.INTER_AREA) for f in frames]
    halved = detect_faces(model, small, KEY, source_size=(1280, 720))
    for a, b in zip(found, halved, strict=True):
        assert max(abs(p - q) for p, q in zip(a[0], b[0], strict=True)) < 40
    assert FACE_WIDTH < 1280  # the 1280-wide frames above were shrunk before sending


def test_no_face_in_a_plain_or_textured_frame(model: LocalInference) -> None:
    rng = np.random.default_rng(5)
    textured = cv2.GaussianBlur(rng.integers(0, 255, (360, 640, 3), dtype=np.uint8), (0, 0), 2)
    plain = np.full((360, 640, 3), 120, np.uint8)
    assert detect_faces(model, [textured, plain], KEY, source_size=(640, 360)) == [[], []]


def test_faces_box_holds_every_face() -> None:
    assert faces_box([(10.0, 20.0, 30.0, 40.0), (50.0, 5.0, 60.0, 25.0)]) == (10.0, 5.0, 60.0, 40.0)
    assert faces_box([]) is None


def test_the_cascade_comes_with_opencv_or_from_a_configured_file(tmp_path: Path) -> None:
    cascade = builtin_cascade_path()
    loaded = registry.create("faces", LocalInference().device, str(cascade))
    assert loaded.digest == file_digest(cascade)
    (tmp_path / "bad.xml").write_text("<opencv_storage></opencv_storage>")
    with pytest.raises(ConfigError, match="no cascade loads"):
        registry.create("faces", LocalInference().device, str(tmp_path / "bad.xml"))
