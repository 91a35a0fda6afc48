"""Served models that run an ONNX file through onnxruntime (PP-OCR's text detector and recogniser): the session's
settings, the weights file and its check, and one runner per daemon built on first use for its device."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import torch
from torch import Tensor

from core.digests import file_digest
from core.errors import ConfigError
from gpu_service.registry import ArrayShape, InferenceModel

CPU = ("CPUExecutionProvider",)


def builtin_path(name: str) -> Path:
    """A model file the package carries in data/ (see its NOTICE)."""
    path = Path(__file__).parent / "data" / name
    if not path.is_file():  # pragma: no cover - exercised only on a broken install
        raise ConfigError(f"{path} is missing: the package was installed without its data files")
    return path


def onnx_session(path: Path, what: str, *, threads: int = 1, providers: Sequence[str] = CPU) -> Any:
    """An onnxruntime session over the file at path; `what` names the model in the error an unreadable file
    gives. `threads` is the daemon's CPU budget, so that these models and scoring share its cores."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # idle intra-op threads sleep instead of spinning: the daemon's cores are shared with decoders and
    # encoders, which a spinning thread would slow for nothing
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), options, providers=list(providers))
    except Exception as exc:  # onnxruntime raises its own untyped errors for unreadable models
        raise ConfigError(f"{what} {path} does not load: {exc}") from exc


Runner = TypeVar("Runner")


class OnnxModel(InferenceModel, Generic[Runner]):
    """A served model whose work is done by a runner over an ONNX file (the built-in one, or configured
    weights); rows of one batch share a size, as the runner's input tensor must."""

    weights_hint: ClassVar[str] = "an ONNX model file (.onnx)"

    def __init__(self) -> None:
        super().__init__()
        self.model_path: Path | None = None
        self._runner: Runner | None = None
        self._lock = threading.Lock()

    def build(self, model_path: Path | None, threads: int, providers: Sequence[str]) -> Runner:
        """The runner over model_path (None: the built-in file)."""
        raise NotImplementedError

    def load_weights(self, path: Path) -> str:
        if not path.is_file() or path.suffix != ".onnx":
            raise ConfigError(f"weights not found at {path}; expected {self.weights_hint}")
        self.build(path, 1, CPU)  # fail at load, not at the first request
        self.model_path = path
        return file_digest(path)

    def group_key(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> Hashable:
        return tuple(frames_shape[1:])

    def preprocess(self, frames: Tensor) -> Tensor:
        return frames

    def runner_for(self, device_type: str) -> Runner:
        """The runner on the daemon's device: onnxruntime's CUDA provider on a GPU node where it is installed."""
        with self._lock:
            if self._runner is None:
                import onnxruntime as ort

                cuda = device_type == "cuda" and "CUDAExecutionProvider" in ort.get_available_providers()
                providers = ("CUDAExecutionProvider", *CPU) if cuda else CPU
                self._runner = self.build(self.model_path, torch.get_num_threads(), providers)
            return self._runner
