"""Highlight selection against generated ground truth, through the worker's own stages."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings import load_settings
from reelgen.evaluation import evaluate, overlap_fraction, report
from reelgen.sample_catalog import write_sample_catalog
from workers.media.containers import VideoInfo
from workers.pipeline import SampleScore, choose


def test_overlap_fraction() -> None:
    assert overlap_fraction((2.0, 7.0), (0.0, 10.0)) == 1.0
    assert overlap_fraction((2.0, 7.0), (3.0, 10.0)) == pytest.approx(0.8)
    assert overlap_fraction((2.0, 7.0), (8.0, 10.0)) == 0.0


def _samples(values: list[float], cut_at: int | None = None) -> list[SampleScore]:
    signature_a = [1.0] + [0.0] * 127
    signature_b = [0.0] * 127 + [1.0]
    return [
        SampleScore(
            k / 2,
            v,
            0.5,
            (10.0, 10.0, 50.0, 50.0),
            signature_b if cut_at and k >= cut_at else signature_a,
            method="features",
            confidence=v,
        )
        for k, v in enumerate(values)
    ]


def test_choose_merges_segments_in_time_order() -> None:
    info = VideoInfo(640, 360, 25.0, 20.0, True, 0, "h264", 0.0)
    values = [0.1] * 40
    values[24:34] = [0.9] * 10  # 12 s .. 17 s
    samples = _samples(values)
    config = load_settings(aspects="1:1,9:16").output_config()
    shuffled = samples[20:] + samples[:20]  # segments arrive in any order
    analysis = choose(info, shuffled, config)
    assert (analysis.window.start_s, analysis.window.end_s) == (12.0, 17.0)
    assert analysis.cuts == []
    assert analysis.crop_keys == {}  # crops are planned by frame_window, on the window's own frames
    assert [t for t, _ in analysis.curve] == [k / 2 for k in range(40)]


def test_choose_boxes_the_product_whole_where_a_frame_saw_only_part_of_it() -> None:
    """Every segment's samples together say how much of the main image the product is: frames whose features
    saw only its right half (a hand over the rest) get the whole box in the window's subject boxes."""
    info = VideoInfo(640, 360, 25.0, 20.0, True, 0, "h264", 0.0)
    samples = _samples([0.9] * 40)
    shift = (1.0, 0.0, 100.0, 0.0, 1.0, 50.0, 0.0, 0.0, 1.0)  # main image pixels + (100, 50)
    for k, sample in enumerate(samples):
        half = k % 4 == 1
        seen = (60.0, 0.0, 120.0, 80.0) if half else (0.0, 0.0, 120.0, 80.0)
        box = (160.0, 50.0, 220.0, 130.0) if half else (100.0, 50.0, 220.0, 130.0)
        samples[k] = SampleScore(
            sample.t, sample.match, sample.quality, box, sample.signature, seen, shift, method="features"
        )
    analysis = choose(info, samples, load_settings().output_config())
    assert len(analysis.subject_boxes) == 11  # the window's 10 samples and the one after it
    assert all(b == pytest.approx((100.0, 50.0, 220.0, 130.0)) for _, *b in analysis.subject_boxes)


def test_choose_keeps_the_product_sample_either_side_of_the_window_unless_a_cut_parts_them() -> None:
    """The crop between a window's edge and its first or last sample follows the product towards where it is
    seen next, so the samples just outside the window are the product's too; across a cut they are not."""
    info = VideoInfo(640, 360, 25.0, 20.0, True, 0, "h264", 0.0)
    values = [0.1] * 40
    values[20:30] = [0.9] * 10  # 10 s .. 15 s
    config = load_settings().output_config()
    analysis = choose(info, _samples(values), config)
    assert (analysis.window.start_s, analysis.window.end_s) == (10.0, 15.0)
    assert [t for t, *_ in analysis.subject_boxes] == [k / 2 for k in range(19, 31)]
    parted = choose(info, _samples(values, cut_at=20), config)  # a cut at 9.75 s
    assert (parted.window.start_s, parted.window.end_s) == (10.0, 15.0)
    assert [t for t, *_ in parted.subject_boxes] == [k / 2 for k in range(20, 31)]


def test_choose_detects_cuts_from_signatures() -> None:
    info = VideoInfo(640, 360, 25.0, 20.0, True, 0, "h264", 0.0)
    analysis = choose(info, _samples([0.5] * 40, cut_at=20), load_settings().output_config())
    assert analysis.cuts == [9.75]
    assert not (analysis.window.start_s < 9.75 < analysis.window.end_s)


def test_chosen_windows_show_the_product(tmp_path: Path) -> None:
    catalog = write_sample_catalog(tmp_path, 2, seed=4, size=(480, 270), duration_s=(12.0, 13.0), fps=15)
    results = list(evaluate(load_settings(segment_s=5.0), catalog))
    assert len(results) == 2
    assert all(r.hit for r in results), report(results, as_json=False)
    assert "hit rate 2/2" in report(results, as_json=False)


def test_choose_leaves_out_a_one_sample_false_find_far_from_the_product() -> None:
    """The window's boxes are chosen over every segment's samples at once: a fair find across the frame for
    one sample, between sure finds of the product, is not the product, and the crop does not swing to it."""
    info = VideoInfo(640, 360, 25.0, 20.0, True, 0, "h264", 0.0)
    samples = _samples([0.9] * 40)
    far = samples[5]
    samples[5] = SampleScore(
        far.t, far.match, far.quality, (500.0, 250.0, 540.0, 290.0), far.signature, method="colour"
    )
    analysis = choose(info, samples, load_settings().output_config())
    times = [t for t, *_ in analysis.subject_boxes]
    assert 2.0 in times and 3.0 in times and 2.5 not in times
    assert all(b == pytest.approx((10.0, 10.0, 50.0, 50.0)) for _, *b in analysis.subject_boxes)
