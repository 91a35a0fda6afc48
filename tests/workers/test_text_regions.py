from __future__ import annotations

import random

import pytest

from workers.geometry import Box, CropLine
from workers.text.regions import TextTrack, safe_positions, text_clearance


def _cuts(line: CropLine, box: Box, margin: float, x: int) -> bool:
    """Whether the crop at x cuts the box grown by its clearance (clipped to the frame), said directly: a box
    inside the crop's span across the moving axis and no longer than the crop is cut by a crop edge strictly
    inside it; one that is not must not overlap the crop at all."""
    a, b, p0, p1 = line.split(box)
    grow = text_clearance(box, margin)
    a, b = max(0.0, a - grow), min(float(line.length), b + grow)
    p0, p1 = max(0.0, p0 - grow), min(float(line.perp), p1 + grow)
    if p1 <= line.q0 or p0 >= line.q1 or b <= a:
        return False
    if p0 >= line.q0 and p1 <= line.q1 and b - a <= line.crop:
        return a < x < b or a < x + line.crop < b
    return x < b and x + line.crop > a


@pytest.mark.parametrize("seed", range(4))
def test_safe_positions_are_exactly_the_even_positions_cutting_no_box(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        length, perp = rng.choice([(640, 360), (1280, 720), (100, 80)])
        q0 = rng.randint(0, perp // 4)
        line = CropLine(0, length, perp, rng.randint(10, length), q0, rng.randint(q0 + 1, perp))
        boxes: list[Box] = []
        for _ in range(rng.randint(0, 6)):
            # whole-pixel boxes and margins make intervals touch end to end, where rounding decides
            x0, y0 = float(rng.randint(-10, length)), float(rng.randint(-10, perp))
            boxes.append((x0, y0, x0 + rng.randint(1, length // 2), y0 + rng.randint(1, perp // 2)))
        margin = rng.choice([0.0, 4.0, 10.5])
        safe = {x for lo, hi in safe_positions(line, boxes, margin) for x in range(lo, hi + 1, 2)}
        expected = {
            x for x in range(0, line.last + 1, 2) if not any(_cuts(line, b, margin, x) for b in boxes)
        }
        assert safe == expected, (line, boxes, margin)


def test_safe_between_answers_as_safe_positions_of_the_regions_between() -> None:
    a, b = (10.0, 10.0, 60.0, 30.0), (300.0, 200.0, 400.0, 230.0)
    track = TextTrack([(0.0, [a]), (1.0, [a]), (2.0, [b]), (3.0, [])])
    line = CropLine(0, 640, 360, 200, 0, 360)
    # a region seen at a sample may be on screen until the next one: a span sees the samples either side of it
    on_screen: list[tuple[float, float, list[Box]]] = [
        (0.0, 0.5, [a]),
        (0.5, 1.0, [a]),
        (1.0, 1.5, [a, b]),
        (1.5, 2.5, [a, b]),
        (2.5, 3.0, [b]),
        (3.0, 4.0, []),
        (0.0, 3.0, [a, b]),
    ]
    for t0, t1, regions in on_screen:
        assert track.safe_between(line, t0, t1, 4.0) == safe_positions(line, regions, 4.0)
