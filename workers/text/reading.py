"""Whether detected text reads as text: the daemon's recogniser (gpu_service.models.text_read) over each region
the detector found at the text samples.

The detector also fires on eyes, teeth, spokes and stripes, nearly as often as on captions. Read by PP-OCRv4's
recogniser at three of the samples that show it, upright, a caption scores far above READ_SCORE (rapidocr's own
threshold for keeping a detected line) and what is not text almost always under it, the few that pass reading as
one or two glyphs. Turned both ways, a tall region also reads as the print on a product turned on its side. A
region no sample reads is not text to OCR: the crop planner may pass through it where heeding it would letterbox
the clip (workers.pipeline), never otherwise.

A region is read as a whole: a caption fading in or out, unreadable at one sample, reads at another, and every
box of the region counts as read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from gpu_service.models.text_strip import STRIP_HEIGHT
from gpu_service.priority import PriorityKey
from workers.analysis.scoring import Inference
from workers.geometry import Box, iou
from workers.text.detection import pixels_in
from workers.text.regions import SAME_REGION_IOU

#: the daemon's text recognition model
READ_MODEL = "text_read"
#: a region reads as text where some sample's strip scores at least this (rapidocr's text_score)
READ_SCORE = 0.5
#: a region is read at its middle sample, then, where that read some characters but not well enough, at its
#: first and last (a caption fading in or out); one that shows no character at its middle sample is not text
READ_ROUNDS = (("middle",), ("first", "last"))
#: strips are this wide (the recogniser's own width): of a longer line only its start is read (whether it is
#: text, not all it says), so that every strip of a round goes to the daemon in one batch
STRIP_WIDTH = 320
#: a region this many times taller than wide is read turned both ways too (vertical text, or a line turned
#: with the footage), as rapidocr turns such crops
TALL = 1.5


@dataclass(frozen=True)
class Reading:
    """Which of a window's detected regions read as text (boxes in source pixels, as detected)."""

    read: tuple[Box, ...]
    unread: tuple[Box, ...]

    def is_text(self, box: Box) -> bool:
        """Whether a region box (a detection, or one the planner's text track derived from detections) is text:
        unless it is a region no sample read, it is."""
        return not any(iou(box, u) >= SAME_REGION_IOU for u in self.unread) or any(
            iou(box, r) >= SAME_REGION_IOU for r in self.read
        )

    def text_only(self, text: Sequence[tuple[float, Sequence[Box]]]) -> list[tuple[float, list[Box]]]:
        """The text track without the regions no sample read."""
        return [(t, [b for b in boxes if self.is_text(b)]) for t, boxes in text]


def _regions(boxes: Sequence[Sequence[Box]]) -> list[list[tuple[int, Box]]]:
    """The detections grouped into regions over the samples: (sample index, box), a box joining the region
    whose latest box it overlaps by SAME_REGION_IOU."""
    regions: list[list[tuple[int, Box]]] = []
    for k, frame_boxes in enumerate(boxes):
        for box in frame_boxes:
            region = next((r for r in regions if iou(r[-1][1], box) >= SAME_REGION_IOU), None)
            if region is None:
                regions.append([(k, box)])
            else:
                region.append((k, box))
    return regions


def strip(crop: np.ndarray) -> np.ndarray:
    """A line cut out of a frame as the recogniser reads it: STRIP_HEIGHT tall, left-aligned on zeros up to
    STRIP_WIDTH; a longer line is cut to its start, not squeezed."""
    height, width = crop.shape[:2]
    if STRIP_HEIGHT * width > STRIP_WIDTH * height:
        crop = crop[:, : max(1, math.ceil(STRIP_WIDTH * height / STRIP_HEIGHT))]
        width = crop.shape[1]
    wide = max(1, min(STRIP_WIDTH, math.ceil(STRIP_HEIGHT * width / height)))
    out = np.zeros((STRIP_HEIGHT, STRIP_WIDTH, 3), np.uint8)
    out[:, :wide] = cv2.resize(crop, (wide, STRIP_HEIGHT), interpolation=cv2.INTER_LINEAR)
    return out


def strips_of(line: np.ndarray) -> list[np.ndarray]:
    """The strips a detected line is read as: upright, and a tall one turned both ways too."""
    views = (
        [line, np.rot90(line).copy(), np.rot90(line, -1).copy()]
        if line.shape[0] >= TALL * line.shape[1]
        else [line]
    )
    return [strip(view) for view in views]


def read_regions(
    infer: Inference,
    frames_rgb: Sequence[np.ndarray],
    boxes: Sequence[Sequence[Box]],
    key: PriorityKey,
    source_size: tuple[int, int],
) -> Reading:
    """Which regions detected at the samples read as text: frames_rgb are the samples (one size), boxes their
    detections in source pixels (width, height)."""
    regions = _regions(boxes)
    if not regions:
        return Reading((), ())
    sx, sy = frames_rgb[0].shape[1] / source_size[0], frames_rgb[0].shape[0] / source_size[1]
    read = [False] * len(regions)
    # regions still worth reading: all at first, then those whose middle showed some characters
    pending = [True] * len(regions)
    for picks in READ_ROUNDS:
        strips: list[tuple[int, np.ndarray]] = []
        for r, region in enumerate(regions):
            if not pending[r]:
                continue
            at = {"first": 0, "middle": len(region) // 2, "last": len(region) - 1}
            for k, box in {region[at[pick]] for pick in picks}:
                line = pixels_in(frames_rgb[k], box, sx, sy)
                if min(line.shape[:2]) >= 2:
                    strips += [(r, one) for one in strips_of(line)]
        glimpsed = [False] * len(regions)
        if strips:
            out = infer.infer(READ_MODEL, np.stack([line for _, line in strips]), key)
            for (r, _), score, chars in zip(strips, out["score"], out["chars"], strict=True):
                read[r] |= bool(chars >= 1 and score >= READ_SCORE)
                glimpsed[r] |= bool(chars >= 1)
        pending = [g and not done for g, done in zip(glimpsed, read, strict=True)]
    return Reading(
        tuple(b for region, ok in zip(regions, read, strict=True) if ok for _, b in region),
        tuple(b for region, ok in zip(regions, read, strict=True) if not ok for _, b in region),
    )
