from __future__ import annotations

from workers.analysis.size_spikes import without_spikes
from workers.geometry import Box

ORANGE: Box = (800.0, 360.0, 1000.0, 560.0)
#: the orange's colour blob joined to the cheek and chin beside it (a real one: 2.7 times the orange's area)
WITH_FACE: Box = (683.0, 362.0, 982.0, 720.0)
#: its lit half alone
HIGHLIGHT: Box = (900.0, 380.0, 1000.0, 480.0)
TIMES = [10.0, 10.5, 11.0, 11.5, 12.0]


def test_a_box_far_larger_or_smaller_than_both_neighbours_is_dropped() -> None:
    boxes: list[Box | None] = [ORANGE, WITH_FACE, ORANGE, HIGHLIGHT, ORANGE]
    assert without_spikes(TIMES, boxes, []) == [ORANGE, None, ORANGE, None, ORANGE]


def test_a_product_brought_close_for_two_samples_keeps_its_boxes() -> None:
    boxes: list[Box | None] = [ORANGE, WITH_FACE, WITH_FACE, ORANGE, ORANGE]
    assert without_spikes(TIMES, boxes, []) == boxes


def test_a_growth_no_more_than_the_ratio_is_kept() -> None:
    grown: Box = (780.0, 340.0, 1040.0, 600.0)  # 1.69 times the area
    boxes: list[Box | None] = [ORANGE, grown, ORANGE]
    assert without_spikes(TIMES[:3], boxes, []) == boxes


def test_a_spike_beside_a_cut_a_gap_or_a_sample_without_a_box_is_kept() -> None:
    boxes: list[Box | None] = [ORANGE, WITH_FACE, ORANGE]
    # a cut between the neighbours: the shots may show the product at different sizes
    assert without_spikes(TIMES[:3], boxes, [10.7]) == boxes
    # neighbours two seconds apart describe different moments
    assert without_spikes([10.0, 11.0, 12.0], boxes, []) == boxes
    assert without_spikes(TIMES[:3], [None, WITH_FACE, ORANGE], []) == [None, WITH_FACE, ORANGE]
    # the first and last samples have one neighbour only
    assert without_spikes(TIMES[:2], [WITH_FACE, ORANGE], []) == [WITH_FACE, ORANGE]
