"""The product's main image: refused from its header when too large, decoded once per worker for an item."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from core.errors import ImageError
from tests.support.media import write_png_header
from workers import pipeline
from workers.media.containers import VideoInfo


def test_a_huge_main_image_is_refused_from_its_header_before_decoding(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.png"
    write_png_header(bomb, 20_000, 20_000)
    with pytest.raises(ImageError, match="over the 40000000 pixel limit"):
        pipeline.load_image(bomb, 40_000_000)
    large = tmp_path / "large.png"
    write_png_header(large, 8_000, 6_000)  # under PIL's own bomb guard, over ours
    with pytest.raises(ImageError, match="8000x6000, over the 40000000 pixel limit"):
        pipeline.load_image(large, 40_000_000)
    garbage = tmp_path / "garbage.jpg"
    garbage.write_bytes(b"not a picture")
    with pytest.raises(ImageError, match="not a decodable picture"):
        pipeline.check_image_header(garbage, 40_000_000)


def test_the_template_is_decoded_once_per_image_version(tmp_path: Path) -> None:
    path = tmp_path / "main.png"
    cv2.imwrite(str(path), np.full((40, 60, 3), 200, np.uint8))
    pipeline._template.cache_clear()
    first = pipeline.cached_template(path, 10**6)
    assert pipeline.cached_template(path, 10**6) is first
    cv2.imwrite(str(path), np.full((50, 60, 3), 100, np.uint8))  # a new version of the image
    assert pipeline.cached_template(path, 10**6).shape[0] == 50
    assert pipeline._template.cache_info().misses == 2


@pytest.mark.parametrize(
    ("size", "width"), [((1920, 1080), 384), ((1080, 1920), 384), ((500, 4000), 85), ((4000, 500), 384)]
)
def test_the_analysis_picture_has_a_bounded_long_side(size: tuple[int, int], width: int) -> None:
    info = VideoInfo(size[0], size[1], 25.0, 10.0, False, 0, "h264", 0.0)
    assert pipeline.analysis_width(info) == width
    assert round(size[1] * width / size[0]) <= 683 or width == 384
