"""Objects (product and decoys) and captions drawn over the background."""

from __future__ import annotations

import math

import cv2
import numpy as np

from reelgen.sample_catalog.plan import Appearance, Caption
from reelgen.sample_catalog.product import alpha_box
from reelgen.sample_catalog.vocabulary import CAPTION_STYLES, F32, U8, Box


def sprite_pyramid(sprite: F32) -> list[F32]:
    """The sprite at halving sizes: a bilinear resize from the next larger level looks as good as an area
    resize from the full size and costs a fraction of it, every frame."""
    levels = [sprite]
    while levels[-1].shape[0] >= 32:
        h, w = levels[-1].shape[:2]
        levels.append(
            np.asarray(cv2.resize(levels[-1], (max(1, w // 2), h // 2), interpolation=cv2.INTER_AREA))
        )
    return levels


def object_patch(pyramid: list[F32], appearance: Appearance, t: float, frame_h: int) -> F32:
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


def place(patch: F32, appearance: Appearance, t: float, size: tuple[int, int]) -> tuple[int, int]:
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


def composite(frame: U8, patch: F32, x0: int, y0: int) -> Box | None:
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
    box = alpha_box(part[..., 3])
    if box is None:
        return None
    return box[0] + fx0, box[1] + fy0, box[2] + fx0, box[3] + fy0


def caption_patch(caption: Caption, frame_w: int, frame_h: int) -> U8:
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
    x0, y0, x1, y1 = alpha_box(canvas.astype(np.float32)) or (0, 0, 1, 1)
    pad = max(2, round(0.012 * frame_h))
    ink = canvas[y0:y1, x0:x1].astype(np.float32)[..., None] / 255
    patch = np.empty((y1 - y0 + 2 * pad, x1 - x0 + 2 * pad, 3), np.float32)
    patch[:] = box_colour
    inner = patch[pad:-pad, pad:-pad]
    inner[:] = inner * (1 - ink) + np.array(text_colour, np.float32) * ink
    return np.round(patch).astype(np.uint8)


def caption_origin(caption: Caption, patch: U8, size: tuple[int, int]) -> tuple[int, int]:
    w, h = size
    ph, pw = patch.shape[:2]
    mx, my = round(0.03 * w), round(0.04 * h)
    if caption.slot == "top":
        return round(mx + caption.anchor * (w - 2 * mx - pw)), my
    if caption.slot == "bottom":
        return round(mx + caption.anchor * (w - 2 * mx - pw)), h - my - ph
    x = mx if caption.slot == "left" else w - mx - pw
    return x, round(0.42 * h - ph / 2)
