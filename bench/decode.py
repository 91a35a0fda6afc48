"""Sampling cost: OpenCV read() of every frame vs grab()/retrieve() 1-in-N vs reelgen's sampler, on two
encodings of the same content (libx264 defaults, and a 1 s keyframe interval), all with one decoder thread; and
the wall time of sampling a 120 s video with 1 vs 2 segment workers.

Usage: .venv/bin/python bench/decode.py   (last line: JSON)
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import cv2

from monitoring.machine import machine_lines
from reelgen.sample_catalog import write_sample_catalog
from workers.analysis.scoring import ANALYSIS_WIDTH
from workers.media.segments import Segment, plan_segments
from workers.media.video import VideoSource

DATA = Path(__file__).resolve().parent / ".data"
SAMPLE_FPS = 2.0
THREADS = 1


def source_video(seconds: float, name: str) -> Path:
    folder = DATA / name
    video = folder / "videos" / "sku-0001.mp4"
    if not video.exists():
        shutil.rmtree(folder, ignore_errors=True)
        write_sample_catalog(folder, 1, seed=5, duration_s=(seconds, seconds))
    return video


def short_gop_copy(video: Path) -> Path:
    """The same pictures re-encoded with libx264's defaults but a keyframe every second."""
    target = video.with_name(video.stem + "-gop1s.mp4")
    if target.exists():
        return target
    with av.open(str(video)) as src, av.open(str(target), "w") as dst:
        stream = src.streams.video[0]
        rate = stream.average_rate or 25
        out = dst.add_stream("libx264", rate=rate)
        out.width, out.height, out.pix_fmt = stream.width, stream.height, "yuv420p"
        out.options = {"g": str(round(rate)), "keyint_min": str(round(rate))}
        for frame in src.decode(stream):
            frame.pict_type = av.video.frame.PictureType.NONE
            dst.mux(out.encode(frame))
        dst.mux(out.encode(None))
    return target


def cpu_seconds(fn: Callable[[], object], repeat: int = 2) -> float:
    """The lowest CPU time of a few runs (the machine is shared; the minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def opencv_read_all(video: Path) -> None:
    capture = cv2.VideoCapture(str(video), cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, THREADS])
    while capture.read()[0]:
        pass
    capture.release()


def opencv_grab_retrieve(video: Path, every: int) -> None:
    capture = cv2.VideoCapture(str(video), cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, THREADS])
    index = 0
    while capture.grab():
        if index % every == 0:
            capture.retrieve()
        index += 1
    capture.release()


def sampler(video: Path) -> None:
    with VideoSource(video, threads=THREADS) as source:
        segment = plan_segments(source.info.start_s, source.info.duration_s, SAMPLE_FPS, 1e9)[0]
        source.sample_fast(segment.times, 1.0 / SAMPLE_FPS, width=ANALYSIS_WIDTH)


def sample_segments(args: tuple[str, list[Segment]]) -> int:
    video, segments = args
    count = 0
    with VideoSource(Path(video), threads=THREADS) as source:
        for segment in segments:
            count += len(source.sample_fast(segment.times, 1.0 / SAMPLE_FPS, width=ANALYSIS_WIDTH))
    return count


_started: Any = None


def _keep_barrier(barrier: Any) -> None:
    global _started
    _started = barrier


def _warm_up(share: tuple[str, list[Segment]]) -> int:
    # a worker waiting at the barrier takes no other task, so each worker gets exactly one of these
    _started.wait(timeout=120)
    return sample_segments(share)


def segment_wall(video: Path, workers: int, repeats: int = 5) -> float:
    """Median wall time of sampling every segment of `video` with `workers` processes (one run is ~2 s, so a
    single one moves by ±10% with whatever else the machine does)."""
    with VideoSource(video) as source:
        # cut at keyframes, as the pipeline does (workers.pipeline.plan_sampling)
        info, keyframes = source.info, source.keyframe_times()
        segments = plan_segments(info.start_s, info.duration_s, SAMPLE_FPS, 10.0, keyframes)
    shares = [(str(video), segments[i::workers]) for i in range(workers)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers, initializer=_keep_barrier, initargs=(ctx.Barrier(workers),)) as pool:
        # start-up outside the timing, as in a long-running worker: every worker has imported everything and
        # sampled its share once (first use of the decoder and converters), and the file is in the page cache
        pool.map(_warm_up, shares, chunksize=1)
        walls = []
        for _ in range(repeats):
            start = time.perf_counter()
            pool.map(sample_segments, shares, chunksize=1)
            walls.append(time.perf_counter() - start)
        return statistics.median(walls)


def main() -> None:
    for line in machine_lines():
        print(line)
    default = source_video(30.0, "decode-30s")
    short = short_gop_copy(default)
    with VideoSource(default) as source:
        duration, fps = source.info.duration_s, source.info.fps
        default_keys = len(source.keyframe_times())
    every = round(fps / SAMPLE_FPS)
    print(f"{duration:.1f} s 720p at {fps:g} fps, sampling {SAMPLE_FPS:g} fps; default encoding has "
          f"{default_keys} keyframes; {THREADS} decoder thread")  # fmt: skip
    results: dict[str, float] = {}
    for label, video in (("default", default), ("short_gop", short)):
        read = cpu_seconds(lambda v=video: opencv_read_all(v)) / duration  # type: ignore[misc]
        grab = cpu_seconds(lambda v=video: opencv_grab_retrieve(v, every)) / duration  # type: ignore[misc]
        ours = cpu_seconds(lambda v=video: sampler(v)) / duration  # type: ignore[misc]
        print(f"{label:9s} CPU-s per source second: read() {read:.3f}  grab/retrieve 1-in-{every} {grab:.3f}  "
              f"reelgen sampler {ours:.3f}")  # fmt: skip
        results[f"sampler_over_read_{label}"] = round(read / ours, 2)
        if label == "default":
            results["grab_over_read"] = round(read / grab, 2)
    long = source_video(120.0, "decode-120s")
    one, two = segment_wall(long, 1), segment_wall(long, 2)
    print(f"120 s video, segments of 10 s (median of 5): 1 worker {one:.2f} s, 2 workers {two:.2f} s wall")
    results["segments2_speedup"] = round(one / two, 2)
    print(f"cpus available: {len(os.sched_getaffinity(0))}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
