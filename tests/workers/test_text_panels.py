"""A caption's backing panel kept out of crops: the detected box grown until the planner's clearance round it
reaches the panel's edges, and left alone where the text has no panel."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from gpu_service.local import LocalInference
from gpu_service.priority import PriorityKey
from workers.geometry import Box
from workers.text.detection import detect_text
from workers.text.panels import with_panel
from workers.text.regions import text_clearance

FONT = cv2.FONT_HERSHEY_DUPLEX


def backdrop(width: int = 640, height: int = 360, seed: int = 3) -> np.ndarray:
    """A scene's texture: smooth blobs of every brightness, edges wandering through it."""
    rng = np.random.default_rng(seed)
    return cv2.GaussianBlur(rng.integers(30, 230, (height, width, 3), dtype=np.uint8), (0, 0), 5)


def panel_caption(frame: np.ndarray, text: str, at: tuple[int, int], scale: float) -> tuple[Box, Box]:
    """Draws text on a darkened panel padded round it, as price captions are drawn; returns the panel's box
    and the box of the text after its first glyph (where a detector that missed that glyph puts it)."""
    (tw, th), base = cv2.getTextSize(text, FONT, scale, 2)
    pad = max(3, round(0.25 * th))
    x, y = at
    panel = (x, y, x + tw + 2 * pad, y + th + base + 2 * pad)
    region = frame[panel[1] : panel[3], panel[0] : panel[2]]
    region[:] = (region.astype(np.float32) * 0.3 + 12).astype(np.uint8)
    cv2.putText(frame, text, (x + pad, y + pad + th), FONT, scale, (255, 255, 255), 2, cv2.LINE_AA)
    (first, _), _ = cv2.getTextSize(text[0], FONT, scale, 2)
    glyphs = (float(x + pad + first), float(y + pad - 2), float(x + pad + tw), float(y + pad + th + base))
    return tuple(float(v) for v in panel), glyphs  # type: ignore[return-value]


def grey(frame: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)


def guards(box: Box, panel: Box) -> bool:
    """Whether the planner's clearance round box reaches the panel's edges (to a pixel): crops keep off it."""
    c = text_clearance(box, 0.0)
    return (
        box[0] - c <= panel[0] + 1
        and box[1] - c <= panel[1] + 1
        and box[2] + c >= panel[2] - 1
        and box[3] + c >= panel[3] - 1
    )


def within(box: Box, panel: Box) -> bool:
    return (
        box[0] >= panel[0] - 1
        and box[1] >= panel[1] - 1
        and box[2] <= panel[2] + 1
        and box[3] <= panel[3] + 1
    )


@pytest.mark.parametrize("seed", range(4))
def test_text_on_a_panel_is_grown_to_the_panel_missed_glyph_included(seed: int) -> None:
    frame = backdrop(seed=seed)
    panel, glyphs = panel_caption(frame, "-50%", (220, 140), 1.4)
    assert not guards(glyphs, panel)
    grown = with_panel(grey(frame), glyphs)
    # crops keep off the whole panel, and no further off it than they would keep off its glyphs
    assert guards(grown, panel) and within(grown, panel), (grown, panel)


def test_a_panel_cut_by_the_frame_edge_still_closes_the_text() -> None:
    frame = backdrop()
    panel, glyphs = panel_caption(frame, "SALE", (300, 0), 1.2)
    # the frame shows the panel from its top edge down, and the text's box reaches the frame's top
    grown = with_panel(grey(frame), (glyphs[0], 0.0, glyphs[2], glyphs[3]))
    assert grown[1] == 0.0 and guards(grown, panel) and within(grown, panel), (grown, panel)


@pytest.mark.parametrize("seed", range(4))
def test_text_without_a_panel_keeps_its_box(seed: int) -> None:
    frame = backdrop(seed=seed)
    cv2.putText(frame, "NEW 2 FOR $15", (150, 200), FONT, 1.2, (20, 20, 20), 6, cv2.LINE_AA)
    cv2.putText(frame, "NEW 2 FOR $15", (150, 200), FONT, 1.2, (255, 255, 255), 2, cv2.LINE_AA)
    (tw, th), base = cv2.getTextSize("NEW 2 FOR $15", FONT, 1.2, 2)
    box = (146.0, 200.0 - th - 6, 154.0 + tw, 200.0 + base + 4)
    assert with_panel(grey(frame), box) == box


def test_the_detector_s_region_of_a_panel_caption_holds_the_whole_panel() -> None:
    frame = backdrop(1280, 720, seed=5)
    panel, _ = panel_caption(frame, "-50%", (560, 600), 2.0)
    boxes = detect_text(LocalInference(), [frame], PriorityKey(0.0, 0.0))[0]
    assert any(guards(b, panel) for b in boxes), (boxes, panel)
