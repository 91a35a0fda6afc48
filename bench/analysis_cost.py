"""Where an item's analysis CPU goes: each part of the workers' analysis and each of the daemon's models, in
CPU-seconds per item on bench/e2e.py's catalog, beside the render's.

Each item runs as the stages run it (plan_sampling, sample_segment per segment, choose, frame_window, then the
render of every aspect), in this process and one thread each: the daemon's models run here through
LocalInference on one torch, one onnxruntime and one OpenCV thread, as a 2-core node runs them
(--opencv-threads 0 gives OpenCV its own default, a thread per core, to compare). A part's
CPU is its own thread's (time.thread_time), less the parts it calls, so the text detection the window's decode
streams to on its own thread is told apart from that decode. "other" is the rest of the process's CPU: stage
glue, the template's decode, what no part names. analysis_share is the workers' analysis (every part but the
models and the render) over the render, as e2e's analysis_share is (there the models run in the daemon).

Usage: .venv/bin/python bench/analysis_cost.py [--items 6] [--seed 11] [--opencv-threads 1]; the last line is
JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# one thread per library, as the daemon and the workers run on a 2-core node (set before they are imported)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import cv2  # noqa: E402
import torch  # noqa: E402

from bench.e2e import clip_specs, encode_options, ensure_catalog, entries_of  # noqa: E402
from core.catalog_entry import CatalogEntry  # noqa: E402
from core.settings import OutputConfig, Settings, load_settings  # noqa: E402
from gpu_service.local import LocalInference  # noqa: E402
from gpu_service.priority import PriorityKey  # noqa: E402
from storage.fetch import Fetcher  # noqa: E402
from workers import pipeline  # noqa: E402
from workers.analysis.localisation.locator import ProductLocator  # noqa: E402
from workers.media.render import render_window  # noqa: E402
from workers.media.video import VideoSource  # noqa: E402

MODEL = "model: "


class PartClock:
    """CPU-seconds per part, each part's own: a part's thread time less that of the parts it calls."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self._local = threading.local()

    def _stack(self) -> list[list[Any]]:
        """This thread's open parts, outermost first: [name, CPU-s of the parts they called]."""
        stack: list[list[Any]] = self._local.__dict__.setdefault("stack", [])
        return stack

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        stack = self._stack()
        stack.append([name, 0.0])
        start = time.thread_time()
        try:
            yield
        finally:
            spent = time.thread_time() - start
            _, inner = stack.pop()
            self.cpu[name] += spent - inner
            if stack:
                stack[-1][1] += spent

    def within(self, names: Collection[str]) -> str:
        """The innermost of these parts open on this thread ("?" if none)."""
        return next((name for name, _ in reversed(self._stack()) if name in names), "?")

    def wrap(self, owner: Any, attribute: str, name: str | Callable[[], str]) -> None:
        """Time every call of owner.attribute as the part `name` (or the name it gives at the call)."""
        original: Callable[..., Any] = getattr(owner, attribute)

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.part(name if isinstance(name, str) else name()):
                return original(*args, **kwargs)

        setattr(owner, attribute, timed)


def instrument(clock: PartClock, model: LocalInference) -> None:
    """The parts, wrapped where the stages call them (pipeline's own names for what it imports)."""
    # sampling's decode and the window's are the same call, told apart by the stage that makes it
    stages = {"sample_segment": "sample", "frame_window": "select"}
    for name, stage in stages.items():
        clock.wrap(pipeline, name, stage)
    clock.wrap(VideoSource, "sample_with_gray", lambda: f"{clock.within(stages.values())}: decode")
    clock.wrap(ProductLocator, "__init__", "locator build")
    clock.wrap(ProductLocator, "locate_all", "locate")
    for name, part in (
        ("plan_sampling", "prepare"),
        ("choose", "choose"),
        ("follow", "follow"),
        ("whole_boxes", "whole boxes"),
        ("kept_boxes", "temporal model"),
        ("tracked_through", "tracking"),
        ("refine_text_times", "text timing"),
        ("shots_picture_area", "picture area"),
        ("plan_framing", "planner"),
        ("score_frames", "scorers' frames"),
        ("frame_looks", "scorers' frames"),
        ("read_regions", "text reading's strips"),
        ("find_subjects", "faces and saliency"),
    ):
        clock.wrap(pipeline, name, part)
    infer = model.infer

    def by_model(name: str, *args: Any, **kwargs: Any) -> Any:
        with clock.part(MODEL + name):
            return infer(name, *args, **kwargs)

    model.infer = by_model  # type: ignore[method-assign,assignment]


def analyse_and_render(
    entry: CatalogEntry,
    config: OutputConfig,
    settings: Settings,
    model: LocalInference,
    clock: PartClock,
    out: Path,
) -> None:
    opener = Fetcher(settings)
    key = PriorityKey(0.0, 0.0)
    decoding = replace(pipeline.Decoding.from_settings(settings), threads=1)
    info, segments = pipeline.plan_sampling(entry, opener, settings, config.sample_fps)
    samples = [
        s
        for segment in segments
        for s in pipeline.sample_segment(entry, info, segment, opener, model, key, config, decoding)
    ]
    chosen = pipeline.choose(info, samples, config)
    analysis = pipeline.frame_window(entry, info, chosen, opener, model, key, config, decoding)
    specs = clip_specs(entry, info, analysis, config, out)
    (out / entry.item_id).mkdir(parents=True, exist_ok=True)
    # the render's encoders run on threads of their own: the process's CPU over the call is its cost
    start = time.process_time()
    render_window(
        Path(entry.video), analysis.window.start_s, analysis.window.end_s, specs, encode_options(config)
    )
    clock.cpu["render"] += time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=6)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--opencv-threads", type=int, default=1,
        help="OpenCV's pool (1: a worker's budget on a 2-core node; 0: OpenCV's own default, a thread per core)",
    )  # fmt: skip
    args = parser.parse_args()
    torch.set_num_threads(1)
    cv2.setNumThreads(args.opencv_threads if args.opencv_threads > 0 else os.cpu_count() or 1)
    entries = entries_of(ensure_catalog(args.items, args.seed))
    settings = load_settings()
    config = settings.output_config()
    model = LocalInference()
    clock = PartClock()
    instrument(clock, model)
    out = ROOT / "bench" / ".data" / "runs" / "analysis-cost"
    # the models' own start-up (their weights loaded, first runs) is the daemon's, paid once a run: one item
    # first, not counted
    analyse_and_render(entries[0], config, settings, model, clock, out)
    clock.cpu.clear()
    start = time.process_time()
    for entry in entries:
        analyse_and_render(entry, config, settings, model, clock, out)
    total = time.process_time() - start
    per_item = {name: cpu / len(entries) for name, cpu in clock.cpu.items()}
    per_item["other"] = total / len(entries) - sum(per_item.values())
    render = per_item["render"]
    models = sum(v for k, v in per_item.items() if k.startswith(MODEL))
    analysis = sum(v for k, v in per_item.items() if k != "render" and not k.startswith(MODEL))
    print(f"{len(entries)} items; CPU-s per item by part, largest first:")
    for name, cpu in sorted(per_item.items(), key=lambda kv: -kv[1]):
        print(f"  {name:28s} {cpu:6.3f}")
    summary = {
        "items": len(entries),
        "parts": {k: round(v, 3) for k, v in sorted(per_item.items())},
        "analysis_cpu_s": round(analysis, 3),
        "models_cpu_s": round(models, 3),
        "render_cpu_s": round(render, 3),
        "analysis_share": round(analysis / render, 3),
        "analysis_and_models_share": round((analysis + models) / render, 3),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
