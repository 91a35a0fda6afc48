"""The letterboxed region keeps the product large: a caption beside it is held whole only while the product is
shown at least FILL of its fitted size, and is otherwise left out across the moving axis."""

from __future__ import annotations

import itertools
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from core.catalog_entry import CatalogEntry
from core.settings import load_settings
from devtools.real_media import kivy_city, skimage_motorcycle
from gpu_service.local import LocalInference
from gpu_service.priority import PriorityKey
from tests.support.media import LocalOpener, write_rgb_video
from tests.support.placements import read_rgb
from workers.analysis.windows import Window
from workers.framing.letterbox import FILL, TEXT_LEFT_OUT, fill, narrowed, region_size
from workers.framing.planner import PAD_SUBJECT_TOO_BIG, plan_framing
from workers.geometry import Box, CropLine, aspect_size, iou
from workers.media.video import VideoSource
from workers.pipeline import Analysis, Decoding, frame_window

W, H = 1280, 720
TIMES = [2.0 + 0.5 * k for k in range(11)]
# a product wider than the 9:16 crop (405 px), drifting right
PRODUCT = [(t, (100.0 + 10 * k, 10.0, 740.0 + 10 * k, 540.0)) for k, t in enumerate(TIMES)]


def _plan(caption: Box) -> tuple[float, list[Box]]:
    """The 9:16 plan's fill of the product (the least over its keys) and its regions (x0, y0, x1, y1)."""
    plan = plan_framing(2.0, 7.0, W, H, [(9, 16)], PRODUCT, [(t, [caption]) for t in TIMES])["9:16"]
    assert plan.padded and plan.padded_reason == PAD_SUBJECT_TOO_BIG
    regions = [(float(r.x), float(r.y), float(r.x + r.w), float(r.y + r.h)) for _, r in plan.keys]
    fills = []
    for (t, rect), region in zip(plan.keys, regions, strict=True):
        box = min(PRODUCT, key=lambda s: abs(s[0] - t))[1]
        line = CropLine(0, W, H, rect.w, rect.y, rect.y + rect.h)
        fills.append(fill(line, (plan.size.out_w, plan.size.out_h), [box]))
        assert region[0] <= box[0] and box[2] <= region[2]  # the product whole
    left_out = plan.reason_text is not None and TEXT_LEFT_OUT in plan.reason_text
    assert left_out == plan.text_left_out
    return min(fills), regions


def test_a_caption_under_a_product_too_big_for_the_crop_is_left_out_so_the_product_stays_large() -> None:
    # a price line wider than the product below it: held whole, the region is the whole frame (the product at
    # half its fitted size); left out below the region, the product is shown large
    caption = (214.0, 607.0, 1065.0, 669.0)
    least, regions = _plan(caption)
    assert least >= FILL
    assert all(r[3] <= caption[1] for r in regions)


def test_a_caption_the_product_can_keep_while_large_is_held_whole() -> None:
    # a price at the product's lower right: holding it costs the product little
    caption = (700.0, 600.0, 800.0, 650.0)
    least, regions = _plan(caption)
    assert least >= FILL
    assert all(r[0] <= caption[0] and caption[2] <= r[2] and r[3] >= caption[3] for r in regions)


def test_a_product_smaller_than_the_crop_is_shown_large_past_a_caption_no_crop_of_the_aspect_leaves_out() -> (
    None
):
    # 4:5 of a 640×480 frame is 384×480: every such crop placed on the product cuts the caption above it or
    # the product, and a smaller one under the caption is narrower than the product. Spanning the frame, a
    # region must hold the caption (the product at two thirds of its fitted size); narrowed under it, the
    # region may be shorter than the crop
    product, caption = (320.0, 160.0, 620.0, 450.0), (184.0, 29.0, 456.0, 91.0)
    plan = plan_framing(
        2.0, 7.0, 640, 480, [(4, 5)], [(t, product) for t in TIMES], [(t, [caption]) for t in TIMES]
    )["4:5"]
    assert plan.padded and plan.text_left_out
    out = (plan.size.out_w, plan.size.out_h)
    for _, rect in plan.keys:
        assert rect.w < plan.size.crop_w and rect.y >= caption[3]
        assert rect.x <= product[0] and product[2] <= rect.x + rect.w
        assert fill(CropLine(0, 640, 480, rect.w, rect.y, rect.y + rect.h), out, [product]) >= FILL


