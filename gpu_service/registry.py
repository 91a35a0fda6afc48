"""Models the daemon can serve, registered by name.

A model is an ordinary torch module plus its pre- and post-processing, both run on the daemon's device:

    preprocess(frames)      uint8 N×H×W×3 (RGB) of ONE request, already on the device -> float batch rows
    prepare_context(ctx)    that request's context arrays (on the device) -> what forward needs from them
    forward(batch, spans)   the rows of several requests concatenated (padded up to a bucket) and each
                            request's Span (its row range and prepared context) -> {name: rows × ...} tensors

Outputs are per-frame: each tensor's first dimension is the padded batch; the daemon keeps the real rows,
splits them per request and returns them as float32. Requests batch together only when `group_key` agrees,
so a model whose preprocessed rows depend on the input size, or that needs a context some requests lack, says
so there.

Registering a model is a few lines in its own module:

    from gpu_service.registry import InferenceModel, register

    @register("template_match")
    def build() -> InferenceModel:
        return TemplateMatch()

and naming that module in DaemonSettings.model_modules (or importing it from gpu_service.models).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlparse

import torch
from torch import Tensor, nn

from core.digests import file_digest
from core.errors import ConfigError

BUILTIN_MODULES = (
    "gpu_service.models.basic",
    "gpu_service.models.clip_scorer",
    "gpu_service.models.clip_vit",
    "gpu_service.models.faces",
    "gpu_service.models.saliency",
    "gpu_service.models.template_match",
    "gpu_service.models.text_detect",
    "gpu_service.models.text_read",
)


class RequestError(ValueError):
    """A request's inputs do not suit the model (wrong shape, bad context); the client gets the message."""


@dataclass(frozen=True)
class Span:
    start: int
    stop: int
    context: Mapping[str, Tensor] = field(default_factory=dict)


ArrayShape = tuple[tuple[int, ...], str]


class InferenceModel(nn.Module):
    """Base of every served model; subclasses override preprocess and forward, the rest when they need to."""

    #: context arrays a request may carry, with the number of dimensions each must have
    context_inputs: ClassVar[Mapping[str, int]] = {}
    #: a request the daemon runs at every bucket size before reporting ready
    warmup_frame_shape: tuple[int, int, int] = (224, 224, 3)
    #: what `weights` must point at, for the error that says how to set them; a model with no built-in
    #: initialisation (its architecture comes from the weights) sets `requires_weights`
    weights_hint: ClassVar[str] = "a state_dict file (torch.save)"
    requires_weights: ClassVar[bool] = False

    def check(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> None:
        unknown = sorted(set(context) - set(self.context_inputs))
        if unknown:
            raise RequestError(f"unknown context {unknown}; this model takes {sorted(self.context_inputs)}")
        for name, (shape, _dtype) in context.items():
            if len(shape) != self.context_inputs[name]:
                raise RequestError(f"context {name!r} must have {self.context_inputs[name]} dimensions")

    def group_key(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> Hashable:
        return tuple(sorted(context))

    def preprocess(self, frames: Tensor) -> Tensor:
        raise NotImplementedError

    def prepare_context(self, context: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return dict(context)

    def load_weights(self, path: Path) -> str:
        """Load weights from a local path (create() resolved any file:// URI); returns their digest.

        The default loads a state_dict file; models whose weights are a folder (a Hugging Face model
        directory, say) override this and digest what they read.
        """
        if not path.is_file():
            raise ConfigError(f"weights not found at {path}; expected {self.weights_hint}")
        state = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(state, dict) and "state_dict" in state:
            state = state["state_dict"]
        try:
            self.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise ConfigError(f"weights at {path} do not fit: {exc}") from exc
        return file_digest(path)

    def warmup_context(self, device: torch.device) -> dict[str, Tensor]:
        """A request's raw context (as a client would send it) for warm-up runs; models that need one say so."""
        return {}

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        raise NotImplementedError


ModelFactory = Callable[[], InferenceModel]
_REGISTRY: dict[str, ModelFactory] = {}


def register(name: str) -> Callable[[ModelFactory], ModelFactory]:
    def decorate(factory: ModelFactory) -> ModelFactory:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"model {name!r} is registered twice")
        _REGISTRY[name] = factory
        return factory

    return decorate


def import_modules(modules: Iterable[str] = ()) -> None:
    for module in (*BUILTIN_MODULES, *modules):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"model module {module!r} cannot be imported: {exc}") from exc


def names() -> list[str]:
    return sorted(_REGISTRY)


def weights_path(uri: str) -> Path:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "":
        return Path(uri)
    raise ConfigError(
        f"weights {uri!r}: the daemon loads local paths and file:// URIs only; fetch "
        f"{parsed.scheme}:// weights to a local path first (reelgen's cache does this for the chart and "
        "`reelgen run`)"
    )


@dataclass(frozen=True)
class LoadedModel:
    name: str
    module: InferenceModel
    weights: str | None
    digest: str


def create(name: str, device: torch.device, weights: str | None = None) -> LoadedModel:
    """Build a registered model on `device`, loading its weights (InferenceModel.load_weights) when given."""
    if name not in _REGISTRY:
        raise ConfigError(f"unknown model {name!r}; registered: {names()}")
    module = _REGISTRY[name]()
    digest = "builtin"
    if weights is not None:
        try:
            digest = module.load_weights(weights_path(weights))
        except ConfigError as exc:
            raise ConfigError(f"model {name!r}: {exc}") from exc
    elif module.requires_weights:
        raise ConfigError(
            f"model {name!r} has no built-in weights: point it at {module.weights_hint} with "
            f'REELGEN_DAEMON__WEIGHTS=\'{{"{name}": "/path"}}\' (DaemonSettings.weights) or the daemon\'s '
            f"--weights {name}=/path"
        )
    module = module.to(device).eval()
    module.requires_grad_(False)
    return LoadedModel(name=name, module=module, weights=weights, digest=digest)
