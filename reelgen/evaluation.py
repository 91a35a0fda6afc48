"""`reelgen eval-highlights`: how often the chosen window shows the product, against generated ground truth.

A hit is a chosen window that overlaps the true on-screen interval by at least 80% of the window's length.
Analysis runs in this process through the same stages as a worker (segment sampling, the default scorer,
window choice), with the scorer model called in-process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from core.catalog_entry import CatalogEntry
from core.settings import Settings
from gpu_service.local import LocalInference
from gpu_service.priority import PriorityKey
from jobs.intake.catalog import read_catalog
from jobs.ledger import JobKind
from reelgen.sample_catalog import load_truth
from storage.fetch import Fetcher
from workers import pipeline

HIT_OVERLAP = 0.8


@dataclass(frozen=True)
class HighlightResult:
    item_id: str
    case: str
    window: tuple[float, float]
    truth: tuple[float, float]
    overlap: float

    @property
    def hit(self) -> bool:
        return self.overlap >= HIT_OVERLAP


def overlap_fraction(window: tuple[float, float], truth: tuple[float, float]) -> float:
    """The share of the window that lies inside the true interval."""
    inter = max(0.0, min(window[1], truth[1]) - max(window[0], truth[0]))
    return inter / max(1e-9, window[1] - window[0])


def evaluate(settings: Settings, catalog: Path) -> Iterator[HighlightResult]:
    config = settings.output_config()
    fetcher = Fetcher(settings)
    model = LocalInference(weights=settings.daemon.weights)
    # an evaluation catalog is the operator's own, read as `reelgen run` reads one
    for _, entry in read_catalog(catalog, settings.source_policy(JobKind.RUN.value)):
        if not isinstance(entry, CatalogEntry):
            continue
        truth = load_truth(catalog.parent, entry.item_id)
        info, segments = pipeline.plan_sampling(entry, fetcher, settings, config.sample_fps)
        samples = []
        for segment in segments:
            samples += pipeline.sample_segment(
                entry,
                info,
                segment,
                fetcher,
                model,
                PriorityKey(0.0, 0.0),
                config,
                pipeline.Decoding.from_settings(settings),
            )
        window = pipeline.choose(info, samples, config).window
        span = (window.start_s, window.end_s)
        yield HighlightResult(
            entry.item_id, truth.case or "regular", span, truth.product_interval,
            overlap_fraction(span, truth.product_interval),
        )  # fmt: skip


def report(results: list[HighlightResult], as_json: bool) -> str:
    hits = sum(r.hit for r in results)
    rate = hits / len(results) if results else 0.0
    if as_json:
        items = [dict(asdict(r), hit=r.hit) for r in results]
        return json.dumps({"hit_rate": round(rate, 4), "items": items})
    lines = [
        f"{r.item_id:12s} {r.case:18s} window {r.window[0]:6.2f}-{r.window[1]:6.2f}  "
        f"truth {r.truth[0]:6.2f}-{r.truth[1]:6.2f}  overlap {r.overlap:4.0%}  {'hit' if r.hit else 'MISS'}"
        for r in results
    ]
    lines.append(
        f"hit rate {hits}/{len(results)} = {rate:.1%} (a hit overlaps the truth by >= 80% of the window)"
    )
    return "\n".join(lines)
