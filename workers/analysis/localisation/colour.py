"""Evidence by colour: blobs of the frame whose hues are the product's own pixels', that look like them, under
the photo's light or a few others."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from workers.analysis.localisation.common import Box, Located, at_locate_side, grown_mask, own_bounds
from workers.analysis.localisation.parameters import (
    BACKGROUND_SHARE,
    CORE_MATCH,
    CORE_REACH,
    CORE_SPECK,
    FAINT_MATCH,
    LIGHTS,
    LOOK_NCC,
    LOOK_NCC_SMALLER,
    LOOK_SIDE,
    LOOKED_BLOBS,
    MIN_SATURATION,
    PART_SHARE,
    STRONG_LIGHTS,
    STRONG_NCC,
    TEMPLATE_SIDE,
)
from workers.geometry import box_union, iou, scale_box


def _relit(image: np.ndarray, light: tuple[float, float, float]) -> np.ndarray:
    return np.clip(image.astype(np.float32) * np.array(light, np.float32), 0, 255).astype(np.uint8)


def histogram(images: Sequence[np.ndarray], own: np.ndarray) -> np.ndarray:
    """The hue-saturation histogram (30 × 32 bins, peak 255) of the own pixels (a 0/255 mask) of RGB images."""
    hist = sum(
        cv2.calcHist([cv2.cvtColor(image, cv2.COLOR_RGB2HSV)], [0, 1], own, [30, 32], [0, 180, 0, 256])
        for image in images
    )
    return np.asarray(hist * (255.0 / max(float(np.max(hist)), 1e-6)), np.float32)


def _around_core(projected: np.ndarray, labels: np.ndarray, label: int, box: Box) -> Box:
    """The box of a blob's pixels near its core (CORE_MATCH), or the blob's box where it has too little core."""
    x0, y0, x1, y1 = (int(v) for v in box)
    own = labels[y0:y1, x0:x1] == label
    core = own & (projected[y0:y1, x0:x1] >= CORE_MATCH)
    count = int(core.sum())
    if count < PART_SHARE * int(own.sum()):
        return box
    # specks of the core (a few strongly matching pixels of a hand) are no core
    parts, part_labels, part_stats, _ = cv2.connectedComponentsWithStats(core.astype(np.uint8))
    kept = [k for k in range(1, parts) if part_stats[k, cv2.CC_STAT_AREA] >= CORE_SPECK * count]
    if not kept:
        return box
    core = np.isin(part_labels, kept)
    ys, xs = own_bounds(own & (grown_mask(core.astype(np.uint8), CORE_REACH) > 0))
    return (float(x0 + xs.start), float(y0 + ys.start), float(x0 + xs.stop), float(y0 + ys.stop))


def _look_of(image: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The product's own pixels at LOOK_SIDE a side, and which of them are the product's."""
    bounds = own_bounds(own)
    side = (LOOK_SIDE, LOOK_SIDE)
    pixels = cv2.resize(image[bounds], side, interpolation=cv2.INTER_AREA)
    return pixels.astype(np.float32), cv2.resize(own[bounds], side, interpolation=cv2.INTER_NEAREST) > 0


def _likeness(look: tuple[np.ndarray, np.ndarray], frame: np.ndarray, box: Box) -> float:
    """Normalised cross-correlation of the product's look with the frame's pixels in box."""
    pixels, mask = look
    x0, y0, x1, y1 = (round(v) for v in box)
    region = frame[y0 : max(y0 + 1, y1), x0 : max(x0 + 1, x1)]
    seen = cv2.resize(region, (LOOK_SIDE, LOOK_SIDE), interpolation=cv2.INTER_AREA).astype(np.float32)[mask]
    shown = pixels[mask]
    seen, shown = seen - seen.mean(axis=0), shown - shown.mean(axis=0)
    norm = math.sqrt(float((seen * seen).sum()) * float((shown * shown).sum()))
    return float((seen * shown).sum()) / norm if norm > 0 else 0.0


