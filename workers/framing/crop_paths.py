"""One shot's crop path along its moving axis: planning keys with their text-safe and subject-holding positions,
a dynamic programme that picks a corridor through them, and a smoothing pass with bounded speed and
acceleration. Pure: no I/O.

With the largest crop of an aspect, one side of the crop spans the whole frame, so the crop moves along ONE
axis only: planning is a 1-D problem per aspect ("the moving axis", length L, crop length c, positions
0..L-c). Per planning key (every key_step_s) the positions that keep every text region wholly inside or
wholly outside the crop (with a margin) form a union of intervals. A dynamic programme over an even grid of
positions picks which interval the crop uses at every key (include or exclude each caption) while tracking
the subject; a box-constrained quadratic programme then smooths the path inside those intervals with bounded
velocity and acceleration. A segment (the window split at shot cuts) whose constraints admit one position
throughout gets a steady crop.

Where text stands between every such path and the subject, the programme may instead plan several lines at
once (lanes: crops of other sizes or places across the moving axis) and jump between them, and along them,
inside a shot as at a cut.

Kept whole: the planning keys, the corridor programme and the smoothing share one model of a shot (Segment,
Lane, the position grid); apart, each would re-derive the others' indexing.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from workers.geometry import Box, CropLine
from workers.text.regions import Interval, TextTrack, containing, intersect


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
    #: a smaller crop, and a letterboxed region, must hold the subject's box grown by this share of its size on
    #: every side (as far as it can): both depart from the aspect's own crop to show the product, and a located
    #: box is a few per cent off the product's edges
    zoom_margin: float = 0.15
    #: region widths tried, evenly from the aspect's crop up to the whole frame, before padding gives up: fine
    #: enough that the first to hold the product shows it within a few per cent of its fitted size
    pad_steps: int = 16
    #: positions tried by the dynamic programme on the moving axis (more is finer and slower)
    max_states: int = 400
    #: where no crop moving at the bounds above can follow the subject past text, the crop may instead jump to
    #: it at once inside a shot, as at a cut; each part between jumps (and cuts) lasts at least this long
    reframe_hold_s: float = 0.5
    #: positions per line tried by the dynamic programme that may jump between lines (it plans every line at
    #: once, so coarser: the path is smoothed to the pixel inside the corridors it picks)
    reframe_states: int = 100


#: a cut repositions the crop within this many seconds (keys straddle the cut)
CUT_EPSILON_S = 1e-3


def _subject_at(samples: Sequence[tuple[float, Box]], times: np.ndarray) -> np.ndarray | None:
    """Subject boxes at the key times: linear between samples, held beyond them. None without samples."""
    if not samples:
        return None
    st = np.array([t for t, _ in samples])
    boxes = np.array([b for _, b in samples], dtype=np.float64)
    return np.stack([np.interp(times, st, boxes[:, k]) for k in range(4)], axis=1)


@dataclass(frozen=True)
class Segment:
    """One shot's part of the window, with its planning keys and per-key constraints."""

    times: np.ndarray
    #: text-safe positions at each key (regions possibly on screen between its neighbouring keys)
    safe: list[list[Interval]]
    #: text-safe positions for the span between key i and i+1 (a path between them stays in one of these)
    between: list[list[Interval]]
    #: positions keeping the subject inside with its margin, per key (None: no subject, or too big)
    subject: list[Interval | None]
    #: positions keeping the subject inside at all (no margin): a wish second only to text safety
    inside: list[Interval | None]
    #: positions keeping the subject's central HELD_SHARE inside: the requirement, where the rest is a wish
    held: list[Interval | None]
    #: desired crop position (subject centred) per key
    target: np.ndarray
    #: the subject's box per key (None: no subject samples in the segment)
    subject_boxes: np.ndarray | None


#: a subject is too big for a crop, and a reason to letterbox, only when this share of its box's length is
#: longer than the crop: a located box is no more exact than a few per cent (on bench/quality.py's tuning half
#: one was 291 px tall where the product was 269, against a crop 288 px tall), and demanding every last pixel
#: letterboxed a product that fits. Where the whole box fits the crop the path holds it whole; where only this
#: share does, the path must hold that, centred (left free there, text pushed such crops off the product).
#: Where text keeps every crop a few pixels off a box that fits, holding this share is holding the product too:
#: the edge is trimmed rather than the clip letterboxed.
HELD_SHARE = 0.95


