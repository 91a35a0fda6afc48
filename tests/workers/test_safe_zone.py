"""A placement's safe zone in the crop planner and its output size under the upscale limit, on hand-made
signals: mechanisms, not quality (the real-footage run is tests/jobs/test_placements_e2e.py)."""

from __future__ import annotations

import pytest

from core.placements import Placement, SafeZone, load_placements
from workers.framing.planner import plan_framing
from workers.framing.safe_zone import fit
from workers.framing.targets import Target, output_size
from workers.geometry import Box, CropLine, CropRect, limited_size
from workers.text.regions import safe_positions

W, H = 1280, 720
TIMES = [k / 10 for k in range(50)]
PRESETS = load_placements()


def _inside_zone(rect: CropRect, box: Box, zone: SafeZone) -> bool:
    """Along x (the moving axis of a tall crop of a wide frame): inside the crop's safe columns."""
    return rect.x + zone.left * rect.w - 1 <= box[0] and box[2] <= rect.x + (1 - zone.right) * rect.w + 1


def test_the_upscale_limit_writes_a_smaller_clip_of_the_placements_aspect_not_a_blow_up() -> None:
    assert limited_size((1080, 1920), 1.4, 1.5) == (1080, 1920)
    # 9:16 of a 720p source is a 396x704 crop: 2.7x to 1080x1920; at the 1.5x limit 594x1056
    assert limited_size((1080, 1920), 1080 / 396, 1.5) == (594, 1056)
    vertical = PRESETS["vertical"]
    keys = [(0.0, CropRect(442, 8, 396, 704))]
    size = output_size(Target("vertical", vertical.aspect, vertical), (W, H), None, keys, False, 1.0)
    assert (size.width, size.height, size.limited) == (594, 1056, True) and size.scale == pytest.approx(1.5)
    # 16:9 of the same source is the whole frame: 1.5x to 1920x1080, at the limit and not past it
    landscape = PRESETS["landscape"]
    keys = [(0.0, CropRect(0, 0, W, H))]
    size = output_size(Target("landscape", landscape.aspect, landscape), (W, H), None, keys, False, 1.0)
    assert (size.width, size.height, size.limited, size.scale) == (1920, 1080, False, 1.5)
    # an aspect's clip is written at its largest crop's size, as before placements
    size = output_size(Target("9:16", (9, 16)), (W, H), None, [(0.0, CropRect(442, 8, 396, 704))], False, 1.0)
    assert (size.width, size.height, size.scale) == (396, 704, 1.0)


def test_text_a_zoned_crop_holds_lies_inside_its_safe_zone_or_is_left_out() -> None:
    # a crop 400 wide on a 1280 line, 40 px of overlay at its left and 80 at its right; a caption 100 wide
    line = CropLine(0, W, H, 400, 0, H, inset=(40, 80))
    caption = (600.0, 300.0, 700.0, 330.0)
    allowed = safe_positions(line, [caption], margin=0.0)
    for position in range(0, line.last + 1, 2):
        rect = line.rect(position)
        inside = rect.x + 40 <= caption[0] and caption[2] <= rect.x + rect.w - 80
        outside = caption[2] <= rect.x or rect.x + rect.w <= caption[0]
        ok = any(lo <= position <= hi for lo, hi in allowed)
        # the clearance round a caption forbids a few positions more than the bare geometry does
        assert not ok or inside or outside, position
    assert any(lo <= 0 for lo, _ in allowed)  # wholly left of the caption
    assert any(lo <= 400 <= hi for lo, hi in allowed)  # inside, clear of both overlays


