"""The clips a job's config asks of every item: one per aspect and one per placement, each with the name its plan
and its manifest record go by, its file's stem, and the size it is written at. Pure: no I/O.

An aspect's clip is written at its largest crop's size (capped by max_output_side; a smaller crop is scaled up
to it). A placement's is written at the placement's size unless that would enlarge the picture past its upscale
limit: then at the largest size of its aspect the limit allows (workers.geometry.limited_size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.placements import Placement
from core.settings import OutputConfig
from workers.framing.planner import FramingPlan
from workers.framing.safe_zone import fit
from workers.geometry import Box, CropRect, aspect_size, limited_size


@dataclass(frozen=True)
class Target:
    #: the aspect's label ('9:16') or the placement's name ('reels'): never the same (a name has no ':')
    name: str
    aspect: tuple[int, int]
    placement: Placement | None = None

    @property
    def stem(self) -> str:
        """The clip's and its cover's file name, without the suffix: 9x16, reels."""
        return f"{self.aspect[0]}x{self.aspect[1]}" if self.placement is None else self.name


def targets(config: OutputConfig) -> list[Target]:
    """The aspects' clips, then the placements', in the order the config names them."""
    return [
        *(Target(f"{a}:{b}", (a, b)) for a, b in config.aspect_pairs),
        *(Target(p.name, p.aspect, p) for p in config.placements),
    ]


@dataclass(frozen=True)
class OutputSize:
    width: int
    height: int
    #: how far the picture is enlarged (the output's pixels per source pixel, at the smallest crop)
    scale: float
    #: whether the placement's upscale limit made the clip smaller than the placement's size
    limited: bool = False


def output_size(
    target: Target,
    source: tuple[int, int],
    max_side: int | None,
    keys: Sequence[tuple[float, CropRect]],
    padded: bool,
    picture_share: float,
) -> OutputSize:
    """The size the target's clip is written at, given its plan's keys (the crops, or the regions letterboxed
    at picture_share of the size that fits)."""
    if target.placement is None:
        size = aspect_size(target.aspect, *source, max_side)
        return OutputSize(
            size.out_w, size.out_h, _enlargement((size.out_w, size.out_h), keys, padded, picture_share)
        )
    full = target.placement.size
    enlargement = _enlargement(full, keys, padded, picture_share)
    width, height = limited_size(full, enlargement, target.placement.max_upscale)
    return OutputSize(width, height, enlargement * width / full[0], (width, height) != full)


def _enlargement(
    out: tuple[int, int], keys: Sequence[tuple[float, CropRect]], padded: bool, picture_share: float
) -> float:
    """How far an out-sized clip enlarges its picture where it enlarges most (the smallest crop or region)."""
    fits = [min(out[0] / rect.w, out[1] / rect.h) for _, rect in keys]
    return max(fits) * (picture_share if padded else 1.0)


def placement_record(placement: Placement, size: OutputSize, zone_fit: dict[str, Any]) -> dict[str, Any]:
    """The manifest's account of a placement's clip (storage.manifest.ClipRecord.placement)."""
    return {
        "name": placement.name,
        "size": list(placement.size),
        "safe_zone": placement.safe.model_dump(),
        "max_upscale": placement.max_upscale,
        "limited_by_upscale": size.limited,
        **zone_fit,
    }


def zone_fit(plan: FramingPlan, placement: Placement, subject: Sequence[tuple[float, Box]]) -> dict[str, Any]:
    """How the placement's planned clip meets its safe zone (the product at subject's samples, the window's text
    regions), as the manifest records it."""
    return fit(
        plan.keys, placement.safe, placement.size, subject, plan.text_boxes, planned=plan.zone is not None,
        padded=plan.padded, picture_share=plan.picture_share,
    ).as_manifest()  # fmt: skip
