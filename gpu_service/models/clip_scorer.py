"""The CLIP window scorer (`scorer = "clip"`): frames, the product's main image and its title/description
embedded by a CLIP model loaded from a local directory.

Weights are a directory, set as DaemonSettings.weights["clip"]; there is no default (CLIP weights are a
download, and the daemon never downloads). Two layouts load:

- Hugging Face transformers: `config.json` (model_type "clip") + `model.safetensors` / `pytorch_model.bin`
  + tokenizer files, as `CLIPModel.save_pretrained` / `huggingface-cli download openai/clip-vit-base-patch32`
  leave them. Preferred when a directory holds both layouts (LAION's hub repositories do).
- open_clip / OpenAI ViT checkpoints: `open_clip_model.safetensors` or `open_clip_pytorch_model.bin` (or one
  `*.pt`/`*.pth`/`*.bin`/`*.safetensors` state_dict, OpenAI's TorchScript `.pt` included) with keys `visual.*`,
  `transformer.*`, `token_embedding`, `positional_embedding`, `ln_final`, `text_projection`, `logit_scale`, plus
  `open_clip_config.json` when the model is not OpenAI's (it says GELU vs QuickGELU and head widths) and the
  CLIP BPE tokenizer files (`vocab.json` + `merges.txt`, or `tokenizer.json`) in the same directory. These load
  into plain-torch towers (the vision tower is gpu_service.models.clip_vit's), because the open_clip package
  needs torchvision, which reelgen does not ship. Only the standard ViT layout loads (no ResNet towers, no
  attentional pooling, no non-CLIP text towers); anything else fails with a ConfigError at load time.

Per request (context `image`: the main image, uint8 H×W×3; context `text`: title and description as UTF-8
bytes, uint8 1-D; either may be absent, not both) the image and text are embedded once and cached by content
digest, so the many requests of one item (one per segment) pay for them once. Frames are embedded in batches
across requests. Outputs per frame:

- `match` (0..1): a logistic of the frame's cosine similarity to the image and to the text embedding, each
  centred and scaled by what CLIP typically gives for a match (the constants below), weighted 0.7 / 0.3;
- `quality` (0..1): template_match's sharpness and exposure prior, on the model's input pixels;
- `box`: NaN. CLIP does not localise; workers.analysis.scoring turns a non-finite box into None, so framing falls back
  to saliency instead of mistaking the whole frame for the product;
- `image_similarity`, `text_similarity`: the raw cosines (NaN where that context was absent), for calibration.

Kept whole: both checkpoint layouts load into one backend interface that the scorer's caching and batching
read; only this model uses the loaders.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.digests import directory_digest
from core.errors import ConfigError
from gpu_service.models.clip_vit import (
    CLIP_MEAN,
    CLIP_STD,
    ResidualAttentionBlock,
    Transformer,
    VisionTransformer,
    to_model_input,
)
from gpu_service.models.template_match import TemplateMatch
from gpu_service.registry import ArrayShape, InferenceModel, RequestError, Span, register

# Where a cosine similarity sits for "this is the product" (centre) and how fast the logistic rises (scale).
# CLIP ViT-B image-image cosines run ~0.9+ for the same product and ~0.4-0.6 for unrelated scenes; image-text
# cosines are compressed to ~0.28-0.35 for a matching caption and ~0.15-0.2 otherwise. Priors from published
# CLIP similarity distributions, not fitted here: calibrate on labelled items with reelgen/evaluation.py.
IMAGE_CENTRE, IMAGE_SCALE = 0.6, 0.1
TEXT_CENTRE, TEXT_SCALE = 0.22, 0.04
# The main image says more than its caption about whether this exact product is on screen.
IMAGE_WEIGHT, TEXT_WEIGHT = 0.7, 0.3
# Embeddings kept per model: a few hundred items in flight at once share the daemon.
CACHE_ENTRIES = 1024
MAX_TEXT_BYTES = 16 * 1024
# Files whose bytes decide the model's numbers: they enter the weights digest (config_hash), others do not
# (hub folders also carry TF/Flax copies and READMEs).
OPEN_CLIP_WEIGHTS = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
# TorchScript OpenAI checkpoints carry these beside the weights; OpenAI's build_model drops them too.
_OPENAI_EXTRA_KEYS = ("input_resolution", "context_length", "vocab_size")

_PRIOR = TemplateMatch()  # holds no parameters; only its quality prior is used


def _transformers() -> Any:
    """The transformers package, imported on first use: it costs seconds, and only the CLIP scorer needs it."""
    # The daemon loads local folders only; offline mode also stops the hub client from looking for updates.
    # It is read when huggingface_hub is first imported, hence before the import.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - transformers is a dependency
        raise ConfigError(f"the CLIP scorer needs the transformers package: {exc}") from exc
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    return transformers


def _load_tokenizer(folder: Path) -> Any:
    try:
        return _transformers().AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(
            f"no CLIP tokenizer in {folder} (vocab.json + merges.txt, or tokenizer.json): {exc}"
        ) from exc


class ClipBackend(nn.Module):
    """One CLIP model's two towers and its tokenizer, whatever layout they were loaded from."""

    image_size: int
    mean: tuple[float, float, float] = CLIP_MEAN
    std: tuple[float, float, float] = CLIP_STD
    context_length: int = 77

    def __init__(self, tokenizer: Any) -> None:
        super().__init__()
        self.tokenizer = tokenizer

    def tokenize(self, texts: Sequence[str], device: torch.device) -> tuple[Tensor, Tensor]:
        enc = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.context_length, return_tensors="pt"
        )
        return enc["input_ids"].to(device), enc["attention_mask"].to(device)

    def encode_image(self, pixels: Tensor) -> Tensor:
        raise NotImplementedError

    def encode_text(self, ids: Tensor, mask: Tensor) -> Tensor:
        raise NotImplementedError


