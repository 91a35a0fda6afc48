"""On-screen text detection in the daemon: PP-OCRv4's text detector (DB), the ONNX file RapidOCR's wheel carries
(copied into data/, see its NOTICE), run by onnxruntime on the daemon's device, with DB post-processing
(db_postprocess.py). Needs no download.

Detection runs on every text sample (where text is, not what it says): the crop planner needs regions to keep
whole, and recognising every region would cost about twice the detection again; the recogniser (text_read.py)
reads regions only where text would letterbox a clip.
Frames are downscaled so their long side is at most `MAX_SIDE` (never upscaled: rapidocr's own default scales
the SHORT side up to 736, which quadruples the cost of a 640×360 frame for no gain on caption-sized text).

Outputs per frame: `boxes` (MAX_BOXES × 4: x0, y0, x1, y1 in the frame's pixels, zero rows past `count`) and
`count`. A frame with more regions than MAX_BOXES keeps the largest ones and says so in the daemon's log.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import torch
from torch import Tensor

from gpu_service.models.db_postprocess import DBPostProcess
from gpu_service.models.onnx_model import CPU, OnnxModel, builtin_path, onnx_session
from gpu_service.registry import InferenceModel, Span, register

log = logging.getLogger(__name__)

MAX_SIDE = 736
MAX_BOXES = 256
# The network downsamples by 32; inputs are padded up to a multiple of it.
STRIDE = 32
# rapidocr's defaults for PP-OCRv4 det (config.yaml): pixel threshold, box score threshold, box growth.
PIXEL_THRESHOLD = 0.3
BOX_THRESHOLD = 0.5
UNCLIP_RATIO = 1.6

Box = tuple[float, float, float, float]


def builtin_model_path() -> Path:
    return builtin_path("ch_PP-OCRv4_det_infer.onnx")


def _input_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """The scaled size (never larger than the frame); the tensor is that padded up to the stride."""
    scale = min(1.0, max_side / max(width, height))
    return max(STRIDE, round(width * scale)), max(STRIDE, round(height * scale))


def _padded(n: int) -> int:
    return -(-n // STRIDE) * STRIDE


class TextDetector:
    """PP-OCRv4 text detection over batches of same-size RGB frames; boxes in the frames' pixels.

    The model is fully convolutional, and zero padding to the stride does not change what it finds inside the
    frame. `providers` picks onnxruntime's execution provider (CUDA on a GPU node).
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        threads: int = 1,
        max_side: int = MAX_SIDE,
        providers: Sequence[str] = CPU,
    ) -> None:
        self.max_side = max_side
        self.model_path = model_path or builtin_model_path()
        # On CPU a batch is no faster per frame than single frames (measured: 97 vs 111 ms at 640×360, one
        # thread) and holds more memory; on an accelerator batching is what amortises the launches.
        self.max_batch = 1 if tuple(providers) == CPU else 8
        self.session = onnx_session(self.model_path, "text detector", threads=threads, providers=providers)
        self.input_name = self.session.get_inputs()[0].name
        self._post = DBPostProcess(
            thresh=PIXEL_THRESHOLD,
            box_thresh=BOX_THRESHOLD,
            max_candidates=1000,
            unclip_ratio=UNCLIP_RATIO,
        )

    def __call__(self, frames: np.ndarray) -> list[list[Box]]:
        """Boxes per frame, (x0, y0, x1, y1) in the frames' pixels; frames are RGB uint8 N×H×W×3."""
        count, height, width = frames.shape[:3]
        in_w, in_h = _input_size(width, height, self.max_side)
        results: list[list[Box]] = []
        for start in range(0, count, self.max_batch):
            chunk = frames[start : start + self.max_batch]
            tensor = np.zeros((len(chunk), 3, _padded(in_h), _padded(in_w)), np.float32)
            for row, frame in enumerate(chunk):
                small = cv2.resize(frame, (in_w, in_h), interpolation=cv2.INTER_AREA)
                # PP-OCR normalisation: (x / 255 - 0.5) / 0.5
                tensor[row, :, :in_h, :in_w] = (small.astype(np.float32) / 127.5 - 1.0).transpose(2, 0, 1)
            maps = self.session.run(None, {self.input_name: tensor})[0]
            for row in range(len(chunk)):
                quads = self._post(maps[row : row + 1, :, :in_h, :in_w], (height, width))
                results.append([_bounds(q, width, height) for q in quads if _usable(q)])
        return results


def _usable(quad: np.ndarray) -> bool:
    """rapidocr drops slivers of ≤ 3 px a side; so do we."""
    xs, ys = quad[:, 0], quad[:, 1]
    return float(xs.max() - xs.min()) > 3 and float(ys.max() - ys.min()) > 3


def _bounds(quad: np.ndarray, width: int, height: int) -> Box:
    x0, y0 = float(max(0, quad[:, 0].min())), float(max(0, quad[:, 1].min()))
    x1, y1 = float(min(width, quad[:, 0].max())), float(min(height, quad[:, 1].max()))
    return (x0, y0, x1, y1)


class TextDetect(OnnxModel[TextDetector]):
    """The daemon's text detector: frames in (any size; one size per batch), boxes out."""

    warmup_frame_shape = (416, 736, 3)
    weights_hint = "a PP-OCR text detection model in ONNX format (.onnx)"

    def build(self, model_path: Path | None, threads: int, providers: Sequence[str]) -> TextDetector:
        return TextDetector(model_path=model_path, threads=threads, providers=providers)

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        real = spans[-1].stop if spans else 0
        boxes = torch.zeros((batch.shape[0], MAX_BOXES, 4), dtype=torch.float32)
        counts = torch.zeros(batch.shape[0], dtype=torch.float32)
        if real:
            detector = self.runner_for(batch.device.type)
            # padding rows (CUDA buckets) are skipped: onnxruntime runs its own kernels, not a captured graph
            found = detector(batch[:real].cpu().numpy())
            for row, regions in enumerate(found):
                if len(regions) > MAX_BOXES:
                    log.warning("frame with %d text regions: keeping the %d largest", len(regions), MAX_BOXES)
                    regions = sorted(regions, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]), reverse=True)
                    regions = regions[:MAX_BOXES]
                if regions:
                    boxes[row, : len(regions)] = torch.tensor(regions, dtype=torch.float32)
                counts[row] = len(regions)
        return {"boxes": boxes.to(batch.device), "count": counts.to(batch.device)}


@register("text_detect")
def _text_detect() -> InferenceModel:
    return TextDetect()
