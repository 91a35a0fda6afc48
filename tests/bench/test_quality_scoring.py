"""bench/quality.py's scoring: how far the best product window stands above the background, and whether the
ground truth leaves a crop that separates the product from the captions (what justifies a letterbox)."""

from __future__ import annotations

import pytest

from bench import quality
from bench.quality import largest_crop, separable, window_margin
from tests.support.portrait import SIDE, portrait


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


# a 640×480 frame, 9:16: its largest crop is 270×480, a 0.6 one 162×288
NINE_SIXTEEN = largest_crop("9:16", 640, 480)


def test_a_product_clear_of_the_captions_is_separable() -> None:
    assert NINE_SIXTEEN == (270, 480)
    assert separable((200, 200, 300, 300), [(20, 20, 200, 60), (440, 420, 620, 460)], 640, 480, NINE_SIXTEEN)


def test_a_caption_across_the_frame_is_passed_by_a_smaller_crop_below_it() -> None:
    # the largest crop spans the frame's height and must cut a caption 600 px wide; a 0.6 crop below it holds
    # the product
    assert separable((250, 250, 350, 400), [(20, 20, 620, 60)], 640, 480, NINE_SIXTEEN)


def test_a_product_under_a_caption_across_the_frame_is_not_separable() -> None:
    # the product reaches up into the caption's clearance: no crop excludes the caption and holds the product,
    # and none holds the caption whole
    assert not separable((250, 50, 350, 200), [(20, 20, 620, 60)], 640, 480, NINE_SIXTEEN)


def test_a_product_wider_than_the_smallest_crop_between_captions_is_not_separable() -> None:
    # captions at the top and the bottom leave a band 480 - 2 * (60 + clearance) high: no 9:16 crop, however
    # small, fits it and holds a product 200 px wide (a 0.6 crop is 162 wide)
    captions = [(20, 20, 620, 60), (20, 420, 620, 460)]
    assert not separable((220, 200, 420, 280), captions, 640, 480, NINE_SIXTEEN)
    # a narrower product fits between them
    assert separable((300, 200, 360, 260), captions, 640, 480, NINE_SIXTEEN)


def test_a_crop_sized_to_end_above_a_caption_counts_as_separating_it() -> None:
    # a caption across the bottom: the largest crop spans the frame's height; of the planner's fixed smaller
    # crops the largest, 0.9 (234×416), is narrower than the product's held share (245 of 258 px). The crop
    # the planner sizes to end just above the caption's clearance (252×448) holds it
    caption = (20, 462, 620, 478)
    assert separable((180, 100, 438, 300), [caption], 640, 480, NINE_SIXTEEN)
    # lower, into that clearance, no crop separates the product from the caption
    assert not separable((180, 250, 438, 460), [caption], 640, 480, NINE_SIXTEEN)


def test_text_at_an_edge_counts_as_read_on_a_caption_and_not_on_a_face() -> None:
    """text_cut_read: of the detector's boxes at an output frame's edge, those the recogniser reads. A real face
    cut by the frame's edge fires the detector without reading; a caption cut by it still reads."""
    quality._ocr_init()
    face = portrait(12.0, 12.05)[0]
    captioned = portrait(12.0, 12.05, caption=True)[0]
    # output frames cut by a crop: the face's right half, the caption's left end cut off at x = 0
    cut_face, cut_caption = face[:, SIDE // 2 :], captioned[:, 60:]
    at_edge = [
        (frame, box)
        for frame in (cut_face, cut_caption)
        for box in quality._DETECTOR(frame[None])[0]
        if box[0] <= quality.EDGE_PX or box[2] >= frame.shape[1] - quality.EDGE_PX
    ]
    on_face = [box for frame, box in at_edge if frame is cut_face]
    on_caption = [box for frame, box in at_edge if frame is cut_caption and box[1] < 260]
    assert on_face and on_caption
    assert not any(quality._reads(cut_face, box) for box in on_face)
    assert all(quality._reads(cut_caption, box) for box in on_caption)


def _item(photo: str, has_product: bool, located: bool, clips: list[quality.ClipScore]) -> quality.ItemScore:
    return quality.ItemScore(
        f"item-{photo}-{len(clips)}", has_product, "done", (0.0, 5.0), (0.0, 5.0) if has_product else None,
        [], "16:9", photo, hit=has_product or None, located=located, clips=clips,
    )  # fmt: skip


def test_the_figures_by_product_put_each_failure_on_its_own_products_line() -> None:
    held = quality.ClipScore("1:1", False, None, fit_frames=10, held_frames=10, window_frames=10)
    missed = quality.ClipScore("9:16", False, None, fit_frames=10, held_frames=2, window_frames=10)
    boxed = quality.ClipScore(
        "2:3", True, "the subject is larger than the crop", too_big_frames=10, window_frames=10
    )
    cut = quality.ClipScore("4:5", False, None, too_big_frames=10, window_frames=10)
    background = quality.ClipScore("1:1", False, None, window_frames=10)
    lines = quality.product_lines(
        [
            _item("cup", True, False, [held, missed]),
            _item("cup", True, True, [boxed, cut]),
            _item("clock", True, True, [held]),
            _item("cup", False, False, [background]),
        ]
    )
    assert len(lines) == 3
    cup = next(line for line in lines if line.strip().startswith("cup"))
    assert "items   2: windows hit 2/2, pairs below 95 % 1/2 (1 unlocated)" in cup
    assert "letterboxed 1/4 (0 where the product fits), cropped though larger than the crop 1" in cup
    clock = next(line for line in lines if line.strip().startswith("clock"))
    assert "pairs below 95 % 0/1 (0 unlocated), letterboxed 0/1" in clock
    # an item showing no product is counted apart from the product its catalog names
    (none,) = (line for line in lines if line.strip().startswith("(no product on screen)"))
    assert none.endswith("items   1: letterboxed 0/1")
