from __future__ import annotations

import pytest
import redis

from workers.fanin import SegmentResults
from workers.media.segments import plan_segments


def _all_times(segments: list) -> list[float]:  # type: ignore[type-arg]
    return [t for s in segments for t in s.times]


def test_segments_cover_every_sample_once() -> None:
    segments = plan_segments(0.0, 24.0, 2.0, 10.0)
    assert [len(s.times) for s in segments] == [20, 28]  # the 4 s tail joins the segment before it
    assert _all_times(segments) == [k / 2 for k in range(48)]
    assert segments[0].end_s == segments[1].start_s == 10.0 and segments[-1].end_s == 24.0
    assert [len(s.times) for s in plan_segments(0.0, 25.0, 2.0, 10.0)] == [20, 20, 10]


def test_video_shorter_than_a_segment_is_one_segment() -> None:
    [only] = plan_segments(0.0, 3.3, 2.0, 10.0)
    assert only.times == (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0) and only.end_s == 3.3


def test_last_segment_and_start_offset() -> None:
    segments = plan_segments(1.5, 31.0, 2.0, 10.0)
    assert [s.index for s in segments] == [0, 1, 2]
    assert segments[0].times[0] == 1.5 and segments[-1].end_s == 32.5
    assert _all_times(segments)[-1] == 1.5 + 61 / 2


def test_very_short_video_still_has_a_sample() -> None:
    [only] = plan_segments(0.0, 0.2, 2.0, 10.0)
    assert only.times == (0.0,)


def test_cuts_move_to_the_nearest_keyframe_so_no_segment_decodes_another_ones_pictures() -> None:
    keyframes = [0.0, 8.3, 17.9, 40.0]
    segments = plan_segments(0.0, 30.0, 2.0, 10.0, keyframes)
    assert [s.start_s for s in segments] == [0.0, 8.3, 17.9]  # 40 s is beyond half a segment of the 30 s cut
    assert [s.end_s for s in segments] == [8.3, 17.9, 30.0]
    assert _all_times(segments) == [k / 2 for k in range(60)]  # every sample exactly once, in order
    for segment in segments:
        assert all(segment.start_s <= t < segment.end_s for t in segment.times)
    # without a keyframe near a cut the cut stays where it was
    assert [s.start_s for s in plan_segments(0.0, 30.0, 2.0, 10.0, [0.0, 4.0])] == [0.0, 10.0, 20.0]
    assert plan_segments(0.0, 30.0, 2.0, 10.0, []) == plan_segments(0.0, 30.0, 2.0, 10.0)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        plan_segments(0.0, 0.0, 2.0, 10.0)


def test_fan_in_fires_once_when_the_last_segment_lands(redis_client: redis.Redis) -> None:
    results = SegmentResults(redis_client)
    assert not results.store("j", "item", 1, 1, 3, {"samples": [1]})
    assert not results.store("j", "item", 1, 1, 3, {"samples": [1]})  # a duplicate delivery
    assert not results.store("j", "item", 1, 0, 3, {"samples": [0]})
    assert results.store("j", "item", 1, 2, 3, {"samples": [2]})
    assert not results.store("j", "item", 1, 2, 3, {"samples": [2]})  # completes only once
    assert [r["samples"] for r in results.collect("j", "item", 1)] == [[0], [1], [2]]
    results.reset("j", "item", 1)
    assert results.collect("j", "item", 1) == []


def test_a_superseded_dispatch_never_completes_a_newer_ones_set(redis_client: redis.Redis) -> None:
    results = SegmentResults(redis_client)
    assert not results.store("j", "item", 2, 0, 2, {"samples": [0]})
    # the first dispatch's late segments (its worker was declared lost) complete only their own set
    assert not results.store("j", "item", 1, 1, 2, {"samples": ["old"]})
    assert results.store("j", "item", 1, 0, 2, {"samples": ["old"]})
    assert results.store("j", "item", 2, 1, 2, {"samples": [1]})
    assert [r["samples"] for r in results.collect("j", "item", 2)] == [[0], [1]]
