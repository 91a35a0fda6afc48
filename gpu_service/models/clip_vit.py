"""A CLIP ViT-B/16-sized image encoder in plain torch.

The layer names follow OpenAI CLIP's `visual` tower, so its state_dict (with or without the `visual.` prefix)
loads as weights. Without weights the encoder is randomly initialised from a fixed seed: its cost is the real
model's, and its outputs are at least the same on every start, which keeps reruns idempotent.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from gpu_service.registry import ArrayShape, InferenceModel, RequestError, Span, register

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


class QuickGELU(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x * torch.sigmoid(1.702 * x)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln_1 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            OrderedDict(
                [
                    ("c_fc", nn.Linear(width, width * 4)),
                    ("gelu", QuickGELU()),
                    ("c_proj", nn.Linear(width * 4, width)),
                ]
            )
        )
        self.ln_2 = nn.LayerNorm(width)

    def forward(self, x: Tensor) -> Tensor:
        y = self.ln_1(x)
        attended: Tensor = self.attn(y, y, y, need_weights=False)[0]
        x = x + attended
        out: Tensor = x + self.mlp(self.ln_2(x))
        return out


class Transformer(nn.Module):
    def __init__(self, width: int, layers: int, heads: int) -> None:
        super().__init__()
        self.resblocks = nn.Sequential(*[ResidualAttentionBlock(width, heads) for _ in range(layers)])

    def forward(self, x: Tensor) -> Tensor:
        return torch.as_tensor(self.resblocks(x))


class VisionTransformer(nn.Module):
    def __init__(
        self,
        resolution: int = 224,
        patch: int = 16,
        width: int = 768,
        layers: int = 12,
        heads: int = 12,
        dim: int = 512,
    ) -> None:
        super().__init__()
        self.resolution = resolution
        scale = width**-0.5
        self.conv1 = nn.Conv2d(3, width, kernel_size=patch, stride=patch, bias=False)
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(scale * torch.randn((resolution // patch) ** 2 + 1, width))
        self.ln_pre = nn.LayerNorm(width)
        self.transformer = Transformer(width, layers, heads)
        self.ln_post = nn.LayerNorm(width)
        self.proj = nn.Parameter(scale * torch.randn(width, dim))

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv1(x).flatten(2).transpose(1, 2)
        cls = self.class_embedding.to(x.dtype).expand(x.shape[0], 1, -1)
        x = torch.cat([cls, x], dim=1) + self.positional_embedding.to(x.dtype)
        x = self.transformer(self.ln_pre(x))
        out: Tensor = self.ln_post(x[:, 0]) @ self.proj
        return out


def to_model_input(images: Tensor, resolution: int, mean: Tensor, std: Tensor) -> Tensor:
    """uint8 N×H×W×3 on the device -> normalised float N×3×R×R: short side resized to R, centre cropped."""
    x = images.permute(0, 3, 1, 2).float()
    h, w = x.shape[-2:]
    if (h, w) != (resolution, resolution):
        scale = resolution / min(h, w)
        size = (max(resolution, round(h * scale)), max(resolution, round(w * scale)))
        x = F.interpolate(x, size=size, mode="bilinear", antialias=True, align_corners=False)
        top, left = (size[0] - resolution) // 2, (size[1] - resolution) // 2
        x = x[:, :, top : top + resolution, left : left + resolution]
    return (x / 255.0 - mean) / std


class ClipImageEncoder(InferenceModel):
    """Outputs `embedding` (L2-normalised, 512 per frame) and, with an `image` context (the product's main
    image, uint8 H×W×3), `score`: each frame's cosine similarity to that image."""

    context_inputs: ClassVar[Mapping[str, int]] = {"image": 3}

    def __init__(self, seed: int = 0, **config: Any) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.visual = VisionTransformer(**config)
        self.mean: Tensor
        self.std: Tensor
        self.register_buffer("mean", torch.tensor(CLIP_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(CLIP_STD).view(1, 3, 1, 1), persistent=False)
        self.warmup_frame_shape = (self.visual.resolution, self.visual.resolution, 3)

    def check(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> None:
        super().check(frames_shape, context)
        if "image" in context and (context["image"][0][-1] != 3 or context["image"][1] != "uint8"):
            raise RequestError("context 'image' must be uint8 H×W×3")

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        # Accept whole OpenAI CLIP checkpoints (`visual.` keys beside the text tower) or the visual tower.
        visual = {k[len("visual.") :]: v for k, v in state_dict.items() if k.startswith("visual.")}
        return self.visual.load_state_dict(visual or dict(state_dict), strict=strict, assign=assign)

    def preprocess(self, frames: Tensor) -> Tensor:
        return to_model_input(frames, self.visual.resolution, self.mean, self.std)

    def prepare_context(self, context: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return {k: self.preprocess(v.unsqueeze(0)) for k, v in context.items()}

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        embedding = F.normalize(self.visual(batch), dim=-1)
        out = {"embedding": embedding}
        if spans and "image" in spans[0].context:
            # One encoder call for every request's main image, so scoring batches across requests too.
            images = F.normalize(self.visual(torch.cat([s.context["image"] for s in spans])), dim=-1)
            score = torch.zeros(batch.shape[0], device=batch.device, dtype=embedding.dtype)
            for i, span in enumerate(spans):
                score[span.start : span.stop] = embedding[span.start : span.stop] @ images[i]
            out["score"] = score
        return out


@register("clip_vit_b16_image")
def _clip_vit_b16_image() -> InferenceModel:
    return ClipImageEncoder()
