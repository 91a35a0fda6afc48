from __future__ import annotations

import pytest

from workers.geometry import CropPath, CropRect, aspect_size, place_crop, static_subject_path

ASPECTS = [(1, 1), (2, 3), (3, 4), (4, 5), (9, 16), (16, 9)]


@pytest.mark.parametrize("aspect", ASPECTS)
@pytest.mark.parametrize("source", [(1280, 720), (720, 1280), (640, 360), (1920, 1080), (721, 405)])
def test_aspect_size_is_exact_even_and_inside(aspect: tuple[int, int], source: tuple[int, int]) -> None:
    size = aspect_size(aspect, *source)
    assert size.crop_w * aspect[1] == size.crop_h * aspect[0]
    assert size.crop_w % 2 == 0 and size.crop_h % 2 == 0
    assert size.crop_w <= source[0] and size.crop_h <= source[1]
    # the largest such crop: one more step of the aspect's unit would not fit
    assert size.crop_w + 2 * aspect[0] > source[0] or size.crop_h + 2 * aspect[1] > source[1]
    assert (size.out_w, size.out_h) == (size.crop_w, size.crop_h)


def test_max_side_downscales_but_keeps_aspect() -> None:
    size = aspect_size((9, 16), 1920, 1080, max_side=640)
    assert size.out_h <= 640 and size.out_w * 16 == size.out_h * 9
    assert size.out_w % 2 == 0 and size.out_h % 2 == 0
    assert size.file_stem == "9x16" and size.label == "9:16"


def test_too_small_source_is_refused() -> None:
    with pytest.raises(ValueError, match="too small"):
        aspect_size((16, 9), 20, 10)


def test_place_crop_clamps_to_frame_on_even_coordinates() -> None:
    assert place_crop(0, 0, 200, 100, 640, 360) == CropRect(0, 0, 200, 100)
    far = place_crop(10_000, 10_000, 200, 100, 640, 360)
    assert far == CropRect(440, 260, 200, 100)
    mid = place_crop(321, 181, 200, 100, 640, 360)
    assert mid.x % 2 == 0 and mid.y % 2 == 0 and abs(mid.x - 221) <= 1


def test_crop_path_interpolates_between_keys_and_holds_outside() -> None:
    path = CropPath((1.0, 2.0), (CropRect(0, 0, 100, 100), CropRect(100, 50, 100, 100)))
    assert path(0.0) == CropRect(0, 0, 100, 100)
    assert path(1.5) == CropRect(50, 24, 100, 100) or path(1.5) == CropRect(50, 26, 100, 100)
    assert path(9.0) == CropRect(100, 50, 100, 100)


def test_static_path_centres_on_median_subject() -> None:
    size = aspect_size((1, 1), 1280, 720)
    boxes = [(900.0, 300.0, 1100.0, 500.0), None, (920.0, 300.0, 1120.0, 500.0)]
    rect = static_subject_path(size, 1280, 720, boxes, 3.0)(3.0)
    assert rect.w == rect.h == 720
    assert rect.x == 1280 - 720  # clamped to the right edge, as close to the subject as the frame allows
    centred = static_subject_path(size, 1280, 720, [None], 0.0)(0.0)
    assert centred.x == 280
