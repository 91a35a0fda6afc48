"""On-screen text detection: PP-OCRv4's text detector (DB) from the rapidocr-onnxruntime wheel, run by onnxruntime.

Only detection runs (where text is, not what it says): the crop planner needs regions to keep whole, and
recognition would cost about twice as much again (~0.87 s against ~0.33 s per 720p frame on 2 cores).

The model is held by `TextDetector`, a small callable over a batch of frames, so the inference daemon can own
one instance per process and call it with the batches it forms; `detect_text` is the in-process entry point.
Frames are downscaled so their long side is at most `MAX_SIDE` (never upscaled: rapidocr's own default scales
the SHORT side up to 736, which quadruples the cost of a 640×360 frame for no gain on caption-sized text).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from workers.framing import Box, scale_box

MAX_SIDE = 736
#: text is looked for twice per second of the window (see text_sample_times): text seen at no sample may be
#: on screen for up to one interval, and the planner keeps the crop safe for that long on both sides
TEXT_FPS = 2.0
# The network downsamples by 32; inputs are padded up to a multiple of it.
STRIDE = 32
# rapidocr's defaults for PP-OCRv4 det (config.yaml): pixel threshold, box score threshold, box growth.
PIXEL_THRESHOLD = 0.3
BOX_THRESHOLD = 0.5
UNCLIP_RATIO = 1.6


class TextModelMissing(RuntimeError):
    """rapidocr-onnxruntime (which carries the detector's ONNX file) or onnxruntime is not installed."""


def _model_path() -> Path:
    try:
        import rapidocr_onnxruntime
    except ImportError as exc:  # pragma: no cover - exercised only on a broken install
        raise TextModelMissing(
            "text detection needs rapidocr-onnxruntime==1.4.4 (installed with --no-deps; see the Makefile)"
        ) from exc
    path = Path(rapidocr_onnxruntime.__file__).parent / "models" / "ch_PP-OCRv4_det_infer.onnx"
    if not path.is_file():  # pragma: no cover
        raise TextModelMissing(f"{path} is missing from the rapidocr-onnxruntime wheel")
    return path


def _input_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """The scaled size (never larger than the frame) and, separately, the stride-padded tensor size."""
    scale = min(1.0, max_side / max(width, height))
    return max(STRIDE, round(width * scale)), max(STRIDE, round(height * scale))


def _padded(n: int) -> int:
    return -(-n // STRIDE) * STRIDE


class TextDetector:
    """PP-OCRv4 text detection over batches of RGB frames; returns axis-aligned boxes in each frame's pixels.

    Frames of one size (the normal case: every frame of one video) run as one batched ONNX call; the model
    is fully convolutional, and zero padding to the stride does not change what it finds inside the frame.
    """

    def __init__(
        self,
        *,
        threads: int = 1,
        max_side: int = MAX_SIDE,
        providers: Sequence[str] | None = None,
        max_batch: int | None = None,
    ) -> None:
        import onnxruntime as ort

        self.max_side = max_side
        providers = list(providers or ["CPUExecutionProvider"])
        # On CPU a batch is no faster per frame than single frames (measured: 97 vs 111 ms at 640×360, one
        # thread) and holds more memory; on an accelerator batching is what amortises the launches.
        self.max_batch = max_batch or (1 if providers == ["CPUExecutionProvider"] else 8)
        options = ort.SessionOptions()
        # one CPU budget: the caller decides how many cores this may use (Celery concurrency × threads)
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(_model_path()), options, providers=providers)
        self.input_name = self.session.get_inputs()[0].name
        from rapidocr_onnxruntime.ch_ppocr_det.utils import DBPostProcess

        self._post = DBPostProcess(
            thresh=PIXEL_THRESHOLD,
            box_thresh=BOX_THRESHOLD,
            max_candidates=1000,
            unclip_ratio=UNCLIP_RATIO,
            use_dilation=True,
            score_mode="fast",
        )

    def __call__(self, batch: Sequence[np.ndarray]) -> list[list[Box]]:
        """Boxes per frame, (x0, y0, x1, y1) in that frame's pixels; frames are RGB uint8 H×W×3."""
        results: list[list[Box] | None] = [None] * len(batch)
        by_size: dict[tuple[int, int], list[int]] = {}
        for index, frame in enumerate(batch):
            by_size.setdefault((frame.shape[1], frame.shape[0]), []).append(index)
        for (width, height), indices in by_size.items():
            in_w, in_h = _input_size(width, height, self.max_side)
            for start in range(0, len(indices), self.max_batch):
                chunk = indices[start : start + self.max_batch]
                tensor = np.zeros((len(chunk), 3, _padded(in_h), _padded(in_w)), np.float32)
                for row, index in enumerate(chunk):
                    small = cv2.resize(batch[index], (in_w, in_h), interpolation=cv2.INTER_AREA)
                    # PP-OCR normalisation: (x / 255 - 0.5) / 0.5
                    tensor[row, :, :in_h, :in_w] = (small.astype(np.float32) / 127.5 - 1.0).transpose(2, 0, 1)
                maps = self.session.run(None, {self.input_name: tensor})[0]
                for row, index in enumerate(chunk):
                    prob = maps[row : row + 1, :, :in_h, :in_w]
                    quads, _ = self._post(prob, (height, width))
                    results[index] = [_bounds(q, width, height) for q in quads if _usable(q)]
        return [r if r is not None else [] for r in results]


def _usable(quad: np.ndarray) -> bool:
    """rapidocr drops slivers of ≤ 3 px a side; so do we."""
    xs, ys = quad[:, 0], quad[:, 1]
    return float(xs.max() - xs.min()) > 3 and float(ys.max() - ys.min()) > 3


def _bounds(quad: np.ndarray, width: int, height: int) -> Box:
    x0, y0 = float(max(0, quad[:, 0].min())), float(max(0, quad[:, 1].min()))
    x1, y1 = float(min(width, quad[:, 0].max())), float(min(height, quad[:, 1].max()))
    return (x0, y0, x1, y1)


_shared: TextDetector | None = None
_shared_lock = threading.Lock()


def shared_detector(threads: int = 1) -> TextDetector:
    """One detector per process, loaded on first use (a Celery worker process reuses it across items)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TextDetector(threads=threads)
        return _shared


def text_sample_times(start: float, end: float, fps: float = TEXT_FPS) -> list[float]:
    """Where to sample a window for text: every 1/fps from its start up to the first time at or past its end.

    The planner assumes text seen at no sample is not on screen; that holds for any text shown at least
    1/fps seconds, and the samples at both ends cover text on screen at the window's edges.
    """
    step = 1.0 / fps
    count = max(1, math.ceil((end - start) / step - 1e-9))
    return [start + k * step for k in range(count + 1)]


def detect_text(
    frames_rgb: Sequence[np.ndarray],
    *,
    source_size: tuple[int, int] | None = None,
    detector: TextDetector | None = None,
) -> list[list[Box]]:
    """Text regions per frame, from the process's shared detector unless one is given.

    Boxes are in the frames' pixels, or in source pixels when source_size (width, height) says how large the
    source is (frames sampled downscaled, as the analysis samples them).
    """
    if not frames_rgb:
        return []
    found = (detector or shared_detector())(frames_rgb)
    if source_size is None:
        return found
    return [
        [scale_box(b, source_size[0] / f.shape[1], source_size[1] / f.shape[0]) for b in boxes]
        for f, boxes in zip(frames_rgb, found, strict=True)
    ]


#: boxes detected at consecutive samples are the same region when they overlap this much (IoU)
SAME_REGION_IOU = 0.5


def _iou(a: Box, b: Box) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def _patch(gray: np.ndarray, box: Box, sx: float, sy: float) -> np.ndarray:
    x0, y0 = int(box[0] * sx), int(box[1] * sy)
    x1, y1 = max(x0 + 1, math.ceil(box[2] * sx)), max(y0 + 1, math.ceil(box[3] * sy))
    return gray[y0:y1, x0:x1].astype(np.float32)


def refine_text_times(
    text: Sequence[tuple[float, Sequence[Box]]],
    frames: Sequence[tuple[float, np.ndarray]],
    source_size: tuple[int, int],
) -> list[tuple[float, list[Box]]]:
    """Text regions at every dense frame, from detections at sparse samples.

    Detection runs at TEXT_FPS; between two samples a region seen at only one of them appeared or vanished
    somewhere in between, and without more the planner must assume it is on screen for the whole interval.
    Here each such region's pixels in every frame between are compared with its pixels at the sample that shows
    it and at the one that does not: the nearer decides. This costs a few small array differences per frame
    instead of a detector call. `frames` are (t, grayscale) at any resolution (a quarter of the source is
    plenty), covering the samples' span; boxes stay in source pixels. Regions seen at both samples are kept
    throughout; a frame next to a change keeps the region too, as a one-frame safety margin.
    """
    samples = sorted((t, list(b)) for t, b in text)
    if len(samples) < 2 or not frames:
        return [(t, list(b)) for t, b in samples]
    dense = sorted(frames, key=lambda f: f[0])
    times = [t for t, _ in dense]
    sx, sy = dense[0][1].shape[1] / source_size[0], dense[0][1].shape[0] / source_size[1]

    def frame_at(t: float) -> np.ndarray:
        return dense[min(range(len(times)), key=lambda j: abs(times[j] - t))][1]

    present: list[list[Box]] = [[] for _ in dense]
    for (t0, boxes0), (t1, boxes1) in itertools.pairwise(samples):
        inside = [j for j, t in enumerate(times) if t0 - 1e-6 <= t <= t1 + 1e-6]
        for box in boxes0:
            twin = next((b for b in boxes1 if _iou(box, b) >= SAME_REGION_IOU), None)
            if twin is not None:
                union = (
                    min(box[0], twin[0]),
                    min(box[1], twin[1]),
                    max(box[2], twin[2]),
                    max(box[3], twin[3]),
                )
                for j in inside:
                    present[j].append(union)
            else:
                _follow(present, inside, dense, box, frame_at(t0), frame_at(t1), sx, sy)
        for box in boxes1:
            if all(_iou(box, b) < SAME_REGION_IOU for b in boxes0):
                _follow(present, inside, dense, box, frame_at(t1), frame_at(t0), sx, sy)
    # before the first and after the last sample nothing better is known than the nearest sample
    for j, t in enumerate(times):
        if t < samples[0][0]:
            present[j] = list(samples[0][1])
        elif t > samples[-1][0]:
            present[j] = list(samples[-1][1])
    return [(t, merge_boxes_exact(boxes)) for t, boxes in zip(times, present, strict=True)]


def _follow(
    present: list[list[Box]],
    inside: list[int],
    dense: Sequence[tuple[float, np.ndarray]],
    box: Box,
    with_text: np.ndarray,
    without_text: np.ndarray,
    sx: float,
    sy: float,
) -> None:
    """Mark the frames (and their neighbours) where box's pixels look as they do when the text is shown."""
    shown, hidden = _patch(with_text, box, sx, sy), _patch(without_text, box, sx, sy)
    marks = []
    for j in inside:
        here = _patch(dense[j][1], box, sx, sy)
        marks.append(float(np.abs(here - shown).mean()) <= float(np.abs(here - hidden).mean()))
    for k, j in enumerate(inside):
        if marks[k] or (k > 0 and marks[k - 1]) or (k + 1 < len(marks) and marks[k + 1]):
            present[j].append(box)


def merge_boxes_exact(boxes: Sequence[Box]) -> list[Box]:
    """Drop exact duplicates (a region kept by two sample pairs at their shared sample)."""
    return list(dict.fromkeys(boxes))
