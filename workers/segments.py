"""Splitting a video's sampling into non-overlapping segments that workers sample in parallel. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    index: int
    start_s: float
    end_s: float
    #: sample times (source seconds) that fall in [start_s, end_s)
    times: tuple[float, ...]


def plan_segments(start_s: float, duration_s: float, sample_fps: float, segment_s: float) -> list[Segment]:
    """Sample times every 1/sample_fps from the video's start, cut into segments of about segment_s seconds.

    Segments are whole numbers of sampling periods long, so every sample belongs to exactly one segment and
    the union is exactly the single-pass sampling; a short tail is merged into the segment before it.
    """
    if duration_s <= 0 or sample_fps <= 0 or segment_s <= 0:
        raise ValueError("duration, sampling rate and segment length must be positive")
    period = 1.0 / sample_fps
    count = max(1, math.ceil(duration_s * sample_fps - 1e-9))
    times = [start_s + k * period for k in range(count)]
    per_segment = max(1, round(segment_s * sample_fps))
    groups = [times[i : i + per_segment] for i in range(0, count, per_segment)]
    if len(groups) > 1 and len(groups[-1]) < per_segment / 2:
        groups[-2].extend(groups.pop())
    end = start_s + duration_s
    segments = []
    for index, group in enumerate(groups):
        seg_end = groups[index + 1][0] if index + 1 < len(groups) else end
        segments.append(Segment(index, group[0], seg_end, tuple(group)))
    return segments
