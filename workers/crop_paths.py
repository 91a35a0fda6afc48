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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from workers.geometry import Box, CropLine
from workers.text_regions import Interval, TextTrack, containing, intersect, safe_positions


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
    #: region widths tried, evenly from the aspect's crop up to the whole frame, before padding gives up
    pad_steps: int = 8
    #: positions tried by the dynamic programme on the moving axis (more is finer and slower)
    max_states: int = 400


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
    spans = [(times[max(0, i - 1)], times[min(n, i + 1)]) for i in range(n + 1)]
    # neighbouring keys mostly see the same regions: work out each distinct set's safe positions once
    known: dict[tuple[Box, ...], list[Interval]] = {}

    def text_safe(t_from: float, t_to: float) -> list[Interval]:
        boxes = tuple(text.between(t_from, t_to))
        if boxes not in known:
            known[boxes] = safe_positions(line, boxes, text_margin)
        return known[boxes]

    safe = [text_safe(a, b) for a, b in spans]
    between = [text_safe(times[i], times[i + 1]) for i in range(n)]
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
    return [(int(p), int(q)) if p <= q else None for p, q in zip(lo.tolist(), hi.tolist(), strict=True)]


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


def _corridors(segment: Segment, line: CropLine, params: FramingParams) -> tuple[list[Interval], int] | None:
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
        tight = outside(segment.held[i])
        cost = cost + np.where(tight > 0, SUBJECT_MISS_COST * (1.0 + tight / scale), 0.0)
        cost = cost + np.where(outside(segment.inside[i]) > 0, TRIM_COST, 0.0)
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
        corridor = containing(segment.safe[i], grid[g])
        assert corridor is not None  # the DP only visits text-safe grid points
        for fit in (segment.subject[i], segment.inside[i], segment.held[i]):
            if fit is not None and fit[0] <= grid[g] <= fit[1]:
                # keep the subject inside (with its margin, else whole, if the path has it) wherever the path does
                corridor = (max(corridor[0], fit[0]), min(corridor[1], fit[1]))
                break
        else:
            misses += segment.held[i] is not None
        corridors.append(corridor)
    return corridors, misses


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


@dataclass(frozen=True)
class Route:
    """A segment's path before smoothing: one steady position, or the corridor the crop keeps to at every key;
    and the keys where the subject falls outside. Smoothing is left until a route is chosen: most routes the
    planner works out are only compared."""

    steady: int | None
    corridors: list[Interval]
    misses: int

    @property
    def moves(self) -> bool:
        return self.steady is None


def route_segment(segment: Segment, line: CropLine, params: FramingParams, miss_share: float) -> Route | None:
    """The segment's route; None when no text-safe path keeps the subject inside at all but miss_share of the
    keys."""
    steady = _steady(segment, line)
    if steady is not None:
        return Route(steady, [], 0)
    allowed_misses = miss_share * len(segment.safe)
    # keys where no text-safe position holds the subject are misses on every path: too many of them rule the
    # region out without the dynamic programme (the usual fate of all but the last region tried)
    forced = sum(
        held is not None and not intersect(safe, [held])
        for safe, held in zip(segment.safe, segment.held, strict=True)
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
    return Route(None, corridors, misses)


def route_positions(route: Route, segment: Segment, line: CropLine, params: FramingParams) -> list[int]:
    """Even positions per key along the route (one position when steady), smoothed within its corridors."""
    if route.steady is not None:
        return [route.steady]
    dt = float(segment.times[1] - segment.times[0])
    raw = _smooth(segment.target, route.corridors, dt, line, params)
    lo = np.array([c[0] for c in route.corridors])
    hi = np.array([c[1] for c in route.corridors])
    positions = np.clip(np.round(raw / 2) * 2, lo, hi).astype(int)
    return [int(p) for p in positions]
