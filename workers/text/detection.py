"""On-screen text for the framing: where to look, detection through the inference daemon, and timing.

Detection runs in the daemon (gpu_service.models.text_detect: PP-OCRv4's detector, batched with every other
worker's frames); this side picks the sample times, sends frames already scaled to the analysis size, maps the
boxes back to source pixels, and refines when each region appears and vanishes on a cheap dense decode.
"""

from __future__ import annotations

import itertools
import math
import queue
import threading
from collections.abc import Callable, Sequence

import cv2
import numpy as np

from gpu_service.priority import PriorityKey
from workers.analysis.detection import detect_boxes
from workers.analysis.scoring import Inference
from workers.geometry import Box, box_union, iou, scale_box
from workers.media.containers import Frame
from workers.text.panels import with_panel
from workers.text.regions import SAME_REGION_IOU

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


#: The detector also fires on faces, eyes and round textures: on the tuning half of bench/quality.py, 93 of the
#: 110 boxes on neither a caption nor the product were squarish (width/height within GLYPH_ASPECT), most of them
#: taller than GLYPH_MAX_HEIGHT of the frame's short side, while every caption line was at least twice as wide
#: as tall and at most 14 % of it tall. A line of horizontal text is wider than tall unless it is one or two
#: glyphs, and vertical text is far narrower than tall; a squarish "line" that tall is a face far more often
#: than a one-glyph caption, and taking it for text letterboxes the clip or pushes the crop off the face.
GLYPH_ASPECT = (0.4, 1.6)
GLYPH_MAX_HEIGHT = 0.15
#: nor is a region whose glyphs (its short side) stand taller than this share of the frame's short side: the
#: bright blurred lights of a street at night read as one region 69 % of the frame tall, where a caption's lines
#: are at most 14 % of it (two lines set close, which the detector may box as one, under this)
GLYPH_MAX_LINE = 0.3


def plausible_text(box: Box, width: int, height: int) -> bool:
    """Whether a detected region can be a line of text in a width×height frame (its pixels)."""
    w, h = box[2] - box[0], box[3] - box[1]
    squarish = GLYPH_ASPECT[0] * h <= w < GLYPH_ASPECT[1] * h
    side = min(width, height)
    return not (squarish and h > GLYPH_MAX_HEIGHT * side) and min(w, h) <= GLYPH_MAX_LINE * side


def detect_text(
    infer: Inference,
    frames_rgb: Sequence[np.ndarray],
    key: PriorityKey,
    *,
    source_size: tuple[int, int] | None = None,
) -> list[list[Box]]:
    """Text regions per frame (frames of one size), found by the daemon's text detector, kept where they can be
    text (plausible_text) and grown to the panel behind them where they sit on one (text_panels); in the
    frames' pixels, or in source pixels given source_size (width, height)."""
    found = detect_boxes(infer, TEXT_MODEL, frames_rgb, key)
    if not frames_rgb:
        return found
    height, width = frames_rgb[0].shape[:2]
    size = source_size or (width, height)
    sx, sy = size[0] / width, size[1] / height
    regions: list[list[Box]] = []
    for rgb, boxes in zip(frames_rgb, found, strict=True):
        if not boxes:
            regions.append([])
            continue
        grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        regions.append(
            [
                scale_box(with_panel(grey, b), sx, sy)
                for b in boxes
                if plausible_text(scale_box(b, sx, sy), *size)
            ]
        )
    return regions


class StreamedDetection:
    """detect_text over frames handed in one at a time while the caller goes on (decoding the rest of a window):
    a thread sends them to the daemon as they come, together with any that queued up while it waited, so that
    the daemon detects text beside the decode instead of after it. A worker would otherwise sit idle for the
    daemon's whole answer; with one daemon thread serving both workers, that idle time is what the run loses.

    Use it as a context manager: results() gives detect_text's regions for the frames in the order handed in
    (a frame added with copies=n counts n times) and raises what the daemon raised; leaving the block without
    it stops the thread after the call it is in."""

    def __init__(self, infer: Inference, key: PriorityKey, *, source_size: tuple[int, int]) -> None:
        self._infer, self._key, self._size = infer, key, source_size
        self._queue: queue.SimpleQueue[tuple[np.ndarray, int] | None] = queue.SimpleQueue()
        self._found: list[list[Box]] = []
        self._error: Exception | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="text-detection", daemon=True)
        self._thread.start()

    def add(self, frame: Frame, copies: int = 1) -> None:
        self._queue.put((frame.rgb, copies))

    def results(self) -> list[list[Box]]:
        self._close()
        if self._error is not None:
            raise self._error
        return self._found

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    def __enter__(self) -> StreamedDetection:
        return self

    def __exit__(self, *_: object) -> None:
        self._close()

    def _serve(self) -> None:
        ended = False
        while not ended:
            batch = [self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get())
            ended = batch[-1] is None  # nothing is added after the end
            frames = [item for item in batch if item is not None]
            if not frames or self._error is not None:
                continue
            try:
                found = detect_text(
                    self._infer, [rgb for rgb, _ in frames], self._key, source_size=self._size
                )
            except Exception as exc:  # handed to the caller's thread by results()
                self._error = exc
                continue
            for boxes, (_, copies) in zip(found, frames, strict=True):
                self._found.extend(list(boxes) for _ in range(copies))


