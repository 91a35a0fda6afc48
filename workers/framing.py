"""Pure crop geometry: output sizes for an aspect ratio and crop paths over a window.

All rectangles are in source pixels, display orientation. Crops have even origins and sizes so that yuv420p
chroma planes can be sliced without resampling.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CropRect:
    x: int
    y: int
    w: int
    h: int

    def as_dict(self, t: float) -> dict[str, float | int]:
        return {"t": round(t, 4), "x": self.x, "y": self.y, "w": self.w, "h": self.h}


@dataclass(frozen=True)
class AspectSize:
    """The crop taken from the source and the size the clip is encoded at, for one aspect."""

    aspect: tuple[int, int]
    crop_w: int
    crop_h: int
    out_w: int
    out_h: int

    @property
    def label(self) -> str:
        return f"{self.aspect[0]}:{self.aspect[1]}"

    @property
    def file_stem(self) -> str:
        return f"{self.aspect[0]}x{self.aspect[1]}"


def aspect_size(aspect: tuple[int, int], width: int, height: int, max_side: int | None = None) -> AspectSize:
    """The largest even-sized crop of exactly aspect a:b inside width×height, and its output size.

    Exact aspect with even sides means a·m and b·m both even; a and b are coprime after reduction, so m is even.
    The output is never larger than the crop (no upscaling); max_side caps the longer output side.
    """
    a, b = aspect
    g = math.gcd(a, b)
    a, b = a // g, b // g
    m = min(width // a, height // b)
    m -= m % 2
    if m < 2:
        raise ValueError(f"a {width}x{height} frame is too small for aspect {a}:{b}")
    out_m = m
    if max_side is not None:
        out_m = min(m, max_side // max(a, b))
        out_m -= out_m % 2
        out_m = max(out_m, 2)
    return AspectSize(aspect, a * m, b * m, a * out_m, b * out_m)


def _even(value: float) -> int:
    return round(value / 2.0) * 2


def place_crop(center_x: float, center_y: float, w: int, h: int, width: int, height: int) -> CropRect:
    """A w×h crop centred as near to (center_x, center_y) as the frame allows, on even coordinates."""
    x = min(max(_even(center_x - w / 2), 0), (width - w) // 2 * 2)
    y = min(max(_even(center_y - h / 2), 0), (height - h) // 2 * 2)
    return CropRect(x, y, w, h)


@dataclass(frozen=True)
class CropPath:
    """Crop rectangles at key times, linearly interpolated between them and held outside them."""

    times: tuple[float, ...]
    rects: tuple[CropRect, ...]

    def __post_init__(self) -> None:
        if not self.times or len(self.times) != len(self.rects):
            raise ValueError("a crop path needs one rectangle per key time")
        if list(self.times) != sorted(self.times):
            raise ValueError("crop path key times must ascend")

    def __call__(self, t: float) -> CropRect:
        i = bisect.bisect_right(self.times, t)
        if i == 0:
            return self.rects[0]
        if i == len(self.times):
            return self.rects[-1]
        t0, t1 = self.times[i - 1], self.times[i]
        r0, r1 = self.rects[i - 1], self.rects[i]
        f = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
        return CropRect(_even(r0.x + f * (r1.x - r0.x)), _even(r0.y + f * (r1.y - r0.y)), r0.w, r0.h)


Box = tuple[float, float, float, float]


def scale_box(box: Box, sx: float, sy: float) -> Box:
    return (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)


def static_subject_path(
    size: AspectSize, width: int, height: int, subject_boxes: Sequence[Box | None], start: float
) -> CropPath:
    """One crop held over the window, centred on the median subject centre (the frame centre without one).

    A steady crop is the right answer when the subject barely moves; subject-following paths come later.
    """
    centres = [((b[0] + b[2]) / 2, (b[1] + b[3]) / 2) for b in subject_boxes if b is not None]
    if centres:
        cx, cy = (float(v) for v in np.median(np.array(centres), axis=0))
    else:
        cx, cy = width / 2, height / 2
    return CropPath((start,), (place_crop(cx, cy, size.crop_w, size.crop_h, width, height),))


# ----------------------------------------------------------------------------------------------------------
# Text-safe, subject-following crop paths
# ----------------------------------------------------------------------------------------------------------
#
# With the largest crop of an aspect, one side of the crop spans the whole frame, so the crop moves along ONE
# axis only: planning is a 1-D problem per aspect ("the moving axis", length L, crop length c, positions
# 0..L-c). Per planning key (every KEY_STEP_S) the positions that keep every text region wholly inside or
# wholly outside the crop (with a margin) form a union of intervals. A dynamic programme over an even grid of
# positions picks which interval the crop uses at every key (include or exclude each caption) while tracking
# the subject; a box-constrained quadratic programme then smooths the path inside those intervals with bounded
# velocity and acceleration. A segment (the window split at shot cuts) whose constraints admit one position
# throughout gets a steady crop. When no path exists, the shown region is widened along the moving axis until
# one does and the clip is letterboxed over a blurred fill (`padded`).

#: a cut repositions the crop within this many seconds (keys straddle the cut)
CUT_EPSILON_S = 1e-3

# Why a clip is letterboxed: cropping is the rule, these are the only exceptions.
PAD_SUBJECT_TOO_BIG = "the subject is larger than the crop"
PAD_TEXT_AND_SUBJECT = "text and subject cannot be separated"
PAD_NO_TEXT_SAFE_CROP = "every crop of this aspect cuts text"
PAD_REASONS = (PAD_SUBJECT_TOO_BIG, PAD_TEXT_AND_SUBJECT, PAD_NO_TEXT_SAFE_CROP)


@dataclass(frozen=True)
class FramingParams:
    """Settings of the crop planner; every field changes output bytes, so they belong in the config hash."""

    #: clearance kept between a text region and a crop edge, as a fraction of the frame's short side
    text_margin: float = 0.02
    #: clearance kept around the subject, as a fraction of the crop's length on the moving axis
    subject_margin: float = 0.04
    #: spacing of planning keys; crop rectangles are linear between keys
    key_step_s: float = 0.1
    #: bounds on the crop's motion, in lengths of the source's moving axis per second (per second²)
    max_speed: float = 0.5
    max_accel: float = 1.0
    #: time constant of the smoothing: motion faster than this is filtered out of the path
    smoothing_s: float = 0.6
    #: share of planning keys where the subject may fall outside a letterboxed region before a wider one is
    #: tried (the aspect's own crop is never widened for misses alone: see pad_share)
    subject_miss: float = 0.0
    #: share of planning keys where the subject is larger than the aspect's crop, or text and subject cannot
    #: be separated, before the clip is letterboxed instead of cropped
    pad_share: float = 0.05
    #: smaller crops (shares of the largest one's size) tried before letterboxing: the clip is scaled up
    #: from them, which costs sharpness but shows the subject full-bleed
    zooms: tuple[float, ...] = (0.9, 0.8, 0.7, 0.6)
    #: a smaller crop must hold the subject's box grown by this share of its size on every side
    zoom_margin: float = 0.15
    #: region widths tried, evenly from the aspect's crop up to the whole frame, before padding gives up
    pad_steps: int = 8
    #: positions tried by the dynamic programme on the moving axis (more is finer and slower)
    max_states: int = 400


@dataclass(frozen=True)
class FramingPlan:
    """One aspect's plan: crop rectangles at key times over the window, linear in between.

    When `padded`, the rectangles are the region shown letterboxed inside the output (they do not have the
    output's aspect); otherwise they have it exactly.
    """

    size: AspectSize
    keys: tuple[tuple[float, CropRect], ...]
    padded: bool
    #: text regions found in the window (source pixels), merged per line and over time
    text_boxes: tuple[Box, ...]
    #: whether any segment's crop moves (False: one steady rectangle per shot)
    moves: bool
    #: why the clip is letterboxed (one of PAD_REASONS), None when it is cropped
    padded_reason: str | None = None
    #: the crop's size as a share of the aspect's largest crop (below 1: zoomed in past captions)
    zoom: float = 1.0

    @property
    def label(self) -> str:
        return self.size.label

    def crop_path(self) -> CropPath:
        return CropPath(tuple(t for t, _ in self.keys), tuple(r for _, r in self.keys))

    def key_tuples(self) -> list[tuple[float, int, int, int, int]]:
        """(t, x, y, w, h) per key: the JSON-able form the pipeline's Analysis stores."""
        return [(round(t, 4), r.x, r.y, r.w, r.h) for t, r in self.keys]


def merge_text_boxes(boxes: Sequence[Box]) -> list[Box]:
    """Text regions as the crop must treat them: boxes that overlap, or words on one line close together,
    become one region, so a crop edge can never fall between the words of one caption."""
    # each merge removes one region, and a region joins the merged list only when it meets none there:
    # at most n merges of one O(n) scan each, and no two regions left that should be one
    pending = [(float(b[0]), float(b[1]), float(b[2]), float(b[3])) for b in boxes]
    merged: list[Box] = []
    while pending:
        box = pending.pop()
        for k, other in enumerate(merged):
            if _joined(box, other):
                del merged[k]
                pending.append(
                    (
                        min(box[0], other[0]),
                        min(box[1], other[1]),
                        max(box[2], other[2]),
                        max(box[3], other[3]),
                    )
                )
                break
        else:
            merged.append(box)
    return sorted(merged)


def _joined(a: Sequence[float], b: Sequence[float]) -> bool:
    if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
        return True
    height = min(a[3] - a[1], b[3] - b[1])
    overlap_y = min(a[3], b[3]) - max(a[1], b[1])
    gap_x = max(a[0], b[0]) - min(a[2], b[2])
    # one line of text: mostly level, and the gap no wider than about a word space at that height
    return overlap_y >= 0.5 * height and gap_x <= 0.8 * height


def text_union(text: Sequence[tuple[float, Sequence[Box]]], start: float, end: float) -> list[Box]:
    """Every text region seen in [start, end), merged over time: the manifest's `text_boxes`."""
    boxes = [b for t, frame_boxes in text if start <= t < end for b in frame_boxes]
    return [(float(round(b[0])), float(round(b[1])), float(round(b[2])), float(round(b[3]))) for b in
            merge_text_boxes(boxes)]  # fmt: skip


@dataclass(frozen=True)
class _Line:
    """The crop seen along its moving axis: axis 0 moves in x, 1 in y."""

    axis: int
    length: int  # the source along the moving axis
    perp: int  # the source across it
    crop: int  # the crop along the moving axis
    q0: int  # where the crop starts across the moving axis (fixed)
    q1: int

    @property
    def last(self) -> int:
        """The last even position the crop can take."""
        return (self.length - self.crop) // 2 * 2

    def split(self, box: Box) -> tuple[float, float, float, float]:
        """(start, end) along the moving axis, then (start, end) across it."""
        if self.axis == 0:
            return box[0], box[2], box[1], box[3]
        return box[1], box[3], box[0], box[2]

    def rect(self, position: int) -> CropRect:
        if self.axis == 0:
            return CropRect(position, self.q0, self.crop, self.q1 - self.q0)
        return CropRect(self.q0, position, self.q1 - self.q0, self.crop)


def _line(crop_w: int, crop_h: int, width: int, height: int) -> _Line:
    # Sizes are taken even: the renderer drops a source's odd last row/column (yuv420p).
    width, height = width // 2 * 2, height // 2 * 2
    # the axis with more slack moves; with the largest crop of an aspect the other has only a few pixels
    # of slack, where the crop is simply centred
    if width - crop_w >= height - crop_h:
        q0 = (height - crop_h) // 4 * 2
        return _Line(0, width, height, crop_w, q0, q0 + crop_h)
    q0 = (width - crop_w) // 4 * 2
    return _Line(1, height, width, crop_h, q0, q0 + crop_w)


Interval = tuple[int, int]


def _even_intervals(real: list[tuple[float, float]]) -> list[Interval]:
    out = []
    for lo, hi in real:
        a, b = math.ceil(lo / 2 - 1e-9) * 2, math.floor(hi / 2 + 1e-9) * 2
        if a <= b:
            out.append((a, b))
    return out


#: clearance round a text region, as a share of its height, where that is more than the fixed text margin
CAPTION_SURROUND = 0.35


def _clearance(box: Box, margin: float) -> float:
    """How far a crop edge keeps from a text region: a caption's backdrop, outline or shadow reaches past the
    glyphs the detector boxes, by about a third of the text's height."""
    return max(margin, CAPTION_SURROUND * (box[3] - box[1]))


def _text_safe(line: _Line, boxes: Sequence[Box], margin: float) -> list[Interval]:
    """Even crop positions at which every box is wholly inside the crop or wholly outside, with the margin.

    A box grown by the margin is clipped to the frame first: text the source itself shows at its edge is
    whole as far as any crop can tell, and a crop edge on the frame edge cuts nothing.
    """
    allowed: list[tuple[float, float]] = [(0.0, float(line.last))]
    c = line.crop
    for box in boxes:
        a, b, p0, p1 = line.split(box)
        clearance = _clearance(box, margin)
        a, b = max(0.0, a - clearance), min(float(line.length), b + clearance)
        p0, p1 = max(0.0, p0 - clearance), min(float(line.perp), p1 + clearance)
        if p1 <= line.q0 or p0 >= line.q1 or b <= a:
            continue  # never meets the crop's fixed span across the moving axis
        if p0 >= line.q0 and p1 <= line.q1 and b - a <= c:
            # the crop [x, x+c] cuts the box when it overlaps it without containing it
            forbidden = [(a - c, b - c), (a, b)]
        else:
            forbidden = [(a - c, b)]  # cannot be inside: must be wholly outside
        for f0, f1 in forbidden:
            allowed = [piece for lo, hi in allowed for piece in _minus_open(lo, hi, f0, f1)]
    return _even_intervals(allowed)


def _minus_open(lo: float, hi: float, f0: float, f1: float) -> list[tuple[float, float]]:
    """[lo, hi] without the open interval (f0, f1)."""
    if f1 <= lo or f0 >= hi:
        return [(lo, hi)]
    pieces = []
    if f0 >= lo:
        pieces.append((lo, f0))
    if f1 <= hi:
        pieces.append((f1, hi))
    return pieces


def _intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out = []
    for a0, a1 in a:
        for b0, b1 in b:
            lo, hi = max(a0, b0), min(a1, b1)
            if lo <= hi:
                out.append((lo, hi))
    return out


def _containing(intervals: list[Interval], position: float) -> Interval | None:
    for lo, hi in intervals:
        if lo <= position <= hi:
            return (lo, hi)
    return None


class _TextTrack:
    """Text regions at their sample times; a region seen at a sample may be on screen until the next one.

    Text on screen at time τ between samples t_k ≤ τ ≤ t_k+1 is visible at t_k or at t_k+1 whenever it
    stays on screen at least as long as the sampling interval, so the union of both samples' regions is
    every region that can be on screen at τ.
    """

    def __init__(
        self, text: Sequence[tuple[float, Sequence[Box]]], subject: Sequence[tuple[float, Box | None]] = ()
    ) -> None:
        ordered = sorted(text, key=lambda item: item[0])
        self.times = [t for t, _ in ordered]
        self.boxes = [
            [b for b in merge_text_boxes(list(boxes)) if not _on_subject(b, _nearest_subject(subject, t))]
            for t, boxes in ordered
        ]

    def between(self, t0: float, t1: float) -> list[Box]:
        """Every region that can be on screen at some time in [t0, t1]."""
        if not self.times:
            return []
        first = max(0, bisect.bisect_right(self.times, t0 + 1e-9) - 1)
        last = min(len(self.times) - 1, bisect.bisect_left(self.times, t1 - 1e-9))
        return [b for k in range(first, last + 1) for b in self.boxes[k]]


#: text lying this much inside the subject's box is print on the product (a logo, a label): it moves with
#: the subject, which the crop keeps inside, so it is no separate constraint (and as a constraint it would
#: fence the crop off the very subject it sits on)
ON_SUBJECT = 0.8
#: a subject sample this close in time describes the subject at a text sample
SUBJECT_NEAR_S = 0.3
#: between two subject samples at most this far apart the subject is where the line between them says: text
#: is timed at every frame and the subject sampled once a second, so most frames lie between samples
SUBJECT_SPAN_S = 1.5


def _nearest_subject(subject: Sequence[tuple[float, Box | None]], t: float) -> Box | None:
    """The subject's box at t: interpolated between the samples on either side when both found it, else the
    nearest sample's within SUBJECT_NEAR_S."""
    found = sorted((ts, b) for ts, b in subject if b is not None)
    after = bisect.bisect_left([ts for ts, _ in found], t)
    if 0 < after < len(found):
        (t0, b0), (t1, b1) = found[after - 1], found[after]
        if t1 - t0 <= SUBJECT_SPAN_S:
            w = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
            return (
                b0[0] + w * (b1[0] - b0[0]),
                b0[1] + w * (b1[1] - b0[1]),
                b0[2] + w * (b1[2] - b0[2]),
                b0[3] + w * (b1[3] - b0[3]),
            )
    near = [(abs(ts - t), b) for ts, b in found if abs(ts - t) <= SUBJECT_NEAR_S]
    return min(near, key=lambda item: item[0])[1] if near else None


def _on_subject(box: Box, subject: Box | None) -> bool:
    if subject is None:
        return False
    w = max(0.0, min(box[2], subject[2]) - max(box[0], subject[0]))
    h = max(0.0, min(box[3], subject[3]) - max(box[1], subject[1]))
    area = (box[2] - box[0]) * (box[3] - box[1])
    return area > 0 and w * h >= ON_SUBJECT * area


def _subject_at(samples: Sequence[tuple[float, Box]], times: np.ndarray) -> np.ndarray | None:
    """Subject boxes at the key times: linear between samples, held beyond them. None without samples."""
    if not samples:
        return None
    st = np.array([t for t, _ in samples])
    boxes = np.array([b for _, b in samples], dtype=np.float64)
    return np.stack([np.interp(times, st, boxes[:, k]) for k in range(4)], axis=1)


@dataclass(frozen=True)
class _Segment:
    """One shot's part of the window, with its planning keys and per-key constraints."""

    times: np.ndarray
    #: text-safe positions at each key (regions possibly on screen between its neighbouring keys)
    safe: list[list[Interval]]
    #: text-safe positions for the span between key i and i+1 (a path between them stays in one of these)
    between: list[list[Interval]]
    #: positions keeping the subject inside with its margin, per key (None: no subject, or too big)
    subject: list[Interval | None]
    #: positions keeping the subject inside at all (no margin): the requirement, where the margin is a wish
    inside: list[Interval | None]
    #: desired crop position (subject centred) per key
    target: np.ndarray
    #: the subject's box per key (None: no subject samples in the segment)
    subject_boxes: np.ndarray | None


def _build_segment(
    line: _Line,
    t0: float,
    t1: float,
    last: bool,
    subject: Sequence[tuple[float, Box]],
    text: _TextTrack,
    params: FramingParams,
    text_margin: float,
) -> _Segment:
    n = max(1, math.ceil((t1 - t0) / params.key_step_s - 1e-9))
    times = np.linspace(t0, t1, n + 1)
    if not last:
        times[-1] = max(times[-2] if n > 1 else t0, t1 - CUT_EPSILON_S)
    spans = [(times[max(0, i - 1)], times[min(n, i + 1)]) for i in range(n + 1)]
    # neighbouring keys mostly see the same regions: work out each distinct set's safe positions once
    known: dict[tuple[Box, ...], list[Interval]] = {}

    def text_safe(t_from: float, t_to: float) -> list[Interval]:
        boxes = tuple(text.between(t_from, t_to))
        if boxes not in known:
            known[boxes] = _text_safe(line, boxes, text_margin)
        return known[boxes]

    safe = [text_safe(a, b) for a, b in spans]
    between = [text_safe(times[i], times[i + 1]) for i in range(n)]
    boxes = _subject_at(subject, times)
    margin = params.subject_margin * line.crop
    subject_ok: list[Interval | None] = [None] * (n + 1)
    inside: list[Interval | None] = [None] * (n + 1)
    target = np.full(n + 1, line.last / 2)
    for i, box in enumerate(boxes if boxes is not None else []):
        a, b, _, _ = line.split((box[0], box[1], box[2], box[3]))
        target[i] = min(max((a + b) / 2 - line.crop / 2, 0.0), float(line.last))
        subject_ok[i] = _fit(line, a - margin, b + margin)
        inside[i] = _fit(line, a, b)
    return _Segment(times, safe, between, subject_ok, inside, target, boxes)


def _fit(line: _Line, a: float, b: float) -> Interval | None:
    """Even positions whose crop holds [a, b]; clipped to the frame, since a subject touching the frame's edge
    is as inside as it can be. None when it is longer than the crop."""
    a, b = max(0.0, a), min(float(line.length), b)
    fit = _even_intervals([(max(0.0, b - line.crop), min(float(line.last), a))])
    return fit[0] if fit else None


def _steady(segment: _Segment, line: _Line) -> int | None:
    """One position valid at every key (text-safe, subject inside), nearest the median subject position."""
    allowed: list[Interval] = [(0, line.last)]
    for safe, subject in zip(segment.safe, segment.subject, strict=True):
        allowed = _intersect(allowed, safe if subject is None else _intersect(safe, [subject]))
        if not allowed:
            return None
    want = float(np.median(segment.target))
    best = min(
        allowed, key=lambda iv: 0.0 if iv[0] <= want <= iv[1] else min(abs(want - iv[0]), abs(want - iv[1]))
    )
    return int(min(max(round(want / 2) * 2, best[0]), best[1]))


# DP costs, in units of the moving axis's length: tracking is the base; a subject outside the crop costs
# as much as being a whole frame off target fifty times over, so text safety (hard) wins, then the subject.
SUBJECT_MISS_COST = 50.0
MARGIN_MISS_COST = 0.5
MOVE_COST = 0.05


def _corridors(segment: _Segment, line: _Line, params: FramingParams) -> tuple[list[Interval], int] | None:
    """The text-safe interval the crop uses at every key, chosen by dynamic programming, and the number of
    keys where that path cannot keep the subject inside; None if no text-safe path exists."""
    last = line.last
    step = max(2, math.ceil(last / params.max_states / 2) * 2)
    grid = np.arange(0, last + 1, step, dtype=np.float64)
    if grid[-1] != last:
        grid = np.append(grid, float(last))
    n = len(segment.times)
    dt = float(segment.times[1] - segment.times[0]) if n > 1 else params.key_step_s
    scale = float(line.length)

    def member(intervals: list[Interval]) -> np.ndarray:
        ids = np.full(len(grid), -1)
        for k, (lo, hi) in enumerate(intervals):
            ids[(grid >= lo) & (grid <= hi)] = k
        return ids

    def outside(fit: Interval | None) -> np.ndarray:
        if fit is None:
            return np.zeros(len(grid))
        return np.maximum(np.maximum(fit[0] - grid, grid - fit[1]), 0.0)

    def node(i: int) -> np.ndarray:
        cost = ((grid - segment.target[i]) / scale) ** 2
        tight = outside(segment.inside[i])
        cost = cost + np.where(tight > 0, SUBJECT_MISS_COST * (1.0 + tight / scale), 0.0)
        cost = cost + np.where(outside(segment.subject[i]) > 0, MARGIN_MISS_COST, 0.0)
        return np.where(member(segment.safe[i]) >= 0, cost, np.inf)

    reach = params.max_speed * scale * dt + step
    # A move spans at most `band` grid points (the speed limit), so each step looks at a band of sources per
    # target instead of every pair: offsets ascend, so ties go to the lowest source as a dense argmin's would.
    size = len(grid)
    band = min(size - 1, math.ceil(reach / step) + 1)
    targets = np.arange(size)
    sources = targets[None, :] + np.arange(-band, band + 1)[:, None]
    inside = (sources >= 0) & (sources < size)
    sources = np.clip(sources, 0, size - 1)
    jump = np.abs(grid[sources] - grid[None, :])
    move = np.where(inside & (jump <= reach), MOVE_COST * (jump / scale) ** 2 / dt, np.inf)
    cost = node(0)
    back = []
    for i in range(1, n):
        ids = member(segment.between[i - 1])
        same = (ids[sources] == ids[None, :]) & (ids[None, :] >= 0)
        total = np.where(same, cost[sources] + move, np.inf)
        offset = np.argmin(total, axis=0)
        back.append(sources[offset, targets])
        cost = total[offset, targets] + node(i)
    if not np.isfinite(cost).any():
        return None
    index = int(np.argmin(cost))
    path = [index]
    for choice in reversed(back):
        index = int(choice[index])
        path.append(index)
    path.reverse()
    corridors = []
    misses = 0
    for i, g in enumerate(path):
        corridor = _containing(segment.safe[i], grid[g])
        assert corridor is not None  # the DP only visits text-safe grid points
        for fit in (segment.subject[i], segment.inside[i]):
            if fit is not None and fit[0] <= grid[g] <= fit[1]:
                # keep the subject inside (with its margin if the path has it) wherever the path does
                corridor = (max(corridor[0], fit[0]), min(corridor[1], fit[1]))
                break
        else:
            misses += segment.inside[i] is not None
        corridors.append(corridor)
    return corridors, misses


def _smooth(
    target: np.ndarray, bounds: list[Interval], dt: float, line: _Line, params: FramingParams
) -> np.ndarray:
    """Positions inside the bounds, near the target, with small and bounded velocity and acceleration.

    A quadratic programme, min Σ (x−target)² + T²·Σ ẋ²·0.1 + T⁴·Σ ẍ², subject to lo ≤ x ≤ hi, |ẋ| ≤ v_max,
    |ẍ| ≤ a_max (finite differences), solved by ADMM (the OSQP iteration) with one factorisation: problems have
    tens of variables, so this stays exact enough in a few hundred cheap iterations and needs no solver package.
    """
    n = len(target)
    scale = float(line.length)
    lo = np.array([b[0] for b in bounds], dtype=np.float64) / scale
    hi = np.array([b[1] for b in bounds], dtype=np.float64) / scale
    goal = np.clip(target / scale, lo, hi)
    if n < 3:
        return np.clip(goal, lo, hi) * scale
    d1 = (np.eye(n, k=1) - np.eye(n))[:-1] / dt
    d2 = (np.eye(n, k=2) - 2 * np.eye(n, k=1) + np.eye(n))[:-2] / dt**2
    smooth_t = params.smoothing_s
    quad = np.eye(n) + 0.1 * smooth_t**2 * d1.T @ d1 + smooth_t**4 * d2.T @ d2
    linear = -goal
    a = np.vstack([np.eye(n), d1, d2])
    lower = np.concatenate([lo, np.full(n - 1, -params.max_speed), np.full(n - 2, -params.max_accel)])
    upper = np.concatenate([hi, np.full(n - 1, params.max_speed), np.full(n - 2, params.max_accel)])
    rho, sigma = 1.0, 1e-6
    kkt = np.linalg.inv(quad + sigma * np.eye(n) + rho * a.T @ a)
    x = goal.copy()
    z = np.clip(a @ x, lower, upper)
    y = np.zeros_like(z)
    for _ in range(600):
        x = kkt @ (sigma * x - linear + a.T @ (rho * z - y))
        ax = a @ x
        z_new = np.clip(ax + y / rho, lower, upper)
        y += rho * (ax - z_new)
        if np.max(np.abs(ax - z_new)) < 1e-6 and np.max(np.abs(z_new - z)) < 1e-6:
            z = z_new
            break
        z = z_new
    # position bounds are hard (text safety); the motion bounds hold to the solver's tolerance
    return np.clip(x, lo, hi) * scale


def _plan_segment(
    segment: _Segment, line: _Line, params: FramingParams, miss_share: float
) -> tuple[list[int], bool, int] | None:
    """Even positions per key (one position when steady), whether it moves and at how many keys the subject
    falls outside; None when no text-safe path keeps the subject inside at all but miss_share of the keys."""
    steady = _steady(segment, line)
    if steady is not None:
        return [steady], False, 0
    allowed_misses = miss_share * len(segment.safe)
    # keys where no text-safe position holds the subject are misses on every path: too many of them rule the
    # region out without the dynamic programme (the usual fate of all but the last region tried)
    forced = sum(
        inside is not None and not _intersect(safe, [inside])
        for safe, inside in zip(segment.safe, segment.inside, strict=True)
    )
    if forced > allowed_misses:
        return None
    found = _corridors(segment, line, params)
    if found is None:
        return None
    corridors, misses = found
    if misses > allowed_misses:
        # text pins the crop where the subject is not: a wider, letterboxed region can show both
        return None
    dt = float(segment.times[1] - segment.times[0])
    raw = _smooth(segment.target, corridors, dt, line, params)
    lo = np.array([c[0] for c in corridors])
    hi = np.array([c[1] for c in corridors])
    positions = np.clip(np.round(raw / 2) * 2, lo, hi).astype(int)
    return [int(p) for p in positions], True, misses


def _segments(start: float, end: float, cuts: Sequence[float]) -> list[tuple[float, float]]:
    inner = sorted(c for c in cuts if start + CUT_EPSILON_S < c < end - CUT_EPSILON_S)
    edges = [start, *inner, end]
    return list(itertools.pairwise(edges))


def _subject_samples(
    subject: Sequence[tuple[float, Box | None]],
    t0: float,
    t1: float,
    cut_before: bool,
    cut_after: bool,
    reach_s: float,
) -> list[tuple[float, Box]]:
    """The segment's subject samples; across a window edge (not a cut) neighbouring samples count too."""
    lo = t0 if cut_before else t0 - reach_s
    hi = t1 if cut_after else t1 + reach_s
    return sorted((t, b) for t, b in subject if b is not None and lo <= t < hi)


def _candidates(size: AspectSize, width: int, height: int, params: FramingParams) -> list[_Line]:
    """The aspect's own crop, then ever wider regions to letterbox, ending with the whole frame."""
    first = _line(size.crop_w, size.crop_h, width, height)
    step = (first.length - first.crop) / params.pad_steps
    lengths = sorted(
        {min(first.length, _even(first.crop + k * step)) for k in range(1, params.pad_steps + 1)}
    )
    # a padded region spans the frame across the moving axis too: it is letterboxed anyway
    return [first, *(_Line(first.axis, first.length, first.perp, n, 0, first.perp) for n in lengths)]


def _grown(box: Box, share: float, line: _Line) -> Box:
    """box grown by share of its size on every side, as far as the line's crop still holds it: a margin that
    would make a product the crop can hold look too big for it would only trade a tight crop for a letterbox."""
    w, h = box[2] - box[0], box[3] - box[1]
    along, across = (w, h) if line.axis == 0 else (h, w)
    room_along, room_across = max(0.0, (line.crop - along) / 2), max(0.0, (line.q1 - line.q0 - across) / 2)
    grow_along, grow_across = min(share * along, room_along), min(share * across, room_across)
    dx, dy = (grow_along, grow_across) if line.axis == 0 else (grow_across, grow_along)
    return (box[0] - dx, box[1] - dy, box[2] + dx, box[3] + dy)


#: placements of a smaller crop across its moving axis tried, at most (each costs one planning pass)
MAX_ZOOM_PLACEMENTS = 6


def _zoomed(
    size: AspectSize,
    width: int,
    height: int,
    zoom: float,
    regions: Sequence[Box] = (),
    subject: Sequence[Box] = (),
    margin: float = 0.0,
) -> list[_Line]:
    """Crops of the aspect zoom times the largest one's size (exact aspect, even sides), moving on the same
    axis: a smaller crop can pass a caption that the largest one, spanning the frame, must cut or hold.

    Across the moving axis it is placed at the start, the middle and the end, just past each text region (its
    edge plus its clearance) on either side, and centred on the subject; the placements nearest the subject's
    centre are kept (MAX_ZOOM_PLACEMENTS): the planner takes the first that is text-safe and holds it."""
    a, b = size.aspect
    g = math.gcd(a, b)
    a, b = a // g, b // g
    m = int(size.crop_w * zoom / a) // 2 * 2
    if m < 2:
        return []
    base = _line(size.crop_w, size.crop_h, width, height)
    crop_w, crop_h = a * m, b * m
    along, across = (crop_w, crop_h) if base.axis == 0 else (crop_h, crop_w)
    slack = (base.perp - across) // 2 * 2
    # even placements, rounded away from the text they pass
    wanted = [0, slack // 4 * 2, slack]
    for region in regions:
        _, _, r0, r1 = base.split(region)
        clearance = _clearance(region, margin)
        wanted += [math.ceil((r1 + clearance) / 2) * 2, math.floor((r0 - clearance - across) / 2) * 2]
    spans = [base.split(box)[2:] for box in subject]
    centre = float(np.median([(p0 + p1) / 2 for p0, p1 in spans])) if spans else base.perp / 2
    wanted.append(round((centre - across / 2) / 2) * 2)
    placements = {min(slack, max(0, q)) for q in wanted}
    nearest = sorted(placements, key=lambda q: (abs(q + across / 2 - centre), q))[:MAX_ZOOM_PLACEMENTS]
    return [_Line(base.axis, base.length, base.perp, along, q, q + across) for q in sorted(nearest)]


def _across_misses(segments: Sequence[_Segment], line: _Line) -> int:
    """Keys where the subject reaches past the crop's fixed span across its moving axis (a smaller crop's;
    the largest one spans the frame)."""
    misses = 0
    for segment in segments:
        for box in segment.subject_boxes if segment.subject_boxes is not None else []:
            _, _, p0, p1 = line.split((box[0], box[1], box[2], box[3]))
            misses += max(p0, 0.0) < line.q0 or min(p1, float(line.perp)) > line.q1
    return misses


def _too_big(segments: Sequence[_Segment], line: _Line) -> tuple[int, int]:
    """(keys, keys where the subject is longer than the crop along its moving axis)."""
    keys = too_big = 0
    for segment in segments:
        keys += len(segment.times)
        if segment.subject_boxes is None:
            continue
        for box, inside in zip(segment.subject_boxes, segment.inside, strict=True):
            a, b, _, _ = line.split((box[0], box[1], box[2], box[3]))
            too_big += inside is None and min(b, line.length) - max(a, 0) > line.crop
    return keys, too_big


@dataclass(frozen=True)
class _LinePlan:
    keys: list[tuple[float, CropRect]]
    moves: bool
    #: planning keys where the subject falls outside the crop though it would fit
    misses: int


def _plan_line(
    line: _Line, segments: Sequence[_Segment], params: FramingParams, miss_share: float
) -> _LinePlan | None:
    """Key rectangles over every segment of the window on this line; None when a segment has no text-safe
    path that misses the subject at most miss_share of its keys."""
    keys: list[tuple[float, CropRect]] = []
    moves = False
    misses = 0
    for k, segment in enumerate(segments):
        planned = _plan_segment(segment, line, params, miss_share)
        if planned is None:
            return None
        positions, moving, missed = planned
        moves = moves or moving
        misses += missed
        if moving:
            keys += [(float(t), line.rect(p)) for t, p in zip(segment.times, positions, strict=True)]
        else:
            keys.append((float(segment.times[0]), line.rect(positions[0])))
            if k < len(segments) - 1:
                keys.append((float(segment.times[-1]), line.rect(positions[0])))
    return _LinePlan(keys, moves, misses)


def _plan_aspect(
    size: AspectSize,
    width: int,
    height: int,
    spans: list[tuple[float, float]],
    subject: Sequence[tuple[float, Box | None]],
    track: _TextTrack,
    params: FramingParams,
    regions: list[Box],
    stand_ins: frozenset[float] = frozenset(),
) -> FramingPlan:
    """Crop first: the aspect's largest crop, else a smaller one (params.zooms) placed to pass captions at the
    frame's edge, follows the subject as well as text safety and the motion bounds allow. The clip is
    letterboxed (the shown region widened) only when no such crop will do: the product is larger than the
    crop, or text keeps the crop off a product that would fit, at more than pad_share of the keys, or every
    crop cuts text. A face or a salient region standing in for a product not found justifies only the last."""
    text_margin = params.text_margin * min(width, height)
    # subject samples this far beyond a window edge (not a cut) still describe the same shot
    reach = max(1.0, params.key_step_s)

    def segments_on(line: _Line, text: _TextTrack, grow: float = 0.0) -> list[_Segment]:
        return [
            _build_segment(
                line,
                t0,
                t1,
                k == len(spans) - 1,
                [
                    (t, _grown(b, grow, line))
                    for t, b in _subject_samples(subject, t0, t1, k > 0, k < len(spans) - 1, reach)
                ],
                text,
                params,
                text_margin,
            )
            for k, (t0, t1) in enumerate(spans)
        ]

    crop, *wider = _candidates(size, width, height, params)
    subject_boxes = [box for _, box in subject if box is not None]
    stand_in_only = bool(stand_ins) and all(t in stand_ins for t, box in subject if box is not None)
    reason: str | None = None
    for zoom, line in [
        (1.0, crop),
        *(
            (z, z_line)
            for z in params.zooms
            for z_line in _zoomed(size, width, height, z, regions, subject_boxes, text_margin)
        ),
    ]:
        # a smaller crop leaves less room for error in the subject's box: it must hold the box grown by a margin
        grow = 0.0 if zoom == 1 else params.zoom_margin
        segments = segments_on(line, track, grow)
        keys, too_big = _too_big(segments, line)
        # a face or a salient region standing in for a product not found is cropped however large
        if too_big > params.pad_share * keys and not stand_in_only:
            reason = reason or PAD_SUBJECT_TOO_BIG
            continue
        # a smaller crop is a choice, not the rule: it must hold the subject, whatever makes it miss; across its
        # moving axis that is the subject's own box (the margin only steers the path), known before planning
        across = _across_misses(segments_on(line, _TextTrack([])), line) if zoom < 1 else 0
        if across > params.pad_share * keys and not stand_in_only:
            reason = reason or PAD_TEXT_AND_SUBJECT
            continue
        cropped = _plan_line(line, segments, params, miss_share=1.0)
        if cropped is None:
            reason = reason or PAD_NO_TEXT_SAFE_CROP
            continue
        if zoom < 1:
            misses = cropped.misses + across
        else:
            # misses the motion bounds alone would cause (an erratic subject) are the crop's to take; only those
            # that text adds justify showing a wider, letterboxed region, and only for the product itself
            free = _plan_line(line, segments_on(line, _TextTrack([]), grow), params, miss_share=1.0)
            misses = cropped.misses - (free.misses if free is not None else 0)
        if stand_in_only or misses <= params.pad_share * keys:
            return FramingPlan(size, tuple(cropped.keys), False, tuple(regions), cropped.moves, zoom=zoom)
        reason = reason or PAD_TEXT_AND_SUBJECT
    keys = _too_big(segments_on(crop, track), crop)[0]
    for line in wider:
        segments = segments_on(line, track)
        if reason == PAD_SUBJECT_TOO_BIG and _too_big(segments, line)[1] > params.pad_share * keys:
            continue  # a region the subject does not fit either
        padded = _plan_line(line, segments, params, params.subject_miss)
        if padded is not None:
            return FramingPlan(size, tuple(padded.keys), True, tuple(regions), padded.moves, reason)
    # the last candidate is the whole frame, where every region is inside (clipped to the frame)
    raise AssertionError("a region spanning the frame is text-safe by construction")


def plan_framing(
    start: float,
    end: float,
    width: int,
    height: int,
    aspects: Sequence[tuple[int, int]],
    subject: Sequence[tuple[float, Box | None]],
    text: Sequence[tuple[float, Sequence[Box]]],
    cuts: Sequence[float] = (),
    *,
    max_side: int | None = None,
    params: FramingParams = FramingParams(),
    stand_ins: Sequence[float] = (),
) -> dict[str, FramingPlan]:
    """Plan every aspect's crop over the window [start, end) of a width×height source, in one pass over the
    same signals. Times are source seconds; boxes are (x0, y0, x1, y1) in source pixels.

    subject: the subject's box (or None) at sample times; text: the text regions detected at sample times
    (include the samples just outside the window: text on screen at the window's edges is seen there);
    cuts: shot cut times, where the crop may jump; stand_ins: sample times whose subject is not the product but
    what stands in for it (faces, saliency): one larger than the crop is cropped, not letterboxed, as only the
    product's size justifies showing the whole frame. Pure: no I/O.
    """
    if end <= start:
        raise ValueError(f"empty window [{start}, {end})")
    # text on the product is print on it (it moves with the product); on a face or a salient region standing
    # in for a product not found it is a caption, and stays a constraint
    stand_in_times = frozenset(stand_ins)
    track = _TextTrack(text, [(t, b) for t, b in subject if t not in stand_in_times])
    segments = _segments(start, end, cuts)
    regions = text_union(text, start, end)
    plans: dict[str, FramingPlan] = {}
    for aspect in aspects:
        size = aspect_size(aspect, width, height, max_side)
        plans[size.label] = _plan_aspect(
            size, width, height, segments, subject, track, params, regions, stand_in_times
        )
    return plans
