"""Throughput of the inference daemon with 1, 4, 8 and 16 client processes vs the same model called directly.

The model is `clip_vit_b16_image`, a randomly initialised CLIP ViT-B/16-sized image encoder (its cost does not
depend on its weights), on 224×224 frames. Each client process (it never imports torch) sends requests of
--frames-per-request frames in a loop. The daemon's frames/s is measured from its own counters between two batch
completions, so partial batches at the edges do not distort it. The direct baseline runs the model in this process
on uint8 frames (preprocessing included) at the daemon's observed mean batch size and with its thread count, with
no clients running.

The daemon's own cost is measured after, with the same clients against `probe`, a model that reads one pixel a
frame: the daemon's CPU time per frame (its transport, queue, batching, shared-memory slots and replies).

Run: .venv/bin/python bench/daemon.py; the last line is JSON with "efficiency_at_8" (daemon ÷ direct at 8 clients),
"overhead_us_per_frame_at_8" (the daemon's CPU µs a frame against `probe`, 8 clients) and, on a GPU, "gpu_busy"
and "frames_per_s" at the highest load. Targets: efficiency_at_8 >= 0.9; gpu_busy >= 0.9.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpu_service.client import InferenceClient, wait_until_ready  # noqa: E402
from gpu_service.priority import PriorityKey  # noqa: E402

MODEL = "clip_vit_b16_image"
#: reads one pixel a frame (gpu_service/models/basic.py): what a request costs beyond its model
OVERHEAD_MODEL = "probe"


def client_loop(
    sock: str, model: str, stop: Event, frames_per_request: int, size: int, index: int, cores: tuple[int, ...]
) -> None:
    import numpy as np

    os.sched_setaffinity(0, cores)
    frames = np.random.default_rng(index).integers(
        0, 256, (frames_per_request, size, size, 3), dtype=np.uint8
    )
    client = InferenceClient(sock, timeout_s=600)
    key = PriorityKey(0.0, float(index))
    while not stop.is_set():
        client.infer(model, frames, key)
    client.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_level(
    sock: Path,
    daemon_pid: int,
    clients: int,
    args: argparse.Namespace,
    client_cores: tuple[int, ...],
    model: str = MODEL,
) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    procs = [
        ctx.Process(
            target=client_loop,
            args=(str(sock), model, stop, args.frames_per_request, args.size, i, client_cores),
        )
        for i in range(clients)
    ]
    for p in procs:
        p.start()
    probe = InferenceClient(sock)
    try:
        # Skip the ramp-up: start counting once two batches completed with every client running.
        start_batches = probe.ping()["stats"]["batches"]
        while probe.ping()["stats"]["batches"] < start_batches + 2:
            time.sleep(0.02)
        s0 = probe.ping()["stats"]
        c0 = cpu_seconds(daemon_pid)
        t0 = time.monotonic()
        while True:
            time.sleep(0.05)
            s1 = probe.ping()["stats"]
            if (
                s1["batches"] - s0["batches"] >= args.min_batches
                and time.monotonic() - t0 >= args.min_seconds
            ):
                break
        c1 = cpu_seconds(daemon_pid)
        wall = s1["last_batch_end"] - s0["last_batch_end"]
        frames = s1["frames"] - s0["frames"]
        batches = s1["batches"] - s0["batches"]
        return {
            "clients": clients,
            "frames_per_s": frames / wall,
            "mean_batch": frames / batches,
            "busy": (s1["busy_s"] - s0["busy_s"]) / wall,
            "daemon_cpu_cores": (c1 - c0) / (time.monotonic() - t0),
            "daemon_cpu_us_per_frame": (c1 - c0) / frames * 1e6,
        }
    finally:
        stop.set()
        for p in procs:
            p.join(120)
            if p.is_alive():
                p.kill()
        probe.close()


class Direct:
    """The same model in this process, called on uint8 frames with its preprocessing, no daemon in between."""

    def __init__(self, device: str, threads: int) -> None:
        import torch

        from gpu_service import registry
        from gpu_service.device import resolve_device

        torch.set_num_threads(threads)
        self.device = resolve_device(device)
        registry.import_modules()
        self.model = registry.create(MODEL, self.device).module

    def frames_per_s(self, batch: int, size: int, iterations: int) -> float:
        import numpy as np
        import torch

        from gpu_service import engine

        frames = np.random.default_rng(0).integers(0, 256, (batch, size, size, 3), dtype=np.uint8)
        host = torch.from_numpy(frames)

        def once() -> None:
            with torch.inference_mode():
                out = engine.forward(self.model, [host.to(self.device)], [{}], batch)
                engine.outputs_to_host(out)

        once()
        t0 = time.perf_counter()
        for _ in range(iterations):
            once()
        return batch * iterations / (time.perf_counter() - t0)


@contextlib.contextmanager
def _daemon(
    model: str, args: argparse.Namespace, levels: list[int], compute_cores: tuple[int, ...]
) -> Iterator[tuple[Path, subprocess.Popen[bytes], dict[str, Any]]]:
    """A daemon serving model, its compute thread on compute_cores: (socket, process, status)."""
    buckets = ",".join(str(b) for b in (1, 2, 4, 8, 16, 32, 64) if b <= args.max_batch)
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
        sock = Path(tmp) / "d.sock"
        cmd = [
            sys.executable, "-m", "gpu_service", "--socket", str(sock), "--device", args.device,
            "--models", model, "--max-batch", str(args.max_batch), "--buckets", buckets,
            "--max-delay-ms", args.max_delay_ms, "--slots", str(2 * max(levels) + 2), "--slot-mb", "1",
            "--threads", str(len(compute_cores)), "--pin-cores", ",".join(map(str, compute_cores)),
            "--log-level", "WARNING",
        ]  # fmt: skip
        daemon = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)
        try:
            yield sock, daemon, wait_until_ready(sock, timeout_s=300)
        finally:
            daemon.terminate()
            daemon.wait(60)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="1,4,8,16")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--frames-per-request", type=int, default=1)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--min-batches", type=int, default=3)
    parser.add_argument("--min-seconds", type=float, default=2.0)
    parser.add_argument(
        "--threads", type=int, default=0, help="compute cores (and torch threads); 0: all but one"
    )
    parser.add_argument(
        "--max-delay-ms",
        default="20",
        help="the daemon's batching delay; a batch goes earlier once every client has a request waiting",
    )
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    # As in a deployment: the compute thread gets dedicated cores, the clients (workers) the others.
    cores = sorted(os.sched_getaffinity(0))
    n_compute = args.threads or max(1, len(cores) - 1)
    compute_cores = tuple(cores[-n_compute:])
    client_cores = tuple(cores[:-n_compute]) or tuple(cores)

    print(f"machine: {os.cpu_count()} CPUs ({platform.machine()}), python {platform.python_version()}")
    with _daemon(MODEL, args, levels, compute_cores) as (sock, daemon, status):
        print(
            f"daemon: device {status['device']} ({status['device_name']}), {status['torch_threads']} torch "
            f"threads pinned to cores {compute_cores}, clients on cores {client_cores}, max_batch {args.max_batch}, max_delay {args.max_delay_ms} ms, "
            f"{args.frames_per_request} frame(s) of "
            f"{args.size}x{args.size} per request"
        )
        # The direct baseline runs on the compute thread's cores with its thread count, no clients running.
        os.sched_setaffinity(0, compute_cores)
        direct = Direct(args.device, status["torch_threads"])
        results = []
        for n in levels:
            r = measure_level(sock, daemon.pid, n, args, client_cores)
            # Measured right after its level, so both see the same machine (others may share it).
            batch = max(1, round(r["mean_batch"]))
            r["direct_frames_per_s"] = direct.frames_per_s(batch, args.size, args.min_batches)
            r["efficiency"] = r["frames_per_s"] / r["direct_frames_per_s"]
            results.append(r)
            print(
                f"daemon  {n:2d} clients: {r['frames_per_s']:8.2f} frames/s, mean batch {r['mean_batch']:.2f}, "
                f"busy {r['busy']:.0%}, daemon CPU {r['daemon_cpu_cores']:.2f} cores; "
                f"direct at batch {batch}: {r['direct_frames_per_s']:.2f} frames/s",
                flush=True,
            )
        os.sched_setaffinity(0, cores)
    # The daemon's own cost: the same clients against a model that reads one pixel a frame (the transport, the
    # queue, batching, the shared-memory slots and the replies are all that is left)
    with _daemon(OVERHEAD_MODEL, args, levels, compute_cores) as (sock, daemon, _):
        overhead = []
        for n in levels:
            r = measure_level(sock, daemon.pid, n, args, client_cores, OVERHEAD_MODEL)
            overhead.append(r)
            print(
                f"overhead {n:2d} clients: {r['frames_per_s']:8.1f} frames/s, mean batch {r['mean_batch']:.2f}, "
                f"daemon CPU {r['daemon_cpu_us_per_frame']:.0f} µs a frame",
                flush=True,
            )

    by_clients = {int(r["clients"]): r for r in results}
    top = results[-1]
    summary: dict[str, Any] = {
        "device": status["device"],
        "daemon_frames_per_s": {str(k): round(v["frames_per_s"], 2) for k, v in by_clients.items()},
        "direct_frames_per_s": {str(k): round(v["direct_frames_per_s"], 2) for k, v in by_clients.items()},
        "mean_batch": {str(k): round(v["mean_batch"], 2) for k, v in by_clients.items()},
        "efficiency": {str(k): round(v["efficiency"], 3) for k, v in by_clients.items()},
        "efficiency_at_8": round(by_clients[8]["efficiency"], 3) if 8 in by_clients else None,
        "daemon_cpu_cores": {str(k): round(v["daemon_cpu_cores"], 2) for k, v in by_clients.items()},
        "overhead_us_per_frame": {
            str(int(r["clients"])): round(r["daemon_cpu_us_per_frame"]) for r in overhead
        },
        "overhead_frames_per_s": {str(int(r["clients"])): round(r["frames_per_s"], 1) for r in overhead},
    }
    at_8 = [r for r in overhead if int(r["clients"]) == 8]
    summary["overhead_us_per_frame_at_8"] = round(at_8[0]["daemon_cpu_us_per_frame"]) if at_8 else None
    if status["device"].startswith("cuda"):
        summary["gpu_busy"] = round(top["busy"], 3)
        summary["frames_per_s"] = round(top["frames_per_s"], 2)
        saturating = [r for r in results if r["busy"] >= 0.9]
        summary["saturating_clients"] = int(saturating[0]["clients"]) if saturating else None
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
