"""Faces through the daemon's `faces` model (OpenCV's Haar cascade) and their place among the subject sources."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from core.digests import file_digest
from core.errors import ConfigError
from gpu_service import engine, registry
from gpu_service.local import LocalInference
from gpu_service.models.faces import builtin_cascade_path
from gpu_service.priority import PriorityKey
from tests.support.pictures import face_frame
from workers.analysis.faces import FACE_WIDTH, detect_faces, faces_box

KEY = PriorityKey(0.0, 0.0)


@pytest.fixture(scope="module")
def model() -> LocalInference:
    return LocalInference()


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


def test_an_opencv_without_cascades_takes_one_from_the_weights_or_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenCV 5.0's wheels ship no cascades: the configured file is then the only way to detect faces
    cascade = tmp_path / "frontal.xml"
    cascade.write_bytes(builtin_cascade_path().read_bytes())
    monkeypatch.setattr(cv2.data, "haarcascades", str(tmp_path / "none") + "/")  # type: ignore[attr-defined]
    device = LocalInference().device
    frames = torch.from_numpy(np.stack([face_frame((400, 360), 300)]))
    configured = registry.create("faces", device, str(cascade)).module
    assert int(engine.forward(configured, [frames], [{}], 1)["count"][0]) == 1
    with pytest.raises(ConfigError, match=r"carries no haarcascade_frontalface_default\.xml"):
        engine.forward(registry.create("faces", device).module, [frames], [{}], 1)


def test_an_opencv_without_the_haar_detector_is_named_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(cv2, "CascadeClassifier")
    with pytest.raises(ConfigError, match=r"has no CascadeClassifier .* opencv-python-headless<5"):
        registry.create("faces", LocalInference().device, str(builtin_cascade_path()))
