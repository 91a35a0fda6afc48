"""A main image's own pixels: a studio shot's foreground against its plain backdrop, or a product cut cleanly
out of a photo to its edges."""

from __future__ import annotations

import cv2
import numpy as np

from workers.analysis.localisation.parameters import (
    BACKDROP_LEVEL,
    CUT_AREA,
    CUT_INSET,
    CUT_JOINED,
    CUT_SOLIDITY,
    SEGMENT_SIDE,
)


def foreground(image: np.ndarray) -> np.ndarray:
    """The main image's product pixels: those unlike its studio background, or every pixel when the border is
    not plain (its colours spread from their median by more than a studio backdrop's)."""
    border = image[_border(image)].astype(np.float32)
    spread = float(np.median(np.abs(border - np.median(border, axis=0)).max(axis=1)))
    if spread > BACKDROP_LEVEL:  # a photo to its edges: no studio background to remove
        return np.full(image.shape[:2], 255, np.uint8)
    mask = (unlike_backdrop(image) > BACKDROP_LEVEL).astype(np.uint8) * 255
    return mask if mask.mean() > 255 * 0.02 else np.full(image.shape[:2], 255, np.uint8)


def _border(image: np.ndarray) -> np.ndarray:
    """The image's outermost rows and columns, as a mask."""
    edge = np.zeros(image.shape[:2], bool)
    edge[[0, -1], :] = edge[:, [0, -1]] = True
    return edge


def unlike_backdrop(image: np.ndarray) -> np.ndarray:
    """How far each pixel's colour is from a studio backdrop fitted to the image's border (the largest channel's
    difference, 0-255)."""
    return np.asarray(np.abs(image.astype(np.float32) - _backdrop(image, _border(image))).max(axis=2))


def _backdrop(image: np.ndarray, edge: np.ndarray) -> np.ndarray:
    """A studio backdrop's colour at every pixel, fitted to the border's pixels as a quadratic surface per
    channel, then refitted on the border pixels it explains (the product may reach the border): a backdrop lit
    from one side darkens across the frame, and against its median colour the far corners stood out as
    product (skimage's clock photo: a third of its foreground was backdrop)."""
    h, w = image.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    x, y = xs / w - 0.5, ys / h - 0.5
    terms = np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], axis=-1)
    known, colours = terms[edge], image[edge].astype(np.float32)
    explained = np.ones(len(known), bool)
    for _ in range(2):
        fit, *_ = np.linalg.lstsq(known[explained], colours[explained], rcond=None)
        explained = np.abs(colours - known @ fit).max(axis=1) <= BACKDROP_LEVEL
    return np.asarray(terms @ fit, np.float32)


def cut_out(image: np.ndarray) -> np.ndarray | None:
    """The product's pixels (0/255) in a photo that runs to its edges, where they cut out cleanly (GrabCut);
    None where they do not."""
    scale = min(1.0, SEGMENT_SIDE / max(image.shape[:2]))
    small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    h, w = small.shape[:2]
    inset = max(2, round(CUT_INSET * max(h, w)))
    if w <= 4 * inset or h <= 4 * inset:
        return None
    labels = np.zeros((h, w), np.uint8)
    # GrabCut seeds its colour models at random: a photo must cut the same way in every worker
    cv2.setRNGSeed(0)
    cv2.grabCut(
        cv2.cvtColor(small, cv2.COLOR_RGB2BGR), labels, (inset, inset, w - 2 * inset, h - 2 * inset),
        np.zeros((1, 65)), np.zeros((1, 65)), 5, cv2.GC_INIT_WITH_RECT,
    )  # fmt: skip
    cut = ((labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)).astype(np.uint8)
    count, parts, stats, _ = cv2.connectedComponentsWithStats(cut)
    if count < 2 or not CUT_AREA[0] <= float(cut.mean()) <= CUT_AREA[1]:
        return None
    largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    blob = (parts == largest).astype(np.uint8)
    contours, _ = cv2.findContours(blob, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    hull = cv2.contourArea(cv2.convexHull(max(contours, key=cv2.contourArea)))
    area = int(stats[largest, cv2.CC_STAT_AREA])
    if area < CUT_JOINED * int(cut.sum()) or area < CUT_SOLIDITY * hull:
        return None
    return np.asarray(
        cv2.resize(blob * 255, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_NEAREST), np.uint8
    )
