"""Reading detected text in the daemon: PP-OCRv4's text recogniser (a CRNN read out by CTC), the ONNX file
RapidOCR's wheel carries (copied into data/, see its NOTICE), run by onnxruntime on the daemon's device.

The text detector also fires on eyes, teeth and stripes; the recogniser is how OCR tells those from text (RapidOCR
keeps a detected line only where its reading scores at least 0.5). Only how well a line reads is needed, not
what it says, so no character table is kept: per strip, the greedy CTC path's characters and their mean
probability.

Inputs are strips: a detected line cut out by the worker and scaled to STRIP_HEIGHT pixels tall, left-aligned on
zeros up to a width every strip of the request shares (uint8 RGB, N × STRIP_HEIGHT × W × 3). Outputs per strip:
`score` (0 where no character is read) and `chars`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from gpu_service.models.onnx_model import CPU, OnnxModel, builtin_path, onnx_session
from gpu_service.models.text_strip import STRIP_HEIGHT
from gpu_service.registry import InferenceModel, Span, register

#: the CTC blank's class
BLANK = 0


def builtin_model_path() -> Path:
    return builtin_path("ch_PP-OCRv4_rec_infer.onnx")


class TextReader:
    """PP-OCRv4 recognition over a batch of same-size strips: (score, characters) per strip."""

    def __init__(
        self, *, model_path: Path | None = None, threads: int = 1, providers: Sequence[str] = CPU
    ) -> None:
        self.model_path = model_path or builtin_model_path()
        self.session = onnx_session(self.model_path, "text recogniser", threads=threads, providers=providers)
        self.input_name = self.session.get_inputs()[0].name

    def __call__(self, strips: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per strip (uint8 RGB, N × STRIP_HEIGHT × W × 3), the mean probability of the characters read and
        their count."""
        # PP-OCR normalisation: (x / 255 - 0.5) / 0.5
        tensor = (strips.astype(np.float32) / 127.5 - 1.0).transpose(0, 3, 1, 2)
        probabilities = self.session.run(None, {self.input_name: np.ascontiguousarray(tensor)})[0]
        best, chance = probabilities.argmax(axis=2), probabilities.max(axis=2)
        # the greedy path's characters: a class other than the blank, not repeating the step before it
        repeated = np.zeros_like(best, dtype=bool)
        repeated[:, 1:] = best[:, 1:] == best[:, :-1]
        read = (best != BLANK) & ~repeated
        chars = read.sum(axis=1)
        scores = np.where(chars > 0, (chance * read).sum(axis=1) / np.maximum(chars, 1), 0.0)
        return scores.astype(np.float32), chars.astype(np.float32)


class TextRead(OnnxModel[TextReader]):
    """The daemon's text recogniser: strips in (one width per batch), a score and a character count out."""

    warmup_frame_shape = (STRIP_HEIGHT, 320, 3)
    weights_hint = "a PP-OCR text recognition model in ONNX format (.onnx)"

    def build(self, model_path: Path | None, threads: int, providers: Sequence[str]) -> TextReader:
        return TextReader(model_path=model_path, threads=threads, providers=providers)

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        real = spans[-1].stop if spans else 0
        scores = torch.zeros(batch.shape[0], dtype=torch.float32)
        chars = torch.zeros(batch.shape[0], dtype=torch.float32)
        if real:
            # padding rows (CUDA buckets) are skipped: onnxruntime runs its own kernels, not a captured graph
            read_scores, read_chars = self.runner_for(batch.device.type)(batch[:real].cpu().numpy())
            scores[:real], chars[:real] = torch.from_numpy(read_scores), torch.from_numpy(read_chars)
        return {"score": scores.to(batch.device), "chars": chars.to(batch.device)}


@register("text_read")
def _text_read() -> InferenceModel:
    return TextRead()
