"""Headline benchmark: reelgen against the naive design and against the render floor, side by side.

(a) naive: one process, items one after another, every frame decoded with OpenCV read(), analysis in-process,
    each aspect rendered by its own pass over the window;
(b) the same in 4 threads of one process (the seed's "4 concurrency");
(c) reelgen as it stands: `reelgen run` with its Celery workers;
(d) the render floor: per item only decode its chosen window once and encode all its clips, items spread over
    all cores — the work no design can avoid.
All use the same scorer, crop planner, sampling rate and encoder settings (libx264 veryfast CRF 21, the same
explicit thread count). (c) and (d) run in --repeats rounds (default 3), each (d) right after its (c).
Usage: .venv/bin/python bench/e2e.py [--items 6] [--repeats 3] [--steady-items 24] [--scaling]; the last line is
JSON, with c_over_d (cold: the --items catalog, each run's start-up included), c_over_d_steady (one round of
--steady-items items, the catalog's videos repeated under new ids, where the start-up is a small share),
analysis_share (CPU-s of the stages before the render over the render's, in (c)'s last round) and
render_wall_over_cpu_1item (a one-item `reelgen run`'s render: its wall over its CPU-seconds, what encoding an
item's clips in parallel makes of cores that one item in flight would leave idle).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import psutil

from core.catalog_entry import CatalogEntry
from core.settings import OutputConfig, Settings, load_settings
from gpu_service.local import LocalInference
from gpu_service.priority import PriorityKey
from gpu_service.usage import DaemonUsage
from jobs.intake.catalog import read_catalog
from jobs.intake.catalog_ref import CatalogRef
from jobs.ledger import JobKind
from jobs.local.runner import run_catalog
from monitoring.machine import machine_lines
from reelgen.sample_catalog import write_sample_catalog
from storage.fetch import Fetcher
from workers.analysis.scoring import ANALYSIS_WIDTH, product_template
from workers.geometry import CropPath, CropRect, aspect_size
from workers.media.containers import Frame, VideoInfo
from workers.media.render import EncodeOptions, OutputSpec, render_window
from workers.media.sound import sound_options
from workers.media.video import VideoSource
from workers.pipeline import Analysis, Decoding, choose, frame_window, load_image, sample_times, score_samples

DATA = Path(__file__).resolve().parent / ".data"
CODEC_THREADS = 1


def ensure_catalog(items: int, seed: int) -> Path:
    folder = DATA / f"catalog-{items}-{seed}"
    catalog = folder / "catalog.jsonl"
    if not catalog.exists():
        shutil.rmtree(folder, ignore_errors=True)
        started = time.perf_counter()
        write_sample_catalog(folder, items, seed=seed)
        print(
            f"generated {items} items (720p, 15-30 s, libx264 defaults) in {time.perf_counter() - started:.0f} s"
        )
    return catalog


def repeated_catalog(base: Path, items: int) -> Path:
    """A catalog of `items` lines reusing the base catalog's videos under new item ids."""
    entries = [json.loads(line) for line in base.read_text().splitlines() if line.strip()]
    target = base.parent / f"repeat-{items}.jsonl"
    with open(target, "w") as handle:
        for k in range(items):
            entry = dict(entries[k % len(entries)], item_id=f"rep-{k:04d}")
            handle.write(json.dumps(entry) + "\n")
    return target


def entries_of(catalog: Path) -> list[CatalogEntry]:
    records = read_catalog(catalog, load_settings().source_policy(JobKind.RUN.value))
    return [entry for _, entry in records if isinstance(entry, CatalogEntry)]


def encode_options(config: OutputConfig) -> EncodeOptions:
    return EncodeOptions(
        config.crf, config.preset, CODEC_THREADS, config.audio_bitrate, sound_options(config)
    )


# --- (a) and (b): the naive design


