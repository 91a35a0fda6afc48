"""Choosing the best window from per-frame scores: pure, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: a window spanning a shot cut keeps this share less of its score: a window inside one shot makes the better
#: clip unless the other shows the product clearly more (a product the features find, ~0.8 a sample against a
#: product-less frame's ~0.2, for over a second of the window). A share and not a fixed amount: a fixed one
#: large enough to matter outweighs the product wherever its shot is shorter than the window (seen in 3 of a
#: window's 10 samples, 0.45 against a product-less shot's 0.22); and not a smaller share: where no sample finds
#: the product the scores are flat, and a cut-spanning stretch of background then wins over the product's own
#: longer shot (bench/quality.py's tuning half at 0.15: 3 windows found, 5 lost)
CUT_SHARE = 0.4
#: a window never opens or closes on less than this of a shot across a cut, a flash of another scene, as far as
#: the sampled cut times tell: each lies within half a sample interval of the true cut, so at the default two
#: samples a second no window keeps under half a second of another shot at an edge
FLASH_S = 0.75
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
    """The window of length window_s with the highest mean frame value, CUT_SHARE less when it spans a shot cut,
    and not opening or closing on a flash of another shot (FLASH_S) unless every window does.

    Candidates start every step_s and on every sample; a tie keeps the earliest. A video shorter than the
    window yields the whole video, marked truncated.
    """
    if duration_s <= window_s:
        mean = float(np.mean(values)) if len(values) else 0.0
        return Window(0.0, duration_s, mean, truncated=True)
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    # the best window, and the best of those with a flash of another shot at an edge
    best = flashing = Window(0.0, window_s, -np.inf)
    last_start = duration_s - window_s
    grid = np.arange(0.0, last_start + 1e-9, step_s)
    # a window may also start on any sample: sampled frames sit off the grid (the frame nearest each request),
    # and a grid start just before the first sample showing the product opens the clip on its entrance (or on
    # the first sample after a cut, which the cut precedes)
    starts = np.unique(np.concatenate([grid, t[t <= last_start], [last_start]]))
    for start in starts:
        end = start + window_s
        inside = (t >= start) & (t < end)
        if not inside.any():
            continue
        score = float(v[inside].mean())
        spanned = [c for c in cuts if start < c < end]
        if spanned:
            score *= 1.0 - CUT_SHARE
        flash = any(c - start < FLASH_S or end - c < FLASH_S for c in spanned)
        window = Window(round(float(start), 4), round(float(end), 4), score)
        if flash and score > flashing.score + 1e-9:
            flashing = window
        elif not flash and score > best.score + 1e-9:
            best = window
    if not np.isfinite(best.score):
        best = flashing
    if not np.isfinite(best.score):
        return Window(0.0, window_s, 0.0)
    return best
