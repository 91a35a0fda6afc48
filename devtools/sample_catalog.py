"""Synthetic sample catalog with exact ground truth, for `make demo`, the tests and the benchmarks.

Every item is a product video assembled from procedural parts whose geometry is known to the pixel:
background shots separated by hard cuts, the product (the same procedural picture as the item's main image)
moving and scaling during one interval, decoy objects outside it, and captions in filled boxes near the frame
edges. The truth of every frame goes to `truth/<item_id>.json`, which the pipeline never reads; `load_truth`
reads it back.

Items are independent of each other and of how many are asked for: item i is drawn from the seed sequence
(seed, i), hard case j from (seed, HARD_SEED_BASE + j), so growing a catalog keeps the items it already had.
"""

from __future__ import annotations

import colorsys
import json
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import av
import cv2
import numpy as np
import numpy.typing as npt

from reelgen.errors import ConfigError

Box = tuple[int, int, int, int]
U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]
BGR = tuple[float, float, float]

TRUTH_VERSION = 1
AUDIO_RATE = 48_000
AUDIO_FRAME = 1024  # the AAC encoder's frame size
GRAIN_ROWS = 128
HARD_SEED_BASE = 1_000_000
HARD_CASES = ("perspective", "blur", "lighting", "small_lookalikes", "shown_twice")

Shape = Literal["box", "bottle", "can", "jar"]
Pattern = Literal["stripes", "dots", "bands", "checker", "waves"]
Logo = Literal["circle", "star", "diamond"]
SceneKind = Literal["blobs", "stripes", "bokeh", "shapes", "tiles"]
Slot = Literal["top", "bottom", "left", "right"]

SHAPES: tuple[Shape, ...] = ("box", "bottle", "can", "jar")
PATTERNS: tuple[Pattern, ...] = ("stripes", "dots", "bands", "checker", "waves")
LOGOS: tuple[Logo, ...] = ("circle", "star", "diamond")
SCENE_KINDS: tuple[SceneKind, ...] = ("blobs", "stripes", "bokeh", "shapes", "tiles")
SLOGANS = (
    "NEW ARRIVAL",
    "LIMITED EDITION",
    "BEST SELLER",
    "FREE SHIPPING",
    "SHOP NOW",
    "ONLY TODAY",
    "50% OFF",
    "BUY 1 GET 1",
    "TOP RATED",
)
SIDE_TEXTS = ("NEW", "HOT", "SALE", "-30%", "-50%", "TOP")
FONTS = (
    cv2.FONT_HERSHEY_SIMPLEX,
    cv2.FONT_HERSHEY_DUPLEX,
    cv2.FONT_HERSHEY_TRIPLEX,
    cv2.FONT_HERSHEY_COMPLEX,
)
# (box colour, text colour) in BGR: pairs that contrast, as real promo overlays do
CAPTION_STYLES: tuple[tuple[BGR, BGR], ...] = (
    ((20.0, 20.0, 20.0), (0.0, 220.0, 255.0)),
    ((250.0, 250.0, 250.0), (10.0, 10.0, 10.0)),
    ((30.0, 30.0, 210.0), (255.0, 255.0, 255.0)),
    ((160.0, 60.0, 0.0), (255.0, 255.0, 255.0)),
    ((0.0, 200.0, 255.0), (20.0, 20.0, 20.0)),
)
PRODUCT_NOUNS = {"box": "Gift Box", "bottle": "Shampoo", "can": "Energy Drink", "jar": "Face Cream"}


# ----------------------------------------------------------------------------------------------------------
# Ground truth: the public, typed view of truth/<item_id>.json
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FrameTruth:
    """Frame k of the video, shown at t = k / fps. Boxes are [x0, y0, x1, y1) in source pixels.

    product_box bounds the pixels the product's (antialiased) mask covers, even where a caption is drawn
    over them; it is None when the product is not visible. caption_boxes are the filled caption boxes (text
    included). decoy_boxes bound the other product-like objects on screen.
    """

    t: float
    product_box: Box | None
    caption_boxes: list[Box]
    decoy_boxes: list[Box] = field(default_factory=list)


@dataclass(frozen=True)
class CaptionTruth:
    text: str
    start_s: float
    end_s: float
    box: Box


@dataclass(frozen=True)
class Truth:
    """What an item's video shows.

    product_interval is [start, end) in seconds: the span the product is shown as the subject. Outside it the
    product is absent, except in the "shown_twice" hard case where it first appears small (frames say where).
    cuts are the times of the first frame of each new shot.
    """

    item_id: str
    fps: float
    width: int
    height: int
    duration_s: float
    product_interval: tuple[float, float]
    frames: list[FrameTruth]
    cuts: list[float]
    case: str | None = None
    captions: list[CaptionTruth] = field(default_factory=list)


def load_truth(catalog_dir: Path, item_id: str) -> Truth:
    """The ground truth written for item_id by write_sample_catalog into catalog_dir."""
    raw = json.loads((Path(catalog_dir) / "truth" / f"{item_id}.json").read_text())
    return Truth(
        item_id=raw["item_id"],
        fps=float(raw["fps"]),
        width=int(raw["width"]),
        height=int(raw["height"]),
        duration_s=float(raw["duration_s"]),
        product_interval=(float(raw["product_interval"][0]), float(raw["product_interval"][1])),
        frames=[_frame_from_json(f) for f in raw["frames"]],
        cuts=[float(c) for c in raw["cuts"]],
        case=raw.get("case"),
        captions=[
            CaptionTruth(c["text"], float(c["start_s"]), float(c["end_s"]), _box(c["box"]))
            for c in raw.get("captions", [])
        ],
    )


def _box(values: Sequence[Any]) -> Box:
    x0, y0, x1, y1 = (int(v) for v in values)
    return (x0, y0, x1, y1)


def _frame_from_json(raw: dict[str, Any]) -> FrameTruth:
    product = raw["product_box"]
    return FrameTruth(
        t=float(raw["t"]),
        product_box=None if product is None else _box(product),
        caption_boxes=[_box(b) for b in raw["caption_boxes"]],
        decoy_boxes=[_box(b) for b in raw.get("decoy_boxes", [])],
    )


def _truth_json(truth: Truth) -> str:
    """One frame per line: the file stays diffable and greppable at 25 fps × 30 s."""
    head = {
        "version": TRUTH_VERSION,
        "item_id": truth.item_id,
        "case": truth.case,
        "fps": truth.fps,
        "width": truth.width,
        "height": truth.height,
        "n_frames": len(truth.frames),
        "duration_s": truth.duration_s,
        "product_interval": list(truth.product_interval),
        "cuts": truth.cuts,
        "captions": [
            {"text": c.text, "start_s": c.start_s, "end_s": c.end_s, "box": list(c.box)}
            for c in truth.captions
        ],
    }
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    frames = [
        "  "
        + json.dumps(
            {
                "t": f.t,
                "product_box": None if f.product_box is None else list(f.product_box),
                "caption_boxes": [list(b) for b in f.caption_boxes],
                "decoy_boxes": [list(b) for b in f.decoy_boxes],
            }
        )
        for f in truth.frames
    ]
    return "{\n" + "\n".join(lines) + '\n "frames": [\n' + ",\n".join(frames) + "\n ]\n}\n"


