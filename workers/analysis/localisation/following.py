"""Following the product from a sample that found it into its neighbours that did not."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from workers.analysis.localisation.common import Box, Located
from workers.analysis.localisation.parameters import (
    FLAT_NOISE,
    FOLLOW_DECAY,
    FOLLOW_HUE,
    FOLLOW_LIGHT,
    FOLLOW_NCC,
    FOLLOW_SCALES,
    FOLLOW_SIDE,
    FOLLOW_STEPS,
    MOVE_PER_S,
    RIM,
)
from workers.geometry import scale_box


def follow(
    frames: Sequence[np.ndarray],
    found: Sequence[Located],
    source_size: tuple[int, int],
    times: Sequence[float],
) -> list[Located]:
    """The product in every frame of a run of samples (RGB, in time order, any one size), where the locator
    lost it next to a frame that had it: each sample without a box (or with only a blob of the product's colours,
    next to one found otherwise) takes the box where the neighbouring
    sample's product pixels are found again (forward, then backward for what is still empty), up to
    FOLLOW_STEPS samples from a located one. Boxes stay in source pixels; a followed one has method
    "followed" and, where the sample it came from was found by features, the same part of the main image seen
    and that sample's homography moved as the product moved (so whole_boxes completes it as it completes
    that sample's box where a hand covers part of the product). times: the samples' (seconds): the search
    reaches as far as the temporal model lets the product move at no cost in the time between (MOVE_PER_S), so
    that what it follows the model keeps."""
    out = list(found)
    if not out:
        return out
    scale = frames[0].shape[1] / source_size[0]
    steps = [0 if f.box is not None else FOLLOW_STEPS + 1 for f in out]
    for order in (range(1, len(out)), range(len(out) - 2, -1, -1)):
        for i in order:
            j = i - 1 if order.step == 1 else i + 1
            before = out[j]
            # a blob of the product's colours often holds only its lit side: the product's own pixels followed
            # from a sample that saw more of it are the better box
            lost = out[i].box is None or (out[i].method == "colour" and before.method != "colour")
            if not lost or before.box is None or steps[j] >= FOLLOW_STEPS:
                continue
            seen = scale_box(before.box, scale, scale)
            dt = abs(times[i] - times[j])
            moved = _found_again(frames[j], seen, frames[i], dt)
            if moved is None:
                continue
            box, shift = moved
            back = _found_again(frames[i], box, frames[j], dt)
            if back is not None and _agrees(back[0], seen):
                out[i] = _moved(before, box, shift, scale)
                steps[i] = steps[j] + 1
    return out


def _moved(before: Located, box: Box, shift: np.ndarray, scale: float) -> Located:
    """A sample's find moved into the next frame: box (frame pixels) and the shift (3×3, frame pixels) that took
    the product there."""
    to_frame = np.diag([scale, scale, 1.0])
    in_source = np.linalg.inv(to_frame) @ shift @ to_frame
    homography = (
        tuple(float(v) for v in (in_source @ np.array(before.homography).reshape(3, 3)).ravel())
        if before.homography
        else ()
    )
    quad = (
        tuple(
            (float(x), float(y))
            for x, y in cv2.perspectiveTransform(
                np.array(before.quad, np.float32).reshape(-1, 1, 2), in_source
            ).reshape(-1, 2)
        )
        if before.quad
        else ()
    )
    return Located(
        scale_box(box, 1 / scale, 1 / scale),
        before.confidence * FOLLOW_DECAY,
        "followed",
        quad,
        before.seen,
        homography,
        before.whole,
    )


def _agrees(back: Box, box: Box) -> bool:
    """Whether a box followed back to the frame it came from (back) lands on it again (within RIM of
    its size): pixels that left with the product match some other place going back; its own pixels do not."""
    size = max(box[2] - box[0], box[3] - box[1])
    return (
        abs((back[0] + back[2]) - (box[0] + box[2])) / 2 <= RIM * size
        and abs((back[1] + back[3]) - (box[1] + box[3])) / 2 <= RIM * size
    )


def _same_colour(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two RGB patches have the same mean colour, up to a change of light (FOLLOW_LIGHT either way):
    the grey levels' correlation says nothing of colour, and a smooth, round product's shading correlates with
    any smooth shading."""
    ca = a.reshape(-1, 3).mean(axis=0) + 1.0
    cb = b.reshape(-1, 3).mean(axis=0) + 1.0
    light = float(cb.sum() / ca.sum())
    return (
        1 / FOLLOW_LIGHT <= light <= FOLLOW_LIGHT
        and float(np.abs(ca / ca.sum() - cb / cb.sum()).max()) <= FOLLOW_HUE
    )


