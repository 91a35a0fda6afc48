"""The temporal model on scripted tracks: the product's box over samples half a second apart, chosen jointly."""

from __future__ import annotations

import math
from collections.abc import Sequence

from workers.analysis.localisation.temporal import Candidate, kept_boxes, move_cost, product_path
from workers.geometry import Box

ORANGE: Box = (800.0, 360.0, 1000.0, 560.0)
#: the orange's colour blob joined to the cheek and chin beside it (a real one: 2.7 times the orange's area)
WITH_FACE: Box = (683.0, 362.0, 982.0, 720.0)
#: its lit half alone
HIGHLIGHT: Box = (900.0, 380.0, 1000.0, 480.0)
#: a false find on a face across the frame
FAR: Box = (100.0, 100.0, 300.0, 300.0)
SURE, FAIR = 0.9, 0.6


def _times(n: int) -> list[float]:
    return [10.0 + 0.5 * k for k in range(n)]


def _boxes(track: Sequence[Box | None], p: float = SURE, cuts: Sequence[float] = ()) -> list[Box | None]:
    return kept_boxes(_times(len(track)), track, [p] * len(track), cuts)


def test_a_box_far_larger_or_smaller_than_both_neighbours_for_one_sample_is_dropped() -> None:
    assert _boxes([ORANGE, WITH_FACE, ORANGE, HIGHLIGHT, ORANGE], FAIR) == [
        ORANGE,
        None,
        ORANGE,
        None,
        ORANGE,
    ]


def test_a_false_find_far_off_for_one_sample_is_dropped() -> None:
    """A one-sample jump across the frame at the product's own size: the size-spike rule kept it."""
    assert _boxes([ORANGE, ORANGE, FAR, ORANGE, ORANGE], FAIR) == [ORANGE, ORANGE, None, ORANGE, ORANGE]


def test_a_sure_product_brought_close_for_two_samples_keeps_its_boxes() -> None:
    track: list[Box | None] = [ORANGE, WITH_FACE, WITH_FACE, ORANGE, ORANGE]
    assert _boxes(track, SURE) == track


def test_a_growth_within_what_a_half_second_allows_is_kept() -> None:
    grown: Box = (780.0, 340.0, 1040.0, 600.0)  # 1.69 times the area
    assert _boxes([ORANGE, grown, ORANGE], FAIR) == [ORANGE, grown, ORANGE]


def test_a_product_moving_steadily_across_the_frame_is_followed_throughout() -> None:
    track: list[Box | None] = [(x, 360.0, x + 200.0, 560.0) for x in range(100, 1100, 150)]
    assert _boxes(track, FAIR) == track


def test_an_occlusion_of_a_second_leaves_the_product_not_visible_and_takes_it_back() -> None:
    track: list[Box | None] = [ORANGE, ORANGE, None, None, ORANGE, ORANGE]
    assert _boxes(track) == track


def test_a_product_leaving_and_coming_back_elsewhere_is_taken_where_it_returns() -> None:
    track: list[Box | None] = [ORANGE, ORANGE, None, None, None, FAR, FAR, FAR]
    assert _boxes(track) == track


def test_a_cut_frees_the_next_shot_to_show_the_product_anywhere() -> None:
    track: list[Box | None] = [ORANGE, ORANGE, FAR, FAR]
    # within one shot, a jump across the frame to two fair finds is a change of subject, not the product's move
    assert _boxes(track, FAIR) == [ORANGE, ORANGE, None, None]
    assert _boxes(track, FAIR, cuts=[10.75]) == track


def test_a_sample_without_a_box_is_no_evidence_that_the_product_left() -> None:
    """The locator misses a product in many frames that show it: finds every other sample stay a track."""
    track: list[Box | None] = [ORANGE, None, ORANGE, None, ORANGE, None, ORANGE]
    assert _boxes(track, FAIR) == track


def test_an_unlikely_lone_find_is_dropped_and_a_likely_one_kept() -> None:
    assert _boxes([None, ORANGE, None], 0.05) == [None, None, None]
    assert _boxes([None, ORANGE, None], FAIR) == [None, ORANGE, None]


def test_of_two_candidates_the_one_the_track_agrees_with_is_taken() -> None:
    """A sample offering a likelier box off the track and a less likely one on it takes the one on it."""
    offered = [
        [Candidate(ORANGE, SURE)],
        [Candidate(WITH_FACE, 0.7), Candidate(ORANGE, 0.5)],
        [Candidate(ORANGE, SURE)],
    ]
    assert product_path(_times(3), offered, []) == [0, 1, 0]


def test_the_move_cost_is_free_within_what_the_time_allows_and_grows_past_it() -> None:
    near: Box = (820.0, 360.0, 1020.0, 560.0)
    farther: Box = (600.0, 360.0, 800.0, 560.0)
    assert move_cost(ORANGE, ORANGE, 0.5) == move_cost(ORANGE, near, 0.5) == 0.0
    assert 0 < move_cost(ORANGE, farther, 0.5) < move_cost(ORANGE, FAR, 0.5)
    assert move_cost(ORANGE, WITH_FACE, 2.0) < move_cost(ORANGE, WITH_FACE, 0.5)
    assert math.isclose(move_cost(ORANGE, WITH_FACE, 0.5), move_cost(WITH_FACE, ORANGE, 0.5))


def test_no_samples_give_no_path() -> None:
    assert product_path([], [], []) == []
