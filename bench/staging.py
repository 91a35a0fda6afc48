"""Staging a 12 MB frame batch worker -> daemon: the project's shared-memory path vs memcpy vs a pickled Queue.

shm:    InferenceClient.infer() on the daemon's `probe` model (it reads one pixel per frame, so the figure is the
        transport: lease a slot, copy the frames into it, the control messages, the daemon mapping the slot as a
        tensor, the reply and reading the result back).
memcpy: one plain copy of the same bytes into a buffer that was already written once (no page faults), timed
        alternately with the shm path, call by call.
queue:  the same array through a multiprocessing.Queue to another process, which acknowledges with a small message.

Run: .venv/bin/python bench/staging.py [--repeats N]; the last line is JSON.
Targets (docs/architecture.md, Contracts): shm_over_memcpy <= 1.5, queue_over_shm >= 10.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpu_service.client import InferenceClient, wait_until_ready  # noqa: E402
from gpu_service.priority import PriorityKey  # noqa: E402

SHAPE = (16, 512, 512, 3)  # 12 MiB of uint8


def _echo(q_in: Queue[Any], q_out: Queue[Any]) -> None:
    while True:
        item = q_in.get()
        if item is None:
            return
        q_out.put(item.shape)


def time_ms(*fns: Any, repeats: int, warmup: int = 3) -> list[float]:
    """The median milliseconds of each function, timed in turn within every repeat: a shared machine's speed
    drifts by tens of percent over seconds, and interleaving keeps the ratios between them side by side."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, times in zip(fns, samples, strict=True):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1000)
    return [statistics.median(times) for times in samples]


def bench_queue(frames: npt.NDArray[np.uint8], repeats: int) -> float:
    ctx = mp.get_context("spawn")
    q_in: Queue[Any] = ctx.Queue()
    q_out: Queue[Any] = ctx.Queue()
    child = ctx.Process(target=_echo, args=(q_in, q_out), daemon=True)
    child.start()
    try:

        def once() -> None:
            q_in.put(frames)
            q_out.get()

        return time_ms(once, repeats=repeats)[0]
    finally:
        q_in.put(None)
        child.join(10)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()

    frames = np.random.default_rng(0).integers(0, 256, SHAPE, dtype=np.uint8)
    with tempfile.TemporaryDirectory(prefix="reelgen-bench-") as tmp:
        sock = Path(tmp) / "d.sock"
        # max_delay 0 and a bucket of exactly one request: batching waits are not staging cost.
        cmd = [
            sys.executable,
            "-m",
            "gpu_service",
            "--socket",
            str(sock),
            "--device",
            args.device,
            "--models",
            "probe",
            "--slots",
            "4",
            "--slot-mb",
            "16",
            "--max-batch",
            str(SHAPE[0]),
            "--buckets",
            str(SHAPE[0]),
            "--max-delay-ms",
            "0",
            "--log-level",
            "WARNING",
        ]
        daemon = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)
        try:
            status = wait_until_ready(sock, timeout_s=120)
            print(
                f"machine: {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
                f"python {platform.python_version()}, daemon device {status['device']} ({status['device_name']})"
            )
            print(f"batch: {SHAPE} uint8 = {frames.nbytes / 2**20:.1f} MiB; {args.repeats} repeats, medians")
            client = InferenceClient(sock)
            key = PriorityKey(0.0, 0.0)
            result = client.infer("probe", frames, key)
            assert (result["first_pixel"] == frames[:, 0, 0, :]).all(), "frames arrived corrupted"
            dst = np.empty_like(frames)
            dst[...] = 1
            shm_ms, memcpy_ms = time_ms(
                lambda: client.infer("probe", frames, key),
                lambda: np.copyto(dst, frames),
                repeats=args.repeats,
            )
            client.close()
        finally:
            daemon.terminate()
            daemon.wait(30)

    queue_ms = bench_queue(frames, max(10, args.repeats // 2))
    print(f"shm path {shm_ms:.2f} ms, memcpy {memcpy_ms:.2f} ms, pickled Queue {queue_ms:.2f} ms")
    print(
        json.dumps(
            {
                "shm_ms": round(shm_ms, 3),
                "memcpy_ms": round(memcpy_ms, 3),
                "queue_ms": round(queue_ms, 3),
                "shm_over_memcpy": round(shm_ms / memcpy_ms, 3),
                "queue_over_shm": round(queue_ms / shm_ms, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
