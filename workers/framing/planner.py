"""The crop planner: for every aspect, a text-safe crop path that follows the subject over the window, crop
first, letterbox last.

For each aspect the largest crop is tried, then the crop spanning the frame within the aspect's slack (a few per
cent larger), then smaller ones placed past captions (zooms), then a path that
jumps inside a shot, as at a cut, between places and sizes of crop; only when none will do is the shown region
widened along the moving axis until a path exists (narrowed across it past text where that keeps the product
large: workers.framing.letterbox), and the clip letterboxed over a blurred fill (`padded`), with its reason
(PAD_REASONS). The path itself is planned per shot by
workers.framing.crop_paths; geometry is workers.geometry, text regions workers.text.regions. Pure: no I/O.

Kept whole: the ladder of tries for one aspect (largest, spanning, zooms, jumps, letterbox) shares one plan
state, and their order is the design; the arithmetic of each try is in crop_paths and geometry.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from core.placements import Placement, SafeZone
from workers.framing.crop_paths import (
    CUT_EPSILON_S,
    HELD_SHARE,
    FramingParams,
    Lane,
    Route,
    Segment,
    build_segment,
    route_positions,
    route_segment,
)
from workers.framing.letterbox import TEXT_LEFT_OUT, letterbox_lines
from workers.framing.picture_area import PictureFrame
from workers.framing.safe_zone import inset_grown, zoned
from workers.framing.title_safe import title_safe_share
from workers.geometry import (
    AspectSize,
    Box,
    CropLine,
    CropPath,
    CropRect,
    aspect_size,
    crop_line,
    even,
    even_down,
    even_up,
    spanning_size,
    zoomed_size,
)
from workers.text.regions import Interval, TextTrack, safe_positions, text_clearance, text_union

# Why a clip is letterboxed: cropping is the rule, these are the only exceptions.
PAD_SUBJECT_TOO_BIG = "the subject is larger than the crop"
PAD_TEXT_AND_SUBJECT = "text and subject cannot be separated"
PAD_NO_TEXT_SAFE_CROP = "every crop of this aspect cuts text"
PAD_REASONS = (PAD_SUBJECT_TOO_BIG, PAD_TEXT_AND_SUBJECT, PAD_NO_TEXT_SAFE_CROP)


@dataclass(frozen=True)
class FramingPlan:
    """One aspect's plan: crop rectangles at key times over the window, linear in between.

    When `padded`, the rectangles are the region shown letterboxed inside the output (they do not have the
    output's aspect); otherwise they have it, exactly for the aspect's largest crop and within
    workers.geometry.ZOOM_ASPECT_SLACK for a smaller one and for the frame-spanning one
    (workers.geometry.spanning_size) taken where the largest will not do.
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
    #: the crop's size as a share of the aspect's largest crop (above 1: the frame-spanning crop; below 1: zoomed
    #: in past captions; the smallest used, where the crop changes size at a jump)
    zoom: float = 1.0
    #: times inside a shot where the crop jumps to a new place or size, as at a cut: text kept a crop moving at
    #: the motion bounds off the subject
    jumps: tuple[float, ...] = ()
    #: when padded, the share of its fitted size at which the region is shown: small enough that its text keeps
    #: inside the clip's title-safe area (workers.framing.title_safe); 1 when cropped
    picture_share: float = 1.0
    #: the placement's safe zone the path keeps the product and the text it holds inside along its moving axis
    #: (workers.framing.safe_zone); None for an aspect's clip, or where keeping to it would letterbox the clip
    zone: SafeZone | None = None
    #: when padded, whether the region is narrowed across its moving axis to leave text beside the product out,
    #: so that the product is shown large (workers.framing.letterbox)
    text_left_out: bool = False

    @property
    def label(self) -> str:
        return self.size.label

    @property
    def reason_text(self) -> str | None:
        """What the manifest says of the letterbox: why, and what it leaves out."""
        if self.padded_reason is None or not self.text_left_out:
            return self.padded_reason
        return f"{self.padded_reason}; {TEXT_LEFT_OUT}"

    def crop_path(self) -> CropPath:
        return CropPath(tuple(t for t, _ in self.keys), tuple(r for _, r in self.keys))

    def key_tuples(self) -> list[tuple[float, int, int, int, int]]:
        """(t, x, y, w, h) per key: the JSON-able form the pipeline's Analysis stores."""
        return [(round(t, 4), r.x, r.y, r.w, r.h) for t, r in self.keys]


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


def _candidates(
    size: AspectSize, width: int, height: int, params: FramingParams
) -> tuple[CropLine, list[CropLine], list[CropLine]]:
    """The aspect's own crop; ever wider regions to letterbox, ending with the whole frame; and regions from
    the smallest zoom's length up to the crop's, which only a region narrowed across the moving axis may be
    (workers.framing.letterbox). Each spans the frame across the moving axis: it is letterboxed anyway."""
    first = crop_line(size.crop_w, size.crop_h, width, height)
    step = (first.length - first.crop) / params.pad_steps
    lengths = sorted({min(first.length, even(first.crop + k * step)) for k in range(1, params.pad_steps + 1)})
    # below the crop, steps of the same share of the crop's own length
    least, down = min(params.zooms, default=1.0), first.crop / params.pad_steps
    shorter = sorted({even(first.crop - k * down) for k in range(int(first.crop * (1 - least) / down) + 1)})
    spanning = [
        CropLine(first.axis, first.length, first.perp, n, 0, first.perp) for n in (*lengths, *shorter)
    ]
    return first, spanning[: len(lengths)], [line for line in spanning[len(lengths) :] if line.crop > 0]


def _grown(box: Box, share: float, line: CropLine) -> Box:
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


def crop_zooms(
    size: AspectSize,
    width: int,
    height: int,
    zooms: Sequence[float],
    regions: Sequence[Box],
    margin: float,
    subject: Sequence[Box],
) -> list[float]:
    """The smaller crops the planner tries, largest first: the fixed zooms, and between them the largest crop
    that fits across the moving axis between a text region's clearance and the frame's edge or another
    region's, where that band holds the subject's box across the axis (at some sample). A crop a few per
    cent too tall to pass a caption above or below the product would otherwise fall back to the next fixed
    zoom, which may be too small for the product: text and product that a crop can separate were
    letterboxed as if they could not be."""
    base = crop_line(size.crop_w, size.crop_h, width, height)
    across = base.q1 - base.q0
    starts, ends = [0.0], [float(base.perp)]
    for region in regions:
        _, _, r0, r1 = base.split(region)
        clearance = text_clearance(region, margin)
        starts.append(r1 + clearance)
        ends.append(r0 - clearance)
    spans = {base.split(box)[2:] for box in subject}
    # two pixels spare: the crop's place across the axis is rounded to even pixels
    fits = {
        (end - start - 2) / across
        for start in starts
        for end in ends
        if (start, end) != (0, base.perp) and any(start <= p0 and p1 <= end for p0, p1 in spans)
    }
    wanted = [*zooms, *(math.floor(z * 1000) / 1000 for z in fits if min(zooms, default=1.0) <= z < 1)]
    by_size: dict[tuple[int, int], float] = {}
    for zoom in sorted(wanted, reverse=True):
        by_size.setdefault(zoomed_size(size, zoom), zoom)
    return [zoom for crop, zoom in by_size.items() if 0 < crop[0] < size.crop_w]


def _zoomed(
    size: AspectSize,
    width: int,
    height: int,
    zoom: float,
    regions: Sequence[Box] = (),
    subject: Sequence[Box] = (),
    margin: float = 0.0,
    zone: SafeZone | None = None,
) -> list[CropLine]:
    """Crops of the aspect zoom times the largest one's size (exact aspect, even sides), moving on the same
    axis: a smaller crop can pass a caption that the largest one, spanning the frame, must cut or hold.

    Across the moving axis it is placed at the start, the middle and the end, just past each text region (its
    edge plus its clearance) on either side, and centred on the subject; the placements nearest the subject's
    centre are kept (MAX_ZOOM_PLACEMENTS): the planner takes the first that is text-safe and holds it."""
    crop_w, crop_h = zoomed_size(size, zoom)
    if crop_w == 0:
        return []
    base = crop_line(size.crop_w, size.crop_h, width, height)
    along, across = (crop_w, crop_h) if base.axis == 0 else (crop_h, crop_w)
    slack = (base.perp - across) // 2 * 2
    # even placements, rounded away from the text they pass
    wanted = [0, slack // 4 * 2, slack]
    for region in regions:
        _, _, r0, r1 = base.split(region)
        clearance = text_clearance(region, margin)
        wanted += [even_up(r1 + clearance), even_down(r0 - clearance - across)]
    spans = [base.split(box)[2:] for box in subject]
    centre = float(np.median([(p0 + p1) / 2 for p0, p1 in spans])) if spans else base.perp / 2
    wanted.append(round((centre - across / 2) / 2) * 2)
    placements = {min(slack, max(0, q)) for q in wanted}
    nearest = sorted(placements, key=lambda q: (abs(q + across / 2 - centre), q))[:MAX_ZOOM_PLACEMENTS]
    # where every text region is wholly inside or wholly outside the crop across the axis, the placement
    # nearest the subject in each such stretch: a placement passing one caption may cut another at the
    # frame's edge a few pixels off (a crop sized to the band between a top-corner price and a bottom caption
    # fits it only at the frame's top, which the nearest placements may leave out as a duplicate)
    across_line = CropLine(1 - base.axis, base.perp, base.length, across, 0, base.length)
    for lo, hi in safe_positions(across_line, regions, margin):
        nearest.append(min(hi, max(lo, even_down(centre - across / 2))))
    return [
        zoned(CropLine(base.axis, base.length, base.perp, along, q, q + across), zone)
        for q in sorted(set(nearest))
    ]


def _across_keys(segment: Segment, line: CropLine) -> np.ndarray:
    """Per key, whether the subject reaches past the crop's fixed span across its moving axis (a smaller
    crop's; the largest one spans the frame)."""
    boxes = segment.subject_boxes
    if boxes is None:
        return np.zeros(len(segment.times), dtype=bool)
    p0, p1 = (boxes[:, 1], boxes[:, 3]) if line.axis == 0 else (boxes[:, 0], boxes[:, 2])
    out: np.ndarray = (np.maximum(p0, 0.0) < line.q0) | (np.minimum(p1, float(line.perp)) > line.q1)
    return out


def _too_big_keys(segment: Segment, line: CropLine, held: float) -> np.ndarray:
    """Per key, whether the held share of the subject (within the frame) is longer than the crop along its
    moving axis."""
    boxes = segment.subject_boxes
    if boxes is None:
        return np.zeros(len(segment.times), dtype=bool)
    a, b = (boxes[:, 0], boxes[:, 2]) if line.axis == 0 else (boxes[:, 1], boxes[:, 3])
    # a box grown to exactly the crop's length (_grown) must not count as longer by a rounding error
    longer: np.ndarray = held * (np.minimum(b, float(line.length)) - np.maximum(a, 0.0)) > line.crop + 1e-6
    return longer


def _forced(segments: Sequence[Segment], line: CropLine) -> int:
    """Keys where the line has text-safe positions but none holds the subject (workers.framing.crop_paths.Lane.forced):
    misses on every path along it. Keys with no text-safe position at all are left to the planner, whose
    failure there says that every crop cuts text."""
    count = 0
    for segment in segments:
        lane = Lane(line, segment)
        count += sum(bool(safe) and lane.forced(i) for i, safe in enumerate(segment.safe))
    return count


def _across_misses(segments: Sequence[Segment], line: CropLine) -> int:
    """Keys where the subject reaches past the crop's fixed span across its moving axis."""
    return sum(int(_across_keys(segment, line).sum()) for segment in segments)


def _too_big(segments: Sequence[Segment], line: CropLine, held: float = HELD_SHARE) -> tuple[int, int]:
    """(keys, keys where the held share of the subject is longer than the crop)."""
    return (
        sum(len(segment.times) for segment in segments),
        sum(int(_too_big_keys(segment, line, held).sum()) for segment in segments),
    )


def _pad_reason(failed: set[str]) -> str:
    """Why no crop would do, from why each crop tried failed: the subject's size when the largest crop cannot
    hold it (nor can smaller ones); text alone only when no crop failed for the subject (one that passes the
    text but not the subject says they cannot be separated)."""
    for reason in PAD_REASONS:
        if reason in failed:
            return reason
    raise AssertionError("a letterbox needs a crop that failed")


@dataclass(frozen=True)
class _LinePlan:
    #: per shot, the lanes its route keeps to: one line's, or several that it jumps between
    shots: Sequence[Sequence[Lane]]
    routes: list[Route]
    params: FramingParams

    @property
    def moves(self) -> bool:
        return any(route.moves for route in self.routes)

    @property
    def zoom(self) -> float:
        return min(
            lanes[k].zoom for lanes, route in zip(self.shots, self.routes, strict=True) for k in route.lanes
        )

    @property
    def jumps(self) -> tuple[float, ...]:
        return tuple(
            float(lanes[0].segment.times[i])
            for lanes, route in zip(self.shots, self.routes, strict=True)
            for i in route.jumps
        )

    @cached_property
    def positions(self) -> list[list[int]]:
        """Per shot, the crop's positions at its keys (one when steady), smoothed: where the clip's crop is."""
        return [
            route_positions(route, lanes, self.params)
            for lanes, route in zip(self.shots, self.routes, strict=True)
        ]

    @property
    def misses(self) -> int:
        """Planning keys where the dynamic programme's path misses the subject though it would fit (at its grid's
        positions: never fewer than crop_misses)."""
        return sum(route.misses for route in self.routes)

    @cached_property
    def crop_misses(self) -> int:
        """Planning keys where the crop, at its smoothed positions, misses the subject.

        The dynamic programme counts misses at its grid's positions, coarser than the crop's (a path that may
        jump plans every lane at once, on a coarser grid still): where its grid point missed by a few pixels,
        the crop smoothed inside the same text-safe corridor often holds the subject. Counting the grid's
        misses alone letterboxed clips whose crops held the product."""
        return self._missed([[(p, p) for p in positions] for positions in self.positions])

    @property
    def sure_misses(self) -> int:
        """Planning keys where no position of the path's corridor holds the subject: misses of any crop smoothed
        inside it (a lower bound of crop_misses, known without smoothing)."""
        return self._missed([route.corridors for route in self.routes])

    def _missed(self, spans: Sequence[Sequence[Interval]]) -> int:
        """Keys of moving routes whose span (per shot, per key) misses the subject on the key's lane (a steady
        crop holds the subject at every key)."""
        return sum(
            lanes[route.lane_at(i)].misses(i, span)
            for lanes, route, shot in zip(self.shots, self.routes, spans, strict=True)
            if route.moves
            for i, span in enumerate(shot)
        )

    def within(self, allowed: float) -> bool:
        """Whether the crop misses the subject at no more than `allowed` keys; its positions are smoothed only
        when the grid's count is too high and the corridors' is not."""
        if self.misses <= allowed:
            return True
        return self.sure_misses <= allowed and self.crop_misses <= allowed

    def framing(
        self,
        size: AspectSize,
        regions: Sequence[Box],
        zoom: float = 1.0,
        reason: str | None = None,
    ) -> FramingPlan:
        """The aspect's plan on these routes: letterboxed when there is a reason."""
        return FramingPlan(
            size, self.keys(), reason is not None, tuple(regions), self.moves, reason, zoom, self.jumps
        )

    def keys(self) -> tuple[tuple[float, CropRect], ...]:
        """Key rectangles over every shot of the window (smoothed now: only a chosen plan needs them)."""
        keys: list[tuple[float, CropRect]] = []
        shots = zip(self.shots, self.routes, self.positions, strict=True)
        for k, (lanes, route, positions) in enumerate(shots):
            times = lanes[0].segment.times
            if route.moves:
                for i, (t, p) in enumerate(zip(times, positions, strict=True)):
                    if i in route.jumps:
                        # the crop holds its place up to the jump, as up to a cut
                        before = lanes[route.lane_at(i - 1)].line
                        keys.append((float(t) - CUT_EPSILON_S, before.rect(positions[i - 1])))
                    keys.append((float(t), lanes[route.lane_at(i)].line.rect(p)))
            else:
                line = lanes[0].line
                keys.append((float(times[0]), line.rect(positions[0])))
                if k < len(self.shots) - 1:
                    keys.append((float(times[-1]), line.rect(positions[0])))
        return tuple(keys)


def _plan_lanes(
    shots: Sequence[Sequence[Lane]], params: FramingParams, miss_share: float, jumps: bool = False
) -> _LinePlan | None:
    """The routes over every shot of the window; None when a shot has no text-safe path that misses the
    subject at most miss_share of its keys."""
    routes = []
    for lanes in shots:
        route = route_segment(lanes, params, miss_share, jumps)
        if route is None:
            return None
        routes.append(route)
    return _LinePlan(shots, routes, params)


def _plan_line(
    line: CropLine, segments: Sequence[Segment], params: FramingParams, miss_share: float
) -> _LinePlan | None:
    """The routes over every shot of the window on this line."""
    return _plan_lanes([[Lane(line, segment)] for segment in segments], params, miss_share)


def _lanes(
    lines: Sequence[tuple[float, CropLine]],
    segments_on: Callable[[CropLine, TextTrack, float], list[Segment]],
    track: TextTrack,
    no_text: TextTrack,
    params: FramingParams,
) -> list[list[Lane]]:
    """Per shot, the lanes worth planning: the aspect's largest crop, and a smaller one (the lines in order of
    size) only where it holds the subject text-safely at a key no larger one does. A smaller crop must hold
    all of the subject, inside its span across the moving axis: the keys where it cannot are its lane's lost
    ones."""
    crop = lines[0][1]
    shots = [[Lane(crop, segment)] for segment in segments_on(crop, track, 0.0)]
    covered = [
        np.array([not lanes[0].forced(i) for i in range(len(lanes[0].segment.times))]) for lanes in shots
    ]
    for zoom, line in lines[1:]:
        grown = segments_on(line, no_text, params.zoom_margin)
        lost = [
            _too_big_keys(bare, line, 1.0) | _across_keys(own, line)
            for bare, own in zip(grown, segments_on(line, no_text, 0.0), strict=True)
        ]
        if all((lost_k | seen).all() for lost_k, seen in zip(lost, covered, strict=True)):
            continue  # nowhere a subject the larger crops miss is inside it
        for k, segment in enumerate(segments_on(line, track, params.zoom_margin)):
            lane = Lane(line, segment, zoom, lost[k])
            holds = np.array([not lane.forced(i) for i in range(len(segment.times))])
            if (holds & ~covered[k]).any():
                shots[k].append(lane)
                covered[k] |= holds
    return shots


def _plan_aspect(
    size: AspectSize,
    width: int,
    height: int,
    spans: list[tuple[float, float]],
    subject: Sequence[tuple[float, Box | None]],
    track: TextTrack,
    params: FramingParams,
    regions: list[Box],
    stand_ins: frozenset[float],
    every_text: TextTrack,
    zone: SafeZone | None = None,
) -> FramingPlan:
    """Crop first: the aspect's largest crop, else a smaller one (params.zooms) placed to pass captions at the
    frame's edge, follows the subject as well as text safety and the motion bounds allow. The clip is
    letterboxed (the shown region widened) only when no such crop will do: the product is larger than the
    crop, or text keeps the crop off a product that would fit, at more than pad_share of the keys, or every
    crop cuts text. A face or a salient region standing in for a product not found justifies only the last.
    A letterboxed region holds every text region whole or leaves it out, print on the product too (every_text,
    where track leaves print out): it holds the product, print and all, so that costs it nothing but a caption the product
    covers, which as print it would have cut."""
    text_margin = params.text_margin * min(width, height)
    # subject samples this far beyond a window edge (not a cut) still describe the same shot
    reach = max(1.0, params.key_step_s)

    # the same line's segments are asked for again (the fallbacks below plan lines the loop tried)
    built: dict[tuple[CropLine, int, float], list[Segment]] = {}

    def segments_on(line: CropLine, text: TextTrack, grow: float = 0.0) -> list[Segment]:
        # the tracks asked about (track, every_text, none) live as long as the plan: their ids tell them apart
        key = (line, id(text), grow)
        if key not in built:
            built[key] = _segments_on(line, text, grow)
        return built[key]

    def _segments_on(line: CropLine, text: TextTrack, grow: float) -> list[Segment]:
        return [
            build_segment(
                line,
                t0,
                t1,
                k == len(spans) - 1,
                [
                    (t, _grown(inset_grown(b, line), grow, line))
                    for t, b in _subject_samples(subject, t0, t1, k > 0, k < len(spans) - 1, reach)
                ],
                text,
                params,
                text_margin,
            )
            for k, (t0, t1) in enumerate(spans)
        ]

    crop, wider, shorter = _candidates(size, width, height, params)
    # a crop keeps to the zone; a letterboxed region (wider) is measured against it, as it is shown centred
    crop = zoned(crop, zone)
    subject_boxes = [box for _, box in subject if box is not None]
    stand_in_only = bool(stand_ins) and all(t in stand_ins for t, box in subject if box is not None)
    # segments without text: what the subject alone asks of a line, known before the costlier text-safe
    # segments are built (most lines tried fail on the subject's size)
    no_text = TextTrack([])
    failed: set[str] = set()
    lines = [
        (1.0, crop),
        *(
            (z, z_line)
            for z in crop_zooms(size, width, height, params.zooms, regions, text_margin, subject_boxes)
            for z_line in _zoomed(size, width, height, z, regions, subject_boxes, text_margin, zone)
        ),
    ]
    # the planning keys are the same on every line (the letterbox regions below count against them too)
    keys = _too_big(segments_on(crop, no_text), crop)[0]
    limit = params.pad_share * keys

    def attempt(zoom: float, line: CropLine, grow: float) -> FramingPlan | None:
        """The line's plan if it follows the subject past the text, holding its box grown by grow (a share of
        its size, as far as the crop has room); None, with the reason added to failed, if not."""
        # a smaller crop is a choice, not the rule: it must hold the subject, whatever makes it miss; across its
        # moving axis that is the subject's own box (the margin only steers the path), known before planning
        # and whatever the margin (checked first: the second pass's margin need not build segments for it)
        across = _across_misses(segments_on(line, no_text), line) if zoom < 1 else 0
        if across > limit and not stand_in_only:
            failed.add(PAD_TEXT_AND_SUBJECT)
            return None
        bare = segments_on(line, no_text, grow)
        # a smaller crop is a choice: it must be able to hold the whole subject, not only its held share (the
        # margin it must hold is only what room the crop has: without this, the smallest crop passed a subject
        # longer than itself)
        too_big = _too_big(bare, line, held=HELD_SHARE if zoom >= 1 else 1.0)[1]
        # a face or a salient region standing in for a product not found is cropped however large
        if too_big > limit and not stand_in_only:
            # a smaller crop is only tried past text: the subject too big for it is one text keeps out
            failed.add(PAD_SUBJECT_TOO_BIG if zoom >= 1 else PAD_TEXT_AND_SUBJECT)
            return None
        if zoom < 1 and not stand_in_only and _forced(segments_on(line, track, grow), line) + across > limit:
            # keys where every text-safe position misses the subject are misses on any path: too many rule the
            # smaller crop out without planning it (most of those sized to pass a caption fail so)
            failed.add(PAD_TEXT_AND_SUBJECT)
            return None
        cropped = _plan_line(line, segments_on(line, track, grow), params, miss_share=1.0)
        if cropped is None:
            failed.add(PAD_NO_TEXT_SAFE_CROP)
            return None
        if stand_in_only or cropped.misses + across <= limit:
            return cropped.framing(size, regions, zoom)
        if zoom >= 1:
            # misses the motion bounds alone would cause (an erratic subject) are the crop's to take; only those
            # that text adds justify showing a wider, letterboxed region, and only for the product itself
            free = _plan_line(line, bare, params, miss_share=1.0)
            if cropped.misses - (free.misses if free is not None else 0) <= limit:
                return cropped.framing(size, regions, zoom)
        if cropped.within(limit - across):
            return cropped.framing(size, regions, zoom)
        failed.add(PAD_TEXT_AND_SUBJECT)
        return None

    # the exact aspect's grid leaves its largest crop a few per cent short of the frame: where it will not do (a
    # subject that much too big for it, a caption that much too wide to hold whole), the frame-spanning crop of
    # the aspect within its slack may, scaled down to the output, before smaller crops scaled up (the exact crop
    # stays first: it is copied, not scaled); the later fallbacks keep to the exact crop and the smaller ones
    spanning = spanning_size(size, width, height)
    first = (
        [(spanning[0] / size.crop_w, zoned(crop_line(*spanning, width, height), zone))] if spanning else []
    )
    for zoom, line in [lines[0], *first, *lines[1:]]:
        # a smaller crop leaves less room for error in the subject's box: it must hold the box grown by a margin
        plan = attempt(zoom, line, 0.0 if zoom >= 1 else params.zoom_margin)
        if plan is not None:
            return plan
    if PAD_SUBJECT_TOO_BIG not in failed:
        # no one crop follows the subject past the text: one that jumps inside a shot, as at a cut, to another
        # place or size may (the product crossing the frame past a corner caption, or near and then far)
        shots = _lanes(lines, segments_on, track, no_text, params)
        mixed = _plan_lanes(shots, params, miss_share=1.0, jumps=True)
        if mixed is not None and mixed.within(limit):
            return mixed.framing(size, regions, mixed.zoom)
    # a smaller crop holding the subject with half the margin still beats a letterbox: between a caption it
    # must hold and one it must leave out, the full margin on both sides may be the few pixels it lacks
    for zoom, line in lines[1:]:
        plan = attempt(zoom, line, params.zoom_margin / 2)
        if plan is not None:
            return plan
    reason = _pad_reason(failed)
    out = (size.out_w, size.out_h)
    for line, leaves_out in letterbox_lines(wider, shorter, out, regions, text_margin, subject_boxes):
        # a region shorter than the whole subject (not only its held share) at too many keys is passed over,
        # whatever the reason: a letterbox shows the product whole
        if _too_big(segments_on(line, no_text), line, 1.0)[1] > params.pad_share * keys:
            continue  # a region the subject does not fit either
        padded = _plan_line(
            line, segments_on(line, every_text, params.zoom_margin), params, params.subject_miss
        )
        if padded is not None:
            plan = padded.framing(size, regions, reason=reason)
            # one share for the whole clip: a picture that changed size would pulse
            share = min(title_safe_share(r, size.out_w, size.out_h, regions) for _, r in plan.keys)
            return replace(plan, picture_share=share, text_left_out=leaves_out)
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
    picture: Box | None = None,
    placements: Sequence[Placement] = (),
) -> dict[str, FramingPlan]:
    """Plan every aspect's crop over the window [start, end) of a width×height source, in one pass over the
    same signals. Times are source seconds; boxes are (x0, y0, x1, y1) in source pixels.

    subject: the subject's box (or None) at sample times; text: the text regions detected at sample times
    (include the samples just outside the window: text on screen at the window's edges is seen there);
    cuts: shot cut times, where the crop may jump; stand_ins: sample times whose subject is not the product but
    what stands in for it (faces, saliency): one larger than the crop is cropped, not letterboxed, as only the
    product's size justifies showing the whole frame. picture: the source's picture inside black bars
    (workers.framing.picture_area), which crops and letterboxed regions stay inside as they stay inside the frame. Pure:
    no I/O.

    placements: planned beside the aspects, keyed by name, each keeping the product and the text it holds inside
    its safe zone along the crop's moving axis (workers.framing.safe_zone) unless only a letterbox would: then
    planned as its aspect is.
    """
    if end <= start:
        raise ValueError(f"empty window [{start}, {end})")
    # inside black bars the picture is planned as if it were the whole source, the plans moved back after
    origin = None if picture is None else PictureFrame.of(picture)
    if origin is not None:
        width, height = origin.width, origin.height
        subject = [(t, None if b is None else origin.inside(b)) for t, b in subject]
        text = [(t, origin.text_inside(boxes)) for t, boxes in text]
    # text on the product is print on it (it moves with the product); on a face or a salient region standing
    # in for a product not found it is a caption, and stays a constraint
    stand_in_times = frozenset(stand_ins)
    track = TextTrack(text, [(t, b) for t, b in subject if t not in stand_in_times])
    every_text = TextTrack(text)
    segments = _segments(start, end, cuts)
    regions = text_union(text, start, end)

    def plan(size: AspectSize, zone: SafeZone | None = None) -> FramingPlan:
        planned = _plan_aspect(
            size, width, height, segments, subject, track, params, regions, stand_in_times, every_text, zone
        )
        if origin is None:
            return planned
        return replace(
            planned, keys=origin.back_keys(planned.keys), text_boxes=origin.back_boxes(planned.text_boxes)
        )

    plans: dict[str, FramingPlan] = {}
    for aspect in aspects:
        size = aspect_size(aspect, width, height, max_side)
        plans[size.label] = plan(size)
    for placement in placements:
        # the clip's size is the placement's: the crop's only sets how far it is enlarged (workers.geometry)
        size = aspect_size(placement.aspect, width, height)
        kept = plan(size, placement.safe)
        # where only a letterbox keeps to the zone, the clip is planned as its aspect's is: cropped if it can be
        plans[placement.name] = plan(size) if kept.padded else replace(kept, zone=placement.safe)
    return plans
