"""A clip's cover: the one picture of the clip a feed shows before it plays.

Chosen from the clip's own frames, so it is exactly what the clip shows (its crop or letterbox, and so no text cut
that the clip keeps). The candidates are the window's samples that located the product, stillest first (a still
product is not smeared by its own motion); each is looked at in the clip as it is encoded, and the one whose
product is whole inside the picture and sharpest (variance of the Laplacian over the product) wins. A window
without the product offers evenly spaced frames, judged over the whole picture.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from core.errors import RenderError
from workers.geometry import Box, CropRect, letterbox_placement
from workers.media.containers import ColourTags
from workers.media.planes import Planes

#: frames judged per clip: enough to find a still, sharp moment in a 5-second window, few enough to cost nothing
COVER_CANDIDATES = 12
#: the product's box is measured at most this many pixels on its longer side, so sharpness compares like with like
SHARPNESS_SIDE = 256
JPEG_QUALITY = 90
# the clip's matrix coefficients (ISO/IEC 23091-2 codes, as the clip is tagged) to swscale's names; an untagged
# clip is read as players read one, by its size
_MATRICES = {1: "ITU709", 5: "ITU601", 6: "ITU601", 7: "SMPTE240M", 9: "BT2020"}


@dataclass(frozen=True)
class Candidate:
    """A moment to judge: its source time, the product's box there (source pixels; None: the whole picture)
    and how fast the product moves there (box sizes a second)."""

    t: float
    box: Box | None
    motion: float


def cover_candidates(
    located: Sequence[tuple[float, Box]], start: float, end: float, count: int = COVER_CANDIDATES
) -> list[Candidate]:
    """The moments of [start, end) to judge, in time order: the stillest `count` samples that located the
    product, or `count` evenly spaced times where none did."""
    inside = sorted((t, box) for t, box in located if start <= t < end)
    if not inside:
        step = (end - start) / count
        return [Candidate(start + (k + 0.5) * step, None, 0.0) for k in range(count)]
    moving = []
    for k, (t, box) in enumerate(inside):
        neighbours = [inside[j] for j in (k - 1, k + 1) if 0 <= j < len(inside)]
        motion = max((_speed((t, box), other) for other in neighbours), default=0.0)
        moving.append(Candidate(t, box, motion))
    stillest = sorted(moving, key=lambda c: c.motion)[:count]
    return sorted(stillest, key=lambda c: c.t)


def _speed(a: tuple[float, Box], b: tuple[float, Box]) -> float:
    """How far the box moved or grew between two samples, in box sizes a second."""
    (ta, (ax0, ay0, ax1, ay1)), (tb, (bx0, by0, bx1, by1)) = a, b
    size = max(1.0, math.sqrt(max(1.0, (ax1 - ax0) * (ay1 - ay0))))
    shift = math.hypot((ax0 + ax1 - bx0 - bx1) / 2, (ay0 + ay1 - by0 - by1) / 2)
    growth = abs(math.sqrt(max(1.0, (bx1 - bx0) * (by1 - by0))) - size)
    return (shift + growth) / size / max(1e-3, abs(tb - ta))


def output_box(box: Box, rect: CropRect, width: int, height: int, padded: bool, share: float) -> Box | None:
    """Where a source box lands in a clip of width×height that shows rect (cropped, or letterboxed at share of
    the fitted size); None unless it lands whole inside the picture."""
    x0, y0, x1, y1 = box
    if x0 < rect.x or y0 < rect.y or x1 > rect.x + rect.w or y1 > rect.y + rect.h:
        return None
    if padded:
        left, top, fit_w, fit_h = letterbox_placement(rect.w, rect.h, width, height, share)
    else:
        left, top, fit_w, fit_h = 0, 0, width, height
    sx, sy = fit_w / rect.w, fit_h / rect.h
    return (
        left + (x0 - rect.x) * sx,
        top + (y0 - rect.y) * sy,
        left + (x1 - rect.x) * sx,
        top + (y1 - rect.y) * sy,
    )


def sharpness(luma: np.ndarray, box: Box | None) -> float:
    """Variance of the Laplacian of the luma inside box (the whole picture when None), at most SHARPNESS_SIDE
    pixels on the longer side."""
    if box is not None:
        x0, y0 = max(0, int(box[0])), max(0, int(box[1]))
        x1, y1 = min(luma.shape[1], math.ceil(box[2])), min(luma.shape[0], math.ceil(box[3]))
        luma = luma[y0:y1, x0:x1]
    if luma.shape[0] < 3 or luma.shape[1] < 3:
        return 0.0
    scale = SHARPNESS_SIDE / max(luma.shape)
    if scale < 1:
        size = (max(3, round(luma.shape[1] * scale)), max(3, round(luma.shape[0] * scale)))
        luma = cv2.resize(luma, size, interpolation=cv2.INTER_AREA)
    return float(cv2.Laplacian(luma, cv2.CV_32F).var())


@dataclass(frozen=True)
class CoverShape:
    """The clip a picker watches: its output size and how it shows its crop."""

    width: int
    height: int
    padded: bool = False
    share: float = 1.0


class CoverPicker:
    """Watches one clip's frames as they are encoded and keeps the best candidate's picture."""

    def __init__(self, candidates: Sequence[Candidate], shape: CoverShape) -> None:
        self._pending = sorted(candidates, key=lambda c: c.t)
        self._shape = shape
        self._best: tuple[tuple[bool, float], Planes, float] | None = None
        self._last: tuple[Planes, float, CropRect] | None = None

    def offer(self, picture: Planes, t: float, rect: CropRect) -> None:
        """The clip's frame at source time t, showing rect: judged when it is the first at or after a
        candidate's time."""
        # a clip's pictures are never written to once made (each frame is decoded, cropped and scaled into fresh
        # arrays), so holding one is enough to keep it
        self._last = (picture, t, rect)
        due = []
        while self._pending and self._pending[0].t <= t:
            due.append(self._pending.pop(0))
        self._judge(due, picture, t, rect)

    def _judge(self, due: Sequence[Candidate], picture: Planes, t: float, rect: CropRect) -> None:
        shape = self._shape
        for candidate in due:
            box = candidate.box
            shown = (
                None
                if box is None
                else output_box(box, rect, shape.width, shape.height, shape.padded, shape.share)
            )
            whole = box is None or shown is not None
            rank = (whole, sharpness(picture.y, shown) / (1.0 + candidate.motion))
            if self._best is None or rank > self._best[0]:
                self._best = (rank, picture, t)

    def finish(self) -> None:
        """The clip has ended: candidates after its last frame are judged on that frame."""
        if self._last is not None:
            self._judge(self._pending, *self._last)
            self._pending = []

    @property
    def chosen_t(self) -> float | None:
        """The source time of the kept picture; None before any candidate was judged."""
        return None if self._best is None else self._best[2]

    @property
    def whole(self) -> bool:
        """Whether the kept picture shows the product whole (or the window has no product to show)."""
        return self._best is not None and self._best[0][0]

    def write(self, path: Path, colour: ColourTags) -> None:
        """The kept picture as a JPEG in the clip's own colours (its Y'CbCr matrix, limited range)."""
        if self._best is None:
            raise RenderError(f"{path.name}: no frame of the clip reached a cover candidate")
        picture = self._best[1]
        matrix = _MATRICES.get(colour[0], "ITU709" if picture.y.shape[0] >= 720 else "ITU601")
        bgr = (
            picture.to_frame()
            .reformat(format="bgr24", src_colorspace=matrix, src_color_range="MPEG")
            .to_ndarray()
        )
        ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
        if not ok:
            raise RenderError(f"{path.name}: the cover could not be encoded")
        path.write_bytes(data.tobytes())
