"""Pure crop geometry: output sizes for an aspect ratio, crop rectangles and paths over a window, and the
crop seen along the one axis it moves on (CropLine).

All rectangles are in source pixels, display orientation. Crops have even origins and sizes so that yuv420p
chroma planes can be sliced without resampling.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CropRect:
    x: int
    y: int
    w: int
    h: int

    def as_dict(self, t: float) -> dict[str, float | int]:
        return {"t": round(t, 4), "x": self.x, "y": self.y, "w": self.w, "h": self.h}


def letterbox_placement(
    src_w: int, src_h: int, width: int, height: int, share: float = 1.0
) -> tuple[int, int, int, int]:
    """Where a src_w×src_h picture letterboxed into width×height sits, at share of the size that fits: (left,
    top, fitted width, fitted height), all even, centred."""
    scale = min(width / src_w, height / src_h) * share
    fit_w = min(width, max(2, round(src_w * scale / 2) * 2))
    fit_h = min(height, max(2, round(src_h * scale / 2) * 2))
    return (width - fit_w) // 4 * 2, (height - fit_h) // 4 * 2, fit_w, fit_h


def limited_size(size: tuple[int, int], enlargement: float, max_upscale: float) -> tuple[int, int]:
    """The output size for a placement of size whose picture would be enlarged enlargement times at that size:
    size itself within max_upscale, else the largest size of its aspect, with even sides, at which the picture
    is enlarged max_upscale times (a clip written smaller rather than blurred)."""
    if enlargement <= max_upscale:
        return size
    a, b = lowest_terms(size)
    m = even_down(size[0] // a * max_upscale / enlargement)
    return a * max(m, 2), b * max(m, 2)


@dataclass(frozen=True)
class AspectSize:
    """The crop taken from the source and the size the clip is encoded at, for one aspect."""

    aspect: tuple[int, int]
    crop_w: int
    crop_h: int
    out_w: int
    out_h: int

    @property
    def label(self) -> str:
        return f"{self.aspect[0]}:{self.aspect[1]}"

    @property
    def file_stem(self) -> str:
        return f"{self.aspect[0]}x{self.aspect[1]}"


def lowest_terms(aspect: tuple[int, int]) -> tuple[int, int]:
    """a:b with a and b coprime."""
    a, b = aspect
    g = math.gcd(a, b)
    return a // g, b // g


def aspect_size(aspect: tuple[int, int], width: int, height: int, max_side: int | None = None) -> AspectSize:
    """The largest even-sized crop of exactly aspect a:b inside width×height, and its output size.

    Exact aspect with even sides means a·m and b·m both even; a and b are coprime after reduction, so m is even.
    The output is never larger than the crop (no upscaling); max_side caps the longer output side.
    """
    a, b = lowest_terms(aspect)
    m = min(width // a, height // b)
    m -= m % 2
    if m < 2:
        raise ValueError(f"a {width}x{height} frame is too small for aspect {a}:{b}")
    out_m = m
    if max_side is not None:
        out_m = min(m, max_side // max(a, b))
        out_m -= out_m % 2
        out_m = max(out_m, 2)
    return AspectSize(aspect, a * m, b * m, a * out_m, b * out_m)


#: how far a smaller crop's aspect may be from its output's: scaled to the output, a picture stretched by
#: half a per cent is not seen, and it frees the crop's size from the exact aspect's coarse grid (18 × 32
#: pixels for 9:16), whose next size down could leave a crop sized to pass a caption too small for the product
ZOOM_ASPECT_SLACK = 0.005


def near_aspect(width: int, height: int, aspect: tuple[int, int]) -> bool:
    """Whether width×height is of aspect a:b within ZOOM_ASPECT_SLACK."""
    a, b = aspect
    return abs(width * b - height * a) <= ZOOM_ASPECT_SLACK * height * a


def zoomed_size(size: AspectSize, zoom: float) -> tuple[int, int]:
    """The largest crop, even-sided, no larger than zoom times the aspect's largest one on either side and of its
    aspect within ZOOM_ASPECT_SLACK; (0, 0) when none is that small.

    Sizes step by two pixels along the crop's short side, the long side the nearest even length to the aspect
    (an error of at most one pixel in it); the exact aspect's size (aspect_size's grid) is the floor."""
    a, b = lowest_terms(size.aspect)
    m = int(size.crop_w * zoom / a) // 2 * 2
    exact = (a * m, b * m)
    short, long = sorted((a, b))
    # along the short side: the largest even length inside the zoom, down to the exact size's
    limit_short, limit_long = sorted((size.crop_w * zoom, size.crop_h * zoom))
    for side in range(even_down(limit_short + 1e-6), min(exact), -2):
        other = even(side * long / short)
        crop = (side, other) if a <= b else (other, side)
        if other <= limit_long + 1e-6 and near_aspect(*crop, (a, b)):
            return crop
    return exact


def spanning_size(size: AspectSize, width: int, height: int) -> tuple[int, int] | None:
    """The largest crop of the aspect within ZOOM_ASPECT_SLACK inside a width×height frame, where it is larger
    than the exact aspect's (aspect_size): the exact grid leaves that one up to a few per cent short of the frame
    (9:16 of 960×540 is 288×512, of 1280×720 396×704); None where it is not larger."""
    crop = zoomed_size(size, min(width / size.crop_w, height / size.crop_h))
    return crop if crop[0] > size.crop_w else None


def even(value: float) -> int:
    return round(value / 2.0) * 2


def even_up(value: float) -> int:
    """The nearest even integer at or above value."""
    return math.ceil(value / 2) * 2


def even_down(value: float) -> int:
    """The nearest even integer at or below value."""
    return math.floor(value / 2) * 2


@dataclass(frozen=True)
class CropPath:
    """Crop rectangles at key times, linearly interpolated between them and held outside them."""

    times: tuple[float, ...]
    rects: tuple[CropRect, ...]

    def __post_init__(self) -> None:
        if not self.times or len(self.times) != len(self.rects):
            raise ValueError("a crop path needs one rectangle per key time")
        if list(self.times) != sorted(self.times):
            raise ValueError("crop path key times must ascend")

    def __call__(self, t: float) -> CropRect:
        i = bisect.bisect_right(self.times, t)
        if i == 0:
            return self.rects[0]
        if i == len(self.times):
            return self.rects[-1]
        t0, t1 = self.times[i - 1], self.times[i]
        r0, r1 = self.rects[i - 1], self.rects[i]
        if (r0.w, r0.h) != (r1.w, r1.h):
            # a jump to another size (keys a moment apart, as at a cut): the crop before it holds until then
            return r0
        f = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
        return CropRect(even(r0.x + f * (r1.x - r0.x)), even(r0.y + f * (r1.y - r0.y)), r0.w, r0.h)


Box = tuple[float, float, float, float]


def iou(a: Box, b: Box) -> float:
    """Intersection over union of two boxes."""
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def box_union(a: Box, b: Box) -> Box:
    """The smallest box holding both."""
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def scale_box(box: Box, sx: float, sy: float) -> Box:
    return (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)


def moved_box(box: Box, dx: float, dy: float) -> Box:
    return (box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy)


def grown_box(box: Box, margin: float) -> Box:
    """box grown by margin on every side."""
    return (box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin)


@dataclass(frozen=True)
class CropLine:
    """The crop seen along its moving axis: axis 0 moves in x, 1 in y."""

    axis: int
    length: int  # the source along the moving axis
    perp: int  # the source across it
    crop: int  # the crop along the moving axis
    q0: int  # where the crop starts across the moving axis (fixed)
    q1: int
    #: a placement's safe zone along the moving axis: the pixels at the crop's start and end that the product and
    #: the text it keeps stay off (the platform's overlays cover them)
    inset: tuple[int, int] = (0, 0)

    @property
    def last(self) -> int:
        """The last even position the crop can take."""
        return (self.length - self.crop) // 2 * 2

    def split(self, box: Box) -> tuple[float, float, float, float]:
        """(start, end) along the moving axis, then (start, end) across it."""
        if self.axis == 0:
            return box[0], box[2], box[1], box[3]
        return box[1], box[3], box[0], box[2]

    def rect(self, position: int) -> CropRect:
        if self.axis == 0:
            return CropRect(position, self.q0, self.crop, self.q1 - self.q0)
        return CropRect(self.q0, position, self.q1 - self.q0, self.crop)


def crop_line(crop_w: int, crop_h: int, width: int, height: int) -> CropLine:
    # Sizes are taken even: the renderer drops a source's odd last row/column (yuv420p).
    width, height = width // 2 * 2, height // 2 * 2
    # the axis with more slack moves; with the largest crop of an aspect the other has only a few pixels
    # of slack, where the crop is simply centred
    if width - crop_w >= height - crop_h:
        q0 = (height - crop_h) // 4 * 2
        return CropLine(0, width, height, crop_w, q0, q0 + crop_h)
    q0 = (width - crop_w) // 4 * 2
    return CropLine(1, height, width, crop_h, q0, q0 + crop_w)