#: a span's ends: one span's, or every key's at once
Ends = TypeVar("Ends", float, np.ndarray)


def held_span(a: Ends, b: Ends) -> tuple[Ends, Ends]:
    """The central HELD_SHARE of [a, b]."""
    trim = (1 - HELD_SHARE) / 2 * (b - a)
    return a + trim, b - trim


def build_segment(
    line: CropLine,
    t0: float,
    t1: float,
    last: bool,
    subject: Sequence[tuple[float, Box]],
    text: TextTrack,
    params: FramingParams,
    text_margin: float,
) -> Segment:
    n = max(1, math.ceil((t1 - t0) / params.key_step_s - 1e-9))
    times = np.linspace(t0, t1, n + 1)
    if not last:
        times[-1] = max(times[-2] if n > 1 else t0, t1 - CUT_EPSILON_S)
    safe, between = text.safe_at_keys(line, times, text_margin)
    boxes = _subject_at(subject, times)
    if boxes is None:
        none: list[Interval | None] = [None] * (n + 1)
        return Segment(times, safe, between, none, none, none, np.full(n + 1, line.last / 2), boxes)
    a, b = (boxes[:, 0], boxes[:, 2]) if line.axis == 0 else (boxes[:, 1], boxes[:, 3])
    target = np.clip((a + b) / 2 - line.crop / 2, 0.0, float(line.last))
    margin = params.subject_margin * line.crop
    held = _fits(line, *held_span(a, b))
    inside = [whole or share for whole, share in zip(_fits(line, a, b), held, strict=True)]
    return Segment(times, safe, between, _fits(line, a - margin, b + margin), inside, held, target, boxes)


def _fits(line: CropLine, a: np.ndarray, b: np.ndarray) -> list[Interval | None]:
    """Per key, the even positions whose crop holds [a, b]; clipped to the frame, since a subject touching the
    frame's edge is as inside as it can be. None when it is longer than the crop."""
    a, b = np.maximum(a, 0.0), np.minimum(b, float(line.length))
    # even_intervals' rounding, over every key at once (a planning pass asks this of every key of every line)
    lo = np.ceil(np.maximum(b - line.crop, 0.0) / 2 - 1e-9) * 2
    hi = np.floor(np.minimum(a, float(line.last)) / 2 + 1e-9) * 2
    return [
        (p, q) if p <= q else None
        for p, q in zip(lo.astype(np.int64).tolist(), hi.astype(np.int64).tolist(), strict=True)
    ]


def _steady(segment: Segment, line: CropLine) -> int | None:
    """One position valid at every key (text-safe, subject inside), nearest the median subject position."""
    allowed: list[Interval] = [(0, line.last)]
    for safe, margin, inside in zip(segment.safe, segment.subject, segment.inside, strict=True):
        # a subject too long for its margin must still be inside: without it a steady crop pushed off the
        # subject by text would count no miss; one that text keeps off part of it is a moving crop's to follow
        holds = margin if margin is not None else inside
        allowed = intersect(allowed, safe if holds is None else intersect(safe, [holds]))
        if not allowed:
            return None
    want = float(np.median(segment.target))
    best = min(
        allowed, key=lambda iv: 0.0 if iv[0] <= want <= iv[1] else min(abs(want - iv[0]), abs(want - iv[1]))
    )
    return int(min(max(round(want / 2) * 2, best[0]), best[1]))


# DP costs, in units of the moving axis's length: tracking is the base; a subject outside the crop (its held
# share not inside) costs as much as being a whole frame off target fifty times over, so text safety (hard)
# wins, then the subject; trimming the subject's edge (held share inside, not all of it) comes next.
SUBJECT_MISS_COST = 50.0
TRIM_COST = 5.0
MARGIN_MISS_COST = 0.5
MOVE_COST = 0.05
#: a jump (a reframe inside a shot, as at a cut) costs as much as two keys without the subject: worth it only
#: to show the product where text keeps a moving crop off it
JUMP_COST = 2 * SUBJECT_MISS_COST
#: a smaller crop costs this much per key for each share of the largest one's size it gives up: the crop is
#: scaled up from it, so it is the lesser choice where both hold the product
ZOOM_COST = 1.0


