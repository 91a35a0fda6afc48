"""The title-safe area of a letterboxed clip: how small its picture is shown so that text keeps off the edges.

A letterboxed region is scaled to fit the output, so its picture meets two of the output's edges; a caption the
seller set a few pixels inside the source frame's edge then lies a few pixels inside the clip's, where players'
controls cover it and where it reads as cut. Broadcast practice keeps text inside the title-safe area, the
central 90 % of each side (EBU R 95); here the picture is shown just small enough that every text region it
holds is inside that area, and no smaller. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from workers.geometry import Box, CropRect

#: the share of the output's width (height) that text keeps from its left and right (top and bottom) edges
TITLE_SAFE = 0.05


def title_safe_share(
    region: CropRect, out_w: int, out_h: int, text: Sequence[Box], margin: float = TITLE_SAFE
) -> float:
    """The share (at most 1) of its fitted size at which region, shown centred in an out_w×out_h clip, keeps
    the part of every text box (source pixels) it shows inside the clip's title-safe area; 1 when the fitted
    picture already does."""
    fit = min(out_w / region.w, out_h / region.h)
    scale = fit
    for x0, y0, x1, y1 in text:
        spans = (
            (max(x0, region.x), min(x1, region.x + region.w), region.x, region.w, out_w),
            (max(y0, region.y), min(y1, region.y + region.h), region.y, region.h, out_h),
        )
        if any(lo >= hi for lo, hi, *_ in spans):
            continue  # not shown
        for lo, hi, start, length, out in spans:
            # the text's nearer distance to the region's edge; shown at scale s, centred, it lies
            # out/2 - s * (length/2 - near) from the clip's edge
            near = min(lo - start, start + length - hi)
            if near < length / 2:
                scale = min(scale, out * (0.5 - margin) / (length / 2 - near))
    return min(1.0, scale / fit)
