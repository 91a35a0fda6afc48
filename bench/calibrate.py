"""Fit the localisation's calibration (workers/analysis/localisation/calibration.json) on the quality set's tuning
half: for each evidence source, the logistic curve from its raw confidence to the probability that its box holds
the product.

Every item of the half is sampled as a worker samples it (pipeline.plan_sampling and sample_segment, the scorer
model in this process), so the boxes are the ones reelgen's temporal model is given. Each box is labelled
against the ground truth at its sample's frame: the product (most of the box, ON_PRODUCT of it, lies on the true
box: the product whole, or a part of it that a hand or the light left) or not (mostly elsewhere, or on a frame
without the product). The temporal model rejects a box less likely than not to be the product, so the label is
whether the box is on it, not whether it holds all of it: a box on part of the product still tells the crop where
the product is and how large it is at least (labelled by bench/locate.py's "held", a grey clock's outline boxes
narrower than its disc were rejected and its clips cropped through it). Per source, slope (at least 0) and
intercept minimise the labels' log loss (scipy.optimize), with one box of each label added at the source's mean
confidence (Laplace's rule of succession); a source with fewer than MIN_BOXES boxes takes the curve fitted to all
boxes together ("pooled").

The held-out half is never used here. The fitted curves and their log loss are printed, and written with
--write. Usage: .venv/bin/python bench/calibrate.py [--items 32] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.quality import as_rect, ensure_set, product_version, share_inside  # noqa: E402
from bench.quality_set import load_truth  # noqa: E402
from core.catalog_entry import CatalogEntry  # noqa: E402
from core.settings import load_settings  # noqa: E402
from gpu_service.local import LocalInference  # noqa: E402
from gpu_service.priority import PriorityKey  # noqa: E402
from jobs.intake.catalog import read_catalog  # noqa: E402
from jobs.ledger import JobKind  # noqa: E402
from storage.fetch import Fetcher  # noqa: E402
from workers import pipeline  # noqa: E402
from workers.analysis.localisation.calibration import CALIBRATION_FILE, POOLED  # noqa: E402

#: a source needs this many boxes of both labels together for a curve of its own
MIN_BOXES = 30
#: a box is on the product where at least this share of it lies inside the true box
ON_PRODUCT = 0.5

#: (method, raw confidence, the box, the true box or None)
Sampled = tuple[str, float, list[float], list[float] | None]


def sampled_boxes(catalog: Path) -> list[Sampled]:
    """Every box the sampling gives over the catalog's items, with the truth at its frame."""
    truth = load_truth(catalog)["items"]
    settings = load_settings()
    config = settings.output_config()
    fetcher = Fetcher(settings)
    model = LocalInference(weights=settings.daemon.weights)
    out: list[Sampled] = []
    for _, entry in read_catalog(catalog, settings.source_policy(JobKind.RUN.value)):
        if not isinstance(entry, CatalogEntry):
            continue
        item = truth[entry.item_id]
        info, segments = pipeline.plan_sampling(entry, fetcher, settings, config.sample_fps)
        decoding = pipeline.Decoding.from_settings(settings)
        for segment in segments:
            for s in pipeline.sample_segment(
                entry, info, segment, fetcher, model, PriorityKey(0.0, 0.0), config, decoding
            ):
                if s.box is None:
                    continue
                index = min(len(item["frames"]) - 1, round((s.t - info.start_s) * float(item["fps"])))
                real = item["frames"][index]["box"]
                out.append((s.method, s.confidence, list(s.box), None if real is None else list(real)))
    return out


def on_product(box: list[float], real: list[float] | None) -> bool:
    """Whether most of a box lies on the product's true box (ON_PRODUCT of it)."""
    return real is not None and share_inside(as_rect(box), as_rect(real)) >= ON_PRODUCT


def fit(confidence: np.ndarray, label: np.ndarray) -> tuple[float, float, float]:
    """Slope, intercept and mean log loss of the logistic curve fitted to the labels."""

    def loss(params: np.ndarray) -> float:
        p = np.clip(expit(params[0] * confidence + params[1]), 1e-9, 1 - 1e-9)
        return float(-np.mean(label * np.log(p) + (1 - label) * np.log(1 - p)))

    # a source's raw confidence is more evidence as it grows: the slope is held at zero or above, so that a curve
    # fitted to noise (features' inlier share barely matters once a homography holds) is flat, never falling
    result = minimize(loss, np.zeros(2), method="L-BFGS-B", bounds=[(0.0, None), (None, None)])
    return float(result.x[0]), float(result.x[1]), float(result.fun)


def curves(boxes: list[tuple[str, float, bool]]) -> dict[str, dict[str, Any]]:
    by_method: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for method, confidence, holds in boxes:
        by_method[method].append((confidence, holds))
        by_method[POOLED].append((confidence, holds))
    out = {}
    for method, rows in sorted(by_method.items()):
        conf = np.array([c for c, _ in rows], np.float64)
        labels = np.array([float(h) for _, h in rows])
        if method != POOLED and len(rows) < MIN_BOXES:
            print(f"  {method}: {len(rows)} boxes: too few to fit, takes {POOLED}")
            continue
        # one box of each label at the source's mean confidence (Laplace's rule of succession): a source whose
        # every box was right is very likely, not certainly, right next time, and its curve stays finite
        mean = float(conf.mean())
        slope, intercept, loss = fit(np.append(conf, [mean, mean]), np.append(labels, [1.0, 0.0]))
        out[method] = {
            "slope": round(slope, 4),
            "intercept": round(intercept, 4),
            "boxes": len(rows),
            "on_product": int(labels.sum()),
            "log_loss": round(loss, 4),
        }
        print(f"  {method}: {out[method]}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=32, help="tuning items (default 32)")
    parser.add_argument("--write", action="store_true", help=f"write the curves to {CALIBRATION_FILE}")
    args = parser.parse_args()
    catalog = ensure_set("tuning", args.items, reuse=True)
    # the boxes of a set at this revision of the product are kept: refitting needs no second sampling
    cached = catalog.parent / f"calibration-boxes-{product_version()}.json"
    if cached.exists():
        sampled: list[Sampled] = [tuple(row) for row in json.loads(cached.read_text())]  # type: ignore[misc]
    else:
        sampled = sampled_boxes(catalog)
        cached.write_text(json.dumps(sampled))
    fitted = curves([(m, c, on_product(box, real)) for m, c, box, real in sampled])
    if args.write:
        data = {
            "fitted_on": f"bench/calibrate.py, quality set tuning half, {args.items} items",
            "curves": fitted,
        }
        CALIBRATION_FILE.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps({"items": args.items, "curves": fitted}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