@dataclass(frozen=True)
class Lane:
    """A line the crop may keep to over one shot, with the shot's constraints on it: the planner's one line, or
    one of several (crops of different sizes and places across the moving axis) a path may jump between."""

    line: CropLine
    segment: Segment
    #: the crop's size as a share of the aspect's largest (a smaller crop is the lesser choice)
    zoom: float = 1.0
    #: per key, whether no position on this line holds the subject at all (a smaller crop's: the subject is
    #: longer than it, or reaches past its span across the moving axis); None: never
    lost: np.ndarray | None = None

    def misses(self, i: int, span: Interval) -> bool:
        """Whether no position of span (an interval of positions, or one position twice) holds the subject's held
        share at key i: where the subject is too big for the crop nothing is a miss, where the lane cannot hold
        it at all everything is."""
        held = self.segment.held[i]
        if self.lost is not None and self.lost[i]:
            return True
        return held is not None and (span[1] < held[0] or span[0] > held[1])

    def forced(self, i: int) -> bool:
        """Whether key i misses the subject on every text-safe position of this lane."""
        held = self.segment.held[i]
        if self.lost is not None and self.lost[i]:
            return True
        return held is not None and not intersect(self.segment.safe[i], [held])


def _grid(line: CropLine, states: int) -> tuple[np.ndarray, int]:
    """A lane's even positions for the dynamic programme (`states` at most), and their spacing."""
    last = line.last
    step = max(2, math.ceil(last / states / 2) * 2)
    grid = np.arange(0, last + 1, step, dtype=np.float64)
    if grid[-1] != last:
        grid = np.append(grid, float(last))
    return grid, step


def _moves(
    grid: np.ndarray, step: int, line: CropLine, dt: float, params: FramingParams
) -> tuple[np.ndarray, np.ndarray]:
    """Per target position, the sources within one key's move (rows: offsets, clipped to the grid) and each
    move's cost (infinite beyond the speed limit or off the grid)."""
    scale = float(line.length)
    reach = params.max_speed * scale * dt + step
    # A move spans at most `band` grid points (the speed limit), so each step looks at a band of sources per
    # target instead of every pair: offsets ascend, so ties go to the lowest source as a dense argmin's would.
    size = len(grid)
    band = min(size - 1, math.ceil(reach / step) + 1)
    sources = np.arange(size)[None, :] + np.arange(-band, band + 1)[:, None]
    inside = (sources >= 0) & (sources < size)
    sources = np.clip(sources, 0, size - 1)
    jump = np.abs(grid[sources] - grid[None, :])
    return sources, np.where(inside & (jump <= reach), MOVE_COST * (jump / scale) ** 2 / dt, np.inf)


def _members(grid: np.ndarray, per_key: Sequence[list[Interval]]) -> np.ndarray:
    """Per key and position, the index of the interval holding it (-1: none)."""
    ids = np.full((len(per_key), len(grid)), -1)
    for i, intervals in enumerate(per_key):
        for k, (lo, hi) in enumerate(intervals):
            ids[i, (grid >= lo) & (grid <= hi)] = k
    return ids