def _found_again(
    previous: np.ndarray, box: Box, frame: np.ndarray, dt: float
) -> tuple[Box, np.ndarray] | None:
    """Where box's core in the previous frame is in this one (both the same size, dt seconds apart), by
    normalised cross-correlation over a few sizes near the same place, with the scaling and shift (3×3) that
    took it there; None where nothing correlates FOLLOW_NCC."""
    h, w = frame.shape[:2]
    bw, bh = box[2] - box[0], box[3] - box[1]
    cx0, cy0 = round(max(0.0, box[0] + RIM * bw)), round(max(0.0, box[1] + RIM * bh))
    cx1, cy1 = round(min(float(w), box[2] - RIM * bw)), round(min(float(h), box[3] - RIM * bh))
    if cx1 - cx0 < 8 or cy1 - cy0 < 8:
        return None
    core = cv2.cvtColor(previous[cy0:cy1, cx0:cx1], cv2.COLOR_RGB2GRAY)
    if float(core.var()) <= FLAT_NOISE:
        return None
    k = min(1.0, FOLLOW_SIDE / max(core.shape))
    reach = MOVE_PER_S * dt
    sx0, sy0 = max(0, round(box[0] - reach * bw)), max(0, round(box[1] - reach * bh))
    sx1, sy1 = min(w, round(box[2] + reach * bw)), min(h, round(box[3] + reach * bh))
    area = cv2.cvtColor(frame[sy0:sy1, sx0:sx1], cv2.COLOR_RGB2GRAY)
    area = cv2.resize(area, None, fx=k, fy=k, interpolation=cv2.INTER_AREA) if k < 1 else area
    best: tuple[float, int, int, float] | None = None
    for s in FOLLOW_SCALES:
        size = (max(4, round(core.shape[1] * k * s)), max(4, round(core.shape[0] * k * s)))
        if size[0] > area.shape[1] or size[1] > area.shape[0]:
            continue
        scores = cv2.matchTemplate(
            area, cv2.resize(core, size, interpolation=cv2.INTER_AREA), cv2.TM_CCOEFF_NORMED
        )
        _, peak, _, (x, y) = cv2.minMaxLoc(scores)
        if best is None or peak > best[0]:
            best = (float(peak), x, y, s)
    if best is None or best[0] < FOLLOW_NCC:
        return None
    _, x, y, s = best
    # the core found at (x, y) of the shrunk search area; the box round it grows by the same rim
    x0, y0 = sx0 + x / k, sy0 + y / k
    cw, ch = (cx1 - cx0) * s, (cy1 - cy0) * s
    there = frame[round(y0) : round(y0 + ch), round(x0) : round(x0 + cw)]
    if there.size == 0 or not _same_colour(previous[cy0:cy1, cx0:cx1], there):
        return None
    fw, fh = cw / (1 - 2 * RIM), ch / (1 - 2 * RIM)
    gx, gy = (fw - cw) / 2, (fh - ch) / 2
    shift = np.array([[s, 0.0, x0 - s * cx0], [0.0, s, y0 - s * cy0], [0.0, 0.0, 1.0]])
    found = (max(0.0, x0 - gx), max(0.0, y0 - gy), min(float(w), x0 + cw + gx), min(float(h), y0 + ch + gy))
    return found, shift