def _features(out: Any) -> Tensor:
    # transformers 4.x returns the projected features; 5.x a BaseModelOutputWithPooling holding them.
    return out if isinstance(out, Tensor) else out.pooler_output


class HFClip(ClipBackend):
    def __init__(self, folder: Path) -> None:
        super().__init__(_load_tokenizer(folder))
        try:
            self.model: Any = _transformers().CLIPModel.from_pretrained(str(folder), local_files_only=True)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ConfigError(f"{folder} does not load as a transformers CLIPModel: {exc}") from exc
        self.model.float()
        self.image_size = int(self.model.config.vision_config.image_size)
        self.context_length = int(self.model.config.text_config.max_position_embeddings)
        processor = folder / "preprocessor_config.json"
        if processor.is_file():
            config = json.loads(processor.read_text())
            self.mean = tuple(config.get("image_mean", CLIP_MEAN))  # type: ignore[assignment]
            self.std = tuple(config.get("image_std", CLIP_STD))  # type: ignore[assignment]

    def encode_image(self, pixels: Tensor) -> Tensor:
        return _features(self.model.get_image_features(pixel_values=pixels))

    def encode_text(self, ids: Tensor, mask: Tensor) -> Tensor:
        return _features(self.model.get_text_features(input_ids=ids, attention_mask=mask))


