"""bench/sample_letterboxes.py: the frames of a clip where the sample catalog's truth justifies a letterbox."""

from __future__ import annotations

from bench.sample_letterboxes import clip_frames
from reelgen.sample_catalog import Truth
from reelgen.sample_catalog.truth import FrameTruth


def test_frames_are_counted_as_absent_too_big_inseparable_or_separable() -> None:
    # 640×480 at 10 fps; 9:16's largest crop is 270×480
    frames = [
        FrameTruth(0.0, None, []),  # no product
        FrameTruth(0.1, (100, 100, 500, 300), []),  # 400 px wide: too big for 270
        FrameTruth(0.2, (200, 200, 300, 300), [(20, 20, 200, 60)]),  # clear of its caption
        # a caption across the frame's width, right through the product: no crop holds one and passes the other
        FrameTruth(0.3, (200, 200, 300, 300), [(0, 240, 640, 270)]),
    ]
    truth = Truth("sku-0001", 10.0, 640, 480, 0.4, (0.1, 0.4), frames, [])
    crops: list[dict[str, float]] = [{"t": k / 10} for k in range(4)]
    assert clip_frames(truth, crops, "9:16") == (3, 1, 1)
