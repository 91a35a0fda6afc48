"""On-screen text for the framing: where to look, detection through the inference daemon, and timing.

Detection runs in the daemon (gpu_service.models.text_detect: PP-OCRv4's detector, batched with every other
worker's frames); this side picks the sample times, sends frames already scaled to the analysis size, maps the
boxes back to source pixels, and refines when each region appears and vanishes on a cheap dense decode.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from gpu_service.priority import PriorityKey
from workers.detection import detect_boxes
from workers.framing import Box
from workers.scoring import Inference

#: the daemon's text detection model
TEXT_MODEL = "text_detect"
#: text is looked for once per second of the window (see text_sample_times), the analysis budget: text seen at
#: no sample may be on screen for up to one interval, and the planner keeps the crop safe for that long on both
#: sides; text shown for less than a second can be missed. Twice per second cost 0.37 CPU-s more per item.
TEXT_FPS = 1.0


def text_sample_times(start: float, end: float, fps: float = TEXT_FPS) -> list[float]:
    """Where to sample a window for text: every 1/fps from its start up to the first time at or past its end.

    The planner assumes text seen at no sample is not on screen; that holds for any text shown at least
    1/fps seconds, and the samples at both ends cover text on screen at the window's edges.
    """
    step = 1.0 / fps
    count = max(1, math.ceil((end - start) / step - 1e-9))
    return [start + k * step for k in range(count + 1)]


def detect_text(
    infer: Inference,
    frames_rgb: Sequence[np.ndarray],
    key: PriorityKey,
    *,
    source_size: tuple[int, int] | None = None,
) -> list[list[Box]]:
    """Text regions per frame (frames of one size), found by the daemon's text detector; in the frames' pixels,
    or in source pixels given source_size (width, height)."""
    return detect_boxes(infer, TEXT_MODEL, frames_rgb, key, source_size=source_size)


#: boxes detected at consecutive samples are the same region when they overlap this much (IoU)
SAME_REGION_IOU = 0.5


def _iou(a: Box, b: Box) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def _patch(gray: np.ndarray, box: Box, sx: float, sy: float) -> np.ndarray:
    x0, y0 = int(box[0] * sx), int(box[1] * sy)
    x1, y1 = max(x0 + 1, math.ceil(box[2] * sx)), max(y0 + 1, math.ceil(box[3] * sy))
    return gray[y0:y1, x0:x1].astype(np.float32)


def refine_text_times(
    text: Sequence[tuple[float, Sequence[Box]]],
    frames: Sequence[tuple[float, np.ndarray]],
    source_size: tuple[int, int],
) -> list[tuple[float, list[Box]]]:
    """Text regions at every dense frame, from detections at sparse samples.

    Detection runs at TEXT_FPS; between two samples a region seen at only one of them appeared or vanished
    somewhere in between, and without more the planner must assume it is on screen for the whole interval.
    Here each such region's pixels in every frame between are compared with its pixels at the sample that shows
    it and at the one that does not: the nearer decides. This costs a few small array differences per frame
    instead of a detector call. `frames` are (t, grayscale) at any resolution (a quarter of the source is
    plenty), covering the samples' span; boxes stay in source pixels. Regions seen at both samples are kept
    throughout; a frame next to a change keeps the region too, as a one-frame safety margin.
    """
    samples = sorted((t, list(b)) for t, b in text)
    if len(samples) < 2 or not frames:
        return [(t, list(b)) for t, b in samples]
    dense = sorted(frames, key=lambda f: f[0])
    times = [t for t, _ in dense]
    sx, sy = dense[0][1].shape[1] / source_size[0], dense[0][1].shape[0] / source_size[1]

    def frame_at(t: float) -> np.ndarray:
        return dense[min(range(len(times)), key=lambda j: abs(times[j] - t))][1]

    present: list[list[Box]] = [[] for _ in dense]
    for (t0, boxes0), (t1, boxes1) in itertools.pairwise(samples):
        inside = [j for j, t in enumerate(times) if t0 - 1e-6 <= t <= t1 + 1e-6]
        for box in boxes0:
            twin = next((b for b in boxes1 if _iou(box, b) >= SAME_REGION_IOU), None)
            if twin is not None:
                union = (
                    min(box[0], twin[0]),
                    min(box[1], twin[1]),
                    max(box[2], twin[2]),
                    max(box[3], twin[3]),
                )
                for j in inside:
                    present[j].append(union)
            else:
                _follow(present, inside, dense, box, frame_at(t0), frame_at(t1), sx, sy)
        for box in boxes1:
            if all(_iou(box, b) < SAME_REGION_IOU for b in boxes0):
                _follow(present, inside, dense, box, frame_at(t1), frame_at(t0), sx, sy)
    # before the first and after the last sample nothing better is known than the nearest sample
    for j, t in enumerate(times):
        if t < samples[0][0]:
            present[j] = list(samples[0][1])
        elif t > samples[-1][0]:
            present[j] = list(samples[-1][1])
    return [(t, merge_boxes_exact(boxes)) for t, boxes in zip(times, present, strict=True)]


#: a region with at least this share of its pixels the same (within SAME_LEVEL grey levels) at a sample that
#: detected text there and at one that did not shows the same text at both: the detector missed it. A still
#: background behind a caption that really appeared passes too, which errs on the safe side (the caption is
#: kept out of crops a little longer than it is shown).
MISSED_DETECTION_SHARE = 0.5
SAME_LEVEL = 8.0


def _follow(
    present: list[list[Box]],
    inside: list[int],
    dense: Sequence[tuple[float, np.ndarray]],
    box: Box,
    with_text: np.ndarray,
    without_text: np.ndarray,
    sx: float,
    sy: float,
) -> None:
    """Mark the frames (and their neighbours) where box's pixels look as they do when the text is shown.

    Where the region looks the same at the sample that did not detect it, the detector missed it there (the
    caption was on screen all along): every frame between keeps it."""
    shown, hidden = _patch(with_text, box, sx, sy), _patch(without_text, box, sx, sy)
    if float((np.abs(shown - hidden) <= SAME_LEVEL).mean()) >= MISSED_DETECTION_SHARE:
        for j in inside:
            present[j].append(box)
        return
    marks = []
    for j in inside:
        here = _patch(dense[j][1], box, sx, sy)
        marks.append(float(np.abs(here - shown).mean()) <= float(np.abs(here - hidden).mean()))
    for k, j in enumerate(inside):
        if marks[k] or (k > 0 and marks[k - 1]) or (k + 1 < len(marks) and marks[k + 1]):
            present[j].append(box)


def merge_boxes_exact(boxes: Sequence[Box]) -> list[Box]:
    """Drop exact duplicates (a region kept by two sample pairs at their shared sample)."""
    return list(dict.fromkeys(boxes))
