"""A caption's backing panel: the solid or darkened box many captions sit on reaches past the glyphs the text
detector boxes, by its padding, and by any glyph the detector missed (a price's thin minus sign). A crop edge
through the panel cuts the caption as surely as one through its letters, so a detected region that sits on a
panel is grown until the clearance the crop planner keeps round text (text_regions.text_clearance, a third of
the glyphs' height, for just such backdrops) reaches the panel's edges. Pure: a grey frame and a box in, a box
out.

A panel is told from the scene around it by its edges: each runs straight along a whole side of the text, one
step in brightness between two neighbouring lines of pixels, where the scene's own edges wander and break.
"""

from __future__ import annotations

import numpy as np

from workers.geometry import Box
from workers.text.regions import text_clearance

#: a panel reaches past the detected glyphs by at most this share of their box's height on any side: its
#: padding, or a glyph the detector missed, which is at most about as wide as the line is tall (the minus
#: sign of "-50%" on bench/quality.py's development half lay 0.54 of the height left of the box)
PANEL_REACH = 1.0
#: a panel's edge: neighbouring lines whose pixels step by at least EDGE_LEVEL grey levels at the median,
#: and by at least half that, the same way, at EDGE_SHARE of them
EDGE_LEVEL = 14.0
EDGE_SHARE = 0.6
#: the sides on which an edge (or the frame's border) must close a box for it to be on a panel: a glyph the
#: detector missed can break the edge of one side's lines, and three straight edges round text are a panel
PANEL_SIDES = 3


def _edge(lines: np.ndarray) -> int | None:
    """The first offset d at which lines (rows: the line on the box's side, then outward) step from line d to
    line d + 1 along the whole of them; None where none does."""
    steps = np.diff(lines.astype(np.float32), axis=0)
    for d, step in enumerate(steps):
        median = float(np.median(step))
        if (
            abs(median) >= EDGE_LEVEL
            and float((step * np.sign(median) >= EDGE_LEVEL / 2).mean()) >= EDGE_SHARE
        ):
            return d
    return None


def with_panel(grey: np.ndarray, box: Box) -> Box:
    """The detected text region box (the grey frame's pixels) grown where the panel it sits on, if it does,
    reaches past the planner's clearance round it."""
    height, width = grey.shape
    x0, y0 = max(0, round(box[0])), max(0, round(box[1]))
    x1, y1 = min(width, round(box[2])), min(height, round(box[3]))
    if x1 - x0 < 2 or y1 - y0 < 2:
        return box
    reach = max(2, round(PANEL_REACH * (y1 - y0)))
    # per side: the lines of pixels from the box's own edge outward, each along the whole side
    sides = (
        (grey[max(0, y0 - reach) : y0 + 1, x0:x1][::-1], y0 == 0),
        (grey[y1 - 1 : min(height, y1 + reach), x0:x1], y1 == height),
        (grey[y0:y1, max(0, x0 - reach) : x0 + 1][:, ::-1].T, x0 == 0),
        (grey[y0:y1, x1 - 1 : min(width, x1 + reach)].T, x1 == width),
    )
    edges = [_edge(lines) if len(lines) > 1 else None for lines, _ in sides]
    closed = sum(edge is not None or border for edge, (_, border) in zip(edges, sides, strict=True))
    if closed < PANEL_SIDES:
        return box
    # the planner's clearance round the glyphs' box covers a panel that reaches no further; a box grown on top
    # or below has taller "glyphs" and a wider clearance, so growing by the rest never falls short of the panel
    beyond = text_clearance(box, 0.0)
    top, bottom, left, right = (max(0.0, (edge or 0) - beyond) for edge in edges)
    return (box[0] - left, box[1] - top, box[2] + right, box[3] + bottom)
