"""The picture inside a source's black bars: a phone's vertical video pillarboxed in a 16:9 file, a 4:3 or
widescreen film letterboxed, where no crop should show the bars (a clip of black columns beside a strip of picture
is a letterboxed clip in all but name, and the bars' edges draw saliency and subject fallbacks onto them).

Bars are rows or columns black (nearly every pixel darker than DARK) in every analysed frame of a shot, and come
in pairs about the centre, as encoders add them, with the picture starting along a straight edge beside each (an
edit may pillarbox one shot only: a window's area is what every one of its shots shows as picture);
a dark scene's shadowed top, a night sky, a fade to black or a product on a black backdrop is none of them. Text
drawn over a bar (a price, a brand name) does not make it picture: a caption on a bar alone is left out with it,
and one across a bar's edge is kept whole, with the surround the planner keeps clear round it, so that no crop cuts
it. PictureFrame carries the planner's signals into the picture's own pixels and its plans back. Pure: arrays in,
a box out.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workers.geometry import Box, CropRect, even_down, even_up, grown_box, moved_box
from workers.text.regions import text_clearance

#: a pixel this dark in every channel (of 255) is black; studio black is 16 in limited-range video
DARK = 28
#: a row or column is bar where at least this share of its pixels is black in every analysed frame
BAR_SHARE = 0.98
#: bars thinner than this share of the frame are encoder padding not worth a different crop
MIN_BAR = 0.02
#: the two bars of a pair differ by at most this share of the frame (bars are added about the centre)
PAIR_TOLERANCE = 0.02
#: bars leave at least this share of the frame as picture (else it is a black or nearly black shot)
MIN_PICTURE = 0.3
#: beside a bar the picture starts along a straight edge: in some analysed frame at most this share of the line
#: next to it is black (a product on a black backdrop meets the dark around it along its own outline instead)
EDGE_SHARE = 0.5
#: a shot is looked at alone for bars when the window has at least this many of its frames
MIN_SHOT_FRAMES = 2


def picture_area(
    frames_rgb: Sequence[np.ndarray], source_size: tuple[int, int], text_boxes: Sequence[Box] = ()
) -> Box | None:
    """The picture's box in source pixels (even edges, inside the bars), or None when the whole frame is
    picture. `frames_rgb` are the window's analysed frames (any one size)."""
    if not frames_rgb:
        return None
    black = np.stack([frame.max(axis=2) <= DARK for frame in frames_rgb])
    height, width = black.shape[1:]
    sx, sy = source_size[0] / width, source_size[1] / height
    # a caption's backdrop, outline or shadow reaches past the glyphs the detector boxes, as far as the planner's
    # clearance round text: a caption set across a bar's edge is all kept (its glyphs alone were, and the crop
    # held to the bar's edge cut its backdrop)
    captions = [grown_box(box, text_clearance(box, 0.0)) for box in text_boxes]
    for box in captions:
        # text counts as black here, so that a caption set in a bar leaves it a bar; the area takes it back below
        black[
            :,
            max(0, math.floor(box[1] / sy)) : math.ceil(box[3] / sy),
            max(0, math.floor(box[0] / sx)) : math.ceil(box[2] / sx),
        ] = True
    top, bottom = _paired(black.mean(axis=2))
    left, right = _paired(black.mean(axis=1))
    if top == bottom == left == right == 0:
        return None
    # one analysed line further in, rounded inwards: the line where bar and picture meet was blended by the
    # frames' scaling, and a grey seam at a clip's edge is a bar too
    left, right, top, bottom = (v + 1 if v else 0 for v in (left, right, top, bottom))
    x0, y0 = even_up(left * sx), even_up(top * sy)
    x1, y1 = even_down((width - right) * sx), even_down((height - bottom) * sy)
    # a caption across a bar's edge is kept whole with its backdrop; one set on a bar alone is text, not picture,
    # and is left out with the bar (as a crop may leave a caption out)
    bars_picture = (x0, y0, x1, y1)
    for text_box, box in zip(text_boxes, captions, strict=True):
        if _overlaps(text_box, bars_picture):
            x0, y0 = min(x0, even_down(box[0])), min(y0, even_down(box[1]))
            x1, y1 = max(x1, even_up(box[2])), max(y1, even_up(box[3]))
    x0, y0 = max(0, x0), max(0, y0)
    x1, y1 = min(even_down(source_size[0]), x1), min(even_down(source_size[1]), y1)
    if (x0, y0, x1, y1) == (0, 0, even_down(source_size[0]), even_down(source_size[1])):
        return None
    return (float(x0), float(y0), float(x1), float(y1))