def _node_costs(lane: Lane, grid: np.ndarray) -> np.ndarray:
    """Per key and position, the cost of the crop there: off target, the subject not held (or trimmed, or
    without its margin), the lane's smaller crop; infinite where text would be cut."""
    segment = lane.segment
    scale = float(lane.line.length)

    def outside(fits: Sequence[Interval | None]) -> np.ndarray:
        lo = np.array([-np.inf if f is None else f[0] for f in fits])[:, None]
        hi = np.array([np.inf if f is None else f[1] for f in fits])[:, None]
        distance: np.ndarray = np.maximum(np.maximum(lo - grid[None, :], grid[None, :] - hi), 0.0)
        return distance

    cost = ((grid[None, :] - segment.target[:, None]) / scale) ** 2
    tight = outside(segment.held)
    cost = cost + np.where(tight > 0, SUBJECT_MISS_COST * (1.0 + tight / scale), 0.0)
    cost = cost + np.where(outside(segment.inside) > 0, TRIM_COST, 0.0)
    cost = cost + np.where(outside(segment.subject) > 0, MARGIN_MISS_COST, 0.0)
    if lane.zoom < 1:
        cost = cost + ZOOM_COST * (1 - lane.zoom)
    if lane.lost is not None:
        cost = cost + np.where(lane.lost[:, None], SUBJECT_MISS_COST, 0.0)
    return np.where(_members(grid, segment.safe) >= 0, cost, np.inf)


@dataclass(frozen=True)
class _Stack:
    """Every lane's positions side by side, so that one step of the dynamic programme is one array operation
    however many lanes there are; a move never leaves its lane (only a jump does)."""

    values: np.ndarray
    #: the lane of each position
    lane: np.ndarray
    #: per target position, the sources of a move (rows: offsets) and their costs
    sources: np.ndarray
    move: np.ndarray
    #: per key and position, the position's cost
    node: np.ndarray
    #: per span between keys and position, which text-safe interval of its lane holds it (-1: none), unique
    #: across lanes
    between: np.ndarray

    @staticmethod
    def of(lanes: Sequence[Lane], states: int, dt: float, params: FramingParams) -> _Stack:
        values, lane_of, sources, moves, nodes, between = [], [], [], [], [], []
        offset = ids = 0
        for k, lane in enumerate(lanes):
            grid, step = _grid(lane.line, states)
            lane_sources, move = _moves(grid, step, lane.line, dt, params)
            moves.append(move)
            sources.append(lane_sources + offset)
            values.append(grid)
            lane_of.append(np.full(len(grid), k))
            nodes.append(_node_costs(lane, grid))
            members = _members(grid, lane.segment.between)
            between.append(np.where(members >= 0, members + ids, -1))
            ids += max((len(iv) for iv in lane.segment.between), default=0)
            offset += len(grid)
        rows = max(len(m) for m in moves)
        # lanes with a narrower band: the missing offsets repeat a source at infinite cost
        sources = [np.vstack([s, np.repeat(s[:1], rows - len(s), axis=0)]) for s in sources]
        moves = [np.vstack([m, np.full((rows - len(m), m.shape[1]), np.inf)]) for m in moves]
        return _Stack(
            np.concatenate(values),
            np.concatenate(lane_of),
            np.hstack(sources),
            np.hstack(moves),
            np.hstack(nodes),
            np.hstack(between),
        )


@dataclass(frozen=True)
class _Path:
    """The dynamic programme's answer: per key the corridor kept to, the keys missing the subject, where the
    path jumps and the lane of each part between jumps."""

    corridors: list[Interval]
    misses: int
    jumps: tuple[int, ...]
    lanes: tuple[int, ...]


