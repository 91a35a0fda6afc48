"""PP-OCRv4 text detection through onnxruntime, and the dense refinement of when text is on screen."""

from __future__ import annotations

import itertools

import cv2
import numpy as np
import pytest

from workers.text_detection import TextDetector, detect_text, refine_text_times, text_sample_times


@pytest.fixture(scope="module")
def detector() -> TextDetector:
    return TextDetector(threads=1)


def caption_frame(width: int, height: int, text: str, origin: tuple[int, int], scale: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    frame = cv2.GaussianBlur(rng.integers(40, 200, (height, width, 3), dtype=np.uint8), (0, 0), 6)
    cv2.putText(frame, text, origin, cv2.FONT_HERSHEY_DUPLEX, scale, (255, 255, 255), 2, cv2.LINE_AA)
    return frame


def ink_box(frame: np.ndarray, reference: np.ndarray) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(np.abs(frame.astype(int) - reference.astype(int)).max(axis=2) > 30)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def test_finds_a_caption_where_it_is_drawn(detector: TextDetector) -> None:
    frame = caption_frame(1280, 720, "SALE 50% OFF", (420, 200), 1.6)
    ink = ink_box(frame, caption_frame(1280, 720, "", (0, 0), 1.0))
    (boxes,) = detector([frame])
    assert len(boxes) >= 1
    x0, y0, x1, y1 = (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
    # the detector's box hugs the ink: within a few pixels at this size (it was run at 736 px wide)
    assert abs(x0 - ink[0]) < 12 and abs(x1 - ink[2]) < 12 and abs(y0 - ink[1]) < 12 and abs(y1 - ink[3]) < 12
    plain = caption_frame(1280, 720, "", (0, 0), 1.0)
    assert detector([plain]) == [[]]


def test_batches_by_size_and_scales_back_to_source(detector: TextDetector) -> None:
    big = caption_frame(1280, 720, "NEW ARRIVAL", (100, 600), 1.5)
    small = cv2.resize(big, (640, 360), interpolation=cv2.INTER_AREA)
    other = caption_frame(480, 640, "TOP", (150, 300), 1.2)
    batched = TextDetector(threads=1, max_batch=4)([small, other, small])
    singles = [detector([f])[0] for f in (small, other, small)]
    assert batched == singles
    scaled = detect_text([small], source_size=(1280, 720), detector=detector)[0]
    direct = detector([big])[0]
    assert len(scaled) == len(direct) >= 1
    for s, d in zip(sorted(scaled), sorted(direct), strict=True):
        assert max(abs(a - b) for a, b in zip(s, d, strict=True)) < 10


def test_sample_times_cover_the_window_edges() -> None:
    assert text_sample_times(2.0, 4.0) == [2.0, 2.5, 3.0, 3.5, 4.0]
    times = text_sample_times(2.0, 4.2, fps=1.0)
    assert (
        times[0] == 2.0
        and times[-1] >= 4.2
        and all(b - a <= 1.0 + 1e-9 for a, b in itertools.pairwise(times))
    )


def test_refinement_finds_when_a_caption_appears_and_leaves() -> None:
    """Samples every 0.5 s see a caption at 1.0 and 1.5 only; the dense frames show it from 0.84 to 1.68 s."""
    box = (40.0, 20.0, 200.0, 60.0)
    rng = np.random.default_rng(1)
    background = rng.integers(0, 255, (90, 160), dtype=np.uint8)
    dense = []
    for k in range(51):
        t = k / 25
        gray = np.roll(background, k, axis=1).copy()  # moving background: the comparison must not care
        if 0.84 <= t < 1.68:
            gray[5:15, 10:50] = 255
        dense.append((t, gray))
    sparse = [(0.5, []), (1.0, [box]), (1.5, [box]), (2.0, [])]
    refined = dict(refine_text_times(sparse, dense, (640, 360)))
    shown = [t for t, boxes in refined.items() if boxes]
    assert min(shown) <= 0.84 and max(shown) >= 1.64  # never less than the truth
    assert min(shown) >= 0.84 - 0.041 and max(shown) <= 1.68 + 0.041  # and at most one frame more each side