def pixels_in(image: np.ndarray, box: Box, sx: float, sy: float) -> np.ndarray:
    """The pixels under a box given in pixels sx, sy times the image's (source pixels over a smaller frame):
    whole pixels covering it, at least one (a view, not a copy)."""
    x0, y0 = max(0, int(box[0] * sx)), max(0, int(box[1] * sy))
    x1, y1 = max(x0 + 1, math.ceil(box[2] * sx)), max(y0 + 1, math.ceil(box[3] * sy))
    return image[y0:y1, x0:x1]


def _patch(gray: np.ndarray, box: Box, sx: float, sy: float) -> np.ndarray:
    return pixels_in(gray, box, sx, sy).astype(np.float32)


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

    samples = _with_missed_detections(samples, frame_at, sx, sy)

    present: list[list[Box]] = [[] for _ in dense]
    for (t0, boxes0), (t1, boxes1) in itertools.pairwise(samples):
        inside = [j for j, t in enumerate(times) if t0 - 1e-6 <= t <= t1 + 1e-6]
        # regions seen at one of the two samples only: (box, shown at the first sample)
        lonely: list[tuple[Box, bool]] = []
        for box in boxes0:
            twin = next((b for b in boxes1 if iou(box, b) >= SAME_REGION_IOU), None)
            if twin is not None:
                union = box_union(box, twin)
                for j in inside:
                    present[j].append(union)
            else:
                lonely.append((box, True))
        lonely += [(box, False) for box in boxes1 if all(iou(box, b) < SAME_REGION_IOU for b in boxes0)]
        cut = _cut_at(dense, inside) if lonely else None
        for box, first in lonely:
            shown, hidden = (frame_at(t0), frame_at(t1)) if first else (frame_at(t1), frame_at(t0))
            _follow(present, inside, dense, box, shown, hidden, first, cut, (sx, sy))
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
#: share of the changed pixels nearer the sample that shows the text at which a frame is taken to show it too:
#: below half, as a frame where the caption is only partly drawn (fading or sliding in) counts as showing it
SHOWN_VOTE = 0.4
#: consecutive frames differing by this many grey levels on average, and CUT_RATIO times the median step
#: between two samples, are a shot cut (a pan over a busy scene changes every pixel but steadily)
CUT_LEVEL = 12.0
CUT_RATIO = 4.0
#: share of a region's pixels that must differ for a frame to show text there that another does not
GLYPH_SHARE = 0.02


def _same_pixels(box: Box, a: np.ndarray, b: np.ndarray, sx: float, sy: float) -> bool:
    """Whether box's region looks the same in two frames (MISSED_DETECTION_SHARE of it within SAME_LEVEL)."""
    return _alike(_patch(a, box, sx, sy), _patch(b, box, sx, sy))


def _alike(first: np.ndarray, second: np.ndarray) -> bool:
    return float((np.abs(first - second) <= SAME_LEVEL).mean()) >= MISSED_DETECTION_SHARE


def _with_missed_detections(
    samples: list[tuple[float, list[Box]]],
    frame_at: Callable[[float], np.ndarray],
    sx: float,
    sy: float,
) -> list[tuple[float, list[Box]]]:
    """The samples with each detected region added to the neighbouring samples where the detector missed it:
    where its pixels are the same as at a sample that detected it, and on from there while they stay the same.
    Without this, a caption missed at the sample after it appeared reads as absent for a whole interval more
    (it is only compared frame by frame between a sample that detects it and one that does not)."""
    out = [(t, list(boxes)) for t, boxes in samples]
    for k, (t, boxes) in enumerate(samples):
        for box in boxes:
            for step in (-1, 1):
                j = k + step
                while 0 <= j < len(out) and all(iou(box, b) < SAME_REGION_IOU for b in out[j][1]):
                    if not _same_pixels(box, frame_at(t), frame_at(out[j][0]), sx, sy):
                        break
                    out[j][1].append(box)
                    j += step
    return out


