"""Backgrounds: one precomputed texture per shot, panned, zoomed or drawn over per frame."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from reelgen.sample_catalog.plan import Shot
from reelgen.sample_catalog.product import hsv
from reelgen.sample_catalog.vocabulary import BGR, F32, U8


@dataclass(frozen=True)
class _MovingShape:
    centre: tuple[float, float]
    velocity: tuple[float, float]
    radius: float
    colour: BGR
    square: bool


@dataclass(frozen=True)
class Scene:
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


def shot_scene(shot: Shot, size: tuple[int, int], duration_s: float) -> Scene:
    rng = np.random.default_rng(shot.seed)
    w, h = size
    hue = shot.base_hue
    c0 = hsv(hue, float(rng.uniform(0.3, 0.7)), float(rng.uniform(0.15, 0.45)))
    c1 = hsv(hue + float(rng.uniform(30, 120)), float(rng.uniform(0.3, 0.6)), float(rng.uniform(0.55, 0.9)))
    speed = float(rng.uniform(0.02, 0.08)) * w
    angle = float(rng.uniform(0, 2 * math.pi))
    velocity = (speed * math.cos(angle), speed * math.sin(angle))
    if shot.kind == "shapes":
        return _shapes_scene(rng, size, c0, c1)
    if shot.kind == "tiles":
        return Scene(
            _tiles(rng, w, h, c0, c1), (0.0, 0.0), (0.0, 0.0), float(rng.uniform(0.02, 0.05)), [], size
        )
    pad_w = math.ceil(abs(velocity[0]) * duration_s) + 2
    pad_h = math.ceil(abs(velocity[1]) * duration_s) + 2
    tex_h, tex_w = h + pad_h, w + pad_w
    maker = {"blobs": _blobs, "stripes": _stripes, "bokeh": _bokeh}[shot.kind]
    texture = maker(rng, tex_w, tex_h, c0, c1)
    origin = (pad_w - 1.0 if velocity[0] < 0 else 0.0, pad_h - 1.0 if velocity[1] < 0 else 0.0)
    return Scene(texture, origin, velocity, 0.0, [], size)


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
        colour: Any = hsv(
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


def _shapes_scene(rng: np.random.Generator, size: tuple[int, int], c0: BGR, c1: BGR) -> Scene:
    w, h = size
    ramp = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None] * np.ones((1, w), np.float32)
    shapes = [
        _MovingShape(
            centre=(float(rng.uniform(0, w)), float(rng.uniform(0, h))),
            velocity=(float(rng.uniform(-0.15, 0.15)) * w, float(rng.uniform(-0.15, 0.15)) * h),
            radius=float(rng.uniform(0.03, 0.09)) * h,
            colour=hsv(
                float(rng.uniform(0, 360)), float(rng.uniform(0.2, 0.5)), float(rng.uniform(0.4, 0.8))
            ),
            square=bool(rng.random() < 0.4),
        )
        for _ in range(int(rng.integers(5, 10)))
    ]
    return Scene(_colourise(ramp, c0, c1), (0.0, 0.0), (0.0, 0.0), 0.0, shapes, size)
