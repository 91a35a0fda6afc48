"""Subject saliency in the daemon without downloaded weights: the spectral residual (Hou & Zhang, CVPR 2007).

The spectral residual marks what stands out from a frame's statistically expected background; it needs nothing
but FFTs, batched here over frames on the daemon's device. The method looks for "proto-objects", coarse by
design (the paper works 64 px wide), so clients send frames already shrunk to the map size they want (the
workers: 128 wide) and the map has the frames' size. The client (workers/analysis/saliency.py) turns maps into subject
boxes: it removes text regions and picks the blob holding the most salient mass.

Output per frame: `map`, the un-normalised saliency (frame height × width, float32); requests batch only with
frames of their own size.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from gpu_service.registry import ArrayShape, InferenceModel, Span, register

# OpenCV's RGB→grey weights
LUMA = (0.299, 0.587, 0.114)
#: the final blur's sigma as a fraction of the map's width
BLUR_FRACTION = 1 / 40


def _gaussian_kernel(sigma: float) -> Tensor:
    """OpenCV's kernel for float images: size round(8σ + 1) made odd, normalised."""
    size = round(sigma * 8 + 1) | 1
    x = torch.arange(size, dtype=torch.float32) - (size - 1) / 2
    kernel = torch.exp(-(x**2) / (2 * sigma**2))
    return kernel / kernel.sum()


def _separable(x: Tensor, kernel: Tensor) -> Tensor:
    """x (N×1×H×W) convolved with kernel along both axes, mirrored at the border (OpenCV's default)."""
    half = (len(kernel) - 1) // 2
    x = F.conv2d(F.pad(x, (half, half, 0, 0), mode=_border(half, x.shape[-1])), kernel.view(1, 1, 1, -1))
    return F.conv2d(F.pad(x, (0, 0, half, half), mode=_border(half, x.shape[-2])), kernel.view(1, 1, -1, 1))


def _border(half: int, length: int) -> str:
    # mirroring needs more pixels than the kernel's half width; a sliver of a map repeats its edge instead
    return "reflect" if half < length else "replicate"


class SpectralSaliency(InferenceModel):
    warmup_frame_shape = (72, 128, 3)  # a 16:9 frame at the workers' map size
    luma: Tensor
    box: Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("luma", torch.tensor(LUMA).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("box", torch.full((3,), 1.0 / 3), persistent=False)

    def group_key(self, frames_shape: tuple[int, ...], context: Mapping[str, ArrayShape]) -> Hashable:
        return tuple(frames_shape[1:])

    def preprocess(self, frames: Tensor) -> Tensor:
        """Grey, rounded to whole levels as an 8-bit grey image would be."""
        rgb = frames.permute(0, 3, 1, 2).float()
        return (rgb * self.luma).sum(dim=1, keepdim=True).round()

    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        spectrum = torch.fft.fft2(batch)
        log_amplitude = torch.log(spectrum.abs() + 1e-6)
        residual = log_amplitude - _separable(log_amplitude, self.box)
        back = torch.fft.ifft2(torch.polar(torch.exp(residual), spectrum.angle()))
        blur = _gaussian_kernel(batch.shape[-1] * BLUR_FRACTION).to(batch.device)
        saliency = _separable(back.abs() ** 2, blur)
        return {"map": saliency[:, 0]}


@register("saliency")
def _saliency() -> InferenceModel:
    return SpectralSaliency()