def read_every_frame(path: Path, info: VideoInfo, fps: float) -> list[Frame]:
    """OpenCV read() of every frame, keeping the one on screen at each sample time."""
    capture = cv2.VideoCapture(str(path), cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, CODEC_THREADS])
    targets = sample_times(info, fps)
    frames: list[Frame] = []
    previous: tuple[float, np.ndarray] | None = None
    height = round(info.height * ANALYSIS_WIDTH / info.width)

    def analysis_frame(t: float, bgr: np.ndarray) -> Frame:
        small = cv2.resize(bgr, (ANALYSIS_WIDTH, height), interpolation=cv2.INTER_AREA)
        return Frame(t, cv2.cvtColor(small, cv2.COLOR_BGR2RGB))

    index = 0
    while index < len(targets):
        ok, bgr = capture.read()
        if not ok:
            break
        t = capture.get(cv2.CAP_PROP_POS_MSEC) / 1000.0
        while index < len(targets) and t > targets[index] + 1e-6 and previous is not None:
            frames.append(analysis_frame(*previous))
            index += 1
        previous = (t, bgr)
    while index < len(targets) and previous is not None:
        frames.append(analysis_frame(*previous))
        index += 1
    capture.release()
    return frames


class StageClock:
    """CPU seconds per stage, summed across items, for a run that does one item at a time: the whole process's
    CPU, so the threads a stage starts (one encoder per clip, torch's and onnxruntime's) count too. Concurrent
    items (b) would mix their stages, so only (a)'s breakdown is printed."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.process_time()
        yield
        self.cpu[name] += time.process_time() - start


def naive_item(
    entry: CatalogEntry,
    config: OutputConfig,
    out: Path,
    clock: StageClock,
    model: LocalInference,
    settings: Settings,
    opener: Fetcher,
) -> None:
    video = Path(entry.video)
    with clock.stage("prepare"), VideoSource(video) as source:
        info = source.info
    with clock.stage("analyse"):
        frames = read_every_frame(video, info, config.sample_fps)
        template = product_template(load_image(Path(entry.image), settings.max_image_pixels))
        key = PriorityKey(0.0, 0.0)
        samples = score_samples(model, frames, template, key, info)
        # the same text detection (the daemon's model, run in process), saliency and crop planner as reelgen's
        # select stage
        chosen = choose(info, samples, config)
        decoding = replace(Decoding.from_settings(settings), threads=CODEC_THREADS)
        analysis = frame_window(entry, info, chosen, opener, model, key, config, decoding)
    with clock.stage("render"):
        for spec in clip_specs(entry, info, analysis, config, out):
            render_window(
                video, analysis.window.start_s, analysis.window.end_s, [spec], encode_options(config)
            )


def clip_specs(
    entry: CatalogEntry, info: VideoInfo, analysis: Analysis, config: OutputConfig, out: Path
) -> list[OutputSpec]:
    """Every aspect's clip of an analysed item, written under out/<item_id>/."""
    specs = []
    for pair in config.aspect_pairs:
        size = aspect_size(pair, info.width, info.height, config.max_output_side)
        specs.append(
            OutputSpec(
                size.label, size.out_w, size.out_h, analysis.crop_path(size.label),
                out / entry.item_id / f"{size.file_stem}.mp4", padded=analysis.padded.get(size.label, False),
                picture_share=analysis.picture_share.get(size.label, 1.0),
            )
        )  # fmt: skip
    return specs


def run_in_process(
    entries: list[CatalogEntry], config: OutputConfig, out: Path, threads: int
) -> tuple[float, float, StageClock]:
    clock = StageClock()
    # the same scorer as the daemon's, run in this process, as the seed's naive design did
    model = LocalInference()
    settings = load_settings()
    opener = Fetcher(settings)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if threads == 1:
        for entry in entries:
            naive_item(entry, config, out, clock, model, settings, opener)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda e: naive_item(e, config, out, clock, model, settings, opener), entries))
    return time.perf_counter() - wall0, time.process_time() - cpu0, clock


# --- (c) reelgen