def test_a_region_is_narrowed_only_past_text_beyond_the_products_span_widest_first() -> None:
    line = CropLine(0, W, H, 700, 0, H)
    subject = [(100.0, 200.0, 600.0, 500.0)]
    above, level, below = (
        (300.0, 40.0, 500.0, 90.0),
        (650.0, 300.0, 900.0, 340.0),
        (200.0, 600.0, 900.0, 660.0),
    )
    lines = narrowed(line, [above, level, below], 0.0, subject)
    spans = [(n.q0, n.q1) for n in lines]
    # past the one above, past the one below, past both; never past the one level with the product
    assert len(spans) == 3 and spans == sorted(spans, key=lambda s: s[0] - s[1])
    assert all(q0 <= 200 and q1 >= 500 for q0, q1 in spans)
    assert {q0 for q0, _ in spans} > {0} and {q1 for _, q1 in spans} > {H}
    assert narrowed(line, [level], 0.0, subject) == []
    assert region_size(lines[-1]) == (700, lines[-1].q1 - lines[-1].q0)


# --- on real footage, through the pipeline's framing stage (text found by the real detector) ------------------

SIDE_W, SIDE_H, FPS = 640, 360, 24
#: a real photograph of a motorcycle pasted wider than the 9:16 crop (202 px) over a real street clip, and a
#: price line wider still drawn under it
BIKE = (150, 50, 480, 243)
PRICE = (40, 285, 600, 345)
BIKE_BOX: Box = (150.0, 50.0, 480.0, 243.0)
PRICE_BOX: Box = (40.0, 285.0, 600.0, 345.0)


def _street_with_bike() -> list[np.ndarray]:
    photo, footage = skimage_motorcycle(), kivy_city()
    if photo is None or footage is None:
        pytest.skip("python -m devtools.fetch_real_media")
    bike = read_rgb(photo)[140:495, 111:719]
    bike = cv2.resize(bike, (BIKE[2] - BIKE[0], BIKE[3] - BIKE[1]), interpolation=cv2.INTER_AREA)
    frames = []
    with av.open(str(footage)) as container:
        for frame in itertools.islice(container.decode(video=0), 6 * FPS):
            rgb = cv2.resize(frame.to_ndarray(format="rgb24"), (SIDE_W, SIDE_H), interpolation=cv2.INTER_AREA)
            rgb[BIKE[1] : BIKE[3], BIKE[0] : BIKE[2]] = bike
            x0, y0, x1, y1 = PRICE
            cv2.rectangle(rgb, (x0, y0), (x1, y1), (20, 20, 20), -1)
            cv2.putText(rgb, "NOW $39.90  FREE DELIVERY", (x0 + 12, y1 - 18), cv2.FONT_HERSHEY_DUPLEX, 1.0,
                        (255, 255, 255), 2, cv2.LINE_AA)  # fmt: skip
            frames.append(rgb)
    return frames


def test_on_real_footage_a_product_wider_than_the_9_16_crop_is_shown_large_past_a_price_line(
    tmp_path: Path,
) -> None:
    video = write_rgb_video(tmp_path / "bike.mp4", _street_with_bike(), FPS)
    settings = load_settings()
    with VideoSource(video) as source:
        info = source.info
    entry = CatalogEntry(item_id="bike", video=str(video), image="", title="", description="")
    located = Analysis(Window(0.5, 5.5, 1.0), [], [], [(0.25 + k / 2, *BIKE_BOX) for k in range(11)])
    framed = frame_window(
        entry, info, located, LocalOpener(), LocalInference(), PriorityKey(0.0, 0.0), settings.output_config(),
        Decoding.from_settings(settings),
    )  # fmt: skip
    # the detector read the price line
    assert any(iou(b, PRICE_BOX) > 0.5 for b in framed.text_boxes), framed.text_boxes
    assert framed.padded["9:16"]
    reason = framed.padded_reason["9:16"]
    assert reason.startswith(PAD_SUBJECT_TOO_BIG) and TEXT_LEFT_OUT in reason
    size = aspect_size((9, 16), SIDE_W, SIDE_H)
    share = framed.picture_share.get("9:16", 1.0)
    bw, bh = BIKE[2] - BIKE[0], BIKE[3] - BIKE[1]
    fitted = min(size.out_w / bw, size.out_h / bh)
    for _, rect in framed.crop_keys_of("9:16"):
        shown = min(size.out_w / rect.w, size.out_h / rect.h) * share
        assert shown / fitted >= FILL, rect
        # the bike whole, the price line wholly out
        assert rect.x <= BIKE[0] and BIKE[2] <= rect.x + rect.w and rect.y <= BIKE[1]
        assert BIKE[3] <= rect.y + rect.h <= PRICE[1]
