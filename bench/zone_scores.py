"""Placement clips scored against the ground truth (bench/quality.py --placements): where the true product and
the set's captions lie in the output against the placement's safe zone, frame by frame.

- product_in_zone: of the frames showing the product, those where its box (the part the crop shows) lies inside
  the zone, with ZONE_SLACK of the output's side to spare;
- along_misses: of those frames, the ones where the product lies outside the zone along the crop's moving axis
  although a crop of the clip's size placed somewhere along that axis inside the source holds it inside the zone
  there (a miss a crop allowed; text, or the bounds on the crop's motion, may still have asked for it);
- text_outside: frames where a caption the clip shows whole lies outside the zone.

Each placement's clip is scored beside the same aspect's clip held to the same zone (`baseline`): what publishing
the aspect's clip on that platform, planned without the zone, would have shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workers.framing.safe_zone import to_output
from workers.geometry import CropRect

Rect = tuple[float, float, float, float]
#: a share of the output's side a box may reach past the zone's edge and count as inside (rounding, and a
#: ground-truth box a few pixels larger than what the planner saw)
ZONE_SLACK = 0.01


@dataclass
class ZoneScore:
    placement: str
    #: the zone's shares of the output's sides (top, bottom, left, right)
    zone: dict[str, float]
    product_frames: int = 0
    product_in_zone: int = 0
    along_misses: int = 0
    text_outside: int = 0
    limited: bool = False

    @property
    def in_zone_share(self) -> float | None:
        return self.product_in_zone / self.product_frames if self.product_frames else None


def _to_output(box: Rect, crop: Rect, output: dict[str, Any]) -> Rect:
    """The box in the clip's pixels, as the product maps it (workers.framing.safe_zone.to_output)."""
    rect = CropRect(round(crop[0]), round(crop[1]), round(crop[2] - crop[0]), round(crop[3] - crop[1]))
    out_size = (int(output["width"]), int(output["height"]))
    return to_output(rect, out_size, bool(output.get("padded")), float(output.get("picture_share", 1.0)))(box)


def _zone(zone: dict[str, float], output: dict[str, Any]) -> Rect:
    w, h = float(output["width"]), float(output["height"])
    return (zone["left"] * w, zone["top"] * h, (1 - zone["right"]) * w, (1 - zone["bottom"]) * h)


def _inside_on(box: Rect, zone: Rect, axis: int, slack: float) -> bool:
    lo, hi = (0, 2) if axis == 0 else (1, 3)
    return box[lo] >= zone[lo] - slack and box[hi] <= zone[hi] + slack


def score_frame(
    score: ZoneScore,
    output: dict[str, Any],
    crop: Rect,
    box: list[float] | None,
    captions: list[list[float]],
    source: tuple[int, int],
) -> None:
    """Adds one window frame: the true product box (None off screen) and captions, in a source of that size's
    pixels."""
    zone = _zone(score.zone, output)
    w, h = float(output["width"]), float(output["height"])
    slack = ZONE_SLACK * max(w, h)
    # the crop moves along the axis on which the source has more room than it (workers.geometry.crop_line)
    axis = 0 if source[0] - (crop[2] - crop[0]) >= source[1] - (crop[3] - crop[1]) else 1
    if box is not None:
        shown = (max(box[0], crop[0]), max(box[1], crop[1]), min(box[2], crop[2]), min(box[3], crop[3]))
        if shown[2] > shown[0] and shown[3] > shown[1]:
            placed = _to_output(shown, crop, output)
            score.product_frames += 1
            inside = [_inside_on(placed, zone, a, slack) for a in (0, 1)]
            score.product_in_zone += all(inside)
            if not inside[axis]:
                score.along_misses += _reachable(box, crop, score.zone, axis, source)
    kept = [
        c for c in captions if crop[0] <= c[0] and crop[1] <= c[1] and c[2] <= crop[2] and c[3] <= crop[3]
    ]
    placed_text = [_to_output((c[0], c[1], c[2], c[3]), crop, output) for c in kept]
    score.text_outside += any(
        not (_inside_on(t, zone, 0, slack) and _inside_on(t, zone, 1, slack)) for t in placed_text
    )


def _reachable(
    box: list[float], crop: Rect, zone: dict[str, float], axis: int, source: tuple[int, int]
) -> bool:
    """Whether a crop of this size, placed along the axis inside the source, holds the box inside the zone along
    that axis."""
    lo, hi = (0, 2) if axis == 0 else (1, 3)
    length = crop[hi] - crop[lo]
    lead, trail = (zone["left"], zone["right"]) if axis == 0 else (zone["top"], zone["bottom"])
    a, b = max(box[lo], 0.0), min(box[hi], float(source[axis]))
    # the crop's start p must satisfy p + lead*length <= a, b <= p + (1 - trail)*length, 0 <= p <= source - length
    first = max(0.0, b - (1 - trail) * length)
    last = min(source[axis] - length, a - lead * length)
    return first <= last + ZONE_SLACK * length