def _cut_at(dense: Sequence[tuple[float, np.ndarray]], inside: list[int]) -> int | None:
    """Where a shot cut splits the frames inside (the index in inside of the first frame after it), if one
    does: the largest mean grey difference between consecutive frames, when it is CUT_RATIO times their
    median and at least CUT_LEVEL."""
    if len(inside) < 3:
        return None
    steps = [
        float(np.abs(dense[a][1].astype(np.float32) - dense[b][1].astype(np.float32)).mean())
        for a, b in itertools.pairwise(inside)
    ]
    k = int(np.argmax(steps))
    if steps[k] >= CUT_LEVEL and steps[k] >= CUT_RATIO * float(np.median(steps)):
        return k + 1
    return None


def _follow(
    present: list[list[Box]],
    inside: list[int],
    dense: Sequence[tuple[float, np.ndarray]],
    box: Box,
    with_text: np.ndarray,
    without_text: np.ndarray,
    shown_first: bool,
    cut: int | None,
    scale: tuple[float, float],
) -> None:
    """Mark the frames between two samples, one showing the text (the first when shown_first), where box's
    region shows it (and their neighbours); cut: where a shot cut splits the frames between (_cut_at).

    Where the region looks the same at the sample that did not detect it, the detector missed it there (the
    caption was on screen all along): every frame between keeps it. Across a shot cut the region's pixels say
    nothing about the text: a caption that stays on screen over the cut sits on the other shot's background,
    which the sample without it shares, and read as gone from the cut on; beyond a cut the reference showing
    the text is the frame next to it instead."""
    shown, hidden = _patch(with_text, box, *scale), _patch(without_text, box, *scale)
    if _alike(shown, hidden):
        for j in inside:
            present[j].append(box)
        return
    patches = {j: _patch(dense[j][1], box, *scale) for j in inside}
    if cut is None:
        _mark(present, box, inside, patches, shown, hidden)
        return
    near, far = (inside[:cut], inside[cut:]) if shown_first else (inside[cut:], inside[:cut])
    _mark(present, box, near, patches, shown, hidden)
    # the frame next to the cut is the same shot as the sample without the text: where it differs from it, it
    # shows the text (a thin caption's glyphs may be a tenth of its box); where it does not, the text left
    # with the cut
    anchor = patches[far[0] if shown_first else far[-1]]
    if float((np.abs(anchor - hidden) > SAME_LEVEL).mean()) >= GLYPH_SHARE:
        _mark(present, box, far, patches, anchor, hidden)


def _mark(
    present: list[list[Box]],
    box: Box,
    inside: list[int],
    patches: dict[int, np.ndarray],
    shown: np.ndarray,
    hidden: np.ndarray,
) -> None:
    """Mark the frames (and their neighbours) whose patch looks as the region does when the text is shown."""
    # A frame shows the text when its patch is nearer the one showing it as a whole, or when enough of its
    # pixels are: one pixel, one vote, among those where the two differ. The whole-patch distance alone
    # let something bright passing behind the caption at the sample outweigh the glyphs of a thin, outlined
    # caption, which then read as absent for the frames after it appeared; the votes alone would miss a
    # caption whose glyphs are few against a background that moved. Either is enough: absent is the risky call.
    differs = np.abs(shown - hidden) > SAME_LEVEL
    marks = []
    for j in inside:
        to_shown, to_hidden = np.abs(patches[j] - shown), np.abs(patches[j] - hidden)
        votes = float((to_shown < to_hidden)[differs].mean())
        marks.append(float(to_shown.mean()) <= float(to_hidden.mean()) or votes >= SHOWN_VOTE)
    for k, j in enumerate(inside):
        if marks[k] or (k > 0 and marks[k - 1]) or (k + 1 < len(marks) and marks[k + 1]):
            present[j].append(box)


def merge_boxes_exact(boxes: Sequence[Box]) -> list[Box]:
    """Drop exact duplicates (a region kept by two sample pairs at their shared sample)."""
    return list(dict.fromkeys(boxes))
