"""Spectral-residual saliency (the daemon's saliency model and the worker's blob choice): finds a lone object,
ignores text, yields to the main-image match."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from gpu_service.local import LocalInference
from gpu_service.priority import PriorityKey
from tests.support.scenes import centre_inside, scene
from workers.analysis.saliency import MAP_WIDTH, SALIENCY_MODEL, saliency

KEY = PriorityKey(0.0, 0.0)


@pytest.fixture(scope="module")
def model() -> LocalInference:
    return LocalInference()


def test_lone_object_is_the_salient_blob(model: LocalInference) -> None:
    truths = [(60, 80, 160, 220), (420, 150, 540, 300)]
    boxes = saliency(model, [scene(truth) for truth in truths], KEY)
    for box, truth in zip(boxes, truths, strict=True):
        assert centre_inside(box, truth)


def test_text_regions_are_left_out(model: LocalInference) -> None:
    truth, caption = (420, 150, 540, 300), (40, 20, 200, 60)
    frame = scene(truth, caption)
    (box,) = saliency(model, [frame], KEY, [[(40.0, 20.0, 200.0, 60.0)]])
    assert centre_inside(box, truth)
    small = cv2.resize(frame, (320, 180), interpolation=cv2.INTER_AREA)
    (scaled,) = saliency(model, [small], KEY, [[(40.0, 20.0, 200.0, 60.0)]], source_size=(640, 360))
    assert centre_inside(scaled, truth)


def test_flat_frame_has_no_subject(model: LocalInference) -> None:
    assert saliency(model, [np.full((360, 640, 3), 128, np.uint8)], KEY) == [None]


def test_the_model_computes_the_spectral_residual(model: LocalInference) -> None:
    """The batched torch maps equal the method written out with numpy and OpenCV, frame by frame."""
    frames = [
        cv2.resize(scene(t), (MAP_WIDTH, 72), interpolation=cv2.INTER_AREA) for t in [(60, 80, 160, 220)]
    ]
    frames.append(np.full_like(frames[0], 90))
    maps = model.infer(SALIENCY_MODEL, np.stack(frames), KEY)["map"]
    for rgb, got in zip(frames, maps, strict=True):
        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
        spectrum = np.fft.fft2(gray)
        log_amplitude = np.log(np.abs(spectrum) + 1e-6).astype(np.float32)
        residual = log_amplitude - cv2.blur(log_amplitude, (3, 3))
        back = np.fft.ifft2(np.exp(residual + 1j * np.angle(spectrum)))
        expected = cv2.GaussianBlur((np.abs(back) ** 2).astype(np.float32), (0, 0), MAP_WIDTH / 40)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3 * float(expected.max()))