def shots_picture_area(
    frames_rgb: Sequence[np.ndarray],
    times: Sequence[float],
    cuts: Sequence[float],
    source_size: tuple[int, int],
    text_boxes: Sequence[Box] = (),
) -> Box | None:
    """The picture of a window whose shots may differ (an edit that pillarboxes one shot only): each shot's
    frames are looked at alone, and the area is what every shot shows as picture, so that no frame of a clip
    shows a bar; None when no shot has bars. `times` are the frames' source times, `cuts` the shot cuts."""
    shots: dict[int, list[np.ndarray]] = {}
    for frame, t in zip(frames_rgb, times, strict=True):
        shots.setdefault(bisect.bisect_right(cuts, t), []).append(frame)
    # one frame alone is too little to tell a bar from a dark scene's sides: such a shot is judged with the rest
    alone = [frames for frames in shots.values() if len(frames) >= MIN_SHOT_FRAMES]
    rest = [frame for frames in shots.values() if len(frames) < MIN_SHOT_FRAMES for frame in frames]
    areas = [picture_area(frames, source_size, text_boxes) for frames in alone]
    if rest:
        areas.append(picture_area([*rest, *(f for frames in alone for f in frames)], source_size, text_boxes))
    found = [area for area in areas if area is not None]
    if not found:
        return None
    return (
        max(a[0] for a in found),
        max(a[1] for a in found),
        min(a[2] for a in found),
        min(a[3] for a in found),
    )


def _overlaps(a: Box, b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _paired(shares: np.ndarray) -> tuple[int, int]:
    """The leading and trailing runs of bar lines when they form a pair (MIN_BAR, PAIR_TOLERANCE, MIN_PICTURE)
    with a picture's straight edge beside each (EDGE_SHARE); (0, 0) otherwise. `shares` holds each line's black
    share per frame (frames × lines)."""
    bar: np.ndarray = np.all(shares >= BAR_SHARE, axis=0)
    n = len(bar)
    if bar.all():
        return 0, 0
    lead, trail = int(np.argmin(bar)), int(np.argmin(bar[::-1]))
    if min(lead, trail) < MIN_BAR * n or abs(lead - trail) > PAIR_TOLERANCE * n:
        return 0, 0
    if n - lead - trail < MIN_PICTURE * n:
        return 0, 0
    # the line past the blended seam on either side
    edges = shares[:, [min(lead + 1, n - 1), max(n - 2 - trail, 0)]]
    if (edges.min(axis=0) > EDGE_SHARE).any():
        return 0, 0
    return lead, trail


@dataclass(frozen=True)
class PictureFrame:
    """Where plan_framing's picture lies in the source: its even corner and size."""

    x0: int
    y0: int
    width: int
    height: int

    @staticmethod
    def of(picture: Box) -> PictureFrame:
        # even edges, as every crop's: rounded inwards
        x0, y0 = (even_up(v) for v in picture[:2])
        x1, y1 = (even_down(v) for v in picture[2:])
        return PictureFrame(x0, y0, x1 - x0, y1 - y0)

    def text_inside(self, boxes: Sequence[Box]) -> list[Box]:
        """Text boxes in the picture's pixels; text set on a bar, outside the picture, is left out with the bar
        (picture_area keeps the text across a bar's edge inside the picture)."""
        inside = (self.inside(b) for b in boxes)
        return [b for b in inside if b[2] > b[0] and b[3] > b[1]]

    def inside(self, box: Box) -> Box:
        """The box in the picture's pixels, clipped to it."""
        x0, y0, x1, y1 = moved_box(box, -self.x0, -self.y0)
        return (
            min(max(x0, 0), self.width),
            min(max(y0, 0), self.height),
            min(max(x1, 0), self.width),
            min(max(y1, 0), self.height),
        )

    def back_keys(self, keys: Sequence[tuple[float, CropRect]]) -> tuple[tuple[float, CropRect], ...]:
        """A plan's keys over the picture as keys over the source."""
        return tuple((t, CropRect(r.x + self.x0, r.y + self.y0, r.w, r.h)) for t, r in keys)

    def back_boxes(self, boxes: Sequence[Box]) -> tuple[Box, ...]:
        return tuple(moved_box(b, self.x0, self.y0) for b in boxes)