@dataclass(frozen=True)
class _Matches:
    """A frame's pixels of the product's colours (one histogram of them): the back-projection, smoothed, and its
    blobs (those at 96 or more) and fainter regions (FAINT_MATCH or more), each as labels and stats as
    cv2.connectedComponentsWithStats gives them (the fainter ones' stats only)."""

    projected: np.ndarray
    labels: np.ndarray
    stats: np.ndarray
    faint: np.ndarray


def _matches(hsv: np.ndarray, hist: np.ndarray) -> _Matches:
    projected = cv2.calcBackProject([hsv], [0, 1], hist, [0, 180, 0, 256], 1)
    projected = cv2.GaussianBlur(projected, (0, 0), 2.0)
    _, blob = cv2.threshold(projected, 96, 255, cv2.THRESH_BINARY)
    _, labels, stats, _ = cv2.connectedComponentsWithStats(blob)
    _, _, faint, _ = cv2.connectedComponentsWithStats((projected >= FAINT_MATCH).astype(np.uint8))
    return _Matches(projected, labels, stats, faint)


def _grown_to_look(
    look: tuple[np.ndarray, np.ndarray], frame: np.ndarray, faint: np.ndarray, box: Box
) -> tuple[Box, float]:
    """The box grown over each region of fainter colour match (faint: their stats) that it touches, one at a
    time, where that makes its pixels look more like the product's; with its likeness."""
    likeness = _likeness(look, frame, box)
    most = 0.6 * frame.shape[0] * frame.shape[1]
    for x, y, w, h, _ in faint[1:]:
        region = (float(x), float(y), float(x + w), float(y + h))
        if iou(region, box) == 0 or w * h > most:
            continue
        grown = box_union(box, region)
        if (grown_likeness := _likeness(look, frame, grown)) > likeness:
            box, likeness = grown, grown_likeness
    return box, likeness


