"""The plan of an item: every random choice drawn up front, so rendering is a pure function of (plan, frame)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from core.errors import ConfigError
from reelgen.sample_catalog.vocabulary import (
    BGR,
    CAPTION_STYLES,
    FONTS,
    HARD_CASES,
    LOGOS,
    PATTERNS,
    PRODUCT_NOUNS,
    SCENE_KINDS,
    SHAPES,
    SIDE_TEXTS,
    SLOGANS,
    Logo,
    Pattern,
    SceneKind,
    Shape,
    Slot,
)


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
class Design:
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
class Appearance:
    """One object on screen during frames [k0, k1), confined to a horizontal lane so objects never overlap."""

    design: int  # index into ItemPlan.designs; 0 is the product
    is_product: bool
    k0: int
    k1: int
    lane: tuple[float, float]  # x range as fractions of the frame width
    x: _Wave  # 0..1 across the room the lane leaves
    y: _Wave
    height: _Wave  # fraction of the frame height
    look: _Look = _Look()


@dataclass(frozen=True)
class Shot:
    k0: int
    kind: SceneKind
    seed: int
    base_hue: float


@dataclass(frozen=True)
class Caption:
    text: str
    slot: Slot
    anchor: float  # 0 = left, 0.5 = centre, 1 = right (top/bottom slots)
    k0: int
    k1: int
    style: int
    font: int
    scale: float  # relative to the frame height


@dataclass(frozen=True)
class ItemPlan:
    item_id: str
    case: str | None
    width: int
    height: int
    fps: float
    n_frames: int
    interval: tuple[int, int]
    shots: list[Shot]
    designs: list[Design]
    appearances: list[Appearance]
    captions: list[Caption]
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


def _design(rng: np.random.Generator, shape: Shape | None = None) -> Design:
    shape = shape or SHAPES[int(rng.integers(len(SHAPES)))]
    aspect_range = {"box": (0.6, 0.85), "bottle": (0.36, 0.46), "can": (0.5, 0.6), "jar": (0.72, 0.9)}[shape]
    body = float(rng.uniform(0, 360))
    return Design(
        shape=shape,
        aspect=float(rng.uniform(*aspect_range)),
        hues=(body, (body + rng.uniform(100, 260)) % 360, (body + rng.uniform(40, 320)) % 360),
        pattern=PATTERNS[int(rng.integers(len(PATTERNS)))],
        pattern_period=float(rng.uniform(0.06, 0.12)),
        logo=LOGOS[int(rng.integers(len(LOGOS)))],
        letter=chr(ord("A") + int(rng.integers(26))),
        grain_seed=int(rng.integers(2**31)),
    )


def _decoy_design(rng: np.random.Generator, product: Design) -> Design:
    """A different product whose body hue is far from the product's, so colour alone tells them apart."""
    decoy = _design(rng)
    body = (product.hues[0] + rng.uniform(90, 270)) % 360
    return _lookalike(decoy, body - decoy.hues[0])


def _lookalike(product: Design, hue_shift: float) -> Design:
    """Same silhouette, pattern and logo; only the colours differ."""
    h0, h1, h2 = ((h + hue_shift) % 360 for h in product.hues)
    return replace(product, hues=(h0, h1, h2))


def _colour_name(hue: float) -> str:
    limits = (15, 40, 70, 160, 200, 260, 300, 340, 361)
    names = ("red", "orange", "yellow", "green", "teal", "blue", "purple", "pink", "red")
    return next(name for limit, name in zip(limits, names, strict=True) if hue < limit)


def _describe(design: Design, brand: str) -> tuple[str, str]:
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


def _plan_shots(rng: np.random.Generator, n: int, fps: float, interval: tuple[int, int]) -> list[Shot]:
    """Shots whose cuts include the product interval's ends: a promo video cuts to its product shot."""
    k0, k1 = interval
    cuts = [*_split(rng, 0, k0, fps), k0]
    if (k1 - k0) / fps > 8.0 and rng.random() < 0.5:
        cuts.append(k0 + round(float(rng.uniform(0.35, 0.65)) * (k1 - k0)))
    cuts += [k1, *_split(rng, k1, n, fps)]
    order = [SCENE_KINDS[int(i)] for i in rng.permutation(len(SCENE_KINDS))]
    starts = [0, *cuts]
    return [
        Shot(
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
) -> Appearance:
    x, y, size = _motion(rng, height)
    return Appearance(design, design == 0, span[0], span[1], lane, x, y, size, look)


def _plan_decoys(rng: np.random.Generator, n: int, interval: tuple[int, int]) -> list[Appearance]:
    """Decoys right before and after the product interval, where a naive "any object" scorer would look."""
    k0, k1 = interval
    decoys = [_appearance(rng, 1, (round(float(rng.uniform(0.0, 0.3)) * k0), k0), height=(0.3, 0.65))]
    if n - k1 > 1 and rng.random() < 0.7:
        decoys.append(_appearance(rng, 2, (k1, k1 + max(1, round(float(rng.uniform(0.6, 1.0)) * (n - k1))))))
    return decoys


def _plan_captions(rng: np.random.Generator, n: int, fps: float, brand: str) -> list[Caption]:
    """Independent walks per edge slot: captions come and go across the whole video, product or not."""
    captions: list[Caption] = []
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


def _caption(rng: np.random.Generator, slot: Slot, k0: int, k1: int, brand: str) -> Caption:
    price = f"${int(rng.integers(5, 200))}.99"
    if slot in ("left", "right"):
        text = str(rng.choice([*SIDE_TEXTS, price]))
    else:
        text = str(rng.choice([*SLOGANS, brand, price, f"NOW {price}", f"{brand} {price}"]))
    return Caption(
        text=text,
        slot=slot,
        anchor=float(rng.choice([0.0, 0.5, 1.0])),
        k0=k0,
        k1=k1,
        style=int(rng.integers(len(CAPTION_STYLES))),
        font=FONTS[int(rng.integers(len(FONTS)))],
        scale=float(rng.uniform(1.1, 1.6) if slot in ("top", "bottom") else rng.uniform(0.9, 1.2)),
    )


def plan_item(
    item_id: str,
    rng: np.random.Generator,
    size: tuple[int, int],
    fps: float,
    duration_s: tuple[float, float],
    case: str | None,
) -> ItemPlan:
    n = max(4, _frames(float(rng.uniform(*duration_s)), fps))
    brand = _brand(rng)
    product = _design(rng)
    interval = _choose_interval(rng, n, fps, lead_s=4.5 if case == "shown_twice" else 2.0)
    shots = _plan_shots(rng, n, fps, interval)
    designs = [product, _decoy_design(rng, product), _decoy_design(rng, product)]
    appearances = [_appearance(rng, 0, interval), *_plan_decoys(rng, n, interval)]
    captions = _plan_captions(rng, n, fps, brand)
    title, description = _describe(product, brand)
    plan = ItemPlan(
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


def _harden(plan: ItemPlan, rng: np.random.Generator) -> ItemPlan:
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


def _with_product(plan: ItemPlan, product: Appearance) -> ItemPlan:
    return replace(plan, appearances=[product, *plan.appearances[1:]])


def _small_among_lookalikes(plan: ItemPlan, rng: np.random.Generator) -> ItemPlan:
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


def _shown_twice(plan: ItemPlan, rng: np.random.Generator) -> ItemPlan:
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
