"""Splitting a video's sampling into non-overlapping segments that workers sample in parallel. Pure."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    index: int
    start_s: float
    end_s: float
    #: sample times (source seconds) that fall in [start_s, end_s)
    times: tuple[float, ...]


def plan_segments(
    start_s: float,
    duration_s: float,
    sample_fps: float,
    segment_s: float,
    keyframes: Sequence[float] = (),
) -> list[Segment]:
    """Sample times every 1/sample_fps from the video's start, cut into segments of about segment_s seconds.

    Every sample belongs to exactly one segment and the union is exactly the single-pass sampling; a short
    tail is merged into the segment before it. Given the video's keyframe times, each cut moves to the
    keyframe nearest it (if one lies within half a segment): a segment then starts decoding at its own first
    picture, where a cut between keyframes has two workers decode the pictures from the keyframe before the
    cut up to it (with libx264's defaults, up to 10 s of them).
    """
    if duration_s <= 0 or sample_fps <= 0 or segment_s <= 0:
        raise ValueError("duration, sampling rate and segment length must be positive")
    period = 1.0 / sample_fps
    count = max(1, math.ceil(duration_s * sample_fps - 1e-9))
    times = [start_s + k * period for k in range(count)]
    cuts = _cuts(times, segment_s, keyframes)
    # each segment starts at its cut; a sample at a cut (within float error) opens the segment after it
    bounds = itertools.pairwise([-math.inf, *(c - 1e-6 for c in cuts), math.inf])
    pieces = [
        (cut, [t for t in times if lo <= t < hi])
        for cut, (lo, hi) in zip([start_s, *cuts], bounds, strict=True)
    ]
    pieces = [(cut, group) for cut, group in pieces if group]
    if len(pieces) > 1 and len(pieces[-1][1]) < segment_s * sample_fps / 2:
        pieces[-2][1].extend(pieces.pop()[1])
    ends = [cut for cut, _ in pieces[1:]] + [start_s + duration_s]
    return [
        Segment(index, cut, seg_end, tuple(group))
        for index, ((cut, group), seg_end) in enumerate(zip(pieces, ends, strict=True))
    ]


def _cuts(times: list[float], segment_s: float, keyframes: Sequence[float]) -> list[float]:
    """Where segments begin after the first: every segment_s of samples, each at the nearest keyframe."""
    ideal = [times[0] + k * segment_s for k in range(1, math.ceil((times[-1] - times[0]) / segment_s) + 1)]
    ideal = [c for c in ideal if c <= times[-1]]
    cuts: list[float] = []
    for cut in ideal:
        near = min(keyframes, key=lambda k: abs(k - cut), default=None)
        if near is not None and abs(near - cut) <= segment_s / 2:
            cut = near
        if times[0] < cut and (not cuts or cut > cuts[-1]):
            cuts.append(cut)
    return cuts