class ColourSource:
    """The product's colours and look, built once from its own pixels in the main image; `find` per frame."""

    def __init__(self, image: np.ndarray, mask: np.ndarray, own: np.ndarray | None, textured: bool) -> None:
        self._look = None if own is None else _look_of(image, own)
        hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV)
        pixels = mask if own is None else own
        self._colourful = float(np.median(hsv[..., 1][pixels > 0])) >= MIN_SATURATION
        #: the product's colours (a hue-saturation histogram, 0-255) as its photo shows them, then, for a plain
        #: colourful product (whose colours are its evidence), under LIGHTS
        self._hists = [histogram([image], pixels)]
        #: and one for each of STRONG_LIGHTS, looked for one at a time where none of those finds it
        self._strong: list[np.ndarray] = []
        if not textured and self._colourful:
            self._hists.append(histogram([_relit(image, light) for light in LIGHTS], pixels))
            self._strong = [histogram([_relit(image, light)], pixels) for light in STRONG_LIGHTS]

    @property
    def colourful(self) -> bool:
        """Whether the product's colours are evidence of it (MIN_SATURATION)."""
        return self._colourful

    @property
    def looks(self) -> bool:
        """Whether the product's own pixels are known, so that a blob can be checked to look like them."""
        return self._look is not None

    def colour_near(self, frame: np.ndarray, source_size: tuple[int, int], near: Box) -> Box | None:
        """The blob of the product's colours that overlaps near (a box other evidence gives, source pixels) in an
        RGB frame of the source, in source pixels; None where the product's own pixels are unknown or no such
        blob is there that looks like the product's own pixels (LOOK_NCC). A plain product's colours alone are
        no evidence where its photo runs to its edges (an apple's reds are a face's too: by hue and saturation
        the two are as alike as two views of the apple), but where the template's match says the product is,
        they give its extent better than the match's box, which is the whole photo's at one of a few fixed
        scales. Only where the blob looks like the product: the match's box also overlaps what stands next to
        the product (a face beside it). The blob is not grown here: the match has placed the product, the blob
        only sizes it."""
        if self._look is None:
            return None
        frame = at_locate_side(frame)
        sx, sy = frame.shape[1] / source_size[0], frame.shape[0] / source_size[1]
        found = self.find(frame, scale_box(near, sx, sy))
        if found is None or found.box is None or _likeness(self._look, frame, found.box) < LOOK_NCC:
            return None
        return scale_box(found.box, 1 / sx, 1 / sy)

    def find(self, frame: np.ndarray, near: Box | None = None, looked: bool = False) -> Located | None:
        """The largest blob of the product's colours in the frame, or the largest overlapping near; looked, the
        largest that looks like the product's own pixels (grown while that makes it look more like them), and
        for a plain product, where none does, the same under LIGHTS, then under each of STRONG_LIGHTS."""
        hsv = cv2.cvtColor(frame, cv2.COLOR_RGB2HSV)
        for hist in self._hists if looked else self._hists[:1]:
            if (found := self._blob(frame, _matches(hsv, hist), near, looked)) is not None:
                return found
        if not looked or not self._strong:
            return None
        k = min(1.0, TEMPLATE_SIDE / max(frame.shape[:2]))
        small = cv2.resize(frame, None, fx=k, fy=k, interpolation=cv2.INTER_AREA)
        small_hsv = cv2.cvtColor(small, cv2.COLOR_RGB2HSV)
        for hist in self._strong:
            found = self._blob(small, _matches(small_hsv, hist), None, True, STRONG_NCC)
            if found is not None and found.box is not None:
                return Located(scale_box(found.box, 1 / k, 1 / k), found.confidence, "colour")
        return None

    def _blob(
        self, frame: np.ndarray, matches: _Matches, near: Box | None, looked: bool, least: float = 0.0
    ) -> Located | None:
        """find, for the frame's pixels of one histogram of the product's colours; a looked blob must look at
        least `least` like the product too."""
        projected, labels, stats = matches.projected, matches.labels, matches.stats
        # component 0 is the background
        boxes = {
            k: (float(x), float(y), float(x + w), float(y + h))
            for k, (x, y, w, h, _) in enumerate(stats[1:], start=1)
        }
        blobs = sorted(
            (k for k, box in boxes.items() if near is None or iou(box, near) > 0),
            key=lambda k: -int(stats[k, cv2.CC_STAT_AREA]),
        )
        frame_area = frame.shape[0] * frame.shape[1]
        look = self._look if looked else None
        for rank, k in enumerate(blobs[: LOOKED_BLOBS if look is not None else 1]):
            _, _, w, h, area = (int(v) for v in stats[k])
            if area < frame_area * 0.003 or area < 0.3 * w * h:
                continue
            confidence = 0.3 * min(1.0, area / (w * h))
            if look is None:
                # unlooked, the largest blob is the product's, unless it covers most of the frame: a
                # background of the product's colours
                if w * h > frame_area * BACKGROUND_SHARE:
                    continue
                return Located(boxes[k], confidence, "colour")
            # looked, the largest that looks like it: a face or a wall of the product's hues is often larger
            # than the product beside it, and a smaller blob needs to look more like it (LOOK_NCC_SMALLER);
            # held up close, a product fills most of the frame, and a background rarely looks like it
            box, likeness = _grown_to_look(look, frame, matches.faint, boxes[k])
            if likeness < max(least, LOOK_NCC if rank == 0 else LOOK_NCC_SMALLER):
                continue
            # a blob that looks like the product may have a hand of its hues joined to it: where the part
            # round its core looks more like the product, that part is the product
            core = _around_core(projected, labels, k, boxes[k])
            if core != boxes[k]:
                core, core_likeness = _grown_to_look(look, frame, matches.faint, core)
                if core_likeness > likeness:
                    box = core
            return Located(box, confidence, "colour")
        return None
