"""The product locator alone on the real-footage quality set (bench/quality_set.py): how often it finds the
product, and whether the box it gives holds it.

Every frame at the pipeline's sampling rate (2 per second) is scaled as the sampler scales it and located
against the item's main image (workers.analysis.localisation), the product followed into the frames next to a find where the
locator lost it (workers.analysis.localisation.following, over the whole video where the pipeline runs it per segment), its
boxes completed (whole) and chosen over the video by the temporal model (temporal, where the revision has one), then
compared with the ground truth:

- found: product frames where the locator gave a box;
- held: of those, boxes holding >= 70 % of the true box (and IoU > 0.3): a box that follows the product;
  the rest lie on part of it (too small) or elsewhere; whole: held boxes holding >= 90 % of it (a crop holding
  such a box holds the product); oversized: boxes over OVERSIZED times its area (the planner would take the
  product for larger than it is);
- background_found: frames without the product where the locator gave a box anyway (false positives);
- items_never_found: product items where no frame was found (the crop then follows faces or saliency).

It runs the locator in this process: no reelgen run, no daemon. A set is generated (or reused) by
bench/quality.py; --rev compares with the locator as committed at a git revision, side by side.

Usage: .venv/bin/python bench/locate.py [--items 16] [--half tuning|heldout|dev] [--rev REV]
Only aggregates are printed for the held-out half, as bench/quality.py does.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import av
import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.quality import DATA, Rect, area, as_rect, checkout, ensure_set, share_inside  # noqa: E402
from bench.quality_set import Half  # noqa: E402
from monitoring.machine import machine_lines  # noqa: E402
from workers.analysis.scoring import product_template, shot_signature  # noqa: E402
from workers.analysis.windows import detect_cuts  # noqa: E402

SAMPLE_FPS = 2.0
#: a box this many times the true box's area is oversized: the planner would take the product for too big
OVERSIZED = 1.5


def _iou(a: Rect, b: Rect) -> float:
    meet = share_inside(a, b) * area(a)
    union = area(a) + area(b) - meet
    return meet / union if union > 0 else 0.0


def held(true_box: Rect, box: Rect) -> bool:
    """Whether a box follows the product: it holds >= 70 % of the true box, and overlaps it (IoU > 0.3)."""
    return share_inside(true_box, box) >= 0.7 and _iou(true_box, box) > 0.3


def _load_localise(rev: str | None) -> tuple[Any, str]:
    """The locator (ProductLocator, LOCATE_SIDE, follow, whole_boxes) as in this tree, or as committed at rev:
    the revision's own workers package, imported from its unpacked copy while this tree's is set aside."""
    if rev is None:
        return _locator_api(), "working tree"
    folder, commit = checkout(rev)
    ours = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "workers"}
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, str(folder))
    try:
        api = _locator_api()
        if not str(api.origin).startswith(str(folder)):
            raise SystemExit(f"the locator at {rev} was not imported from its copy ({api.origin})")
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name.split(".")[0] == "workers"]:
            del sys.modules[name]
        sys.modules.update(ours)
    return api, commit


def _locator_api() -> SimpleNamespace:
    """The locator's entry points from the workers package on the path: the localisation package, or the one
    module it was before (workers/analysis/localise.py, earlier workers/localise.py)."""
    try:
        from workers.analysis.localisation import common, following, locator, whole
    except ModuleNotFoundError:
        for legacy in ("workers.analysis.localise", "workers.localise"):
            try:
                module = importlib.import_module(legacy)
            except ModuleNotFoundError:
                continue
            return SimpleNamespace(
                ProductLocator=module.ProductLocator, LOCATE_SIDE=module.LOCATE_SIDE,
                follow=getattr(module, "follow", None), whole_boxes=getattr(module, "whole_boxes", None),
                kept_boxes=None, origin=module.__file__,
            )  # fmt: skip
        raise
    try:
        kept_boxes: Any = importlib.import_module("workers.analysis.localisation.temporal").kept_boxes
    except ModuleNotFoundError:
        kept_boxes = None
    try:
        parameters: Any = importlib.import_module("workers.analysis.localisation.parameters")
    except ModuleNotFoundError:
        parameters = common  # a revision from before the parameters were in one place
    return SimpleNamespace(
        ProductLocator=locator.ProductLocator, LOCATE_SIDE=parameters.LOCATE_SIDE, follow=following.follow,
        whole_boxes=whole.whole_boxes, kept_boxes=kept_boxes, origin=locator.__file__,
    )  # fmt: skip


def _frames(video: Path, truth: dict[str, Any], side: int) -> list[tuple[int, np.ndarray]]:
    """(frame index, RGB at the locator's size) every 1/SAMPLE_FPS seconds."""
    fps, width, height = float(truth["fps"]), int(truth["width"]), int(truth["height"])
    wanted = {round(k / SAMPLE_FPS * fps) for k in range(int(truth["duration_s"] * SAMPLE_FPS))}
    scale = side / max(width, height)
    size = (round(width * scale), round(height * scale))
    out = []
    with av.open(str(video)) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if index in wanted:
                out.append(
                    (index, cv2.resize(frame.to_ndarray(format="rgb24"), size, interpolation=cv2.INTER_AREA))
                )
    return out


def measure(localise: Any, catalog: Path, show_items: bool) -> dict[str, Any]:
    folder = catalog.parent
    truth = json.loads((folder / "truth.json").read_text())["items"]
    entries = [json.loads(line) for line in catalog.read_text().splitlines()]
    totals = {
        "product_frames": 0,
        "found": 0,
        "held": 0,
        "whole": 0,
        "oversized": 0,
        "background_frames": 0,
        "background_found": 0,
    }
    never = 0
    cpu = 0.0
    for entry in entries:
        item = truth[entry["item_id"]]
        picture = cv2.imread(str(folder / entry["image"]))
        assert picture is not None, entry["image"]
        locator = localise.ProductLocator(product_template(cv2.cvtColor(picture, cv2.COLOR_BGR2RGB)))
        size = (int(item["width"]), int(item["height"]))
        marks = []
        background = 0
        frames = _frames(folder / entry["video"], item, localise.LOCATE_SIDE)
        started = time.process_time()
        pictures = [frame for _, frame in frames]
        # a run of samples at once where the locator takes one (it searches some of them more finely)
        found = (
            locator.locate_all(pictures, size)
            if hasattr(locator, "locate_all")
            else [locator.locate(picture, size) for picture in pictures]
        )
        times = [index / float(item["fps"]) for index, _ in frames]
        if localise.follow is not None:
            # a revision before following reached as far as the temporal model allows takes no times
            timed = "times" in inspect.signature(localise.follow).parameters
            found = localise.follow(pictures, found, size, *([times] if timed else []))
        # the locator's per-video pass, where it has one
        boxes = (
            localise.whole_boxes(found, size) if localise.whole_boxes is not None else [f.box for f in found]
        )
        if localise.kept_boxes is not None:
            # the temporal model over the video's samples, at the cuts the pipeline would find
            cuts = detect_cuts(times, [shot_signature(picture) for picture in pictures])
            boxes = localise.kept_boxes(times, boxes, [f.p for f in found], cuts)
        cpu += time.process_time() - started
        for (index, _), box in zip(frames, boxes, strict=True):
            real = item["frames"][index]["box"]
            if real is None:
                totals["background_frames"] += 1
                background += box is not None
                continue
            totals["product_frames"] += 1
            if box is None:
                marks.append(".")
                continue
            totals["found"] += 1
            true_box = as_rect(real)
            holds = held(true_box, box)
            totals["held"] += holds
            totals["whole"] += holds and share_inside(true_box, box) >= 0.9
            totals["oversized"] += area(box) > OVERSIZED * area(true_box)
            marks.append("H" if holds else "p")
        if item["has_product"] and "H" not in marks and "p" not in marks:
            never += 1
        totals["background_found"] += background
        if show_items and (item["has_product"] or background):
            print(
                f"  {entry['item_id']} {item['photo']:<22} {' '.join(item['conditions'])}: {''.join(marks)}"
                + (f" (boxed in {background} frames without it)" if background else "")
            )
    return {**totals, "items_never_found": never, "locate_cpu_s": round(cpu, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--half", choices=("tuning", "heldout", "dev"), default="tuning")
    parser.add_argument("--rev", help="also measure the locator as committed at this git revision")
    args = parser.parse_args()
    half: Half = args.half
    for line in machine_lines():
        print(line)
    catalog = ensure_set(half, args.items, reuse=True)
    print(f"set: {catalog.parent.relative_to(DATA.parent.parent)}; per item, H: a box holding the product, "
          "p: a box on part of it or elsewhere, .: not found")  # fmt: skip
    figures: dict[str, Any] = {}
    runs = [(None, "")] + ([(args.rev, "baseline_")] if args.rev else [])
    for rev, prefix in runs:
        localise, label = _load_localise(rev)
        print(f"{label}:")
        result = measure(localise, catalog, show_items=half != "heldout")
        print(f"  {result}")
        figures |= {prefix + key: value for key, value in result.items()}
    print(json.dumps({"half": half, "items": args.items, **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
