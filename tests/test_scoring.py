from __future__ import annotations

import cv2
import numpy as np

from workers.scoring import frame_quality, product_template, score_frames


def _product(seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    image = np.full((256, 256, 3), 235, np.uint8)
    pattern = rng.integers(0, 255, (16, 12, 3), dtype=np.uint8)
    image[40:216, 70:190] = cv2.resize(pattern, (120, 176), interpolation=cv2.INTER_NEAREST)
    return image


def _scene(product: np.ndarray | None, height: int, x: int, y: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    frame = cv2.GaussianBlur(rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8), (21, 21), 0)
    if product is not None:
        body = product_template(product)
        width = round(height * body.shape[1] / body.shape[0])
        frame[y : y + height, x : x + width] = cv2.resize(body, (width, height))
    return frame


def test_template_trims_studio_background() -> None:
    body = product_template(_product())
    assert body.shape[:2] == (176, 120)


def test_product_frames_outscore_empty_frames_and_box_is_found() -> None:
    product = _product()
    frames = [(0.0, _scene(None, 0, 0, 0)), (0.5, _scene(product, 300, 600, 200))]
    empty, present = score_frames(frames, product)
    assert present.match > 0.6 > empty.match
    assert present.box is not None
    x0, y0, _x1, y1 = present.box
    assert abs(x0 - 600) < 40 and abs(y0 - 200) < 40 and abs((y1 - y0) - 300) < 80


def test_bigger_appearance_scores_higher() -> None:
    product = _product()
    small, big = score_frames(
        [(0.0, _scene(product, 170, 100, 100)), (0.5, _scene(product, 520, 300, 100))], product
    )
    assert big.value > small.value


def test_black_frame_has_no_quality() -> None:
    assert frame_quality(np.zeros((180, 320, 3), np.uint8)) == 0.0
    assert frame_quality(_scene(None, 0, 0, 0)[:180, :320]) > 0.1
