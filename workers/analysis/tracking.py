"""The located product followed through every frame of the chosen window, where the samples lost it.

The sampling stage locates the product twice a second; a product a hand covers, blurs or turns is lost at some
samples, and the crop planner would otherwise hold the box of the nearest sample that found it while the
product moves on. The window's frames are decoded densely anyway (grey, for text timing; pipeline.dense_width),
so from each sample that located the product its box is carried frame by frame into the samples that did not:
median flow (Kalal, Mikolajczyk and Matas, "Forward-backward error", 2010), the box moved and scaled as the
median of its corners' Lucas-Kanade motion, counting only corners that flow back to where they started.
Tracking stops where too few corners do (the product covered, gone or blurred past following), at a cut, and
TRACK_MAX_S from the sample it started at; a box is given only where a track reaches a wanted time: a
sample's, or one between a sample with a box and one without (edge_times).
Pure: arrays in, boxes out.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence

import cv2
import numpy as np

from workers.geometry import Box, scale_box

#: a track runs at most this long from the sample that located the product (the samples are 0.5 s apart; on
#: bench/quality.py's development half, 1.5 s gave 36 boxes, 28 of them on the product, 3 s gave 50 and 42)
TRACK_MAX_S = 3.0
#: corners looked for in the box's central part (its edges are often the background behind the product)
TRACK_CORNERS = 60
TRACK_CORE = 0.8
#: a corner counts where it flows back to within this many pixels of where it started (grey frame pixels)
TRACK_BACK_PX = 2.0
#: a step needs at least this many corners that count, else the track ends
TRACK_MIN_CORNERS = 6
#: a box smaller than this a side (grey frame pixels) has too few pixels to follow
TRACK_MIN_SIDE = 12
#: the box's size may change by at most this factor per frame (a product does not grow faster)
TRACK_MAX_SCALE = 1.1
#: a located box this near a wanted time is the box there (the analysis keeps sample times to a tenth)
SAME_TIME_S = 0.1
LK_PARAMS = {
    "winSize": (15, 15),
    "maxLevel": 2,
    "criteria": (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 20, 0.03),
}

Frames = Sequence[tuple[float, np.ndarray]]


def step(previous: np.ndarray, frame: np.ndarray, box: Box) -> Box | None:
    """The box (grey frame pixels) moved from previous into frame (grey, the same size), or None where too few
    of its corners follow."""
    height, width = frame.shape[:2]
    x0, y0, x1, y1 = box
    if min(x1 - x0, y1 - y0) < TRACK_MIN_SIDE:
        return None
    trim = (1 - TRACK_CORE) / 2
    mask = np.zeros(previous.shape[:2], np.uint8)
    mask[
        round(max(0.0, y0 + trim * (y1 - y0))) : round(min(height, y1 - trim * (y1 - y0))),
        round(max(0.0, x0 + trim * (x1 - x0))) : round(min(width, x1 - trim * (x1 - x0))),
    ] = 255
    start = cv2.goodFeaturesToTrack(previous, TRACK_CORNERS, 0.005, 2, mask=mask)
    if start is None or len(start) < TRACK_MIN_CORNERS:
        return None
    ahead, found, _ = cv2.calcOpticalFlowPyrLK(previous, frame, start, None, **LK_PARAMS)  # type: ignore[call-overload]
    back, returned, _ = cv2.calcOpticalFlowPyrLK(frame, previous, ahead, None, **LK_PARAMS)  # type: ignore[call-overload]
    error = np.linalg.norm((start - back).reshape(-1, 2), axis=1)
    good = (found.ravel() == 1) & (returned.ravel() == 1) & (error <= TRACK_BACK_PX)
    if int(good.sum()) < TRACK_MIN_CORNERS:
        return None
    # the better half of the corners that count decide the motion, as median flow does
    good &= error <= float(np.median(error[good]))
    p, q = start.reshape(-1, 2)[good], ahead.reshape(-1, 2)[good]
    shift = np.median(q - p, axis=0)
    i, j = np.triu_indices(len(p), k=1)
    before = np.linalg.norm(p[i] - p[j], axis=1)
    after = np.linalg.norm(q[i] - q[j], axis=1)
    scale = float(np.median(after[before > 1.0] / before[before > 1.0])) if (before > 1.0).any() else 1.0
    if not 1 / TRACK_MAX_SCALE <= scale <= TRACK_MAX_SCALE:
        return None
    cx, cy = (x0 + x1) / 2 + float(shift[0]), (y0 + y1) / 2 + float(shift[1])
    hw, hh = (x1 - x0) * scale / 2, (y1 - y0) * scale / 2
    if cx < 0 or cy < 0 or cx > width or cy > height:
        return None
    return (cx - hw, cy - hh, cx + hw, cy + hh)


def track(frames: Frames, start: int, box: Box, stop: int) -> dict[int, Box]:
    """The box (grey frame pixels) at frames[start] carried frame by frame towards frames[stop] (either way),
    as far as it follows: {frame index: box}."""
    direction = 1 if stop >= start else -1
    boxes: dict[int, Box] = {}
    for k in range(start + direction, stop + direction, direction):
        moved = step(frames[k - direction][1], frames[k][1], box)
        if moved is None:
            break
        boxes[k] = box = moved
    return boxes


def _has_box(t: float, boxed: Sequence[float]) -> bool:
    """Whether a box is given at t: at one of the boxed times within SAME_TIME_S of it."""
    return any(abs(t - b) <= SAME_TIME_S for b in boxed)


def edge_times(boxed: Sequence[float], samples: Sequence[float], step_s: float) -> list[float]:
    """Times step_s apart strictly between each two neighbouring sample times (ascending) of which one has a
    box (boxed: the times with one) and the other has none: with the crop planner's key step, a product sliding
    into the frame between two samples half a second apart is followed as it enters, where the planner would
    otherwise hold the box of the sample that first saw it."""
    has = [_has_box(t, boxed) for t in samples]
    out: list[float] = []
    for (a, a_has), (b, b_has) in itertools.pairwise(zip(samples, has, strict=True)):
        if a_has != b_has:
            steps = math.ceil((b - a) / step_s - 1e-9)
            out += [a + k * (b - a) / steps for k in range(1, steps)]
    return out


def track_gaps(
    located: Sequence[tuple[float, Box | None]],
    wanted: Sequence[float],
    frames: Frames,
    source_size: tuple[int, int],
    cuts: Sequence[float] = (),
) -> list[tuple[float, Box]]:
    """Boxes (source pixels) at the wanted times that no located box (time, source pixels; None: not located)
    is given for, tracked through frames ((time, grey) in time order, one size) from the nearest located time
    on the same shot within TRACK_MAX_S, else from the next nearest; times no track reaches, or that no frame
    shows, get none."""
    if len(frames) < 2:
        return []
    times = [t for t, _ in frames]
    sx = frames[0][1].shape[1] / source_size[0]
    sy = frames[0][1].shape[0] / source_size[1]
    seen = sorted((t, box) for t, box in located if box is not None)
    seen_times = [t for t, _ in seen]

    # a time is shown by the frame within half a frame's duration of it
    slack = 0.5 * (times[-1] - times[0]) / (len(times) - 1) + 1e-3

    def frame_of(t: float) -> int | None:
        k = bisect.bisect_left(times, t)
        near = min((j for j in (k - 1, k) if 0 <= j < len(times)), key=lambda j: abs(times[j] - t))
        return near if abs(times[near] - t) <= slack else None

    out: list[tuple[float, Box]] = []
    cache: dict[tuple[int, int], dict[int, Box]] = {}
    for t in wanted:
        if _has_box(t, seen_times):
            continue
        target = frame_of(t)
        if target is None:
            continue
        for s, box in sorted(seen, key=lambda sb: abs(sb[0] - t)):
            if abs(s - t) > TRACK_MAX_S or any(min(s, t) < c <= max(s, t) for c in cuts):
                continue
            origin = frame_of(s)
            if origin is None:
                continue
            key = (origin, 1 if target > origin else -1)
            if key not in cache:
                # tracked as far as the reach: the farthest frame it covers on that side
                if key[1] > 0:
                    end = max(origin, bisect.bisect_right(times, s + TRACK_MAX_S) - 1)
                else:
                    end = min(origin, bisect.bisect_left(times, s - TRACK_MAX_S))
                cache[key] = track(frames, origin, scale_box(box, sx, sy), end)
            if target in cache[key]:
                out.append((t, scale_box(cache[key][target], 1 / sx, 1 / sy)))
                break
    return out
