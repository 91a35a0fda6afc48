"""Synthetic sample catalog with exact ground truth, for `make demo`, the tests and the benchmarks.

Every item is a product video assembled from procedural parts whose geometry is known to the pixel:
background shots separated by hard cuts, the product (the same procedural picture as the item's main image)
moving and scaling during one interval, decoy objects outside it, and captions in filled boxes near the frame
edges. The truth of every frame goes to `truth/<item_id>.json`, which the pipeline never reads; `load_truth`
reads it back.

Items are independent of each other and of how many are asked for: item i is drawn from the seed sequence
(seed, i), hard case j from (seed, HARD_SEED_BASE + j), so growing a catalog keeps the items it already had.

The parts: vocabulary.py, truth.py (the truth files and their reader), plan.py (every random choice of an
item, the hard cases), product.py (product pictures), scenes.py (backgrounds), overlay.py (objects and
captions drawn over them), render.py (frames, audio, encoding); this module writes the catalog."""

from __future__ import annotations

import json
import os
from pathlib import Path

import cv2
import numpy as np

from core.errors import ConfigError
from reelgen.sample_catalog.plan import ItemPlan, plan_item
from reelgen.sample_catalog.product import main_image
from reelgen.sample_catalog.render import Renderer, encode_item, sec
from reelgen.sample_catalog.truth import Truth, load_truth, truth_json
from reelgen.sample_catalog.vocabulary import HARD_CASES, HARD_SEED_BASE, Box


def _validate(items: int, duration_s: tuple[float, float], size: tuple[int, int], fps: float) -> None:
    if items < 0:
        raise ConfigError(f"items must be ≥ 0, got {items}")
    if not 0 < duration_s[0] <= duration_s[1]:
        raise ConfigError(f"duration_s must be (lo, hi) with 0 < lo ≤ hi, got {duration_s}")
    if size[0] < 64 or size[1] < 64 or size[0] % 2 or size[1] % 2:
        raise ConfigError(f"size must be even and at least 64×64 (yuv420p halves chroma), got {size}")
    if not 1 <= fps <= 120:
        raise ConfigError(f"fps must be within 1..120, got {fps}")


def _write_item(out_dir: Path, plan: ItemPlan) -> dict[str, str]:
    video_rel, image_rel = f"videos/{plan.item_id}.mp4", f"images/{plan.item_id}.png"
    cv2.imwrite(str(out_dir / image_rel), main_image(plan.designs[0]))
    renderer = Renderer(plan)
    partial = out_dir / f"{video_rel}.part"
    frames = encode_item(partial, plan, renderer)
    os.replace(partial, out_dir / video_rel)
    truth = Truth(
        item_id=plan.item_id,
        fps=plan.fps,
        width=plan.width,
        height=plan.height,
        duration_s=sec(plan.n_frames, plan.fps),
        product_interval=(sec(plan.interval[0], plan.fps), sec(plan.interval[1], plan.fps)),
        frames=frames,
        cuts=[sec(s.k0, plan.fps) for s in plan.shots[1:]],
        case=plan.case,
        captions=renderer.caption_truth(),
    )
    (out_dir / "truth" / f"{plan.item_id}.json").write_text(truth_json(truth))
    return {
        "item_id": plan.item_id,
        "video": video_rel,
        "image": image_rel,
        "title": plan.title,
        "description": plan.description,
    }


def _item_plans(
    items: int,
    *,
    seed: int = 0,
    duration_s: tuple[float, float] = (15.0, 30.0),
    size: tuple[int, int] = (1280, 720),
    fps: float = 25.0,
    hard_cases: bool = False,
) -> list[ItemPlan]:
    """Every item's plan, in catalog order: the regular items, then one per hard case."""
    plans = [
        plan_item(f"sku-{i + 1:04d}", np.random.default_rng([seed, i]), size, fps, duration_s, None)
        for i in range(items)
    ]
    if hard_cases:
        for j, case in enumerate(HARD_CASES):
            rng = np.random.default_rng([seed, HARD_SEED_BASE + j])
            plans.append(plan_item(f"sku-{items + j + 1:04d}", rng, size, fps, duration_s, case))
    return plans


def write_sample_catalog(
    out_dir: Path,
    items: int,
    *,
    seed: int = 0,
    duration_s: tuple[float, float] = (15.0, 30.0),
    size: tuple[int, int] = (1280, 720),
    fps: float = 25.0,
    hard_cases: bool = False,
) -> Path:
    """Write items synthetic products (plus one item per hard case) and return out_dir/catalog.jsonl.

    Writes videos/<id>.mp4, images/<id>.png (the main image) and truth/<id>.json per item. The catalog is
    written last, so a catalog on disk never names a video that is not there.
    """
    _validate(items, duration_s, size, fps)
    out_dir = Path(out_dir)
    for sub in ("videos", "images", "truth"):
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    plans = _item_plans(items, seed=seed, duration_s=duration_s, size=size, fps=fps, hard_cases=hard_cases)
    lines = [json.dumps(_write_item(out_dir, plan)) for plan in plans]
    catalog = out_dir / "catalog.jsonl"
    partial = out_dir / "catalog.jsonl.part"
    partial.write_text("".join(line + "\n" for line in lines))
    os.replace(partial, catalog)
    return catalog


__all__ = ["HARD_CASES", "Box", "Truth", "load_truth", "write_sample_catalog"]
