"""The subject of each analysed frame, from sources in order of trust: the main-image match (the product
itself), then faces, then the most salient blob.

Each fallback detector runs only on the frames that the more trusted sources left without a subject: on a
typical product video the match covers the whole window and neither fallback costs anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from gpu_service.priority import PriorityKey
from workers.analysis.faces import detect_faces, faces_box
from workers.analysis.saliency import saliency
from workers.analysis.scoring import Inference
from workers.geometry import Box, moved_box

#: a fallback detector: the frames at these indices → one subject box (or None) per index
_Fallback = Callable[[list[int]], list[Box | None]]


def find_subjects(
    infer: Inference,
    frames_rgb: Sequence[np.ndarray],
    key: PriorityKey,
    *,
    matched: Sequence[Box | None],
    text_boxes: Sequence[Sequence[Box]],
    source_size: tuple[int, int],
    picture: Box | None = None,
) -> list[Box | None]:
    """One subject box per frame (frames of one size), in source pixels; None where no source finds one.

    `matched` holds the main-image match per frame (None where it is too weak); `text_boxes` the text regions
    per frame, left out of the saliency map so that captions never pass for the subject; `picture` the source's
    picture inside black bars (workers.framing.picture_area), which the fallbacks look at alone: a bar's edge is the
    most salient line of a frame.
    """
    if picture is not None:
        x0, y0, x1, y1 = picture
        sx, sy = frames_rgb[0].shape[1] / source_size[0], frames_rgb[0].shape[0] / source_size[1]
        rows, columns = slice(round(y0 * sy), round(y1 * sy)), slice(round(x0 * sx), round(x1 * sx))
        found = find_subjects(
            infer,
            [np.ascontiguousarray(f[rows, columns]) for f in frames_rgb],
            key,
            matched=[None if b is None else moved_box(b, -x0, -y0) for b in matched],
            text_boxes=[[moved_box(b, -x0, -y0) for b in boxes] for boxes in text_boxes],
            source_size=(round(x1 - x0), round(y1 - y0)),
        )
        return [None if b is None else moved_box(b, x0, y0) for b in found]

    def faces(indices: list[int]) -> list[Box | None]:
        found = detect_faces(infer, [frames_rgb[i] for i in indices], key, source_size=source_size)
        return [faces_box(boxes) for boxes in found]

    def salient(indices: list[int]) -> list[Box | None]:
        return saliency(
            infer,
            [frames_rgb[i] for i in indices],
            key,
            [text_boxes[i] for i in indices],
            source_size=source_size,
        )

    subject = list(matched)
    fallbacks: tuple[_Fallback, ...] = (faces, salient)
    for fallback in fallbacks:
        missing = [i for i, box in enumerate(subject) if box is None]
        if not missing:
            break
        for i, box in zip(missing, fallback(missing), strict=True):
            subject[i] = box
    return subject
