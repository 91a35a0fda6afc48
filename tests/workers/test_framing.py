from __future__ import annotations

import pytest

from workers.geometry import CropPath, CropRect, aspect_size, near_aspect, spanning_size, zoomed_size

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


def test_crop_path_interpolates_between_keys_and_holds_outside() -> None:
    path = CropPath((1.0, 2.0), (CropRect(0, 0, 100, 100), CropRect(100, 50, 100, 100)))
    assert path(0.0) == CropRect(0, 0, 100, 100)
    assert path(1.5) == CropRect(50, 24, 100, 100) or path(1.5) == CropRect(50, 26, 100, 100)
    assert path(9.0) == CropRect(100, 50, 100, 100)


def test_crop_path_holds_a_crop_up_to_a_jump_to_another_size() -> None:
    """Between keys a moment apart (a jump inside a shot) the crop before the jump holds: an interpolated
    position with the old size would be neither crop, and not text-safe."""
    before, after = CropRect(10, 0, 100, 100), CropRect(200, 20, 80, 80)
    path = CropPath((1.0, 1.999, 2.0), (before, before, after))
    assert path(1.9995) == before and path(2.0) == after


@pytest.mark.parametrize("aspect", ASPECTS)
@pytest.mark.parametrize(
    "source", [(1280, 720), (720, 1280), (960, 540), (540, 960), (640, 640), (1920, 1080)]
)
def test_the_frame_spanning_crop_is_larger_than_the_exact_one_inside_the_frame_and_near_the_aspect(
    aspect: tuple[int, int], source: tuple[int, int]
) -> None:
    size = aspect_size(aspect, *source)
    a, b = aspect
    # every even crop inside the frame of the aspect within its slack, larger than the exact one
    larger = [
        (w, h)
        for w in range(size.crop_w + 2, source[0] + 1, 2)
        for h in (round(w * b / a / 2) * 2,)
        if h <= source[1] and near_aspect(w, h, aspect)
    ]
    spanning = spanning_size(size, *source)
    if spanning is None:
        assert not larger, larger
        return
    w, h = spanning
    assert w % 2 == 0 and h % 2 == 0 and w <= source[0] and h <= source[1]
    assert w > size.crop_w and h >= size.crop_h and near_aspect(w, h, aspect)
    # the largest such crop, or two pixels short of it on its short side
    assert min(w, h) >= min(max(larger)) - 2, (spanning, max(larger))


@pytest.mark.parametrize("aspect", ASPECTS)
@pytest.mark.parametrize("source", [(1280, 720), (720, 1280), (640, 360), (1920, 1080), (960, 540)])
def test_a_smaller_crop_is_even_near_the_aspect_and_no_smaller_than_the_exact_grids(
    aspect: tuple[int, int], source: tuple[int, int]
) -> None:
    size = aspect_size(aspect, *source)
    a, b = aspect
    for zoom in (0.95, 0.9, 0.852, 0.8, 0.7, 0.6):
        w, h = zoomed_size(size, zoom)
        assert w % 2 == 0 and h % 2 == 0
        assert w <= size.crop_w * zoom + 1e-6 and h <= size.crop_h * zoom + 1e-6
        assert near_aspect(w, h, aspect)
        # the exact aspect's largest crop inside the zoom is the floor
        m = int(size.crop_w * zoom / a) // 2 * 2
        assert w >= a * m and h >= b * m
        # two pixels short of the zoom on the short side at most, where the aspect lets the long side follow
        assert min(w, h) >= min(size.crop_w, size.crop_h) * zoom - 2 * max(a, b) / min(a, b) - 2
