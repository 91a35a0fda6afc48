"""A placement's safe zone in the crop planner: the margins of the output that the platform's overlays cover
(core.placements.SafeZone), which the product and every text line a clip keeps stay inside.

Along the crop's moving axis the zone is a constraint on the path: the line carries its margins in source pixels
(CropLine.inset), text regions are held inside them or left out (workers.text.regions), and the product's box is
grown by them as far as the crop has room, so the path sets it inside the zone wherever the crop can hold it
so. Across that axis a crop has no freedom (the largest one spans the frame), so there the zone is measured,
not planned: fit() says how often the product and whether the text ended inside it. Pure: no I/O.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, replace

from core.placements import SafeZone
from workers.geometry import Box, CropLine, CropRect, letterbox_placement

#: pixels of the output a box may reach past the zone's edge and still count as inside: even-pixel rounding
FIT_TOLERANCE_PX = 2.0


def zoned(line: CropLine, zone: SafeZone | None) -> CropLine:
    """The line with the zone's margins along its moving axis, in its crop's pixels."""
    if zone is None:
        return line
    lead, trail = zone.along(line.axis)
    return replace(line, inset=(round(lead * line.crop), round(trail * line.crop)))


def inset_grown(box: Box, line: CropLine) -> Box:
    """box grown along the line's moving axis by its inset, the two margins shrunk alike as far as the crop
    lacks room for both: a product the crop can hold but not inside the zone is held as near its middle as the
    margins' proportion puts it, not treated as too big."""
    lead, trail = line.inset
    if not lead and not trail:
        return box
    a, b, _, _ = line.split(box)
    room = max(0.0, line.crop - (b - a))
    k = min(1.0, room / (lead + trail))
    if line.axis == 0:
        return (box[0] - k * lead, box[1], box[2] + k * trail, box[3])
    return (box[0], box[1] - k * lead, box[2], box[3] + k * trail)


@dataclass(frozen=True)
class ZoneFit:
    """How a planned clip meets its placement's safe zone."""

    #: whether the plan was made keeping to the zone (False: no crop kept to it would do without a letterbox)
    planned: bool
    #: the share of the keys with a product box at which the product is inside the zone; None without one
    product: float | None
    #: whether every text region the clip shows whole is inside the zone at every key
    text: bool

    def as_manifest(self) -> dict[str, object]:
        return {
            "planned_in_safe_zone": self.planned,
            "product_in_safe_zone": None if self.product is None else round(self.product, 3),
            "text_in_safe_zone": self.text,
        }


def fit(
    keys: Sequence[tuple[float, CropRect]],
    zone: SafeZone,
    out_size: tuple[int, int],
    subject: Sequence[tuple[float, Box]],
    text: Sequence[Box],
    *,
    planned: bool,
    padded: bool = False,
    picture_share: float = 1.0,
) -> ZoneFit:
    """Where the product (its nearest sample's box at each key) and the text shown whole lie in an out_size clip
    of the keys' regions (cropped, or letterboxed at picture_share), against the zone."""
    out_w, out_h = out_size
    safe = (zone.left * out_w, zone.top * out_h, (1 - zone.right) * out_w, (1 - zone.bottom) * out_h)
    times = [t for t, _ in subject]
    inside = seen = 0
    text_inside = True
    for t, rect in keys:
        to_out = to_output(rect, out_size, padded, picture_share)
        if subject:
            i = bisect.bisect_left(times, t)
            near = min((j for j in (i - 1, i) if 0 <= j < len(times)), key=lambda j: abs(times[j] - t))
            seen += 1
            inside += _within(to_out(_clipped(subject[near][1], rect)), safe)
        for box in text:
            if _holds(rect, box) and not _within(to_out(box), safe):
                text_inside = False
    return ZoneFit(planned, inside / seen if seen else None, text_inside)


def to_output(rect: CropRect, out_size: tuple[int, int], padded: bool, share: float) -> OutputMapping:
    """How boxes in the source map into an out_size clip of this region, cropped or letterboxed at share."""
    if padded:
        left, top, fit_w, fit_h = letterbox_placement(rect.w, rect.h, *out_size, share)
        return OutputMapping(rect, fit_w / rect.w, fit_h / rect.h, left, top)
    return OutputMapping(rect, out_size[0] / rect.w, out_size[1] / rect.h, 0, 0)


@dataclass(frozen=True)
class OutputMapping:
    """Source pixels of one region to the output's."""

    rect: CropRect
    sx: float
    sy: float
    left: int
    top: int

    def __call__(self, box: Box) -> Box:
        r = self.rect
        return (
            self.left + (box[0] - r.x) * self.sx,
            self.top + (box[1] - r.y) * self.sy,
            self.left + (box[2] - r.x) * self.sx,
            self.top + (box[3] - r.y) * self.sy,
        )


def _clipped(box: Box, rect: CropRect) -> Box:
    """The part of box the region shows (a product past the crop's edge is cut there, not outside the zone)."""
    return (
        max(box[0], rect.x),
        max(box[1], rect.y),
        min(box[2], rect.x + rect.w),
        min(box[3], rect.y + rect.h),
    )


def _holds(rect: CropRect, box: Box) -> bool:
    return rect.x <= box[0] and rect.y <= box[1] and box[2] <= rect.x + rect.w and box[3] <= rect.y + rect.h


def _within(box: Box, safe: Box) -> bool:
    tol = FIT_TOLERANCE_PX
    return (
        box[0] >= safe[0] - tol
        and box[1] >= safe[1] - tol
        and box[2] <= safe[2] + tol
        and box[3] <= safe[3] + tol
    )