class PeakRss(threading.Thread):
    """Polls this process's descendants and keeps the peak resident memory of workers and of the daemon."""

    def __init__(self, every_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.every_s = every_s
        self.peak_mb = {"worker": 0.0, "daemon": 0.0}
        self._halt = threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        while not self._halt.wait(self.every_s):
            for child in me.children(recursive=True):
                try:
                    command = " ".join(child.cmdline())
                    rss = child.memory_info().rss / 2**20
                except psutil.Error:
                    continue
                kind = "daemon" if "gpu_service" in command else "worker" if "celery" in command else None
                if kind is not None:
                    self.peak_mb[kind] = max(self.peak_mb[kind], rss)

    def stop(self) -> dict[str, float]:
        self._halt.set()
        self.join()
        return self.peak_mb


def children_usage() -> resource.struct_rusage:
    return resource.getrusage(resource.RUSAGE_CHILDREN)


def run_reelgen(
    catalog: Path, out: Path, state: Path
) -> tuple[float, float, dict[str, dict[str, float]], dict[str, float], DaemonUsage | None]:
    # every item does its own work: the steady and scaling rounds repeat the catalog's videos under new ids,
    # which shared work (workers/sharing.py, measured by bench/shared.py) would copy instead of rendering
    settings = load_settings(out=str(out), state_dir=state, codec_threads=CODEC_THREADS, share_work=False)
    before, cpu0 = children_usage(), time.process_time()
    peaks = PeakRss()
    peaks.start()
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        outcome = run_catalog(settings, CatalogRef.parse(str(catalog)), stream=quiet)
    wall = time.perf_counter() - started
    peak_mb = peaks.stop()
    after = children_usage()
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) + time.process_time() - cpu0
    if outcome.exit_code != 0:
        raise SystemExit(f"reelgen run exited {outcome.exit_code}")
    return wall, cpu, outcome.stages, peak_mb, outcome.inference


# --- (d) the render floor


def floor_item(args: tuple[str, dict[str, Any], str, dict[str, Any]]) -> None:
    video, manifest, out, options = args
    window = manifest["window"]
    specs = []
    for output in manifest["outputs"]:
        crops = output["crops"]
        path = CropPath(
            tuple(c["t"] for c in crops), tuple(CropRect(c["x"], c["y"], c["w"], c["h"]) for c in crops)
        )
        stem = output["aspect"].replace(":", "x")
        specs.append(
            OutputSpec(
                output["aspect"], output["width"], output["height"], path, Path(out) / f"{stem}.mp4",
                padded=output["padded"], picture_share=output["picture_share"],
            )
        )  # fmt: skip
    render_window(Path(video), window["start_s"], window["end_s"], specs, EncodeOptions(**options))


