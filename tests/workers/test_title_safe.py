"""A letterboxed picture shown small enough that its text keeps inside the clip's title-safe area."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from gpu_service.local import LocalInference
from tests.support.framing import KEY, decoded_frames, touches_edge
from workers.framing.planner import PAD_SUBJECT_TOO_BIG, plan_framing
from workers.framing.title_safe import TITLE_SAFE, title_safe_share
from workers.geometry import Box, CropPath, CropRect
from workers.media.render import EncodeOptions, OutputSpec, render_window
from workers.text.detection import detect_text

# a 640×480 source's region shown letterboxed in a 3:4 clip: it fits 360 wide, meeting the clip's left and
# right edges
REGION = CropRect(70, 0, 570, 480)
OUT_W, OUT_H = 360, 480


def shown_x(x: float, share: float) -> float:
    """Where source column x lands in the clip, the region shown centred at share of its fitted size."""
    scale = min(OUT_W / REGION.w, OUT_H / REGION.h) * share
    return (OUT_W - REGION.w * scale) / 2 + (x - REGION.x) * scale


def test_text_near_the_regions_edge_is_brought_to_the_title_safe_line() -> None:
    caption = (531.0, 430.0, 630.0, 464.0)  # 10 px inside the source's right edge
    share = title_safe_share(REGION, OUT_W, OUT_H, [caption])
    assert 0.9 < share < 1
    assert shown_x(caption[2], share) == pytest.approx(OUT_W * (1 - TITLE_SAFE))
    # the one nearest its edge decides: a second caption further in changes nothing
    assert title_safe_share(REGION, OUT_W, OUT_H, [caption, (464.0, 14.0, 615.0, 79.0)]) == share
    # at its widest the shrink is the title-safe area's: text at the very edge of the region
    assert title_safe_share(REGION, OUT_W, OUT_H, [(600.0, 0.0, 640.0, 40.0)]) == pytest.approx(
        1 - 2 * TITLE_SAFE
    )


def test_a_picture_whose_text_is_already_title_safe_is_shown_at_its_fitted_size() -> None:
    assert title_safe_share(REGION, OUT_W, OUT_H, []) == 1.0
    # well inside the region, and not shown at all (left of it)
    assert (
        title_safe_share(REGION, OUT_W, OUT_H, [(200.0, 200.0, 400.0, 260.0), (0.0, 0.0, 60.0, 40.0)]) == 1.0
    )
    # near the top and bottom edges: the picture, 303 px tall in a 480 px clip, has fill there already
    assert (
        title_safe_share(REGION, OUT_W, OUT_H, [(200.0, 0.0, 300.0, 30.0), (200.0, 460.0, 300.0, 480.0)])
        == 1.0
    )


def test_the_planner_shrinks_only_a_letterboxed_picture_with_text_at_its_edge() -> None:
    # a product wider than 3:4's largest crop of 640×480 (360 px): letterboxed for its size
    subject: list[tuple[float, Box | None]] = [
        (t, (40.0, 120.0, 560.0, 400.0)) for t in np.arange(0.0, 6.0, 0.5)
    ]
    caption = (531.0, 430.0, 630.0, 464.0)
    text = [(float(t), [caption]) for t in np.arange(0.0, 6.0, 1.0)]
    plans = plan_framing(0.5, 5.5, 640, 480, [(3, 4), (16, 9)], subject, text)
    tall = plans["3:4"]
    assert tall.padded and tall.padded_reason == PAD_SUBJECT_TOO_BIG
    assert tall.picture_share == min(
        title_safe_share(r, tall.size.out_w, tall.size.out_h, [caption]) for _, r in tall.keys
    )
    assert tall.picture_share < 1
    # the 16:9 crop holds the caption whole or leaves it out: no picture to shrink
    assert not plans["16:9"].padded and plans["16:9"].picture_share == 1.0
    bare = plan_framing(0.5, 5.5, 640, 480, [(3, 4)], subject, [])["3:4"]
    assert bare.padded and bare.picture_share == 1.0


def write_captioned_video(path: Path) -> Box:
    """A 2 s 640×480 video of textured noise with a price 6 px inside its right edge; returns where the price is
    drawn."""
    rng = np.random.default_rng(11)
    texture = cv2.GaussianBlur(rng.integers(40, 200, (480, 640, 3), dtype=np.uint8), (0, 0), 3)
    text, font, scale, thick = "$24.90", cv2.FONT_HERSHEY_DUPLEX, 1.4, 2
    (tw, th), base = cv2.getTextSize(text, font, scale, thick)
    x, y = 640 - 6 - tw, 440
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 640, 480, "yuv420p"
        for k in range(50):
            frame = np.ascontiguousarray(np.roll(texture, k, axis=0), np.uint8)
            cv2.putText(frame, text, (x, y), font, scale, (20, 20, 20), thick + 3, cv2.LINE_AA)
            cv2.putText(frame, text, (x, y), font, scale, (255, 255, 255), thick, cv2.LINE_AA)
            picture = av.VideoFrame.from_ndarray(frame, format="rgb24")
            picture.pts, picture.time_base = k, Fraction(1, 25)
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return (float(x), float(y - th), float(x + tw), float(y + base))


def test_ocr_on_the_rendered_clip_finds_the_price_off_its_edge_only_when_shown_title_safe(
    tmp_path: Path,
) -> None:
    source = tmp_path / "captioned.mp4"
    write_captioned_video(source)
    infer = LocalInference()
    first = decoded_frames(source, [0.5])
    # the text regions as the pipeline finds them, in source pixels
    found = detect_text(infer, first, KEY)[0]
    assert found and all(box[2] >= 600 for box in found)
    share = title_safe_share(REGION, OUT_W, OUT_H, found)
    assert share < 1
    touching = {}
    for label, picture_share in (("fitted", 1.0), ("title-safe", share)):
        spec = OutputSpec(
            "3:4", OUT_W, OUT_H, CropPath((0.0,), (REGION,)), tmp_path / f"{label}.mp4", padded=True,
            picture_share=picture_share,
        )  # fmt: skip
        render_window(source, 0.0, 2.0, [spec], EncodeOptions(preset="ultrafast"))
        frames = decoded_frames(spec.path, [0.3, 1.0, 1.7])
        boxes = [box for rgb in frames for box in detect_text(infer, [rgb], KEY)[0]]
        assert boxes, label  # the price is seen in the clip either way
        touching[label] = any(touches_edge(box, OUT_W, OUT_H, within=2) for box in boxes)
    # fitted, the price runs to the clip's edge, as OCR of the output sees it; shown title-safe, it does not
    assert touching == {"fitted": True, "title-safe": False}
