"""bench/quality.py's scoring of a score curve: how far the best product window stands above the background."""

from __future__ import annotations

import pytest

from bench.quality import window_margin


def test_the_margin_is_the_best_product_window_less_the_best_background_window() -> None:
    # 0.2 everywhere, 0.8 while the product is on screen (10-15 s), a background bump of 0.5 at 2-3 s
    curve = [(t / 2, 0.8 if 10 <= t / 2 < 15 else 0.5 if 2 <= t / 2 < 3 else 0.2) for t in range(60)]
    margin = window_margin(curve, (10.0, 15.0), 5.0)
    # best product window: 10-15 (mean 0.8); best background window: 0-5 or 1-6 holding the bump at 2-3 s
    assert margin == pytest.approx(0.8 - (2 * 0.5 + 8 * 0.2) / 10)


def test_a_product_on_screen_throughout_leaves_no_background_window() -> None:
    curve = [(t / 2, 0.5) for t in range(20)]
    assert window_margin(curve, (0.0, 10.0), 5.0) is None


def test_a_background_that_outscores_the_product_gives_a_negative_margin() -> None:
    curve = [(t / 2, 0.3 if 10 <= t / 2 < 15 else 0.6) for t in range(60)]
    margin = window_margin(curve, (10.0, 15.0), 5.0)
    assert margin is not None and margin < 0
