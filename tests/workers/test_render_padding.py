"""Padded clips: the region shown whole, letterboxed over a blurred fill of the same frame, in yuv420p."""

from __future__ import annotations

from pathlib import Path

import av
import cv2
import numpy as np

from tests.support.media import make_code_video
from workers.geometry import CropPath, CropRect
from workers.media.planes import Planes, _shrunk
from workers.media.render import EncodeOptions, OutputSpec, render_window


def test_letterbox_fits_the_region_and_fills_the_bars() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(16, 235, (360, 640), dtype=np.uint8)
    u = np.full((180, 320), 90, np.uint8)
    v = np.full((180, 320), 170, np.uint8)
    out = Planes(y, u, v).letterbox(198, 352)
    assert out.y.shape == (352, 198) and out.u.shape == (176, 99) and out.v.shape == (176, 99)
    # 640×360 scaled to fit 198 wide: 198×112 (even), centred vertically
    top = (352 - 112) // 4 * 2
    sharp = out.y[top : top + 112]
    # area-averaged (swscale's filter): within one level of OpenCV's INTER_AREA, on random noise the hardest case
    area = cv2.resize(y, (198, 112), interpolation=cv2.INTER_AREA)
    assert np.abs(sharp.astype(np.int16) - area).max() <= 1
    bars = np.concatenate([out.y[: top - 2], out.y[top + 114 :]])
    assert bars.std() < sharp.std() / 4  # blurred: far smoother than the picture
    assert bars.mean() < sharp.mean()  # and dimmed
    assert (out.u == 90).all() and (out.v == 170).all()  # colour carried over untouched


def test_a_picture_shown_at_a_share_of_its_fitted_size_is_centred_that_much_smaller() -> None:
    y = np.full((360, 640), 200, np.uint8)
    u, v = np.full((180, 320), 128, np.uint8), np.full((180, 320), 128, np.uint8)
    out = Planes(y, u, v).letterbox(360, 480, 0.9)
    # 640×360 fits 360×202; at 0.9, 324×182 (even), centred: fill on all four sides
    # the fill is the same picture dimmed: only the sharp picture keeps its level
    rows, cols = np.flatnonzero((out.y == 200).any(axis=1)), np.flatnonzero((out.y == 200).any(axis=0))
    assert (rows[0], rows[-1] + 1, cols[0], cols[-1] + 1) == (148, 330, 18, 342)


def test_render_writes_padded_clip_with_the_region_recorded(tmp_path: Path) -> None:
    source = tmp_path / "src.mp4"
    make_code_video(source, seconds=2.0, size=(640, 360))
    region = CropRect(100, 0, 400, 360)
    padded = OutputSpec("9:16", 198, 352, CropPath((0.0,), (region,)), tmp_path / "9x16.mp4", padded=True)
    plain = OutputSpec("1:1", 360, 360, CropPath((0.0,), (CropRect(140, 0, 360, 360),)), tmp_path / "1x1.mp4")
    render_window(source, 0.4, 1.6, [padded, plain], EncodeOptions(preset="ultrafast"))
    assert [c[1] for c in padded.crops] == [region] * padded.frames and padded.frames == plain.frames == 30
    assert [c[0] for c in padded.crops] == [c[0] for c in plain.crops]
    with av.open(str(padded.path)) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height, stream.codec_context.pix_fmt) == (198, 352, "yuv420p")
        frame = next(container.decode(video=0)).to_ndarray(format="rgb24")
    # the region (400×360) fits as 198×178: picture in the middle band, fill above and below
    band = frame[87:265]
    assert band.std() > frame[:80].std() * 2


def test_the_fill_is_shrunk_by_area_averaging_at_any_ratio() -> None:
    rng = np.random.default_rng(5)
    smooth = cv2.GaussianBlur(rng.integers(0, 256, (1081, 611), dtype=np.uint8), (0, 0), 8)
    for width, height in [(67, 120), (38, 67), (611, 1081), (2, 2)]:
        shrunk = _shrunk(smooth[:, :607], width, height)
        exact = cv2.resize(smooth[:, :607], (width, height), interpolation=cv2.INTER_AREA)
        assert shrunk.shape == (height, width)
        # only the few edge pixels the integer step leaves out differ, and a smooth picture barely changes there
        assert np.abs(shrunk.astype(np.int16) - exact).mean() < 1.0
