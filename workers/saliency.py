"""Subject saliency without downloaded weights: the spectral residual (Hou & Zhang, CVPR 2007), fused with the
main-image match.

The spectral residual marks what stands out from a frame's statistically expected background. It needs
nothing but an FFT, so it runs anywhere the workers run. It is the fallback subject: where the main image
matches, that match IS the product and wins; where it does not (the product turned, blurred, or absent), the
most salient blob stands in. Text regions are removed from the map first, because captions are the most
salient thing in a promo frame and are never the subject.

Faces are not detected: OpenCV 5.0's wheels (the ones this project installs) ship no Haar cascades
(`cv2.data` is empty, no `CascadeClassifier`), and `FaceDetectorYN` needs a YuNet ONNX file no wheel here
carries. A weights-free face detector would plug in as one more box source in `subject_boxes`.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from workers.framing import Box, scale_box

#: the map is computed this wide: the method looks for "proto-objects", coarse by design (the paper uses 64)
MAP_WIDTH = 128
#: a pixel is salient above this multiple of the map's mean (the paper's threshold is 3)
THRESHOLD = 3.0
#: a blob must carry this share of the map's above-threshold mass to count as a subject
MIN_SHARE = 0.25


class SpectralSaliency:
    """Saliency maps and subject boxes for a batch of RGB frames; a callable like the daemon's models."""

    def __init__(self, map_width: int = MAP_WIDTH) -> None:
        self.map_width = map_width

    def saliency_map(self, rgb: np.ndarray, exclude: Sequence[Box] = ()) -> np.ndarray:
        """A float32 map in [0, 1] at MAP_WIDTH wide; excluded boxes (source pixels) are zeroed."""
        height, width = rgb.shape[:2]
        map_h = max(8, round(height * self.map_width / width))
        gray = cv2.cvtColor(
            cv2.resize(rgb, (self.map_width, map_h), interpolation=cv2.INTER_AREA), cv2.COLOR_RGB2GRAY
        )
        spectrum = np.fft.fft2(gray.astype(np.float32))
        log_amplitude = np.log(np.abs(spectrum) + 1e-6).astype(np.float32)
        residual = log_amplitude - cv2.blur(log_amplitude, (3, 3))
        back = np.fft.ifft2(np.exp(residual + 1j * np.angle(spectrum)))
        saliency = cv2.GaussianBlur((np.abs(back) ** 2).astype(np.float32), (0, 0), self.map_width / 40)
        sx, sy = self.map_width / width, map_h / height
        for x0, y0, x1, y1 in exclude:
            saliency[int(y0 * sy) : int(np.ceil(y1 * sy)), int(x0 * sx) : int(np.ceil(x1 * sx))] = 0.0
        peak = float(saliency.max())
        return saliency / peak if peak > 0 else saliency

    def subject_box(self, rgb: np.ndarray, exclude: Sequence[Box] = ()) -> Box | None:
        """The bounding box (source pixels) of the blob holding the most salient mass, or None if none
        stands out (a flat frame, or mass spread over many small blobs: texture, not an object)."""
        saliency = self.saliency_map(rgb, exclude)
        mean = float(saliency.mean())
        if mean <= 0:
            return None
        salient = saliency > THRESHOLD * mean
        # join the parts of one object (a logo and its body) before choosing the blob
        mask = cv2.dilate(salient.astype(np.uint8), np.ones((5, 5), np.uint8))
        count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
        if count <= 1:
            return None
        masses = np.bincount(labels.ravel(), weights=(saliency * salient).ravel())
        masses[0] = 0.0
        best = int(np.argmax(masses))
        if masses[best] < MIN_SHARE * masses.sum():
            return None
        x, y, w, h = (int(v) for v in stats[best, :4])
        height, width = rgb.shape[:2]
        sx, sy = width / saliency.shape[1], height / saliency.shape[0]
        return (x * sx, y * sy, min(width, (x + w) * sx), min(height, (y + h) * sy))

    def __call__(
        self, batch: Sequence[np.ndarray], exclude: Sequence[Sequence[Box]] | None = None
    ) -> list[Box | None]:
        excluded = exclude if exclude is not None else [()] * len(batch)
        return [self.subject_box(rgb, boxes) for rgb, boxes in zip(batch, excluded, strict=True)]


def saliency(
    frames_rgb: Sequence[np.ndarray],
    exclude: Sequence[Sequence[Box]] | None = None,
    *,
    source_size: tuple[int, int] | None = None,
) -> list[Box | None]:
    """The most salient blob's box per frame, text regions (per frame) left out.

    Boxes (both ways) are in the frames' pixels, or in source pixels when source_size (width, height) is
    given for frames sampled downscaled.
    """
    if source_size is None:
        return SpectralSaliency()(frames_rgb, exclude)
    factors = [(source_size[0] / f.shape[1], source_size[1] / f.shape[0]) for f in frames_rgb]
    local = None
    if exclude is not None:
        local = [
            [scale_box(b, 1 / sx, 1 / sy) for b in boxes]
            for boxes, (sx, sy) in zip(exclude, factors, strict=True)
        ]
    found = SpectralSaliency()(frames_rgb, local)
    return [None if b is None else scale_box(b, sx, sy) for b, (sx, sy) in zip(found, factors, strict=True)]


def subject_boxes(match_boxes: Sequence[Box | None], salient_boxes: Sequence[Box | None]) -> list[Box | None]:
    """The subject per frame: the main-image match where there is one (the product itself), else the
    salient blob. Both lists are per frame, in the same order."""
    return [m if m is not None else s for m, s in zip(match_boxes, salient_boxes, strict=True)]
