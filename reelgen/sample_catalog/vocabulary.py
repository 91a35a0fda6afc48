"""The sample catalog's vocabulary: product shapes, patterns, logos, scene kinds, caption styles and the
limits every part shares."""

from __future__ import annotations

from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt

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
