"""Face detection in the daemon without downloaded weights: OpenCV's frontal-face Haar cascade.

The cascade ships inside opencv-python-headless 4.x wheels (`cv2.data.haarcascades`); OpenCV 5.0's wheels carry
neither it nor the CascadeClassifier that runs it, which is why the project pins OpenCV below 5 (pyproject.toml). A
cascade is CPU code: on a GPU node it runs on the daemon's CPU threads, a few milliseconds a frame at the size the
workers send (480 px wide), so it stays off the accelerator's critical path only as long as that size stays small.

Outputs per frame: `boxes` (MAX_FACES × 4: x0, y0, x1, y1 in the frame's pixels, zero rows past `count`) and
`count`; the largest faces first.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path

import cv2
import numpy as np
import torch
from torch import Tensor

from core.digests import file_digest
from core.errors import ConfigError
from gpu_service.registry import ArrayShape, InferenceModel, Span, register

MAX_FACES = 16
CASCADE = "haarcascade_frontalface_default.xml"
# OpenCV's usual settings for the default cascade: 10% scale steps, and a face confirmed by 5 overlapping hits
# (fewer lets textures through); faces smaller than a twelfth of the frame height do not steer a crop
SCALE_FACTOR = 1.1
MIN_NEIGHBOURS = 5
MIN_FACE_FRACTION = 1 / 12


def builtin_cascade_path() -> Path:
    folder = getattr(getattr(cv2, "data", None), "haarcascades", None)
    path = Path(folder or "") / CASCADE
    if folder is None or not path.is_file():
        raise ConfigError(
            f"OpenCV {cv2.__version__} carries no {CASCADE} (OpenCV 5.0 wheels dropped the Haar cascades): "
            "install opencv-python-headless<5 as pyproject.toml pins it, or point the faces model's weights "
            "at a cascade XML file"
        )
    return path


class FaceDetect(InferenceModel):
    warmup_frame_shape = (270, 480, 3)
    weights_hint = "an OpenCV cascade classifier XML file"

    def __init__(self) -> None:
        super().__init__()
        if not hasattr(cv2, "CascadeClassifier"):
            raise ConfigError(
                f"OpenCV {cv2.__version__} has no CascadeClassifier (OpenCV 5.0 wheels dropped the Haar detector): "
                "install opencv-python-headless<5 as pyproject.toml pins it"
            )
        # Looked up at first use, not here: the registry builds the model before loading configured weights, and
        # an OpenCV without the built-in cascade must still take a cascade file from them.
        self._path: Path | None = None
        # one CascadeClassifier per thread: OpenCV does not promise that detectMultiScale is thread-safe
        self._local = threading.local()

    def load_weights(self, path: Path) -> str:
        try:
            loads = path.is_file() and not cv2.CascadeClassifier(str(path)).empty()
        except (cv2.error, SystemError):  # OpenCV reports a malformed file through a wrapped cv2.error
            loads = False
        if not loads:
            raise ConfigError(f"no cascade loads from {path}; expected {self.weights_hint}")
        self._path = path
        return file_digest(path)

    def _cascade(self) -> cv2.CascadeClassifier:
        cascade: cv2.CascadeClassifier | None = getattr(self._local, "cascade", None)
        if cascade is None:
            if self._path is None:
                self._path = builtin_cascade_path()
            cascade = self._local.cascade = cv2.CascadeClassifier(str(self._path))
        return cascade

    def group_key(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> Hashable:
        return tuple(frames_shape[1:])

    def preprocess(self, frames: Tensor) -> Tensor:
        return frames

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        real = spans[-1].stop if spans else 0
        boxes = torch.zeros((batch.shape[0], MAX_FACES, 4), dtype=torch.float32)
        counts = torch.zeros(batch.shape[0], dtype=torch.float32)
        frames = batch[:real].cpu().numpy()
        for row, rgb in enumerate(frames):
            gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
            side = max(16, round(rgb.shape[0] * MIN_FACE_FRACTION))
            found = self._cascade().detectMultiScale(
                gray, scaleFactor=SCALE_FACTOR, minNeighbors=MIN_NEIGHBOURS, minSize=(side, side)
            )
            faces = sorted(
                (tuple(int(v) for v in f) for f in np.asarray(found).reshape(-1, 4)),
                key=lambda f: -f[2] * f[3],
            )
            faces = faces[:MAX_FACES]
            for k, (x, y, w, h) in enumerate(faces):
                boxes[row, k] = torch.tensor((x, y, x + w, y + h), dtype=torch.float32)
            counts[row] = len(faces)
        return {"boxes": boxes.to(batch.device), "count": counts.to(batch.device)}


@register("faces")
def _faces() -> InferenceModel:
    return FaceDetect()
