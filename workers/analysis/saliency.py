"""Subject saliency without downloaded weights: the spectral residual (Hou & Zhang, CVPR 2007), fused with the
main-image match.

The spectral residual marks what stands out from a frame's statistically expected background. The daemon
computes its maps (gpu_service.models.saliency, batched FFTs); this side sends frames shrunk to the map size and
turns each map into a subject box. It is the fallback subject: where the main image matches, that match IS the
product and wins; where it does not (the product turned, blurred, or absent), the most salient blob stands in.
Text regions are removed from the map first, because captions are the most salient thing in a promo frame and
are never the subject.

Faces (workers/analysis/faces.py) rank between the two: trusted less than the product's own match, more than a blob.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from gpu_service.priority import PriorityKey
from workers.analysis.scoring import Inference
from workers.geometry import Box, grown_box

#: the daemon's saliency model
SALIENCY_MODEL = "saliency"
#: the map is computed this wide: the method looks for "proto-objects", coarse by design (the paper uses 64)
MAP_WIDTH = 128
#: a pixel is salient above this multiple of the map's mean (the paper's threshold is 3)
THRESHOLD = 3.0
#: a blob must carry this share of the map's above-threshold mass to count as a subject
MIN_SHARE = 0.25


def saliency(
    infer: Inference,
    frames_rgb: Sequence[np.ndarray],
    key: PriorityKey,
    exclude: Sequence[Sequence[Box]] | None = None,
    *,
    source_size: tuple[int, int] | None = None,
) -> list[Box | None]:
    """The most salient blob's box per frame (frames of one size), text regions (per frame) left out.

    Boxes (both ways) are in the frames' pixels, or in source pixels when source_size (width, height) is
    given for frames sampled downscaled.
    """
    if not frames_rgb:
        return []
    height, width = frames_rgb[0].shape[:2]
    map_h = max(8, round(height * MAP_WIDTH / width))
    small = np.stack(
        [cv2.resize(f, (MAP_WIDTH, map_h), interpolation=cv2.INTER_AREA) for f in frames_rgb]
    ).astype(np.uint8, copy=False)
    maps = infer.infer(SALIENCY_MODEL, small, key)["map"]
    box_w, box_h = source_size or (width, height)
    # map pixels per box pixel
    fx, fy = MAP_WIDTH / box_w, map_h / box_h
    excluded = exclude if exclude is not None else [()] * len(frames_rgb)
    found = []
    for saliency_map, boxes in zip(maps, excluded, strict=True):
        # a caption's box, outline and shadow reach past the detected glyphs: leave out a margin round them
        grown = [_grown(b, TEXT_SURROUND) for b in boxes]
        blob = subject_blob(saliency_map, [(b[0] * fx, b[1] * fy, b[2] * fx, b[3] * fy) for b in grown])
        found.append(
            None
            if blob is None
            else (blob[0] / fx, blob[1] / fy, min(box_w, blob[2] / fx), min(box_h, blob[3] / fy))
        )
    return found


#: the margin left out round a text region, as a share of its height on every side
TEXT_SURROUND = 0.5


def _grown(box: Box, share: float) -> Box:
    return grown_box(box, share * (box[3] - box[1]))


def subject_blob(saliency_map: np.ndarray, exclude: Sequence[Box] = ()) -> Box | None:
    """The bounding box (map pixels) of the blob holding the most salient mass once the excluded boxes (map
    pixels) are zeroed, or None if none stands out (a flat frame, or mass spread over many small blobs:
    texture, not an object)."""
    saliency_map = saliency_map.astype(np.float32, copy=True)
    for x0, y0, x1, y1 in exclude:
        saliency_map[
            max(0, int(y0)) : max(0, int(np.ceil(y1))), max(0, int(x0)) : max(0, int(np.ceil(x1)))
        ] = 0.0
    peak = float(saliency_map.max())
    if peak <= 0:
        return None
    saliency_map /= peak
    mean = float(saliency_map.mean())
    salient = saliency_map > THRESHOLD * mean
    # join the parts of one object (a logo and its body) before choosing the blob
    mask = cv2.dilate(salient.astype(np.uint8), np.ones((5, 5), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    if count <= 1:
        return None
    masses = np.bincount(labels.ravel(), weights=(saliency_map * salient).ravel())
    masses[0] = 0.0
    best = int(np.argmax(masses))
    if masses[best] < MIN_SHARE * masses.sum():
        return None
    x, y, w, h = (float(v) for v in stats[best, :4])
    return (x, y, x + w, y + h)