def _corridors(lanes: Sequence[Lane], params: FramingParams, jumps: bool) -> _Path | None:
    """The text-safe interval the crop uses at every key, chosen by dynamic programming over the lanes' even
    positions (params.max_states of one line, params.reframe_states per lane of a path that may jump); None if
    no text-safe path exists.

    Without jumps the crop moves within one text-safe interval between keys (it would cut a caption passing
    it) at bounded speed, on one lane. A jump (only when `jumps`) reframes at once, as at a cut, to any
    position of any lane: the crop can leave a product's old side of a caption for its new one, or take a
    smaller crop while the product is small. The state is then the position and how many keys the current
    part has lasted (up to params.reframe_hold_s, the shortest part allowed)."""
    times = lanes[0].segment.times
    n = len(times)
    dt = float(times[1] - times[0]) if n > 1 else params.key_step_s
    stack = _Stack.of(lanes, params.reframe_states if jumps else params.max_states, dt, params)
    size = len(stack.values)
    targets = np.arange(size)
    hold = max(1, round(params.reframe_hold_s / dt)) if jumps else 1
    # row r: the current part has lasted r + 1 keys (the last row: at least the hold, free to jump)
    cost = np.full((hold, size), np.inf)
    cost[0] = stack.node[0]
    rows = np.minimum(np.arange(hold) + 1, hold - 1)
    # per step: per (row, position) the row and position it came from and whether it jumped there
    back: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    # the moves each span between keys allows: text keeps the same intervals over most spans
    allowed: dict[bytes, np.ndarray] = {}
    row_index, target_index = np.arange(hold)[:, None], targets[None, :]
    zero_rows, no_jumps = np.zeros((1, size), dtype=int), np.zeros((1, size), dtype=bool)
    for i in range(1, n):
        ids = stack.between[i - 1]
        move = allowed.get(ids.tobytes())
        if move is None:
            same = (ids[stack.sources] == ids[None, :]) & (ids[None, :] >= 0)
            move = allowed.setdefault(ids.tobytes(), np.where(same, stack.move, np.inf))
        if not jumps:
            # without jumps the state is the position alone: the programme below with its one row, in a third
            # of the array operations
            one = cost[0][stack.sources] + move
            offset = np.argmin(one, axis=0)
            back.append((zero_rows, stack.sources[offset, targets][None], no_jumps))
            cost = (one[offset, targets] + stack.node[i])[None]
            continue
        total = cost[:, stack.sources] + move[None]
        offset = np.argmin(total, axis=1)
        moved = total[row_index, offset, target_index]
        came = stack.sources[offset, target_index]
        # a move makes the part a key longer (row r goes to row r + 1); the last row also takes the parts
        # already past the hold, the ones that were there before winning ties
        new_cost = np.full((hold, size), np.inf)
        from_row = np.zeros((hold, size), dtype=int)
        from_pos = np.zeros((hold, size), dtype=int)
        new_cost[rows[:-1]], from_row[rows[:-1]], from_pos[rows[:-1]] = moved[:-1], row_index[:-1], came[:-1]
        better = moved[-1] < new_cost[-1]
        new_cost[-1] = np.where(better, moved[-1], new_cost[-1])
        from_row[-1] = np.where(better, hold - 1, from_row[-1])
        from_pos[-1] = np.where(better, came[-1], from_pos[-1])
        jumped = np.zeros((hold, size), dtype=bool)
        # a jump starts a part that must last the hold before the shot ends; it leaves from a position held
        # text-safe until the jump (the crop stays there over the span before it)
        if jumps and n - i >= hold:
            leaving = np.where(ids >= 0, cost[hold - 1], np.inf)
            source = int(np.argmin(leaving))
            best = leaving[source] + JUMP_COST
            jumped[0] = best < new_cost[0]
            new_cost[0] = np.where(jumped[0], best, new_cost[0])
            from_row[0] = np.where(jumped[0], hold - 1, from_row[0])
            from_pos[0] = np.where(jumped[0], source, from_pos[0])
        back.append((from_row, from_pos, jumped))
        cost = new_cost + stack.node[i][None]
    if not np.isfinite(cost).any():
        return None
    row, index = (int(v) for v in np.unravel_index(int(np.argmin(cost)), cost.shape))
    path = [index]
    jump_keys = []
    for i in range(n - 1, 0, -1):
        from_row, from_pos, jumped = back[i - 1]
        if jumped[row, index]:
            jump_keys.append(i)
        row, index = int(from_row[row, index]), int(from_pos[row, index])
        path.append(index)
    path.reverse()
    corridors = []
    misses = 0
    for i, g in enumerate(path):
        lane = lanes[int(stack.lane[g])]
        segment, value = lane.segment, stack.values[g]
        corridor = containing(segment.safe[i], value)
        assert corridor is not None  # the DP only visits text-safe grid points
        missed = lane.misses(i, (value, value))
        for fit in (segment.subject[i], segment.inside[i], segment.held[i]):
            if not missed and fit is not None and fit[0] <= value <= fit[1]:
                # keep the subject inside (with its margin, else whole, if the path has it) wherever the path does
                corridor = (max(corridor[0], fit[0]), min(corridor[1], fit[1]))
                break
        misses += missed
        corridors.append(corridor)
    jump_keys.sort()
    part_lanes = tuple(int(stack.lane[path[start]]) for start in [0, *jump_keys])
    return _Path(corridors, misses, tuple(jump_keys), part_lanes)


