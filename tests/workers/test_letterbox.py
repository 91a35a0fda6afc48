"""The letterboxed region keeps the product large: a caption beside it is held whole only while the product is
shown at least FILL of its fitted size, and is otherwise left out across the moving axis."""

from __future__ import annotations

from workers.framing.letterbox import FILL, fill, narrowed, region_size
from workers.framing.planner import PAD_SUBJECT_TOO_BIG, TEXT_LEFT_OUT, plan_framing
from workers.geometry import Box, CropLine

W, H = 1280, 720
TIMES = [2.0 + 0.5 * k for k in range(11)]
# a product wider than the 9:16 crop (405 px), drifting right
PRODUCT = [(t, (100.0 + 10 * k, 10.0, 740.0 + 10 * k, 540.0)) for k, t in enumerate(TIMES)]


def _plan(caption: Box) -> tuple[float, list[Box]]:
    """The 9:16 plan's fill of the product (the least over its keys) and its regions (x0, y0, x1, y1)."""
    plan = plan_framing(2.0, 7.0, W, H, [(9, 16)], PRODUCT, [(t, [caption]) for t in TIMES])["9:16"]
    assert plan.padded and plan.padded_reason == PAD_SUBJECT_TOO_BIG
    regions = [(float(r.x), float(r.y), float(r.x + r.w), float(r.y + r.h)) for _, r in plan.keys]
    fills = []
    for (t, rect), region in zip(plan.keys, regions, strict=True):
        box = min(PRODUCT, key=lambda s: abs(s[0] - t))[1]
        line = CropLine(0, W, H, rect.w, rect.y, rect.y + rect.h)
        fills.append(fill(line, (plan.size.out_w, plan.size.out_h), [box]))
        assert region[0] <= box[0] and box[2] <= region[2]  # the product whole
    left_out = plan.reason_text is not None and TEXT_LEFT_OUT in plan.reason_text
    assert left_out == plan.text_left_out
    return min(fills), regions


def test_a_caption_under_a_product_too_big_for_the_crop_is_left_out_so_the_product_stays_large() -> None:
    # a price line wider than the product below it: held whole, the region is the whole frame (the product at
    # half its fitted size); left out below the region, the product is shown large
    caption = (214.0, 607.0, 1065.0, 669.0)
    least, regions = _plan(caption)
    assert least >= FILL
    assert all(r[3] <= caption[1] for r in regions)


def test_a_caption_the_product_can_keep_while_large_is_held_whole() -> None:
    # a price at the product's lower right: holding it costs the product little
    caption = (700.0, 600.0, 800.0, 650.0)
    least, regions = _plan(caption)
    assert least >= FILL
    assert all(r[0] <= caption[0] and caption[2] <= r[2] and r[3] >= caption[3] for r in regions)


def test_a_region_is_narrowed_only_past_text_beyond_the_products_span_widest_first() -> None:
    line = CropLine(0, W, H, 700, 0, H)
    subject = [(100.0, 200.0, 600.0, 500.0)]
    above, level, below = (
        (300.0, 40.0, 500.0, 90.0),
        (650.0, 300.0, 900.0, 340.0),
        (200.0, 600.0, 900.0, 660.0),
    )
    lines = narrowed(line, [above, level, below], 0.0, subject)
    spans = [(n.q0, n.q1) for n in lines]
    # past the one above, past the one below, past both; never past the one level with the product
    assert len(spans) == 3 and spans == sorted(spans, key=lambda s: s[0] - s[1])
    assert all(q0 <= 200 and q1 >= 500 for q0, q1 in spans)
    assert {q0 for q0, _ in spans} > {0} and {q1 for _, q1 in spans} > {H}
    assert narrowed(line, [level], 0.0, subject) == []
    assert region_size(lines[-1]) == (700, lines[-1].q1 - lines[-1].q0)