# ----------------------------------------------------------------------------------------------------------
# The plan of an item: every random choice drawn up front, so rendering is a pure function of (plan, frame)
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Wave:
    """A value sweeping smoothly between lo and hi and back (raised cosine), so motion has no jerks."""

    lo: float
    hi: float
    period_s: float
    phase: float

    def at(self, t: float) -> float:
        return self.lo + (self.hi - self.lo) * (
            0.5 - 0.5 * math.cos(2 * math.pi * t / self.period_s + self.phase)
        )


@dataclass(frozen=True)
class _Design:
    """A procedural product picture; the same design renders the main image and the object in the video."""

    shape: Shape
    aspect: float  # width / height of the silhouette
    hues: tuple[float, float, float]  # body, pattern, logo, in degrees
    pattern: Pattern
    pattern_period: float  # in units of the sprite's height
    logo: Logo
    letter: str
    grain_seed: int


@dataclass(frozen=True)
class _Look:
    """Distortions of one appearance (hard cases); the neutral look leaves the sprite as drawn."""

    yaw_deg: _Wave | None = None
    pitch_deg: _Wave | None = None
    blur: _Wave | None = None  # Gaussian sigma as a fraction of frame height
    light: _Wave | None = None  # 0 = as drawn, 1 = full tint
    tint: BGR = (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class _Appearance:
    """One object on screen during frames [k0, k1), confined to a horizontal lane so objects never overlap."""

    design: int  # index into _ItemPlan.designs; 0 is the product
    is_product: bool
    k0: int
    k1: int
    lane: tuple[float, float]  # x range as fractions of the frame width
    x: _Wave  # 0..1 across the room the lane leaves
    y: _Wave
    height: _Wave  # fraction of the frame height
    look: _Look = _Look()


@dataclass(frozen=True)
class _Shot:
    k0: int
    kind: SceneKind
    seed: int
    base_hue: float


@dataclass(frozen=True)
class _Caption:
    text: str
    slot: Slot
    anchor: float  # 0 = left, 0.5 = centre, 1 = right (top/bottom slots)
    k0: int
    k1: int
    style: int
    font: int
    scale: float  # relative to the frame height


@dataclass(frozen=True)
class _ItemPlan:
    item_id: str
    case: str | None
    width: int
    height: int
    fps: float
    n_frames: int
    interval: tuple[int, int]
    shots: list[_Shot]
    designs: list[_Design]
    appearances: list[_Appearance]
    captions: list[_Caption]
    brand: str
    title: str
    description: str


def _frames(seconds: float, fps: float) -> int:
    return round(seconds * fps)


def _brand(rng: np.random.Generator) -> str:
    consonants, vowels = "BDFKLMNPRSTVZ", "AEIOU"
    syllables = int(rng.integers(2, 4))
    return "".join(
        str(rng.choice(list(consonants))) + str(rng.choice(list(vowels))) for _ in range(syllables)
    )


def _design(rng: np.random.Generator, shape: Shape | None = None) -> _Design:
    shape = shape or SHAPES[int(rng.integers(len(SHAPES)))]
    aspect_range = {"box": (0.6, 0.85), "bottle": (0.36, 0.46), "can": (0.5, 0.6), "jar": (0.72, 0.9)}[shape]
    body = float(rng.uniform(0, 360))
    return _Design(
        shape=shape,
        aspect=float(rng.uniform(*aspect_range)),
        hues=(body, (body + rng.uniform(100, 260)) % 360, (body + rng.uniform(40, 320)) % 360),
        pattern=PATTERNS[int(rng.integers(len(PATTERNS)))],
        pattern_period=float(rng.uniform(0.06, 0.12)),
        logo=LOGOS[int(rng.integers(len(LOGOS)))],
        letter=chr(ord("A") + int(rng.integers(26))),
        grain_seed=int(rng.integers(2**31)),
    )


def _decoy_design(rng: np.random.Generator, product: _Design) -> _Design:
    """A different product whose body hue is far from the product's, so colour alone tells them apart."""
    decoy = _design(rng)
    body = (product.hues[0] + rng.uniform(90, 270)) % 360
    return _lookalike(decoy, body - decoy.hues[0])


def _lookalike(product: _Design, hue_shift: float) -> _Design:
    """Same silhouette, pattern and logo; only the colours differ."""
    h0, h1, h2 = ((h + hue_shift) % 360 for h in product.hues)
    return replace(product, hues=(h0, h1, h2))


def _colour_name(hue: float) -> str:
    limits = (15, 40, 70, 160, 200, 260, 300, 340, 361)
    names = ("red", "orange", "yellow", "green", "teal", "blue", "purple", "pink", "red")
    return next(name for limit, name in zip(limits, names, strict=True) if hue < limit)


def _describe(design: _Design, brand: str) -> tuple[str, str]:
    noun = PRODUCT_NOUNS[design.shape]
    body, pattern, logo = (_colour_name(h) for h in design.hues)
    title = f"{brand.title()} {body.title()} {noun}"
    description = (
        f"A {body} {design.shape} with {pattern} {design.pattern} and a {logo} {design.logo} logo "
        f"marked '{design.letter}'. {brand.title()} quality, made to last."
    )
    return title, description


def _choose_interval(
    rng: np.random.Generator, n: int, fps: float, lead_s: float, min_len_s: float = 7.0
) -> tuple[int, int]:
    """The product interval: ≥ min_len_s, starting ≥ lead_s in and ending ≥ 2 s before the end.

    Videos too short for that (small test catalogs) get the same layout scaled to their length.
    """
    duration = n / fps
    if duration >= lead_s + min_len_s + 2.0:
        length = rng.uniform(min_len_s, min(12.0, duration - lead_s - 2.0))
        start = rng.uniform(lead_s, duration - 2.0 - length)
    else:
        scale = duration / (lead_s + min_len_s + 2.0)
        start, length = lead_s * scale, min_len_s * scale
    k0 = max(1, _frames(start, fps))
    return k0, min(n - 1, k0 + max(2, _frames(length, fps)))


def _split(rng: np.random.Generator, k0: int, k1: int, fps: float) -> list[int]:
    """Cut points that split frames [k0, k1) into shots of roughly 2-5 s."""
    longest = _frames(5.0, fps)
    if k1 - k0 <= longest:
        return []
    count = math.ceil((k1 - k0) / longest)
    weights = rng.uniform(0.75, 1.25, count)
    edges = np.cumsum(weights)[:-1] / weights.sum()
    return sorted({k0 + round(float(e) * (k1 - k0)) for e in edges})


def _plan_shots(rng: np.random.Generator, n: int, fps: float, interval: tuple[int, int]) -> list[_Shot]:
    """Shots whose cuts include the product interval's ends: a promo video cuts to its product shot."""
    k0, k1 = interval
    cuts = [*_split(rng, 0, k0, fps), k0]
    if (k1 - k0) / fps > 8.0 and rng.random() < 0.5:
        cuts.append(k0 + round(float(rng.uniform(0.35, 0.65)) * (k1 - k0)))
    cuts += [k1, *_split(rng, k1, n, fps)]
    order = [SCENE_KINDS[int(i)] for i in rng.permutation(len(SCENE_KINDS))]
    starts = [0, *cuts]
    return [
        _Shot(
            k0=k,
            kind=order[i % len(order)],
            seed=int(rng.integers(2**31)),
            base_hue=float(rng.uniform(0, 360)),
        )
        for i, k in enumerate(starts)
    ]


def _motion(rng: np.random.Generator, height: tuple[float, float]) -> tuple[_Wave, _Wave, _Wave]:
    x = _Wave(0.0, 1.0, float(rng.uniform(6.0, 12.0)), float(rng.uniform(0, 2 * math.pi)))
    y = _Wave(0.2, 0.8, float(rng.uniform(5.0, 10.0)), float(rng.uniform(0, 2 * math.pi)))
    lo = float(rng.uniform(height[0], height[0] + 0.35 * (height[1] - height[0])))
    hi = float(rng.uniform(lo + 0.4 * (height[1] - lo), height[1]))
    size = _Wave(lo, hi, float(rng.uniform(5.0, 9.0)), float(rng.uniform(0, 2 * math.pi)))
    return x, y, size


def _appearance(
    rng: np.random.Generator,
    design: int,
    span: tuple[int, int],
    *,
    lane: tuple[float, float] = (0.0, 1.0),
    height: tuple[float, float] = (0.3, 0.7),
    look: _Look = _Look(),
) -> _Appearance:
    x, y, size = _motion(rng, height)
    return _Appearance(design, design == 0, span[0], span[1], lane, x, y, size, look)


def _plan_decoys(rng: np.random.Generator, n: int, interval: tuple[int, int]) -> list[_Appearance]:
    """Decoys right before and after the product interval, where a naive "any object" scorer would look."""
    k0, k1 = interval
    decoys = [_appearance(rng, 1, (round(float(rng.uniform(0.0, 0.3)) * k0), k0), height=(0.3, 0.65))]
    if n - k1 > 1 and rng.random() < 0.7:
        decoys.append(_appearance(rng, 2, (k1, k1 + max(1, round(float(rng.uniform(0.6, 1.0)) * (n - k1))))))
    return decoys


def _plan_captions(rng: np.random.Generator, n: int, fps: float, brand: str) -> list[_Caption]:
    """Independent walks per edge slot: captions come and go across the whole video, product or not."""
    captions: list[_Caption] = []
    slots: list[Slot] = ["top", "bottom"]
    if rng.random() < 0.6:
        slots.append("left" if rng.random() < 0.5 else "right")
    for slot in slots:
        t = float(rng.uniform(0.1, 1.5)) * min(1.0, n / fps / 10)
        while _frames(t, fps) < n - 1:
            length = float(rng.uniform(1.5, 4.0)) * min(1.0, n / fps / 10)
            k0, k1 = _frames(t, fps), min(n, _frames(t + length, fps))
            if k1 - k0 >= 2:
                captions.append(_caption(rng, slot, k0, k1, brand))
            t += length + float(rng.uniform(0.8, 3.0)) * min(1.0, n / fps / 10)
    return captions


def _caption(rng: np.random.Generator, slot: Slot, k0: int, k1: int, brand: str) -> _Caption:
    price = f"${int(rng.integers(5, 200))}.99"
    if slot in ("left", "right"):
        text = str(rng.choice([*SIDE_TEXTS, price]))
    else:
        text = str(rng.choice([*SLOGANS, brand, price, f"NOW {price}", f"{brand} {price}"]))
    return _Caption(
        text=text,
        slot=slot,
        anchor=float(rng.choice([0.0, 0.5, 1.0])),
        k0=k0,
        k1=k1,
        style=int(rng.integers(len(CAPTION_STYLES))),
        font=FONTS[int(rng.integers(len(FONTS)))],
        scale=float(rng.uniform(1.1, 1.6) if slot in ("top", "bottom") else rng.uniform(0.9, 1.2)),
    )


def _plan_item(
    item_id: str,
    rng: np.random.Generator,
    size: tuple[int, int],
    fps: float,
    duration_s: tuple[float, float],
    case: str | None,
) -> _ItemPlan:
    n = max(4, _frames(float(rng.uniform(*duration_s)), fps))
    brand = _brand(rng)
    product = _design(rng)
    interval = _choose_interval(rng, n, fps, lead_s=4.5 if case == "shown_twice" else 2.0)
    shots = _plan_shots(rng, n, fps, interval)
    designs = [product, _decoy_design(rng, product), _decoy_design(rng, product)]
    appearances = [_appearance(rng, 0, interval), *_plan_decoys(rng, n, interval)]
    captions = _plan_captions(rng, n, fps, brand)
    title, description = _describe(product, brand)
    plan = _ItemPlan(
        item_id=item_id,
        case=case,
        width=size[0],
        height=size[1],
        fps=fps,
        n_frames=n,
        interval=interval,
        shots=shots,
        designs=designs,
        appearances=appearances,
        captions=captions,
        brand=brand,
        title=title,
        description=description,
    )
    return _harden(plan, rng) if case else plan


# ----------------------------------------------------------------------------------------------------------
# Hard cases: the same plan with the product's appearance made difficult
# ----------------------------------------------------------------------------------------------------------

TINTS: tuple[BGR, ...] = ((0.55, 0.8, 1.3), (1.3, 0.95, 0.6), (0.45, 0.45, 0.5), (1.35, 1.35, 1.25))


def _harden(plan: _ItemPlan, rng: np.random.Generator) -> _ItemPlan:
    product = plan.appearances[0]
    period = float(rng.uniform(3.0, 5.0))
    phase = float(rng.uniform(0, 2 * math.pi))
    if plan.case == "perspective":
        look = _Look(
            yaw_deg=_Wave(-15.0, 15.0, period, phase), pitch_deg=_Wave(-8.0, 8.0, period * 1.7, phase)
        )
        return _with_product(plan, replace(product, look=look))
    if plan.case == "blur":
        return _with_product(plan, replace(product, look=_Look(blur=_Wave(0.004, 0.012, period, phase))))
    if plan.case == "lighting":
        tint = TINTS[int(rng.integers(len(TINTS)))]
        return _with_product(
            plan, replace(product, look=_Look(light=_Wave(0.3, 1.0, period, phase), tint=tint))
        )
    if plan.case == "small_lookalikes":
        return _small_among_lookalikes(plan, rng)
    if plan.case == "shown_twice":
        return _shown_twice(plan, rng)
    raise ConfigError(f"unknown hard case {plan.case!r}; expected one of {HARD_CASES}")


def _with_product(plan: _ItemPlan, product: _Appearance) -> _ItemPlan:
    return replace(plan, appearances=[product, *plan.appearances[1:]])


def _small_among_lookalikes(plan: _ItemPlan, rng: np.random.Generator) -> _ItemPlan:
    """Four lanes of same-shaped objects all video long; the product holds one lane during its interval."""
    product = plan.designs[0]
    shifts = np.array([72.0, 144.0, 216.0, 288.0]) + rng.uniform(-15, 15, 4)
    designs = [product, *(_lookalike(product, float(s)) for s in shifts)]
    lanes = [(i / 4, (i + 1) / 4) for i in range(4)]
    mine = int(rng.integers(4))
    small = (0.14, 0.22)
    k0, k1 = plan.interval
    appearances = [_appearance(rng, 0, plan.interval, lane=lanes[mine], height=small)]
    others = [i for i in range(4) if i != mine]
    for design, lane in zip((1, 2, 3), others, strict=True):
        appearances.append(_appearance(rng, design, (0, plan.n_frames), lane=lanes[lane], height=small))
    appearances.append(_appearance(rng, 4, (0, k0), lane=lanes[mine], height=small))
    appearances.append(_appearance(rng, 4, (k1, plan.n_frames), lane=lanes[mine], height=small))
    return replace(plan, designs=designs, appearances=appearances)


def _shown_twice(plan: _ItemPlan, rng: np.random.Generator) -> _ItemPlan:
    """A small teaser of the product early on, then the product shot; only the big one is the interval."""
    k0, k1 = plan.interval
    teaser = (max(1, round(0.15 * k0)), max(2, round(0.7 * k0)))
    appearances = [
        _appearance(rng, 0, plan.interval, height=(0.45, 0.7)),
        _appearance(rng, 0, teaser, lane=(0.0, 0.5), height=(0.14, 0.2)),
        _appearance(rng, 1, teaser, lane=(0.5, 1.0), height=(0.3, 0.5)),
    ]
    if plan.n_frames - k1 > 1:
        appearances.append(_appearance(rng, 2, (k1, plan.n_frames), height=(0.3, 0.6)))
    return replace(plan, appearances=appearances)


# ----------------------------------------------------------------------------------------------------------
# Product pictures
# ----------------------------------------------------------------------------------------------------------


def _hsv(hue: float, sat: float, val: float) -> BGR:
    r, g, b = colorsys.hsv_to_rgb((hue % 360) / 360, sat, val)
    return (b, g, r)


def _silhouette(design: _Design, h: int, w: int) -> U8:
    """The product's antialiased mask."""
    mask = np.zeros((h, w), np.uint8)
    aa = cv2.LINE_AA
    if design.shape == "box":
        _rounded_rect(mask, (0, 0, w, h), max(1, round(0.04 * h)), 255)
    elif design.shape == "bottle":
        _rounded_rect(mask, (0, round(0.3 * h), w, h), max(1, round(0.12 * w)), 255)
        cv2.ellipse(mask, (w // 2, round(0.32 * h)), (w // 2 - 1, round(0.1 * h)), 0, 180, 360, 255, -1, aa)
        cv2.rectangle(mask, (round(0.32 * w), round(0.06 * h)), (round(0.68 * w), round(0.32 * h)), 255, -1)
        cv2.rectangle(mask, (round(0.26 * w), 0), (round(0.74 * w), round(0.1 * h)), 255, -1)
    elif design.shape == "can":
        rim = round(0.05 * h)
        cv2.rectangle(mask, (0, rim), (w - 1, h - 1 - rim), 255, -1)
        for cy in (rim, h - 1 - rim):
            cv2.ellipse(mask, (w // 2, cy), (w // 2 - 1, rim), 0, 0, 360, 255, -1, aa)
    else:
        _rounded_rect(mask, (0, round(0.16 * h), w, h), max(1, round(0.15 * w)), 255)
        cv2.rectangle(mask, (round(0.06 * w), 0), (round(0.94 * w) - 1, round(0.18 * h)), 255, -1)
    return mask


def _rounded_rect(img: U8, box: Box, r: int, colour: float | BGR) -> None:
    x0, y0, x1, y1 = box
    x1, y1 = x1 - 1, y1 - 1
    c: Any = colour
    cv2.rectangle(img, (x0 + r, y0), (x1 - r, y1), c, -1)
    cv2.rectangle(img, (x0, y0 + r), (x1, y1 - r), c, -1)
    for cx, cy in ((x0 + r, y0 + r), (x1 - r, y0 + r), (x0 + r, y1 - r), (x1 - r, y1 - r)):
        cv2.circle(img, (cx, cy), r, c, -1, cv2.LINE_AA)


def _pattern_field(design: _Design, h: int, w: int) -> F32:
    """Where the secondary colour shows; in units of the sprite height, so every size is the same picture."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32) / np.float32(h)
    period = np.float32(design.pattern_period)
    if design.pattern == "stripes":
        wave = np.sin(2 * np.pi * (xx + yy) / period)
    elif design.pattern == "dots":
        dx = np.mod(xx, period) - period / 2
        dy = np.mod(yy, period) - period / 2
        wave = (0.32 * period - np.sqrt(dx * dx + dy * dy)) / (0.05 * period)
    elif design.pattern == "bands":
        wave = np.sin(2 * np.pi * yy / (1.6 * period)) - 0.3
    elif design.pattern == "checker":
        wave = np.sin(np.pi * xx / period) * np.sin(np.pi * yy / period)
    else:
        wave = np.sin(2 * np.pi * (yy + 0.04 * np.sin(2 * np.pi * xx / 0.25)) / period)
    return np.asarray(0.5 + 0.5 * np.tanh(3.0 * wave), np.float32)


def _product_sprite(design: _Design, h: int) -> F32:
    """The product as premultiplied BGRA floats in [0, 1], cropped to its silhouette."""
    w = max(2, round(design.aspect * h))
    sat_val = ((0.8, 0.85), (0.75, 0.95), (0.9, 0.95))
    body, second, third = (
        np.array(_hsv(hue, *sv), np.float32) for hue, sv in zip(design.hues, sat_val, strict=True)
    )
    p = _pattern_field(design, h, w)[..., None]
    colour = body * (1 - 0.85 * p) + second * (0.85 * p)
    colour = colour.astype(np.float32)
    _paint_parts(colour, design, h, w, third)
    _paint_logo(colour, design, h, w, third)
    # a fixed grain grid, stretched to the sprite: the main image and every video size show the same grain
    grain = (
        np.random.default_rng(design.grain_seed)
        .normal(1.0, 0.06, (GRAIN_ROWS, GRAIN_ROWS))
        .astype(np.float32)
    )
    colour *= cv2.resize(grain, (w, h), interpolation=cv2.INTER_LINEAR)[..., None]
    colour *= _shading(design, h, w)[..., None]
    alpha = _silhouette(design, h, w).astype(np.float32) / 255
    sprite = np.dstack([np.clip(colour, 0, 1) * alpha[..., None], alpha]).astype(np.float32)
    return _crop_to_alpha(sprite)


def _paint_parts(colour: F32, design: _Design, h: int, w: int, accent: F32) -> None:
    """Caps, lids and rims in solid colours, and a light label band for the logo on round containers."""
    dark: Any = tuple(float(c) * 0.45 for c in accent)
    label: Any = tuple(0.25 + 0.75 * float(c) for c in _hsv(design.hues[2], 0.15, 1.0))
    if design.shape == "box":
        colour[: round(0.12 * h)] *= 0.7
        return
    if design.shape == "bottle":
        colour[: round(0.1 * h)] = dark
    elif design.shape == "can":
        colour[: round(0.1 * h)] = (0.75, 0.75, 0.78)
        colour[round(0.9 * h) :] = (0.7, 0.7, 0.72)
    else:
        colour[: round(0.18 * h)] = dark
    cv2.rectangle(colour, (0, round(0.45 * h)), (w - 1, round(0.78 * h)), label, -1)


def _paint_logo(colour: F32, design: _Design, h: int, w: int, logo_colour: F32) -> None:
    cy = round(0.615 * h) if design.shape != "box" else round(0.55 * h)
    cx, r = w // 2, max(2, round(min(0.14 * h, 0.4 * w)))
    c: Any = tuple(float(v) for v in logo_colour)
    if design.logo == "circle":
        cv2.circle(colour, (cx, cy), r, c, -1, cv2.LINE_AA)
    else:
        points = 10 if design.logo == "star" else 4
        radii = [r if i % 2 == 0 else (0.45 * r if design.logo == "star" else r) for i in range(points)]
        angles = [2 * math.pi * i / points - math.pi / 2 for i in range(points)]
        poly = np.array(
            [[cx + rr * math.cos(a), cy + rr * math.sin(a)] for rr, a in zip(radii, angles, strict=True)]
        )
        cv2.fillPoly(colour, [poly.round().astype(np.int32)], c, cv2.LINE_AA)
    scale = r / 22.0
    thickness = max(1, round(scale * 2))
    (tw, th), _ = cv2.getTextSize(design.letter, cv2.FONT_HERSHEY_DUPLEX, scale, thickness)
    # putText draws on 8-bit images only, so the letter goes through a mask
    mask = np.zeros((h, w), np.uint8)
    origin = (cx - tw // 2, cy + th // 2)
    cv2.putText(mask, design.letter, origin, cv2.FONT_HERSHEY_DUPLEX, scale, 255, thickness, cv2.LINE_AA)
    ink = np.float32(1.0) if float(logo_colour.sum()) < 1.8 else np.float32(0.05)
    m = mask.astype(np.float32)[..., None] / 255
    colour[:] = colour * (1 - m) + ink * m


def _shading(design: _Design, h: int, w: int) -> F32:
    """Round containers get a cylinder's highlight; boxes a gentle left-to-right falloff."""
    x = np.linspace(-1.0, 1.0, w, dtype=np.float32)
    row = 0.95 - 0.12 * x if design.shape == "box" else 0.72 + 0.38 * np.cos(x * np.pi / 2.2) ** 2
    return np.broadcast_to(row[None, :], (h, w)).astype(np.float32)


def _crop_to_alpha(patch: F32) -> F32:
    box = _alpha_box(patch[..., 3])
    if box is None:
        return patch
    x0, y0, x1, y1 = box
    return np.ascontiguousarray(patch[y0:y1, x0:x1])


def _alpha_box(alpha: F32) -> Box | None:
    rows = np.flatnonzero(alpha.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(alpha.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def _main_image(design: _Design, size: int = 512) -> U8:
    """The catalog's main image: the product alone on a plain light background, as marketplaces require."""
    sprite = _product_sprite(design, round(0.84 * size))
    h, w = sprite.shape[:2]
    if w > 0.84 * size:
        new_size = (round(0.84 * size), max(1, round(h * 0.84 * size / w)))
        sprite = np.asarray(cv2.resize(sprite, new_size, interpolation=cv2.INTER_AREA), np.float32)
        h, w = sprite.shape[:2]
    canvas = np.full((size, size, 3), 0.96, np.float32)
    y0, x0 = (size - h) // 2, (size - w) // 2
    roi = canvas[y0 : y0 + h, x0 : x0 + w]
    roi[:] = roi * (1 - sprite[..., 3:]) + sprite[..., :3]
    return np.round(canvas * 255).astype(np.uint8)


# ----------------------------------------------------------------------------------------------------------
# Backgrounds: one precomputed texture per shot, panned, zoomed or drawn over per frame
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _MovingShape:
    centre: tuple[float, float]
    velocity: tuple[float, float]
    radius: float
    colour: BGR
    square: bool


@dataclass(frozen=True)
class _Scene:
    texture: U8
    origin: tuple[float, float]
    velocity: tuple[float, float]  # px/s of pan
    zoom_per_s: float
    shapes: list[_MovingShape]
    size: tuple[int, int]

    def frame(self, t: float) -> U8:
        w, h = self.size
        x = round(self.origin[0] + self.velocity[0] * t)
        y = round(self.origin[1] + self.velocity[1] * t)
        out = np.array(self.texture[y : y + h, x : x + w])
        if self.zoom_per_s:
            # zooming in = resizing a shrinking central crop back up to the frame
            cw, ch = round(w / (1.0 + self.zoom_per_s * t)), round(h / (1.0 + self.zoom_per_s * t))
            x0, y0 = (w - cw) // 2, (h - ch) // 2
            crop = out[y0 : y0 + ch, x0 : x0 + cw]
            out = np.asarray(cv2.resize(crop, (w, h), interpolation=cv2.INTER_LINEAR), np.uint8)
        for shape in self.shapes:
            _draw_moving_shape(out, shape, t)
        return out


def _bounce(p: float, lo: float, hi: float) -> float:
    span = max(hi - lo, 1e-6)
    q = (p - lo) % (2 * span)
    return lo + (q if q <= span else 2 * span - q)


def _draw_moving_shape(out: U8, shape: _MovingShape, t: float) -> None:
    h, w = out.shape[:2]
    r = shape.radius
    cx = _bounce(shape.centre[0] + shape.velocity[0] * t, r, w - r)
    cy = _bounce(shape.centre[1] + shape.velocity[1] * t, r, h - r)
    colour: Any = tuple(255 * c for c in shape.colour)
    if shape.square:
        pt0, pt1 = (round(cx - r), round(cy - r)), (round(cx + r), round(cy + r))
        cv2.rectangle(out, pt0, pt1, colour, -1, cv2.LINE_AA)
    else:
        cv2.circle(out, (round(cx), round(cy)), round(r), colour, -1, cv2.LINE_AA)


def _smooth_noise(rng: np.random.Generator, h: int, w: int, cell: int) -> F32:
    cell = max(2, cell)
    small = rng.random((h // cell + 4, w // cell + 4), dtype=np.float32)
    big = np.asarray(
        cv2.resize(small, (small.shape[1] * cell, small.shape[0] * cell), interpolation=cv2.INTER_CUBIC)
    )
    field_ = big[cell : cell + h, cell : cell + w]
    return np.asarray((field_ - field_.min()) / max(float(field_.max() - field_.min()), 1e-6), np.float32)


def _colourise(v: F32, c0: BGR, c1: BGR) -> U8:
    a, b = np.array(c0, np.float32) * 255, np.array(c1, np.float32) * 255
    return np.clip(a + v[..., None] * (b - a), 0, 255).astype(np.uint8)


def _scene(shot: _Shot, size: tuple[int, int], duration_s: float) -> _Scene:
    rng = np.random.default_rng(shot.seed)
    w, h = size
    hue = shot.base_hue
    c0 = _hsv(hue, float(rng.uniform(0.3, 0.7)), float(rng.uniform(0.15, 0.45)))
    c1 = _hsv(hue + float(rng.uniform(30, 120)), float(rng.uniform(0.3, 0.6)), float(rng.uniform(0.55, 0.9)))
    speed = float(rng.uniform(0.02, 0.08)) * w
    angle = float(rng.uniform(0, 2 * math.pi))
    velocity = (speed * math.cos(angle), speed * math.sin(angle))
    if shot.kind == "shapes":
        return _shapes_scene(rng, size, c0, c1)
    if shot.kind == "tiles":
        return _Scene(
            _tiles(rng, w, h, c0, c1), (0.0, 0.0), (0.0, 0.0), float(rng.uniform(0.02, 0.05)), [], size
        )
    pad_w = math.ceil(abs(velocity[0]) * duration_s) + 2
    pad_h = math.ceil(abs(velocity[1]) * duration_s) + 2
    tex_h, tex_w = h + pad_h, w + pad_w
    maker = {"blobs": _blobs, "stripes": _stripes, "bokeh": _bokeh}[shot.kind]
    texture = maker(rng, tex_w, tex_h, c0, c1)
    origin = (pad_w - 1.0 if velocity[0] < 0 else 0.0, pad_h - 1.0 if velocity[1] < 0 else 0.0)
    return _Scene(texture, origin, velocity, 0.0, [], size)


def _blobs(rng: np.random.Generator, w: int, h: int, c0: BGR, c1: BGR) -> U8:
    v = 0.7 * _smooth_noise(rng, h, w, h // 5) + 0.3 * _smooth_noise(rng, h, w, h // 30)
    return _colourise(v, c0, c1)


def _stripes(rng: np.random.Generator, w: int, h: int, c0: BGR, c1: BGR) -> U8:
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    angle = float(rng.uniform(0, math.pi))
    period = float(rng.uniform(0.06, 0.2)) * min(w, h)
    wave = np.sin(2 * np.pi * (xx * math.cos(angle) + yy * math.sin(angle)) / period)
    v = 0.75 * (0.5 + 0.5 * np.tanh(2.0 * wave)) + 0.25 * _smooth_noise(rng, h, w, h // 8)
    return _colourise(v.astype(np.float32), c0, c1)


def _bokeh(rng: np.random.Generator, w: int, h: int, c0: BGR, c1: BGR) -> U8:
    canvas = np.zeros((h, w, 3), np.float32)
    canvas[:] = np.array(c0, np.float32) * 0.6
    for _ in range(int(w * h / 12000) + 10):
        colour: Any = _hsv(
            float(rng.uniform(0, 360)), float(rng.uniform(0.2, 0.6)), float(rng.uniform(0.3, 0.8))
        )
        centre = (int(rng.integers(w)), int(rng.integers(h)))
        cv2.circle(canvas, centre, int(rng.uniform(0.02, 0.07) * min(w, h)), colour, -1, cv2.LINE_AA)
    sigma = 0.01 * min(w, h)
    canvas = np.asarray(cv2.GaussianBlur(canvas, (0, 0), sigma), np.float32)
    return np.clip(canvas * 255, 0, 255).astype(np.uint8)


def _tiles(rng: np.random.Generator, w: int, h: int, c0: BGR, c1: BGR) -> U8:
    cell = max(4, round(float(rng.uniform(0.08, 0.16)) * h))
    rows, cols = h // cell + 2, w // cell + 2
    shade = rng.uniform(0.0, 1.0, (rows, cols)).astype(np.float32)
    checker = (np.add.outer(np.arange(rows), np.arange(cols)) % 2).astype(np.float32)
    v_small = 0.6 * checker + 0.4 * shade
    v = np.asarray(cv2.resize(v_small, (cols * cell, rows * cell), interpolation=cv2.INTER_NEAREST))[:h, :w]
    tiles = _colourise(v.astype(np.float32), c0, c1)
    tiles[::cell, :] = 0
    tiles[:, ::cell] = 0
    return tiles


def _shapes_scene(rng: np.random.Generator, size: tuple[int, int], c0: BGR, c1: BGR) -> _Scene:
    w, h = size
    ramp = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None] * np.ones((1, w), np.float32)
    shapes = [
        _MovingShape(
            centre=(float(rng.uniform(0, w)), float(rng.uniform(0, h))),
            velocity=(float(rng.uniform(-0.15, 0.15)) * w, float(rng.uniform(-0.15, 0.15)) * h),
            radius=float(rng.uniform(0.03, 0.09)) * h,
            colour=_hsv(
                float(rng.uniform(0, 360)), float(rng.uniform(0.2, 0.5)), float(rng.uniform(0.4, 0.8))
            ),
            square=bool(rng.random() < 0.4),
        )
        for _ in range(int(rng.integers(5, 10)))
    ]
    return _Scene(_colourise(ramp, c0, c1), (0.0, 0.0), (0.0, 0.0), 0.0, shapes, size)


# ----------------------------------------------------------------------------------------------------------
# Objects (product and decoys) and captions drawn over the background
# ----------------------------------------------------------------------------------------------------------


def _pyramid(sprite: F32) -> list[F32]:
    """The sprite at halving sizes: a bilinear resize from the next larger level looks as good as an area
    resize from the full size and costs a fraction of it, every frame."""
    levels = [sprite]
    while levels[-1].shape[0] >= 32:
        h, w = levels[-1].shape[:2]
        levels.append(
            np.asarray(cv2.resize(levels[-1], (max(1, w // 2), h // 2), interpolation=cv2.INTER_AREA))
        )
    return levels


def _object_patch(pyramid: list[F32], appearance: _Appearance, t: float, frame_h: int) -> F32:
    """The sprite at this frame's size and distortions, premultiplied, alpha quantised to 8 bits."""
    target_h = max(2, round(appearance.height.at(t) * frame_h))
    sprite = next(level for level in reversed(pyramid) if level.shape[0] >= target_h or level is pyramid[0])
    target_w = max(2, round(sprite.shape[1] * target_h / sprite.shape[0]))
    patch = np.asarray(cv2.resize(sprite, (target_w, target_h), interpolation=cv2.INTER_LINEAR), np.float32)
    look = appearance.look
    if look.light is not None:
        gain = 1 + look.light.at(t) * (np.array(look.tint, np.float32) - 1)
        patch[..., :3] = np.minimum(patch[..., :3] * gain, patch[..., 3:])
    if look.yaw_deg is not None:
        pitch = look.pitch_deg.at(t) if look.pitch_deg else 0.0
        patch = _perspective(patch, look.yaw_deg.at(t), pitch)
    if look.blur is not None:
        patch = _blurred(patch, look.blur.at(t) * frame_h)
    # alpha below half a level cannot change a pixel; dropping it keeps the truth box to pixels really touched
    alpha = np.round(patch[..., 3] * 255) / 255
    patch[..., :3] *= (alpha > 0)[..., None]
    patch[..., 3] = alpha
    return patch


def _perspective(patch: F32, yaw_deg: float, pitch_deg: float) -> F32:
    """The flat sprite turned in 3-D (yaw about the vertical axis, pitch about the horizontal), projected."""
    h, w = patch.shape[:2]
    focal = 2.0 * max(w, h)
    yaw, pitch = math.radians(yaw_deg), math.radians(pitch_deg)
    corners = [(-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2)]
    projected = []
    for x, y in corners:
        xr, zr = x * math.cos(yaw), x * math.sin(yaw)
        yr, zr = y * math.cos(pitch) - zr * math.sin(pitch), y * math.sin(pitch) + zr * math.cos(pitch)
        projected.append((focal * xr / (focal + zr), focal * yr / (focal + zr)))
    dst = np.array(projected, np.float32)
    dst -= dst.min(axis=0)
    out_w, out_h = (math.ceil(float(v)) + 1 for v in dst.max(axis=0))
    src = np.array([(0, 0), (w, 0), (w, h), (0, h)], np.float32)
    matrix = cv2.getPerspectiveTransform(src, dst)
    return np.asarray(cv2.warpPerspective(patch, matrix, (out_w, out_h), flags=cv2.INTER_LINEAR), np.float32)


def _blurred(patch: F32, sigma: float) -> F32:
    pad = math.ceil(3 * sigma)
    padded = cv2.copyMakeBorder(patch, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=(0, 0, 0, 0))
    return np.asarray(cv2.GaussianBlur(padded, (0, 0), sigma), np.float32)


def _place(patch: F32, appearance: _Appearance, t: float, size: tuple[int, int]) -> tuple[int, int]:
    """Top-left corner: the object sweeps its lane across and the frame up and down, never leaving either."""
    w, h = size
    ph, pw = patch.shape[:2]
    lx0, lx1 = appearance.lane[0] * w, appearance.lane[1] * w
    margin = 0.03 * h
    x = _sweep(appearance.x.at(t), lx0 + pw / 2, lx1 - pw / 2)
    y = _sweep(appearance.y.at(t), margin + ph / 2, h - margin - ph / 2)
    return round(x - pw / 2), round(y - ph / 2)


def _sweep(u: float, lo: float, hi: float) -> float:
    return (lo + hi) / 2 if hi < lo else lo + u * (hi - lo)


def _composite(frame: U8, patch: F32, x0: int, y0: int) -> Box | None:
    """Blend a premultiplied patch into frame at (x0, y0), clipped; returns the box of pixels it covers."""
    h, w = frame.shape[:2]
    ph, pw = patch.shape[:2]
    fx0, fy0, fx1, fy1 = max(0, x0), max(0, y0), min(w, x0 + pw), min(h, y0 + ph)
    if fx0 >= fx1 or fy0 >= fy1:
        return None
    part = patch[fy0 - y0 : fy1 - y0, fx0 - x0 : fx1 - x0]
    roi = frame[fy0:fy1, fx0:fx1].astype(np.float32)
    blended = roi * (1 - part[..., 3:]) + part[..., :3] * 255
    frame[fy0:fy1, fx0:fx1] = np.clip(blended + 0.5, 0, 255).astype(np.uint8)
    box = _alpha_box(part[..., 3])
    if box is None:
        return None
    return box[0] + fx0, box[1] + fy0, box[2] + fx0, box[3] + fy0


def _caption_patch(caption: _Caption, frame_w: int, frame_h: int) -> U8:
    """A filled box tightly around the caption's rendered ink plus padding: the text never leaves its box."""
    box_colour, text_colour = CAPTION_STYLES[caption.style]
    scale = caption.scale * frame_h / 720
    while True:
        thickness = max(1, round(2 * scale))
        (tw, th), base = cv2.getTextSize(caption.text, caption.font, scale, thickness)
        if tw + 4 * thickness <= 0.9 * frame_w or scale < 0.2:
            break
        scale *= 0.85
    margin = 2 * thickness + 2
    canvas = np.zeros((th + base + 2 * margin, tw + 2 * margin), np.uint8)
    cv2.putText(canvas, caption.text, (margin, margin + th), caption.font, scale, 255, thickness, cv2.LINE_AA)
    x0, y0, x1, y1 = _alpha_box(canvas.astype(np.float32)) or (0, 0, 1, 1)
    pad = max(2, round(0.012 * frame_h))
    ink = canvas[y0:y1, x0:x1].astype(np.float32)[..., None] / 255
    patch = np.empty((y1 - y0 + 2 * pad, x1 - x0 + 2 * pad, 3), np.float32)
    patch[:] = box_colour
    inner = patch[pad:-pad, pad:-pad]
    inner[:] = inner * (1 - ink) + np.array(text_colour, np.float32) * ink
    return np.round(patch).astype(np.uint8)


def _caption_origin(caption: _Caption, patch: U8, size: tuple[int, int]) -> tuple[int, int]:
    w, h = size
    ph, pw = patch.shape[:2]
    mx, my = round(0.03 * w), round(0.04 * h)
    if caption.slot == "top":
        return round(mx + caption.anchor * (w - 2 * mx - pw)), my
    if caption.slot == "bottom":
        return round(mx + caption.anchor * (w - 2 * mx - pw)), h - my - ph
    x = mx if caption.slot == "left" else w - mx - pw
    return x, round(0.42 * h - ph / 2)


# ----------------------------------------------------------------------------------------------------------
# Rendering and encoding
# ----------------------------------------------------------------------------------------------------------


class _Renderer:
    """Draws frame k of a plan and reports its truth; keeps only the current shot's scene in memory."""

    def __init__(self, plan: _ItemPlan) -> None:
        self.plan = plan
        self.size = (plan.width, plan.height)
        sprite_h = max(512, math.ceil(0.75 * plan.height))
        self.sprites = [_pyramid(_product_sprite(d, sprite_h)) for d in plan.designs]
        self.caption_patches = [_caption_patch(c, plan.width, plan.height) for c in plan.captions]
        self.caption_boxes = [
            _patch_box(p, _caption_origin(c, p, self.size))
            for c, p in zip(plan.captions, self.caption_patches, strict=True)
        ]
        self._shot_index = -1
        self._scene: _Scene | None = None

    def caption_truth(self) -> list[CaptionTruth]:
        fps = self.plan.fps
        return [
            CaptionTruth(c.text, _sec(c.k0, fps), _sec(c.k1, fps), box)
            for c, box in zip(self.plan.captions, self.caption_boxes, strict=True)
        ]

    def render(self, k: int) -> tuple[U8, FrameTruth]:
        t = k / self.plan.fps
        scene, shot_start = self._scene_for(k)
        frame = scene.frame(t - shot_start / self.plan.fps)
        product_box: Box | None = None
        decoys: list[Box] = []
        for appearance in self.plan.appearances:
            if not appearance.k0 <= k < appearance.k1:
                continue
            patch = _object_patch(self.sprites[appearance.design], appearance, t, self.plan.height)
            box = _composite(frame, patch, *_place(patch, appearance, t, self.size))
            if box is None:
                continue
            if appearance.is_product:
                product_box = box if product_box is None else _union(product_box, box)
            else:
                decoys.append(box)
        captions = []
        for caption, label, box in zip(
            self.plan.captions, self.caption_patches, self.caption_boxes, strict=True
        ):
            if caption.k0 <= k < caption.k1:
                frame[box[1] : box[3], box[0] : box[2]] = label
                captions.append(box)
        return frame, FrameTruth(_sec(k, self.plan.fps), product_box, captions, decoys)

    def _scene_for(self, k: int) -> tuple[_Scene, int]:
        shots = self.plan.shots
        index = max(i for i, s in enumerate(shots) if s.k0 <= k)
        end = shots[index + 1].k0 if index + 1 < len(shots) else self.plan.n_frames
        if index != self._shot_index or self._scene is None:
            self._scene = _scene(shots[index], self.size, (end - shots[index].k0) / self.plan.fps)
            self._shot_index = index
        return self._scene, shots[index].k0


def _patch_box(patch: U8, origin: tuple[int, int]) -> Box:
    x, y = origin
    return x, y, x + patch.shape[1], y + patch.shape[0]


def _union(a: Box, b: Box) -> Box:
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def _sec(k: int, fps: float) -> float:
    return round(k / fps, 6)


def _audio_track(plan: _ItemPlan) -> F32:
    """Stereo samples: a chord per shot, an arpeggio under the product, a chirp as each caption appears."""
    n = math.ceil(plan.n_frames / plan.fps * AUDIO_RATE)
    t = np.arange(n, dtype=np.float64) / AUDIO_RATE
    left, right = np.zeros(n), np.zeros(n)
    notes = (196.0, 220.0, 261.6, 293.7, 329.6, 392.0)
    bounds = [s.k0 for s in plan.shots] + [plan.n_frames]
    for i, shot in enumerate(plan.shots):
        a, b = (round(k / plan.fps * AUDIO_RATE) for k in (bounds[i], bounds[i + 1]))
        base = notes[shot.seed % len(notes)]
        seg = t[a:b]
        tremolo = 0.75 + 0.25 * np.sin(2 * np.pi * 0.5 * seg)
        left[a:b] += 0.08 * tremolo * np.sin(2 * np.pi * base * seg)
        right[a:b] += 0.08 * tremolo * np.sin(2 * np.pi * base * 1.5 * seg)
    a, b = (round(k / plan.fps * AUDIO_RATE) for k in plan.interval)
    seg = t[a:b] - t[a] if b > a else t[a:b]
    step = np.floor(seg / 0.25).astype(np.int64) % 4
    freq = np.array([523.3, 659.3, 784.0, 1046.5])[step]
    beep = 0.1 * np.sin(2 * np.pi * freq * seg) * np.exp(-8 * (seg % 0.25))
    left[a:b] += beep
    right[a:b] += beep
    for caption in plan.captions:
        _add_chirp(left, right, round(caption.k0 / plan.fps * AUDIO_RATE))
    return np.clip(np.stack([left, right]), -1, 1).astype(np.float32)


def _add_chirp(left: npt.NDArray[np.float64], right: npt.NDArray[np.float64], start: int) -> None:
    length = min(round(0.15 * AUDIO_RATE), left.size - start)
    if length <= 0:
        return
    s = np.arange(length) / AUDIO_RATE
    chirp = 0.12 * np.sin(2 * np.pi * (600 * s + 0.5 * 5000 * s * s)) * np.hanning(length)
    left[start : start + length] += chirp
    right[start : start + length] += 0.6 * chirp


def _audio_frames(samples: F32) -> Iterator[av.AudioFrame]:
    for start in range(0, samples.shape[1], AUDIO_FRAME):
        chunk = np.ascontiguousarray(samples[:, start : start + AUDIO_FRAME])
        frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
        frame.sample_rate = AUDIO_RATE
        frame.pts = start
        frame.time_base = Fraction(1, AUDIO_RATE)
        yield frame


def _encode(path: Path, plan: _ItemPlan, renderer: _Renderer) -> list[FrameTruth]:
    """Write the H.264/AAC MP4 with libx264's defaults (preset medium, its own threading); returns truth."""
    rate = Fraction(plan.fps).limit_denominator(1001)
    samples = _audio_track(plan)
    truth: list[FrameTruth] = []
    with av.open(str(path), "w", format="mp4") as container:
        video = container.add_stream("libx264", rate=rate)
        video.width, video.height, video.pix_fmt = plan.width, plan.height, "yuv420p"
        # PyAV asks FFmpeg for slice threads by default; NONE leaves x264 its own default (frame threads)
        video.codec_context.thread_type = "NONE"
        audio = container.add_stream("aac", rate=AUDIO_RATE)
        audio.layout = "stereo"
        audio_frames = _audio_frames(samples)
        next_sample = 0
        for k in range(plan.n_frames):
            image, frame_truth = renderer.render(k)
            truth.append(frame_truth)
            frame = av.VideoFrame.from_ndarray(image, format="bgr24")
            frame.pts = k
            frame.time_base = 1 / rate
            container.mux(video.encode(frame))
            # keep audio level with video so the muxer's interleaving queue stays short
            while next_sample < (k + 1) / rate * AUDIO_RATE and next_sample < samples.shape[1]:
                container.mux(audio.encode(next(audio_frames)))
                next_sample += AUDIO_FRAME
        container.mux(video.encode(None))
        for rest in audio_frames:
            container.mux(audio.encode(rest))
        container.mux(audio.encode(None))
    return truth


# ----------------------------------------------------------------------------------------------------------
# The catalog
# ----------------------------------------------------------------------------------------------------------


def _validate(items: int, duration_s: tuple[float, float], size: tuple[int, int], fps: float) -> None:
    if items < 0:
        raise ConfigError(f"items must be ≥ 0, got {items}")
    if not 0 < duration_s[0] <= duration_s[1]:
        raise ConfigError(f"duration_s must be (lo, hi) with 0 < lo ≤ hi, got {duration_s}")
    if size[0] < 64 or size[1] < 64 or size[0] % 2 or size[1] % 2:
        raise ConfigError(f"size must be even and at least 64×64 (yuv420p halves chroma), got {size}")
    if not 1 <= fps <= 120:
        raise ConfigError(f"fps must be within 1..120, got {fps}")


def _write_item(out_dir: Path, plan: _ItemPlan) -> dict[str, str]:
    video_rel, image_rel = f"videos/{plan.item_id}.mp4", f"images/{plan.item_id}.png"
    cv2.imwrite(str(out_dir / image_rel), _main_image(plan.designs[0]))
    renderer = _Renderer(plan)
    partial = out_dir / f"{video_rel}.part"
    frames = _encode(partial, plan, renderer)
    os.replace(partial, out_dir / video_rel)
    truth = Truth(
        item_id=plan.item_id,
        fps=plan.fps,
        width=plan.width,
        height=plan.height,
        duration_s=_sec(plan.n_frames, plan.fps),
        product_interval=(_sec(plan.interval[0], plan.fps), _sec(plan.interval[1], plan.fps)),
        frames=frames,
        cuts=[_sec(s.k0, plan.fps) for s in plan.shots[1:]],
        case=plan.case,
        captions=renderer.caption_truth(),
    )
    (out_dir / "truth" / f"{plan.item_id}.json").write_text(_truth_json(truth))
    return {
        "item_id": plan.item_id,
        "video": video_rel,
        "image": image_rel,
        "title": plan.title,
        "description": plan.description,
    }


def _item_plans(
    items: int,
    *,
    seed: int = 0,
    duration_s: tuple[float, float] = (15.0, 30.0),
    size: tuple[int, int] = (1280, 720),
    fps: float = 25.0,
    hard_cases: bool = False,
) -> list[_ItemPlan]:
    """Every item's plan, in catalog order: the regular items, then one per hard case."""
    plans = [
        _plan_item(f"sku-{i + 1:04d}", np.random.default_rng([seed, i]), size, fps, duration_s, None)
        for i in range(items)
    ]
    if hard_cases:
        for j, case in enumerate(HARD_CASES):
            rng = np.random.default_rng([seed, HARD_SEED_BASE + j])
            plans.append(_plan_item(f"sku-{items + j + 1:04d}", rng, size, fps, duration_s, case))
    return plans


def write_sample_catalog(
    out_dir: Path,
    items: int,
    *,
    seed: int = 0,
    duration_s: tuple[float, float] = (15.0, 30.0),
    size: tuple[int, int] = (1280, 720),
    fps: float = 25.0,
    hard_cases: bool = False,
) -> Path:
    """Write items synthetic products (plus one item per hard case) and return out_dir/catalog.jsonl.

    Writes videos/<id>.mp4, images/<id>.png (the main image) and truth/<id>.json per item. The catalog is
    written last, so a catalog on disk never names a video that is not there.
    """
    _validate(items, duration_s, size, fps)
    out_dir = Path(out_dir)
    for sub in ("videos", "images", "truth"):
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    plans = _item_plans(items, seed=seed, duration_s=duration_s, size=size, fps=fps, hard_cases=hard_cases)
    lines = [json.dumps(_write_item(out_dir, plan)) for plan in plans]
    catalog = out_dir / "catalog.jsonl"
    partial = out_dir / "catalog.jsonl.part"
    partial.write_text("".join(line + "\n" for line in lines))
    os.replace(partial, catalog)
    return catalog