class OpenClip(ClipBackend):
    """OpenAI CLIP's module layout in plain torch, so open_clip and OpenAI state_dicts load without open_clip."""

    def __init__(self, folder: Path, weights: Path, state: Mapping[str, Tensor]) -> None:
        super().__init__(_load_tokenizer(folder))
        config_path = folder / "open_clip_config.json"
        config: dict[str, Any] = json.loads(config_path.read_text()) if config_path.is_file() else {}
        model_cfg = config.get("model_cfg", {})
        vision_cfg = model_cfg.get("vision_cfg", {})
        text_cfg = model_cfg.get("text_cfg", {})
        preprocess = config.get("preprocess_cfg", {})
        # Without open_clip_config.json this is an OpenAI checkpoint: those were trained with QuickGELU.
        quick_gelu = bool(model_cfg.get("quick_gelu", not config_path.is_file()))
        try:
            width = state["visual.conv1.weight"].shape[0]
            patch = state["visual.conv1.weight"].shape[-1]
            grid = round((state["visual.positional_embedding"].shape[0] - 1) ** 0.5)
            vision_layers = _count_blocks(state, "visual.transformer.resblocks.")
            dim = state["text_projection"].shape[1]
            text_width = state["ln_final.weight"].shape[0]
            vocab, self.context_length = (
                state["token_embedding.weight"].shape[0],
                state["positional_embedding"].shape[0],
            )
            text_layers = _count_blocks(state, "transformer.resblocks.")
        except (KeyError, IndexError) as exc:
            raise ConfigError(
                f"{weights} is not an OpenAI/open_clip ViT CLIP state_dict (missing {exc}); only that layout "
                "and the transformers layout load"
            ) from exc
        self.image_size = patch * grid
        self.visual = VisionTransformer(
            resolution=self.image_size,
            patch=patch,
            width=width,
            layers=vision_layers,
            heads=width // int(vision_cfg.get("head_width", 64)),
            dim=dim,
        )
        self.token_embedding = nn.Embedding(vocab, text_width)
        self.positional_embedding = nn.Parameter(torch.empty(self.context_length, text_width))
        # The text tower reuses the vision tower's block type; _text_blocks adds the causal mask.
        self.transformer = VisionTransformer(
            width=text_width, layers=text_layers, heads=int(text_cfg.get("heads", 8))
        ).transformer
        self.ln_final = nn.LayerNorm(text_width)
        self.text_projection = nn.Parameter(torch.empty(text_width, dim))
        self.logit_scale = nn.Parameter(torch.ones([]))
        towers = (
            ("visual.transformer.resblocks.", self.visual.transformer),
            ("transformer.resblocks.", self.transformer),
        )
        for prefix, tower in towers:
            for i, block in enumerate(_blocks(tower)):
                mlp: Any = block.mlp  # an nn.Sequential with named children
                if not quick_gelu:
                    mlp.gelu = nn.GELU()
                # The block is built at CLIP's usual 4× MLP width; some models (ViT-bigG) use another ratio.
                fc = state.get(f"{prefix}{i}.mlp.c_fc.weight")
                if fc is not None and mlp.c_fc.out_features != fc.shape[0]:
                    hidden, width = fc.shape
                    mlp.c_fc = nn.Linear(width, hidden)
                    mlp.c_proj = nn.Linear(hidden, width)
        self.mean = tuple(preprocess.get("mean", CLIP_MEAN))  # type: ignore[assignment]
        self.std = tuple(preprocess.get("std", CLIP_STD))  # type: ignore[assignment]
        try:
            self.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise ConfigError(f"{weights} does not fit an OpenAI/open_clip ViT CLIP: {exc}") from exc
        eos = getattr(self.tokenizer, "eos_token_id", None)
        self.eos_token_id: int | None = None if eos is None else int(eos)

    def encode_image(self, pixels: Tensor) -> Tensor:
        return torch.as_tensor(self.visual(pixels))

    def encode_text(self, ids: Tensor, mask: Tensor) -> Tensor:
        length = ids.shape[1]
        x = self.token_embedding(ids) + self.positional_embedding[:length]
        causal = torch.full((length, length), float("-inf"), device=ids.device).triu(1)
        for block in _blocks(self.transformer):
            y = block.ln_1(x)
            x = x + block.attn(y, y, y, need_weights=False, attn_mask=causal)[0]
            x = x + block.mlp(block.ln_2(x))
        x = self.ln_final(x)
        # The end-of-text token's state is the text's embedding. OpenAI takes argmax(ids), the same place
        # when EOT has the highest id (it does in CLIP's vocabulary); looking for EOT itself also holds when
        # padding reuses the EOT id, as Hugging Face's CLIP tokenizers do (the first one is the real one).
        if self.eos_token_id is not None and bool((ids == self.eos_token_id).any(dim=1).all()):
            position = (ids == self.eos_token_id).int().argmax(dim=1)
        else:
            position = ids.argmax(dim=1)
        pooled: Tensor = x[torch.arange(ids.shape[0], device=ids.device), position]
        return pooled @ self.text_projection


