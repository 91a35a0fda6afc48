"""The subject of each analysed frame, from sources in order of trust: the main-image match (the product
itself), then faces, then the most salient blob.

Each fallback detector runs only on the frames that the more trusted sources left without a subject: on a
typical product video the match covers the whole window and neither fallback costs anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from gpu_service.priority import PriorityKey
from workers.faces import detect_faces, faces_box
from workers.geometry import Box
from workers.saliency import saliency
from workers.scoring import Inference

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
) -> list[Box | None]:
    """One subject box per frame (frames of one size), in source pixels; None where no source finds one.

    `matched` holds the main-image match per frame (None where it is too weak); `text_boxes` the text regions
    per frame, left out of the saliency map so that captions never pass for the subject.
    """

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
