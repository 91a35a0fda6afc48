"""The default window scorer: how strongly the product's main image is present in each frame, and how good
the frame looks. Needs no downloaded weights.

Per request the context `image` is the product's main image (trimmed of its studio background by the client);
a request without it asks for the frames' look alone (`match` 0, no box): a client that already knows where the
product is from other evidence spares the correlation. For every frame the model computes the normalised
cross-correlation (the same quantity as OpenCV's TM_CCOEFF_NORMED over three channels) of the product at a
ladder of scales, keeps the best, weights it by prominence (bigger appearances show the product better), and
adds quality priors: sharpness (variance of the Laplacian) and exposure. All of it is FFT correlations and
integral images, batched over frames, on the device.

Outputs per frame: `match` (0..1), `quality` (0..1), `box` (x0, y0, x1, y1 as fractions of the frame).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor

from gpu_service.registry import ArrayShape, InferenceModel, RequestError, Span, register

ANALYSIS_WIDTH = 192
# Product heights tried, as fractions of the frame height, in geometric steps of ~12%: correlation of a textured
# product falls off fast when the template's scale is off by more than that.
SCALES = tuple(round(0.2 * 1.12**k, 3) for k in range(15))
PROMINENCE = 0.15
LUMA = (0.299, 0.587, 0.114)
LAPLACIAN = ((0.0, 1.0, 0.0), (1.0, -4.0, 1.0), (0.0, 1.0, 0.0))
# log1p of a Laplacian variance (on 0..255 grey) that counts as fully sharp
SHARP_LOG = math.log1p(1000.0)


def _integral(x: Tensor) -> Tensor:
    """The integral image of x (N×C×H×W), zero-padded to N×C×(H+1)×(W+1); double, so that window sums of
    large images keep float precision after the subtractions."""
    return F.pad(x.double().cumsum(2).cumsum(3), (1, 0, 1, 0))


def _box_sums(ii: Tensor, th: int, tw: int) -> Tensor:
    """Sums over every th×tw window of the image whose integral image is ii: N×C×(H-th+1)×(W-tw+1)."""
    return (ii[..., th:, tw:] - ii[..., :-th, tw:] - ii[..., th:, :-tw] + ii[..., :-th, :-tw]).float()


class TemplateMatch(InferenceModel):
    context_inputs: ClassVar[Mapping[str, int]] = {"image": 3}
    warmup_frame_shape = (216, 384, 3)

    def check(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> None:
        super().check(frames_shape, context)
        if "image" not in context:
            return
        shape = context["image"][0]
        if shape[-1] != 3 or min(shape[:2]) < 8:
            raise RequestError("context 'image' must be an RGB image of at least 8×8 pixels")

    def group_key(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> Hashable:
        return tuple(frames_shape[1:3])

    def preprocess(self, frames: Tensor) -> Tensor:
        rgb = frames.permute(0, 3, 1, 2).float() / 255.0
        height = max(16, round(rgb.shape[2] * ANALYSIS_WIDTH / rgb.shape[3]))
        return F.interpolate(rgb, size=(height, ANALYSIS_WIDTH), mode="area")

    def prepare_context(self, context: Mapping[str, Tensor]) -> dict[str, Tensor]:
        if "image" not in context:
            return {}
        return {"image": context["image"].permute(2, 0, 1).float().unsqueeze(0) / 255.0}

    def warmup_context(self, device: torch.device) -> dict[str, Tensor]:
        image = torch.zeros(64, 48, 3, dtype=torch.uint8, device=device)
        image[16:48, 12:36] = 255
        return {"image": image}

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        n = batch.shape[0]
        match = torch.zeros(n, device=batch.device)
        box = torch.zeros(n, 4, device=batch.device)
        for span in spans:
            frames = batch[span.start : span.stop]
            if len(frames) and "image" in span.context:
                m, b = self._match(frames, span.context["image"])
                match[span.start : span.stop] = m
                box[span.start : span.stop] = b
        return {"match": match.clamp(min=0.0), "quality": self._quality(batch), "box": box}

    def _match(self, frames: Tensor, image: Tensor) -> tuple[Tensor, Tensor]:
        n, _, height, width = frames.shape
        aspect = image.shape[3] / image.shape[2]
        best = torch.full((n,), -1.0, device=frames.device)
        best_box = torch.zeros(n, 4, device=frames.device)
        # the integral images serve every scale's window sums
        # squares summed over the channels first: the variance needs only their total per window
        integral, integral_sq = _integral(frames), _integral((frames * frames).sum(1, keepdim=True))
        # Correlation with every template scale through one FFT of the frames: a direct convolution with
        # templates this large costs ~10× more on a CPU.
        spectrum = torch.fft.rfft2(frames)
        for scale in SCALES:
            th = max(8, round(height * scale))
            tw = max(8, round(th * aspect))
            if th >= height or tw >= width:
                continue
            template = F.interpolate(image, size=(th, tw), mode="area")
            template = template - template.mean(dim=(2, 3), keepdim=True)
            template_norm = template.square().sum().sqrt().clamp(min=1e-6)
            padded = F.pad(template, (0, width - tw, 0, height - th))
            product = (spectrum * torch.fft.rfft2(padded).conj()).sum(1)
            numerator = torch.fft.irfft2(product, s=(height, width))[:, : height - th + 1, : width - tw + 1]
            count = th * tw
            sums = _box_sums(integral, th, tw)
            variance = (_box_sums(integral_sq, th, tw)[:, 0] - (sums * sums).sum(1) / count).clamp(min=1e-6)
            ncc = numerator / (variance.sqrt() * template_norm)
            peak, flat = ncc.flatten(1).max(dim=1)
            weighted = peak * (1.0 - PROMINENCE + PROMINENCE * scale / SCALES[-1])
            better = weighted > best
            ys = torch.div(flat, ncc.shape[2], rounding_mode="floor").float()
            xs = (flat % ncc.shape[2]).float()
            boxes = torch.stack([xs / width, ys / height, (xs + tw) / width, (ys + th) / height], dim=1)
            best = torch.where(better, weighted, best)
            best_box = torch.where(better[:, None], boxes, best_box)
        return best, best_box

    def _quality(self, frames: Tensor) -> Tensor:
        luma = torch.tensor(LUMA, device=frames.device).view(1, 3, 1, 1)
        grey = (frames * luma).sum(1, keepdim=True) * 255.0
        kernel = torch.tensor(LAPLACIAN, device=frames.device).view(1, 1, 3, 3)
        sharpness = F.conv2d(grey, kernel).flatten(1).var(dim=1)
        sharp = (torch.log1p(sharpness) / SHARP_LOG).clamp(max=1.0)
        mean = grey.flatten(1).mean(dim=1) / 255.0
        exposure = (1.0 - (mean - 0.5).abs() / 0.45).clamp(min=0.0, max=1.0)
        return exposure * sharp


@register("template_match")
def _template_match() -> InferenceModel:
    return TemplateMatch()