def _blocks(tower: Transformer) -> list[ResidualAttentionBlock]:
    return [b for b in tower.resblocks if isinstance(b, ResidualAttentionBlock)]


def _count_blocks(state: Mapping[str, Tensor], prefix: str) -> int:
    found = {k[len(prefix) :].split(".", 1)[0] for k in state if k.startswith(prefix)}
    if not found:
        raise KeyError(prefix)
    return len(found)


def _read_state_dict(path: Path) -> dict[str, Tensor]:
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return dict(load_file(str(path)))
    try:
        state: Any = torch.load(path, map_location="cpu", weights_only=True)
    except RuntimeError:
        # OpenAI's released .pt files are TorchScript archives, not pickled state_dicts.
        try:
            state = torch.jit.load(str(path), map_location="cpu").state_dict()  # type: ignore[no-untyped-call]
        except RuntimeError as exc:
            raise ConfigError(f"{path} is neither a state_dict nor a TorchScript CLIP: {exc}") from exc
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    if not isinstance(state, Mapping):
        raise ConfigError(f"{path} does not hold a state_dict")
    # open_clip training checkpoints keep DataParallel's "module." prefix
    return {
        k.removeprefix("module."): v
        for k, v in state.items()
        if k.removeprefix("module.") not in _OPENAI_EXTRA_KEYS
    }


def load_backend(path: Path) -> ClipBackend:
    """A CLIP model from a transformers directory, an open_clip directory, or one OpenAI/open_clip file."""
    if path.is_dir():
        config = path / "config.json"
        if config.is_file() and json.loads(config.read_text()).get("model_type") == "clip":
            return HFClip(path)
        candidates = [path / name for name in OPEN_CLIP_WEIGHTS if (path / name).is_file()]
        if not candidates:
            candidates = sorted(
                p
                for p in path.iterdir()
                if p.suffix in {".pt", ".pth", ".bin", ".safetensors"} and p.is_file()
            )
        if len(candidates) != 1:
            raise ConfigError(
                f"{path} holds no transformers CLIP (config.json with model_type 'clip') and "
                f"{'no' if not candidates else 'more than one'} open_clip checkpoint "
                f"({', '.join(OPEN_CLIP_WEIGHTS)} or one *.pt/*.bin/*.safetensors)"
            )
        return OpenClip(path, candidates[0], _read_state_dict(candidates[0]))
    if path.is_file():
        return OpenClip(path.parent, path, _read_state_dict(path))
    raise ConfigError(f"CLIP weights not found at {path}")


