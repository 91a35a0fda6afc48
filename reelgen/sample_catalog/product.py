"""Product pictures."""

from __future__ import annotations

import colorsys
import math
from typing import Any

import cv2
import numpy as np

from reelgen.sample_catalog.plan import Design
from reelgen.sample_catalog.vocabulary import BGR, F32, GRAIN_ROWS, U8, Box


def hsv(hue: float, sat: float, val: float) -> BGR:
    r, g, b = colorsys.hsv_to_rgb((hue % 360) / 360, sat, val)
    return (b, g, r)


def _silhouette(design: Design, h: int, w: int) -> U8:
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


def _pattern_field(design: Design, h: int, w: int) -> F32:
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


def product_sprite(design: Design, h: int) -> F32:
    """The product as premultiplied BGRA floats in [0, 1], cropped to its silhouette."""
    w = max(2, round(design.aspect * h))
    sat_val = ((0.8, 0.85), (0.75, 0.95), (0.9, 0.95))
    body, second, third = (
        np.array(hsv(hue, *sv), np.float32) for hue, sv in zip(design.hues, sat_val, strict=True)
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


def _paint_parts(colour: F32, design: Design, h: int, w: int, accent: F32) -> None:
    """Caps, lids and rims in solid colours, and a light label band for the logo on round containers."""
    dark: Any = tuple(float(c) * 0.45 for c in accent)
    label: Any = tuple(0.25 + 0.75 * float(c) for c in hsv(design.hues[2], 0.15, 1.0))
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


def _paint_logo(colour: F32, design: Design, h: int, w: int, logo_colour: F32) -> None:
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


def _shading(design: Design, h: int, w: int) -> F32:
    """Round containers get a cylinder's highlight; boxes a gentle left-to-right falloff."""
    x = np.linspace(-1.0, 1.0, w, dtype=np.float32)
    row = 0.95 - 0.12 * x if design.shape == "box" else 0.72 + 0.38 * np.cos(x * np.pi / 2.2) ** 2
    return np.broadcast_to(row[None, :], (h, w)).astype(np.float32)


def _crop_to_alpha(patch: F32) -> F32:
    box = alpha_box(patch[..., 3])
    if box is None:
        return patch
    x0, y0, x1, y1 = box
    return np.ascontiguousarray(patch[y0:y1, x0:x1])


def alpha_box(alpha: F32) -> Box | None:
    rows = np.flatnonzero(alpha.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(alpha.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def main_image(design: Design, size: int = 512) -> U8:
    """The catalog's main image: the product alone on a plain light background, as marketplaces require."""
    sprite = product_sprite(design, round(0.84 * size))
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
