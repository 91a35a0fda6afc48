"""The letterboxed region: where no crop will do, which region is shown inside the bars, so that the product
stays large.

A letterboxed clip shows a region longer than the aspect's crop along its moving axis, fitted to the clip: the
product is shown smaller by as much as the region is longer than the product. A region spanning the frame across
that axis must hold whole every caption it reaches along it, and a caption beside the product then widens the
region until the product is a detail of it. So the regions are tried in this order:

1. those spanning the frame across the axis, while the product is shown at least FILL of the size fitting it
   alone to the clip would give (captions held whole or left out along the axis, as a crop keeps them);
2. those narrowed across the axis to leave out the captions beyond the product's span (a region is letterboxed
   anyway, so its span across need not be the frame's), while the product is shown at least FILL; narrowed, a
   region may also be shorter than the crop, down to the smallest zoom's length (the planner's own limit on
   enlarging a picture): a product smaller than the crop is shown large past a caption no crop of the aspect
   could leave out;
3. all the rest, smallest first (spanning the frame before narrowed at each length): the product is shown as
   large as text safety allows.

A caption is kept whole only while the product stays large. Pure: no I/O.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from workers.geometry import Box, CropLine, even_down, even_up
from workers.text.regions import text_clearance

#: what a letterbox that leaves text beside the product out adds to its reason
TEXT_LEFT_OUT = "text beside the product left out to show the product large"

#: of the size fitting the product alone to the clip would give, the share a letterboxed clip shows it at, at
#: least, before text beside it is left out: an ads team's rule of thumb that the product reads as the subject,
#: not a detail of its surroundings
FILL = 0.8


def region_size(line: CropLine) -> tuple[int, int]:
    """The region's width and height: the line's crop along its axis, its fixed span across."""
    across = line.q1 - line.q0
    return (line.crop, across) if line.axis == 0 else (across, line.crop)


def fill(line: CropLine, out: tuple[int, int], subject: Sequence[Box]) -> float:
    """The product's size in the region fitted to an out-sized clip, over its size fitted alone, the median over
    the subject's boxes (1 where there are none: nothing to shrink)."""
    if not subject:
        return 1.0
    w, h = region_size(line)
    shown = min(out[0] / w, out[1] / h)
    fitted = [min(out[0] / max(1.0, b[2] - b[0]), out[1] / max(1.0, b[3] - b[1])) for b in subject]
    return statistics.median(shown / f for f in fitted)


def narrowed(line: CropLine, regions: Sequence[Box], margin: float, subject: Sequence[Box]) -> list[CropLine]:
    """The line narrowed across its axis to leave text regions out: past the regions before the subject's span
    across (at every sample), past those after it, and past both; the widest first. Regions level with the
    subject stay: leaving them out would cut the product."""
    if not subject:
        return []
    spans = [line.split(box)[2:] for box in subject]
    lo = min(max(0.0, p0) for p0, _ in spans)
    hi = max(min(float(line.perp), p1) for _, p1 in spans)
    start, end = 0, line.perp
    for region in regions:
        _, _, r0, r1 = line.split(region)
        clearance = text_clearance(region, margin)
        if r1 + clearance <= lo:
            start = max(start, min(even_up(r1 + clearance), even_down(lo)))
        elif r0 - clearance >= hi:
            end = min(end, max(even_down(r0 - clearance), even_up(hi)))
    spans_across = {(start, line.perp), (0, end), (start, end)} - {(0, line.perp)}
    return [
        CropLine(line.axis, line.length, line.perp, line.crop, q0, q1, line.inset)
        for q0, q1 in sorted(spans_across, key=lambda s: (s[0] - s[1], s))
    ]


def letterbox_lines(
    wider: Sequence[CropLine],
    shorter: Sequence[CropLine],
    out: tuple[int, int],
    regions: Sequence[Box],
    margin: float,
    subject: Sequence[Box],
) -> list[tuple[CropLine, bool]]:
    """The regions to try, in the module's order, each with whether it leaves text out across the axis. wider:
    the regions spanning the frame across the axis, longer than the crop, shortest first, the whole frame last;
    shorter: those up to the crop's length, tried only narrowed (spanning the frame, they are no larger a
    picture than the crop, which text ruled out)."""
    spanning = [(line, False) for line in wider]
    narrow = [(n, True) for line in [*shorter, *wider] for n in narrowed(line, regions, margin, subject)]
    large = [c for c in spanning + narrow if fill(c[0], out, subject) >= FILL]
    rest = sorted((c for c in spanning + narrow if c not in large), key=lambda c: (c[0].crop, c[1]))
    return large + rest