def _smooth(
    target: np.ndarray, bounds: list[Interval], dt: float, line: CropLine, params: FramingParams
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
    # the ADMM step size rho is 1, so it multiplies and divides nothing below: each of the hundreds of
    # iterations is a dozen small array operations, whose call overhead is most of the planner's time here
    sigma = 1e-6
    kkt = np.linalg.inv(quad + sigma * np.eye(n) + a.T @ a)
    a_t = a.T
    x = goal.copy()
    z = np.clip(a @ x, lower, upper)
    y = np.zeros_like(z)
    for _ in range(600):
        x = kkt @ (sigma * x - linear + a_t @ (z - y))
        ax = a @ x
        z_new = np.minimum(np.maximum(ax + y, lower), upper)
        primal = ax - z_new
        y += primal
        if np.abs(primal).max() < 1e-6 and np.abs(z_new - z).max() < 1e-6:
            z = z_new
            break
        z = z_new
    # position bounds are hard (text safety); the motion bounds hold to the solver's tolerance
    return np.clip(x, lo, hi) * scale


@dataclass(frozen=True)
class Route:
    """A shot's path before smoothing: one steady position, or the corridor the crop keeps to at every key;
    the keys where the subject falls outside; where the path jumps and which lane each part keeps to.
    Smoothing is left until a route is chosen: most routes the planner works out are only compared."""

    steady: int | None
    corridors: list[Interval]
    misses: int
    #: keys where the crop jumps (a reframe inside the shot): a new part of the path starts there
    jumps: tuple[int, ...] = ()
    #: per part (the shot's start, then each jump), the index of the lane it keeps to
    lanes: tuple[int, ...] = (0,)

    @property
    def moves(self) -> bool:
        return self.steady is None

    def lane_at(self, i: int) -> int:
        """The lane of key i."""
        return self.lanes[bisect.bisect_right(self.jumps, i)]


def route_segment(
    lanes: Sequence[Lane], params: FramingParams, miss_share: float, jumps: bool = False
) -> Route | None:
    """The shot's route over its lanes (one, unless the path may jump between several); None when no
    text-safe path keeps the subject inside at all but miss_share of the keys. With `jumps` the path may jump
    inside the shot (see _corridors)."""
    if len(lanes) == 1:
        steady = _steady(lanes[0].segment, lanes[0].line)
        if steady is not None:
            return Route(steady, [], 0)
    keys = len(lanes[0].segment.safe)
    allowed_misses = miss_share * keys
    # keys where no lane has a text-safe position holding the subject are misses on every path: too many of
    # them rule the lanes out without the dynamic programme (the usual fate of all but the last region tried)
    forced = sum(all(lane.forced(i) for lane in lanes) for i in range(keys))
    if forced > allowed_misses:
        return None
    found = _corridors(lanes, params, jumps)
    if found is None:
        return None
    if found.misses > allowed_misses:
        # text pins the crop where the subject is not: a wider, letterboxed region can show both
        return None
    return Route(None, found.corridors, found.misses, found.jumps, found.lanes)


def route_positions(route: Route, lanes: Sequence[Lane], params: FramingParams) -> list[int]:
    """Even positions per key along the route (one position when steady) on each key's lane, smoothed within
    its corridors, each part between jumps on its own."""
    if route.steady is not None:
        return [route.steady]
    times = lanes[0].segment.times
    dt = float(times[1] - times[0])
    edges = [0, *route.jumps, len(route.corridors)]
    parts = []
    for (a, b), k in zip(itertools.pairwise(edges), route.lanes, strict=True):
        lane = lanes[k]
        parts.append(_smooth(lane.segment.target[a:b], route.corridors[a:b], dt, lane.line, params))
    raw = np.concatenate(parts)
    lo = np.array([c[0] for c in route.corridors])
    hi = np.array([c[1] for c in route.corridors])
    positions = np.clip(np.round(raw / 2) * 2, lo, hi).astype(int)
    return [int(p) for p in positions]