class ClipScorer(InferenceModel):
    context_inputs: ClassVar[Mapping[str, int]] = {"image": 3, "text": 1}
    requires_weights: ClassVar[bool] = True
    weights_hint: ClassVar[str] = (
        "a CLIP model directory (transformers layout, e.g. a download of openai/clip-vit-base-patch32, "
        "or an open_clip checkpoint with its tokenizer files)"
    )

    def __init__(self) -> None:
        super().__init__()
        self.backend: ClipBackend | None = None
        self.mean: Tensor
        self.std: Tensor
        self._cache: OrderedDict[bytes, Tensor] = OrderedDict()

    def load_weights(self, path: Path) -> str:
        backend = load_backend(path)
        self.backend = backend
        self.register_buffer("mean", torch.tensor(backend.mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(backend.std).view(1, 3, 1, 1), persistent=False)
        self.warmup_frame_shape = (backend.image_size, backend.image_size, 3)
        return directory_digest(path if path.is_dir() else path.parent)

    @property
    def _backend(self) -> ClipBackend:
        if self.backend is None:
            raise RuntimeError("the CLIP scorer has no weights loaded")
        return self.backend

    def check(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> None:
        super().check(frames_shape, context)
        if not context:
            raise RequestError("the CLIP scorer needs context 'image' (main image), 'text' (UTF-8), or both")
        if "image" in context:
            shape, dtype = context["image"]
            if shape[-1] != 3 or dtype != "uint8" or min(shape[:2]) < 1:
                raise RequestError("context 'image' must be a uint8 H×W×3 image")
        if "text" in context:
            shape, dtype = context["text"]
            if dtype != "uint8" or not 0 < shape[0] <= MAX_TEXT_BYTES:
                raise RequestError(f"context 'text' must be 1..{MAX_TEXT_BYTES} bytes of UTF-8 as uint8")
        if len(frames_shape) != 4 or frames_shape[-1] != 3:
            raise RequestError("frames must be uint8 N×H×W×3")

    def group_key(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> Hashable:
        # Every frame becomes one image_size² row and contexts are embedded per request: all requests batch.
        return ()

    def preprocess(self, frames: Tensor) -> Tensor:
        return to_model_input(frames, self._backend.image_size, self.mean, self.std)

    def prepare_context(self, context: Mapping[str, Tensor]) -> dict[str, Tensor]:
        prepared = {}
        if "image" in context:
            image = context["image"]
            prepared["image"] = self._cached(
                b"image" + str(tuple(image.shape)).encode(),
                image,
                lambda: self._backend.encode_image(self.preprocess(image.unsqueeze(0))),
            )
        if "text" in context:
            raw = context["text"]
            prepared["text"] = self._cached(b"text", raw, lambda: self._embed_text(raw))
        return prepared

    def _embed_text(self, raw: Tensor) -> Tensor:
        text = bytes(raw.cpu().numpy().tobytes()).decode("utf-8", errors="replace")
        ids, mask = self._backend.tokenize([text], raw.device)
        return self._backend.encode_text(ids, mask)

    def _cached(self, kind: bytes, raw: Tensor, embed: Any) -> Tensor:
        # Keyed by the bytes themselves (hashed): an item's segments send the same image and text, so they are
        # embedded once. Hashing needs the bytes on the host; the text goes there anyway to be tokenised.
        key = hashlib.blake2b(kind + raw.cpu().numpy().tobytes(), digest_size=16).digest()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        embedding = F.normalize(embed().float(), dim=-1).reshape(-1)
        self._cache[key] = embedding
        while len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return embedding

    def warmup_context(self, device: torch.device) -> dict[str, Tensor]:
        image = torch.zeros(64, 48, 3, dtype=torch.uint8, device=device)
        image[16:48, 12:36] = 255
        text = torch.tensor(list(b"warm-up product title"), dtype=torch.uint8, device=device)
        return {"image": image, "text": text}

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        n = batch.shape[0]
        embedding = F.normalize(self._backend.encode_image(batch).float(), dim=-1)
        nan = torch.full((n,), float("nan"), device=batch.device)
        image_sim, text_sim, logit = nan.clone(), nan.clone(), torch.zeros(n, device=batch.device)
        for span in spans:
            rows = slice(span.start, span.stop)
            z = torch.zeros(span.stop - span.start, device=batch.device)
            weight = 0.0
            if "image" in span.context:
                image_sim[rows] = embedding[rows] @ span.context["image"]
                z += IMAGE_WEIGHT * (image_sim[rows] - IMAGE_CENTRE) / IMAGE_SCALE
                weight += IMAGE_WEIGHT
            if "text" in span.context:
                text_sim[rows] = embedding[rows] @ span.context["text"]
                z += TEXT_WEIGHT * (text_sim[rows] - TEXT_CENTRE) / TEXT_SCALE
                weight += TEXT_WEIGHT
            logit[rows] = z / max(weight, 1e-6)
        # Quality on the pixels the model saw (de-normalised back to 0..1 RGB).
        pixels = (batch * self.std + self.mean).clamp(0.0, 1.0)
        return {
            "match": torch.sigmoid(logit),
            "quality": _PRIOR._quality(pixels.float()),
            "box": torch.full((n, 4), float("nan"), device=batch.device),
            "image_similarity": image_sim,
            "text_similarity": text_sim,
        }


@register("clip")
def _clip() -> InferenceModel:
    return ClipScorer()
