"""Choosing the best window from per-frame scores: pure, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CUT_PENALTY = 0.25
CUT_DISTANCE = 0.45


@dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float
    score: float
    #: the video is shorter than the requested window, so the window is the whole video
    truncated: bool = False


def detect_cuts(times: Sequence[float], signatures: Sequence[np.ndarray]) -> list[float]:
    """Cut times between consecutive samples whose colour signatures differ by more than CUT_DISTANCE.

    The distance is the Hellinger distance of the two histograms (0 same, 1 disjoint).
    """
    cuts: list[float] = []
    for i in range(1, len(signatures)):
        bc = float(np.sum(np.sqrt(signatures[i - 1] * signatures[i])))
        if np.sqrt(max(0.0, 1.0 - bc)) > CUT_DISTANCE:
            cuts.append((times[i - 1] + times[i]) / 2)
    return cuts


def best_window(
    times: Sequence[float],
    values: Sequence[float],
    cuts: Sequence[float],
    *,
    duration_s: float,
    window_s: float,
    step_s: float,
) -> Window:
    """The window of length window_s with the highest mean frame value, penalised when it spans a shot cut.

    Candidates start every step_s and on every sample; a tie keeps the earliest. A video shorter than the
    window yields the whole video, marked truncated.
    """
    if duration_s <= window_s:
        mean = float(np.mean(values)) if len(values) else 0.0
        return Window(0.0, duration_s, mean, truncated=True)
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    best = Window(0.0, window_s, -np.inf)
    last_start = duration_s - window_s
    grid = np.arange(0.0, last_start + 1e-9, step_s)
    # a window may also start on any sample: sampled frames sit off the grid (the frame nearest each request),
    # and a grid start just before the first sample showing the product opens the clip on its entrance
    starts = np.unique(np.concatenate([grid, t[t <= last_start], [last_start]]))
    for start in starts:
        end = start + window_s
        inside = (t >= start) & (t < end)
        if not inside.any():
            continue
        score = float(v[inside].mean())
        if any(start < c < end for c in cuts):
            score -= CUT_PENALTY
        if score > best.score + 1e-9:
            best = Window(round(float(start), 4), round(float(end), 4), score)
    if not np.isfinite(best.score):
        return Window(0.0, window_s, 0.0)
    return best