def test_a_placements_crop_sets_the_product_inside_its_safe_zone_where_the_aspects_crop_does_not() -> None:
    # 300 px wide: the 9:16 crop (396) centred on it leaves 48 px at either side, less than the buttons' 51
    product = (750.0, 200.0, 1050.0, 460.0)
    subject = [(t, product) for t in TIMES]
    tiktok = PRESETS["tiktok"]  # 13 % of the width at the right is the action buttons
    plans = plan_framing(0.0, 5.0, W, H, [(9, 16)], subject, [], placements=[tiktok])
    plain, placed = plans["9:16"].keys[0][1], plans["tiktok"].keys[0][1]
    assert not plans["tiktok"].padded and plans["tiktok"].zone == tiktok.safe
    assert not _inside_zone(plain, product, tiktok.safe)  # centred on the product: under the buttons
    assert _inside_zone(placed, product, tiktok.safe)
    fitted = fit(plans["tiktok"].keys, tiktok.safe, tiktok.size, subject, [], planned=True)
    assert fitted.text and fitted.planned
    # across the crop's moving axis a crop spanning the frame cannot move: there the zone is measured
    assert fitted.product == 1.0  # 200..460 of 8..712 lies inside the top 7 % and the bottom 25 %
    low = [(t, (750.0, 380.0, 1050.0, 700.0)) for t in TIMES]
    assert fit(plans["tiktok"].keys, tiktok.safe, tiktok.size, low, [], planned=True).product == 0.0


def test_a_caption_the_aspects_crop_keeps_under_an_overlay_is_kept_inside_the_zone_or_left_out() -> None:
    product = (900.0, 200.0, 1060.0, 460.0)
    # beside the product, 10 px from the frame's right: a crop at the frame's edge holds it whole, under the
    # overlay at the clip's right
    caption = (1110.0, 300.0, 1270.0, 330.0)
    subject = [(t, product) for t in TIMES]
    text = [(t, [caption]) for t in TIMES]
    reels = PRESETS["reels"]
    plan = plan_framing(0.0, 5.0, W, H, [], subject, text, placements=[reels])["reels"]
    assert not plan.padded and plan.zone == reels.safe
    for _, rect in plan.keys:
        kept = rect.x <= caption[0] and caption[2] <= rect.x + rect.w
        assert not kept or _inside_zone(rect, caption, reels.safe), rect
        assert rect.x <= product[0] and product[2] <= rect.x + rect.w, rect
    assert fit(plan.keys, reels.safe, reels.size, subject, plan.text_boxes, planned=True).text


def test_where_only_a_letterbox_keeps_to_the_zone_the_clip_is_cropped_as_its_aspects_is() -> None:
    # a caption beside the product at its height (no smaller crop passes it): the 9:16 crop holds both, its
    # safe columns (a fifth of the crop at either side) hold neither both nor the product with the caption
    # left out; the placement's clip is the aspect's crop, recorded as planned without the zone
    product = (500.0, 200.0, 700.0, 460.0)
    caption = (720.0, 300.0, 800.0, 330.0)
    subject = [(t, product) for t in TIMES]
    text = [(t, [caption]) for t in TIMES]
    strict = Placement(name="strict", size=(1080, 1920), safe=SafeZone(left=0.2, right=0.2))
    plans = plan_framing(0.0, 5.0, W, H, [(9, 16)], subject, text, placements=[strict])
    assert not plans["9:16"].padded
    assert not plans["strict"].padded and plans["strict"].zone is None
    assert plans["strict"].keys == plans["9:16"].keys
    fitted = fit(plans["strict"].keys, strict.safe, strict.size, subject, [caption], planned=False)
    # the product alone would have kept to it; the caption the crop holds whole lies under the overlay
    assert not fitted.planned and fitted.product == 1.0 and not fitted.text


def test_a_letterboxed_clip_is_measured_where_its_picture_lies_in_the_output() -> None:
    # the whole 1280x720 frame letterboxed in 1080x1920: the picture spans the width, 607 px high, centred
    zone = SafeZone(top=0.14, bottom=0.35)
    keys = [(0.0, CropRect(0, 0, W, H))]
    middle = [(0.0, (500.0, 200.0, 700.0, 500.0))]
    assert fit(keys, zone, (1080, 1920), middle, [], planned=False, padded=True).product == 1.0
    # the picture's lower part (output y 1160..1264) lies in the bottom 35 %
    foot = [(0.0, (500.0, 600.0, 700.0, 720.0))]
    assert fit(keys, zone, (1080, 1920), foot, [], planned=False, padded=True).product == 0.0
