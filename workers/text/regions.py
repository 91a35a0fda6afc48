"""Text regions for the crop planner: detected boxes merged per line and over time, the clearance a crop edge
keeps from them, the crop positions that hold each wholly or leave it wholly out, and which regions are print
on the subject (moving with it) rather than captions. Pure: no I/O.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Sequence

import numpy as np

from workers.geometry import Box, CropLine, box_union, iou

#: boxes detected at consecutive samples are the same region when they overlap this much (IoU)
SAME_REGION_IOU = 0.5


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
                pending.append(box_union(box, other))
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


Interval = tuple[int, int]
#: per planning key (or per span between keys), the safe positions
Safe = list[list[Interval]]
#: a set of text regions, with the number TextTrack names it by
Regions = tuple[int, tuple[Box, ...]]


def even_intervals(real: list[tuple[float, float]]) -> list[Interval]:
    out = []
    for lo, hi in real:
        a, b = math.ceil(lo / 2 - 1e-9) * 2, math.floor(hi / 2 + 1e-9) * 2
        if a <= b:
            out.append((a, b))
    return out


#: clearance round a text region, as a share of its glyphs' height, where that is more than the fixed text margin
CAPTION_SURROUND = 0.35


def text_clearance(box: Box, margin: float) -> float:
    """How far a crop edge keeps from a text region: a caption's backdrop, outline or shadow reaches past the
    glyphs the detector boxes, by about a third of the glyphs' height. That is the region's short side: a line
    may run up the frame (print on a turned box), and its length says nothing of its glyphs."""
    return max(margin, CAPTION_SURROUND * min(box[2] - box[0], box[3] - box[1]))


def safe_positions(line: CropLine, boxes: Sequence[Box], margin: float) -> list[Interval]:
    """Even crop positions at which every box is wholly inside the crop or wholly outside, with the margin.

    A box grown by the margin is clipped to the frame first: text the source itself shows at its edge is
    whole as far as any crop can tell, and a crop edge on the frame edge cuts nothing.
    """
    return _allowed(line, [f for box in boxes for f in _forbidden(line, box, margin)])


def _forbidden(line: CropLine, box: Box, margin: float) -> list[tuple[float, float]]:
    """The open intervals of positions at which the crop cuts the box."""
    c = line.crop
    a, b, p0, p1 = line.split(box)
    clearance = text_clearance(box, margin)
    a, b = max(0.0, a - clearance), min(float(line.length), b + clearance)
    p0, p1 = max(0.0, p0 - clearance), min(float(line.perp), p1 + clearance)
    if p1 <= line.q0 or p0 >= line.q1 or b <= a:
        return []  # never meets the crop's fixed span across the moving axis
    lead, trail = line.inset
    if p0 >= line.q0 and p1 <= line.q1 and b - a <= c - lead - trail:
        # the crop [x, x+c] cuts the box when it overlaps it without holding it inside its safe zone
        # [x+lead, x+c-trail] (the whole crop where there is none)
        return [(a - c, b - c + trail), (a - lead, b)]
    return [(a - c, b)]  # cannot be inside: must be wholly outside


def _allowed(line: CropLine, forbidden: list[tuple[float, float]]) -> list[Interval]:
    """The even positions that none of the forbidden intervals covers."""
    allowed: list[tuple[float, float]] = []
    lo, last = 0.0, float(line.last)
    for f0, f1 in sorted(forbidden):
        if f0 >= last:
            break
        if f1 <= lo:
            continue
        if f0 >= lo:
            # an interval's ends are safe (a crop edge on a box's margin), even where the next one starts
            allowed.append((lo, f0))
        lo = f1
    if lo <= last:
        allowed.append((lo, last))
    return even_intervals(allowed)


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out = []
    for a0, a1 in a:
        for b0, b1 in b:
            lo, hi = max(a0, b0), min(a1, b1)
            if lo <= hi:
                out.append((lo, hi))
    return out


def containing(intervals: list[Interval], position: float) -> Interval | None:
    for lo, hi in intervals:
        if lo <= position <= hi:
            return (lo, hi)
    return None


class TextTrack:
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
        merged = [merge_text_boxes(list(boxes)) for _, boxes in ordered]
        near = [_nearest_subject(subject, t) for t in self.times]
        # per sample and region: on the subject (True), beside a located subject (False), or no subject (None)
        placed = [
            [None if box is None else _on_subject(b, box) for b in regions]
            for regions, box in zip(merged, near, strict=True)
        ]
        beside = {
            b
            for regions, flags in zip(merged, placed, strict=True)
            for b, on in zip(regions, flags, strict=True)
            if on is False
        }
        self.boxes = [
            [b for b, on in zip(regions, flags, strict=True) if not on or _left_behind(b, beside)]
            for regions, flags in zip(merged, placed, strict=True)
        ]
        #: per run of samples, its regions (and a number naming the set, the same for equal sets); per line
        #: and margin, the safe positions of each set
        self._spans: dict[tuple[int, int], Regions] = {}
        self._ids: dict[tuple[Box, ...], int] = {}
        self._safe: dict[tuple[CropLine, float], dict[int, list[Interval]]] = {}
        self._keyed: dict[tuple[CropLine, float, bytes], tuple[Safe, Safe]] = {}
        self._by_keys: dict[bytes, tuple[list[Regions], list[Regions]]] = {}
        self._cuts: dict[tuple[CropLine, float], dict[Box, list[tuple[float, float]]]] = {}

    def safe_at_keys(self, line: CropLine, times: np.ndarray, margin: float) -> tuple[Safe, Safe]:
        """Per planning key, safe_between its neighbouring keys; per span between two keys, safe_between its
        ends. A plan asks this of the same line and keys again for every margin round the subject it tries,
        so each answer is worked out once; with no text every key's answer is the same."""
        n = len(times) - 1
        key = (line, margin, times.tobytes())
        if key not in self._keyed:
            if not self.times:
                everywhere = self.safe_between(line, float(times[0]), float(times[-1]), margin)
                self._keyed[key] = [everywhere] * (n + 1), [everywhere] * n
            else:
                at_keys, between = self._key_regions(times)
                # the keys see a few sets of regions, each asked of the line once
                sets = {r[0]: r for r in (*at_keys, *between)}
                safe = {number: self._safe_of(line, margin, r) for number, r in sets.items()}
                self._keyed[key] = [safe[r[0]] for r in at_keys], [safe[r[0]] for r in between]
        return self._keyed[key]

    def _key_regions(self, times: np.ndarray) -> tuple[list[Regions], list[Regions]]:
        """The regions safe_at_keys asks about at these keys: every line a plan tries has the same keys."""
        key = times.tobytes()
        if key not in self._by_keys:
            n, ends = len(times) - 1, times.tolist()
            self._by_keys[key] = (
                [self._regions(ends[max(0, i - 1)], ends[min(n, i + 1)]) for i in range(n + 1)],
                [self._regions(ends[i], ends[i + 1]) for i in range(n)],
            )
        return self._by_keys[key]

    def safe_between(self, line: CropLine, t0: float, t1: float, margin: float) -> list[Interval]:
        """safe_positions of every region that can be on screen at some time in [t0, t1]."""
        return self._safe_of(line, margin, self._regions(t0, t1))

    def _safe_of(self, line: CropLine, margin: float, regions: Regions) -> list[Interval]:
        """safe_positions of a set of regions. A plan asks this of every key of every line it tries, and
        neighbouring keys, like the same line grown or planned again, mostly see the same regions: each
        line's answer per set of regions is worked out once."""
        known = self._safe.setdefault((line, margin), {})
        number, boxes = regions
        if number not in known:
            # the same region is in many sets: its forbidden positions are worked out once per line
            cuts = self._cuts.setdefault((line, margin), {})
            for box in boxes:
                if box not in cuts:
                    cuts[box] = _forbidden(line, box, margin)
            known[number] = _allowed(line, [f for box in boxes for f in cuts[box]])
        return known[number]

    def _regions(self, t0: float, t1: float) -> Regions:
        """The regions that can be on screen in [t0, t1], with a number naming that set of regions."""
        if not self.times:
            return 0, ()
        first = max(0, bisect.bisect_right(self.times, t0 + 1e-9) - 1)
        last = min(len(self.times) - 1, bisect.bisect_left(self.times, t1 - 1e-9))
        if (first, last) not in self._spans:
            boxes = tuple(b for k in range(first, last + 1) for b in self.boxes[k])
            self._spans[first, last] = self._ids.setdefault(boxes, len(self._ids)), boxes
        return self._spans[first, last]


