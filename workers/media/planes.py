"""Pictures in yuv420p as three planes: slicing a crop, scaling, letterboxing over a blurred fill, and the
encoder's frame; all without a colour conversion."""

from __future__ import annotations

from dataclasses import dataclass

import av
import cv2
import numpy as np

from workers.geometry import CropRect, letterbox_placement
from workers.media.containers import quarter_turns


@dataclass(frozen=True)
class Planes:
    """A yuv420p picture as three planes (display orientation)."""

    y: np.ndarray
    u: np.ndarray
    v: np.ndarray

    def crop(self, rect: CropRect) -> Planes:
        x, y, w, h = rect.x, rect.y, rect.w, rect.h
        return Planes(
            self.y[y : y + h, x : x + w],
            self.u[y // 2 : (y + h) // 2, x // 2 : (x + w) // 2],
            self.v[y // 2 : (y + h) // 2, x // 2 : (x + w) // 2],
        )

    def resize(self, width: int, height: int) -> Planes:
        if self.y.shape[1] == width and self.y.shape[0] == height:
            return self
        # swscale's area filter, not OpenCV's INTER_AREA: at the non-integer ratios crops have, OpenCV falls back
        # to a generic area resampler (4.2 ms for a 1080p luma plane to 1080×608; swscale 0.6 ms for all three
        # planes, the luma equal to OpenCV's within 61 dB PSNR)
        return frame_planes(self.to_frame().reformat(width=width, height=height, interpolation="AREA"), 0)

    def letterbox(self, width: int, height: int, share: float = 1.0) -> Planes:
        """This picture scaled to fit inside width×height (to share of that size), centred over a blurred,
        scaled-to-fill copy of itself.

        For a padded clip: the region shown keeps its own aspect (its text stays whole) and the bars are filled
        with the same frame's colours instead of black. All in yuv420p planes: no colour conversion.
        """
        src_h, src_w = self.y.shape
        x0, y0, fit_w, fit_h = letterbox_placement(src_w, src_h, width, height, share)
        # the fill: the central part of the region with the output's aspect, stretched over the output
        if src_w * height > width * src_h:
            cover_w, cover_h = max(2, round(src_h * width / height / 2) * 2), src_h
        else:
            cover_w, cover_h = src_w, max(2, round(src_w * height / width / 2) * 2)
        cx, cy = (src_w - cover_w) // 4 * 2, (src_h - cover_h) // 4 * 2
        cover = self.crop(CropRect(cx, cy, cover_w, cover_h))
        fitted = self.resize(fit_w, fit_h)
        planes = []
        for k, (picture, part) in enumerate(
            zip((fitted.y, fitted.u, fitted.v), (cover.y, cover.u, cover.v), strict=True)
        ):
            div = 1 if k == 0 else 2
            out_w, out_h = width // div, height // div
            # luma dimmed, so the sharp picture reads as the subject and the fill as surround
            background = _blurred(part, out_w, out_h, BACKDROP_LUMA if k == 0 else 1.0)
            background[y0 // div : (y0 + fit_h) // div, x0 // div : (x0 + fit_w) // div] = picture
            planes.append(background)
        return Planes(planes[0], planes[1], planes[2])

    def to_frame(self) -> av.VideoFrame:
        height, width = self.y.shape
        frame = av.VideoFrame(width, height, "yuv420p")
        # Straight into the frame's planes: one copy (stacking the planes for from_ndarray made two), 0.09
        # instead of 0.5 ms for a 1080×1920 picture.
        for plane, pixels in zip(frame.planes, (self.y, self.u, self.v), strict=True):
            rows, cols = pixels.shape
            buffer = memoryview(plane)  # type: ignore[arg-type]  # VideoPlane has the buffer protocol
            lines = np.frombuffer(buffer, np.uint8, count=plane.line_size * rows).reshape(
                rows, plane.line_size
            )
            lines[:, :cols] = pixels
        return frame


# Blurring at 1/BLUR_SHRINK of the output size and scaling back is a wide, cheap blur: a handful of small
# resizes per frame instead of a large Gaussian kernel over the whole output.
BLUR_SHRINK = 16
BACKDROP_LUMA = 0.6


def _blurred(plane: np.ndarray, width: int, height: int, dim: float = 1.0) -> np.ndarray:
    """The plane blurred and stretched to width×height; with dim < 1, its levels pulled towards black (16).

    Dimming is linear, so it is done on the small blurred image before scaling up: the same picture as
    dimming the output, at a 256th of the pixels."""
    small = _shrunk(plane, max(2, width // BLUR_SHRINK), max(2, height // BLUR_SHRINK))
    small = cv2.GaussianBlur(small, (0, 0), 1.5)
    if dim != 1.0:
        small = (16 + (small.astype(np.float32) - 16) * dim).astype(np.uint8)
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR)


def _shrunk(plane: np.ndarray, width: int, height: int) -> np.ndarray:
    """The plane averaged down to width×height, for the blurred fill.

    OpenCV's area resize is fast only at integer ratios (1.2 ms for a 608×1080 plane to 67×120, 0.17 ms this
    way), so the largest integer ratio goes first, over the plane less the few edge pixels it does not divide;
    a fill that is blurred anyway cannot show them missing."""
    k = max(1, min(plane.shape[1] // width, plane.shape[0] // height))
    if k > 1:
        h, w = plane.shape[0] // k * k, plane.shape[1] // k * k
        plane = cv2.resize(plane[:h, :w], (w // k, h // k), interpolation=cv2.INTER_AREA)
    return cv2.resize(plane, (width, height), interpolation=cv2.INTER_AREA)


def frame_planes(frame: av.VideoFrame, rotation: int) -> Planes:
    """A limited-range yuv420p frame at even size (VideoSource.to_yuv420) as planes in display orientation."""
    data = frame.to_ndarray(format="yuv420p")
    h, w = frame.height, frame.width
    y = data[:h]
    chroma = data[h:].reshape(2, h // 2, w // 2)
    u, v = chroma[0], chroma[1]
    turns = quarter_turns(rotation)
    if turns:
        y, u, v = (np.ascontiguousarray(np.rot90(p, turns)) for p in (y, u, v))
    return Planes(y, u, v)
