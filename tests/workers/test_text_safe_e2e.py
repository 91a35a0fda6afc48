"""Text-safe framing end to end on generated videos: window → signals from detection → plan → render, checked against the
generator's truth (captions never cut, subject inside, smooth, same moment) and by OCR on the output frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_service.local import LocalInference
from reelgen.sample_catalog import load_truth, write_sample_catalog
from tests.support.framing import (
    KEY,
    Framed,
    centre_acceleration,
    cuts_text,
    decoded_frames,
    frame_item,
    moving_length,
    p95,
    subject_inside,
    touches_edge,
    truth_frame,
)
from workers.framing.crop_paths import FramingParams
from workers.geometry import near_aspect
from workers.text.detection import detect_text

ASPECTS = [(1, 1), (2, 3), (3, 4), (4, 5), (9, 16), (16, 9)]
ITEMS = ("sku-0001", "sku-0002")
# Acceleration bound: the planner's max_accel (1.0 source lengths along the moving axis per s²), measured on the
# rendered crops by central differences over ±0.2 s, plus what even-pixel quantisation (±2 px) alone can add.
SPAN_S = 0.2
QUANTISATION = 2 * 2 / SPAN_S**2


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("text-safe")
    write_sample_catalog(folder, len(ITEMS), seed=3, size=(640, 360), duration_s=(9.0, 10.0), fps=25)
    return folder


@pytest.fixture(scope="module")
def detector() -> LocalInference:
    return LocalInference()


@pytest.fixture(scope="module")
def framed(
    catalog: Path, detector: LocalInference, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Framed]:
    out = tmp_path_factory.mktemp("clips")
    return {
        item: frame_item(
            catalog / "videos" / f"{item}.mp4",
            catalog / "images" / f"{item}.png",
            out / item,
            detector,
            ASPECTS,
        )
        for item in ITEMS
    }


@pytest.mark.parametrize("item", ITEMS)
def test_captions_are_never_cut_in_any_frame(catalog: Path, framed: dict[str, Framed], item: str) -> None:
    truth = load_truth(catalog, item)
    result = framed[item]
    assert result.text, "the detector saw the captions"
    for spec in result.specs:
        for t, rect in spec.crops:
            for box in truth.frames[truth_frame(truth, t)].caption_boxes:
                # inside with a margin, or not touching at all
                grown = (box[0] - 2, box[1] - 2, box[2] + 2, box[3] + 2)
                assert not cuts_text(rect, box) and not cuts_text(rect, grown), (
                    item,
                    spec.aspect,
                    t,
                    rect,
                    box,
                )


@pytest.mark.parametrize("item", ITEMS)
def test_subject_stays_inside_and_motion_is_smooth(
    catalog: Path, framed: dict[str, Framed], item: str
) -> None:
    truth = load_truth(catalog, item)
    result = framed[item]
    params = FramingParams()
    for spec in result.specs:
        shown = [truth.frames[truth_frame(truth, t)].product_box for t, _ in spec.crops]
        inside = [
            subject_inside(rect, box, 2) for (_, rect), box in zip(spec.crops, shown, strict=True) if box
        ]
        # crop first: a crop may let the product out for up to FramingParams.pad_share of the window where
        # text pins it, rather than letterbox the whole clip
        assert len(inside) > 100 and np.mean(inside) >= 1 - params.pad_share, (
            item,
            spec.aspect,
            np.mean(inside),
        )
        length = moving_length(spec, truth.width, truth.height)
        # a reframe inside a shot is a cut of the crop's own
        accel = centre_acceleration(spec, [*result.cuts, *result.plans[spec.aspect].jumps], SPAN_S)
        assert p95(accel) <= params.max_accel * length + QUANTISATION, (item, spec.aspect, p95(accel))


@pytest.mark.parametrize("item", ITEMS)
def test_every_ratio_shows_the_same_moment(framed: dict[str, Framed], item: str) -> None:
    result = framed[item]
    times = [[t for t, _ in spec.crops] for spec in result.specs]
    assert all(ts == times[0] for ts in times) and len(times[0]) == 125
    assert result.window.start_s <= times[0][0] < result.window.start_s + 0.04
    for spec in result.specs:
        plan = result.plans[spec.aspect]
        a, b = plan.size.aspect
        assert spec.width * b == spec.height * a and spec.width % 2 == 0 and spec.height % 2 == 0
        assert spec.padded == plan.padded
        if not plan.padded:
            # a smaller crop may be off the aspect by a slack the output's scaling absorbs
            assert all(near_aspect(r.w, r.h, (a, b)) for _, r in spec.crops)


def test_no_text_touches_the_edge_of_an_output(framed: dict[str, Framed], detector: LocalInference) -> None:
    """Cropped clips keep text whole inside or out; letterboxed ones show their picture small enough that its
    text keeps inside the title-safe area, off the edges the fitted picture would meet."""
    checked = 0
    for result in framed.values():
        for spec in result.specs:
            times = [result.window.start_s + 0.5 + k for k in range(5)]
            for rgb in decoded_frames(spec.path, [t - result.window.start_s for t in times]):
                for box in detect_text(detector, [rgb], KEY)[0]:
                    assert not touches_edge(box, spec.width, spec.height), (spec.path.name, box)
                checked += 1
    # the product crosses the frame past captions at both edges: the narrower crops jump past them rather than
    # letterbox, so most clips are checked here, not only the 16:9 ones
    assert checked >= 5 * 4 * len(framed)


def test_padded_outputs_exist_and_show_a_wider_region(framed: dict[str, Framed]) -> None:
    """Where no crop, however placed, sized or jumping, holds the product without cutting a caption (a
    portrait ratio of one of these items), the clip is letterboxed: the region shown is wider than its aspect."""
    padded = [s for r in framed.values() for s in r.specs if s.padded]
    assert padded
    for spec in padded:
        rect = spec.crops[0][1]
        assert rect.w * spec.height > rect.h * spec.width  # wider than the output's aspect: letterboxed