#: text lying this much inside the subject's box is print on the product (a logo, a label): it moves with
#: the subject, which the crop keeps inside, so it is no separate constraint (and as a constraint it would
#: fence the crop off the very subject it sits on)
ON_SUBJECT = 0.8
#: the subject's box grown by this share of its size on every side for that test: a located box is a few
#: per cent off the product's edges, and print at its edge reads as a caption beside it
SUBJECT_SLACK = 0.05
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


def _left_behind(box: Box, beside: Collection[Box]) -> bool:
    """Whether a region on the subject is, at some sample, in the same place beside the located subject
    (beside: every such region): it stays where the subject left it, or stood there before the subject grew
    or moved over it, a caption, not print moving with the subject. Neighbouring samples alone do not tell:
    text is timed at every frame, and a product that grows to cover a caption over half a second covers it
    at both neighbours of every frame but the first."""
    return any(iou(box, other) >= SAME_REGION_IOU for other in beside)


def _on_subject(box: Box, subject: Box | None) -> bool:
    if subject is None:
        return False
    grow_x, grow_y = SUBJECT_SLACK * (subject[2] - subject[0]), SUBJECT_SLACK * (subject[3] - subject[1])
    subject = (subject[0] - grow_x, subject[1] - grow_y, subject[2] + grow_x, subject[3] + grow_y)
    w = max(0.0, min(box[2], subject[2]) - max(box[0], subject[0]))
    h = max(0.0, min(box[3], subject[3]) - max(box[1], subject[1]))
    area = (box[2] - box[0]) * (box[3] - box[1])
    return area > 0 and w * h >= ON_SUBJECT * area
