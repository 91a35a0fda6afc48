"""One model of the product over a video's samples: which of the boxes the evidence sources offered are the
product, chosen jointly.

Each sample offers candidate boxes, each with the calibrated probability p that it is the product
(workers.analysis.localisation.calibration). A path takes at most one candidate per sample and rejects the rest.
Its cost is the evidence against it: −ln p for each candidate taken, −ln(1 − p) for the likeliest candidate of
each sample where none is taken (the others are rejected with it), and, between consecutive candidates taken, the
cost of the move from one to the other. A move costs what it asks of a handled product: its centre's shift in
its own size and the change of its size (log of its side), each beyond what the time between them allows
(MOVE_PER_S, RESIZE_PER_S), at ln(1 + excess²): a bounded cost, so a real fast move or a return elsewhere costs
less than a run of sure finds is worth, while a jump and back costs more than one fair find. A cut between two
taken candidates makes the move free: the next shot may show the product anywhere, at any size. A sample that
offers nothing says nothing: the move past it is judged over the time it spans (the locator misses the product in
many frames that show it, so "no box" is not evidence that it left). The least-cost path is found by dynamic
programming over the taken candidates (each with the best path ending on it), exactly.

From those costs fall: a one-sample spike (a colour blob joined to a face, a highlight, a false find far off) is
rejected where going there and back costs more than its evidence; a product brought close over a run of sure
samples is kept; a hand over the product, or its leaving and coming back elsewhere, are samples offering nothing
and a move judged over the time between; a box less likely than not to be the product is rejected (its −ln p
exceeds its −ln(1 − p)) unless it is the only way along a track. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from workers.analysis.localisation.parameters import MOVE_PER_S, P_FLOOR, RESIZE_PER_S
from workers.geometry import Box


@dataclass(frozen=True)
class Candidate:
    """A box a sample offers for the product, and the calibrated probability that it is the product."""

    box: Box
    p: float


def _cost(p: float) -> float:
    return -math.log(min(1 - P_FLOOR, max(P_FLOOR, p)))


def _side(box: Box) -> float:
    return math.sqrt(max(1e-6, (box[2] - box[0]) * (box[3] - box[1])))


def move_cost(a: Box, b: Box, dt: float) -> float:
    """The cost of the product's box going from a to b in dt seconds (0 within what dt allows)."""
    sa, sb = _side(a), _side(b)
    shift = math.hypot((b[0] + b[2] - a[0] - a[2]) / 2, (b[1] + b[3] - a[1] - a[3]) / 2) / math.sqrt(sa * sb)
    resize = abs(math.log(sb / sa))
    span = max(dt, 1e-3)
    over_shift = max(0.0, shift / (MOVE_PER_S * span) - 1)
    over_resize = max(0.0, resize / (RESIZE_PER_S * span) - 1)
    return math.log1p(over_shift**2) + math.log1p(over_resize**2)


def product_path(
    times: Sequence[float], candidates: Sequence[Sequence[Candidate]], cuts: Sequence[float]
) -> list[int | None]:
    """For each sample (times in order, with its candidates), the index of the candidate taken for the product,
    or None where none is: the least-cost path (see the module's docstring). A cut at c lies between the samples
    at t and t' where t < c <= t'."""
    n = len(times)
    # the cost of taking nothing at each sample, and its running sum: none[k] over samples before k
    none = [_cost(1 - max((c.p for c in cs), default=0.0)) if cs else 0.0 for cs in candidates]
    before = [0.0]
    for cost in none:
        before.append(before[-1] + cost)
    shots = [0]
    for k in range(1, n):
        shots.append(shots[-1] + any(times[k - 1] < c <= times[k] for c in cuts))
    #: per sample and candidate: the least cost of a path whose last taken candidate it is, and the one before
    best: list[list[float]] = []
    came: list[list[tuple[int, int] | None]] = []
    for k, offered in enumerate(candidates):
        best.append([])
        came.append([])
        for cand in offered:
            cost, arg = before[k], None
            for i in range(k):
                for c, prior in enumerate(candidates[i]):
                    step = (
                        0.0 if shots[i] != shots[k] else move_cost(prior.box, cand.box, times[k] - times[i])
                    )
                    total = best[i][c] + step + before[k] - before[i + 1]
                    if total < cost:
                        cost, arg = total, (i, c)
            best[k].append(cost + _cost(cand.p))
            came[k].append(arg)
    path: list[int | None] = [None] * n
    end, last = before[n], None
    for k in range(n):
        for c, cost in enumerate(best[k]):
            if cost + before[n] - before[k + 1] < end:
                end, last = cost + before[n] - before[k + 1], (k, c)
    while last is not None:
        path[last[0]] = last[1]
        last = came[last[0]][last[1]]
    return path


def kept_boxes(
    times: Sequence[float], boxes: Sequence[Box | None], p: Sequence[float], cuts: Sequence[float]
) -> list[Box | None]:
    """Each sample's one box (None: none offered) with its probability, kept where the path takes it."""
    offered = [[Candidate(b, q)] if b is not None else [] for b, q in zip(boxes, p, strict=True)]
    path = product_path(times, offered, cuts)
    return [None if k is None else b for k, b in zip(path, boxes, strict=True)]