def run_floor(
    entries: list[CatalogEntry], manifests: Path, out: Path, config: OutputConfig
) -> tuple[float, float]:
    options = encode_options(config)
    jobs = [
        (
            entry.video,
            json.loads((manifests / entry.item_id / "manifest.json").read_text()),
            str(out / entry.item_id),
            options.__dict__,
        )
        for entry in entries
    ]
    before = children_usage()
    started = time.perf_counter()
    # held to one OpenCV thread per process, as reelgen's workers are: the floor keeps the CPU budget of the
    # design it is the floor of
    with multiprocessing.get_context("spawn").Pool(
        os.cpu_count(), initializer=cv2.setNumThreads, initargs=(CODEC_THREADS,)
    ) as pool:
        pool.map(floor_item, jobs, chunksize=1)
        pool.close()
        pool.join()
    wall = time.perf_counter() - started
    after = children_usage()
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def median_round(rounds: list[tuple[float, float]]) -> tuple[float, float]:
    """The (wall, CPU) of the round with the median wall time."""
    return sorted(rounds)[len(rounds) // 2]


def per_item(stages: dict[str, float], items: int) -> dict[str, float]:
    return {stage: round(seconds / items, 2) for stage, seconds in stages.items()}


def analysis_share(stages: dict[str, dict[str, float]]) -> float | None:
    """The analysis's CPU-seconds (every stage before the render: fetching, sampling, scoring, framing) over the
    render's, from a run's stages."""
    render = stages.get("render", {}).get("cpu", 0.0)
    analysis = sum(v.get("cpu", 0.0) for stage, v in stages.items() if stage != "render")
    return round(analysis / render, 3) if render > 0 else None


def timed(label: str, fn: Callable[[], Any]) -> Any:
    print(f"running {label} ...", flush=True)
    return fn()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=6)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--scaling", action="store_true", help="also time reelgen on 10 and 100 items")
    parser.add_argument(
        "--designs",
        default="abcd",
        help="which designs to run, e.g. 'cd' for reelgen and the floor alone on a larger catalog "
        "(the floor renders reelgen's choices, so d needs c)",
    )
    parser.add_argument(
        "--steady-items",
        type=int,
        default=24,
        help="items of the steady-state round of (c) then (d), the catalog's videos repeated under new ids "
        "(0: none)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="rounds of (c) then (d); items/min are the median round's, c_over_d the median of the rounds' ratios",
    )
    args = parser.parse_args()
    designs = set(args.designs)
    if not designs <= set("abcd") or ("d" in designs and "c" not in designs):
        parser.error("--designs takes letters from 'abcd', and d needs c")
    for line in machine_lines():
        print(line)
    catalog = ensure_catalog(args.items, args.seed)
    entries = entries_of(catalog)
    settings: Settings = load_settings()
    config = settings.output_config()
    cpus = os.cpu_count() or 1
    work = DATA / "runs"
    shutil.rmtree(work, ignore_errors=True)
    n = len(entries)
    print(f"{n} items, aspects {','.join(config.aspects)}, encoder libx264 {config.preset} CRF {config.crf}, "
          f"{CODEC_THREADS} codec thread(s) per encoder/decoder")  # fmt: skip

    runs: dict[str, tuple[float, float]] = {}
    if "a" in designs:
        a_wall, a_cpu, a_clock = timed("(a) naive", lambda: run_in_process(entries, config, work / "a", 1))
        runs["a"] = (a_wall, a_cpu)
    if "b" in designs:
        b_wall, b_cpu, _ = timed(
            "(b) naive, 4 threads", lambda: run_in_process(entries, config, work / "b", 4)
        )
        runs["b"] = (b_wall, b_cpu)
    # (c) and (d) run in rounds, each (d) right after its (c): this machine's speed drifts by ±10-15% within
    # minutes, and a ratio of two runs taken seconds apart is far steadier than one of runs a minute apart
    pair_ratios: list[float] = []
    inference: DaemonUsage | None = None
    if "c" in designs:
        c_rounds: list[tuple[float, float]] = []
        d_rounds: list[tuple[float, float]] = []
        for r in range(args.repeats):
            out, state = work / f"c{r}", work / f"c{r}-state"
            c_wall, c_cpu, c_stages, peak_mb, inference = timed(
                f"(c) reelgen, round {r + 1}",
                lambda o=out, s=state: run_reelgen(catalog, o, s),  # type: ignore[misc]
            )
            c_rounds.append((c_wall, c_cpu))
            if "d" in designs:
                d_wall, d_cpu = timed(
                    f"(d) render floor, round {r + 1}",
                    lambda o=out, r=r: run_floor(entries, o, work / f"d{r}", config),  # type: ignore[misc]
                )
                d_rounds.append((d_wall, d_cpu))
                pair_ratios.append(d_wall / c_wall)
        runs["c"] = median_round(c_rounds)
        if d_rounds:
            runs["d"] = median_round(d_rounds)

    rates = {key: n / wall * 60 for key, (wall, _cpu) in runs.items()}
    for key, (wall, cpu) in runs.items():
        print(
            f"({key}) {rates[key]:6.2f} items/min  wall {wall:6.1f} s  CPU {cpu:6.1f} s "
            f"({cpu / n:.1f} CPU-s/item)  CPU utilisation {cpu / (wall * cpus):.0%}"
        )
    if "a" in runs:
        print(f"(a) CPU-s per item by stage: {per_item(a_clock.cpu, n)}")
    if "c" in runs:
        print(
            "(c) CPU-s per item by stage (last round): "
            f"{per_item({s: v.get('cpu', 0.0) for s, v in c_stages.items()}, n)}"
        )
        print(
            f"(c) peak RSS (last round): worker process {peak_mb['worker']:.0f} MiB, inference daemon {peak_mb['daemon']:.0f} MiB"
        )
        if inference is not None:
            print(f"(c) {inference.describe()} (last round)")

    def ratio(top: str, bottom: str) -> float | None:
        return round(rates[top] / rates[bottom], 3) if top in rates and bottom in rates else None

    gpu_busy = (
        round(inference.busy_fraction, 3)
        if inference is not None and inference.device.startswith("cuda")
        else None
    )
    steady = None
    if "d" in designs and args.steady_items > 0:
        # the start-up (Redis, the daemon's torch import, the workers' first imports) is paid once a run: over
        # this many items it is a small share, what a backfill sees
        many = repeated_catalog(catalog, args.steady_items)
        many_entries = entries_of(many)
        s_wall = timed(
            f"(c) reelgen, steady state, {args.steady_items} items",
            lambda: run_reelgen(many, work / "steady", work / "steady-state"),
        )[0]
        f_wall = timed(
            f"(d) render floor, steady state, {args.steady_items} items",
            lambda: run_floor(many_entries, work / "steady", work / "steady-d", config),
        )[0]
        steady = round(f_wall / s_wall, 3)
        print(f"c/d steady state, {args.steady_items} items: {steady} (c {s_wall:.1f} s, d {f_wall:.1f} s)")
    # one item in flight: its clips' encoders are all the work there is for the cores
    one_stages = run_reelgen(repeated_catalog(catalog, 1), work / "one", work / "one-state")[2]
    render = one_stages.get("render", {})
    one_item = round(render["wall"] / render["cpu"], 3) if render.get("cpu") else None
    print(
        f"(c) one item: render wall {render.get('wall', 0.0):.2f} s over {render.get('cpu', 0.0):.2f} CPU-s"
    )
    result: dict[str, Any] = {
        f"{key}_items_per_min": round(rates[key], 3) if key in rates else None for key in "abcd"
    }
    if pair_ratios:
        print(f"c/d per round (each (d) right after its (c)): {[round(x, 3) for x in pair_ratios]}")
    result |= {
        "c_over_a": ratio("c", "a"),
        "c_over_b": ratio("c", "b"),
        "c_over_d": round(statistics.median(pair_ratios), 3) if pair_ratios else None,
        "c_over_d_rounds": [round(x, 3) for x in pair_ratios],
        "c_over_d_steady": steady,
        "steady_items": args.steady_items if steady is not None else None,
        "analysis_share": analysis_share(c_stages) if "c" in runs else None,
        "render_wall_over_cpu_1item": one_item,
        "gpu_busy": gpu_busy,
        "mean_batch": round(inference.mean_batch, 2) if inference is not None else None,
        "items": n,
    }
    if args.scaling:
        walls = {}
        for items in (10, 100):
            repeated = repeated_catalog(catalog, items)
            walls[items] = timed(
                f"(c) reelgen on {items} items",
                lambda r=repeated, i=items: run_reelgen(r, work / f"s{i}", work / f"s{i}-state"),  # type: ignore[misc]
            )[0]
            print(f"(c) {items} items: wall {walls[items]:.1f} s ({walls[items] / items:.2f} s/item)")
        result["wall_10"] = round(walls[10], 1)
        result["wall_100"] = round(walls[100], 1)
        result["scaling_100_over_10"] = round(walls[100] / walls[10], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
