"""A located product's boxes over a video's samples, without one-sample size spikes.

A box that is many times larger than the boxes just before and after it, in the same shot, is a blob of the
product's colours joined to a face or a hand beside it in one frame; one many times smaller is a part of it (a
highlight, the lit half). A real product does not grow or shrink that much and back within a second: such a
box would letterbox a clip or pull its crop off the product, so it is dropped, and the samples round it (the
tracker, the crop planner's interpolation) stand in for it. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from workers.geometry import Box

#: a box this many times larger or smaller in area than both of its neighbours' is a spike
SPIKE_RATIO = 2.0
#: neighbours this far apart at most (seconds) still describe the same moment of the product
SPIKE_SPAN_S = 1.5


def _area(box: Box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def without_spikes(
    times: Sequence[float], boxes: Sequence[Box | None], cuts: Sequence[float]
) -> list[Box | None]:
    """The boxes (one per sample time, in time order; None where the product was not found) with every
    size spike set to None: a box whose area is over SPIKE_RATIO times, or under a SPIKE_RATIO-th of, both
    neighbouring samples' boxes, where those are found, at most SPIKE_SPAN_S apart and no cut lies between
    them. Its neighbours are judged by their own boxes, so a run of two large boxes (a product brought close)
    stays."""
    out = list(boxes)
    for k in range(1, len(boxes) - 1):
        before, box, after = boxes[k - 1], boxes[k], boxes[k + 1]
        if before is None or box is None or after is None:
            continue
        if times[k + 1] - times[k - 1] > SPIKE_SPAN_S or any(times[k - 1] < c <= times[k + 1] for c in cuts):
            continue
        area, near = _area(box), (_area(before), _area(after))
        if area > SPIKE_RATIO * max(near) or SPIKE_RATIO * area < min(near):
            out[k] = None
    return out
