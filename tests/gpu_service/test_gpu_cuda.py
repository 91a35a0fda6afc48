"""The CUDA-only branches of the daemon: page-locked pool, copy stream, device preprocessing, GPU metrics.

Marked `gpu` (deselected by default); run on a GPU machine with `pytest -m gpu tests/gpu_service/test_gpu_cuda.py`.
"""

from __future__ import annotations

import copy
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from core.daemon_settings import DaemonSettings
from gpu_service import engine
from gpu_service.client import InferenceClient
from gpu_service.priority import PriorityKey
from gpu_service.server import Daemon

pytestmark = pytest.mark.gpu

KEY = PriorityKey(0.0, 0.0)


@pytest.fixture
def cuda_daemon() -> Iterator[Daemon]:
    if not torch.cuda.is_available():
        pytest.fail("marked gpu but CUDA is not available")
    path = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp")) / "g.sock"
    settings = DaemonSettings(
        socket_path=path,
        device="cuda:0",
        models=("echo_stats", "clip_vit_b16_image"),
        slots=8,
        slot_bytes=16 << 20,
        max_batch=16,
        buckets=(1, 2, 4, 8, 16),
        metrics_port=0,
    )
    daemon = Daemon(settings)
    daemon.start()
    yield daemon
    daemon.stop()


def test_the_pool_is_page_locked_and_results_match_the_cpu(cuda_daemon: Daemon) -> None:
    assert cuda_daemon._segment is not None
    view = torch.from_numpy(cuda_daemon._segment.array(0, (1024,), np.uint8))
    assert view.is_pinned(), "the slot pool must be page-locked for asynchronous copies"
    f = np.random.default_rng(0).integers(0, 256, (5, 120, 160, 3), dtype=np.uint8)
    with InferenceClient(cuda_daemon.settings.socket_path) as client:
        out = client.infer("echo_stats", f, KEY)
        np.testing.assert_allclose(out["mean"], f.reshape(5, -1, 3).mean(1) / 255, atol=1e-5)
        gpu = client.infer("clip_vit_b16_image", f, KEY, context={"image": f[0]})
    cpu = engine.forward(
        cuda_daemon._models["clip_vit_b16_image"].module.to("cpu"),
        [torch.from_numpy(f)],
        [{"image": torch.from_numpy(f[0])}],
        8,
    )
    np.testing.assert_allclose(gpu["embedding"], cpu["embedding"].numpy(), atol=2e-3)
    np.testing.assert_allclose(gpu["score"], cpu["score"].numpy(), atol=2e-3)


def _from_clients(client: Callable[[int], None], clients: int = 8) -> list[BaseException]:
    """Run `client(i)` in `clients` threads at once; what they raised."""
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            client(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return errors


def test_overlapped_batches_from_many_clients_stay_correct(cuda_daemon: Daemon) -> None:
    def client(i: int) -> None:
        with InferenceClient(cuda_daemon.settings.socket_path) as c:
            for j in range(10):
                f = np.random.default_rng(i * 100 + j).integers(0, 256, (7, 64, 64, 3), dtype=np.uint8)
                out = c.infer("echo_stats", f, PriorityKey(0.0, float(i)))
                np.testing.assert_allclose(out["mean"], f.reshape(7, -1, 3).mean(1) / 255, atol=1e-5)

    assert _from_clients(client) == []
    assert cuda_daemon.status()["stats"]["busy_s"] > 0


def test_a_model_still_computing_when_the_next_batch_launches_gives_its_own_results(
    cuda_daemon: Daemon,
) -> None:
    # The CLIP-sized encoder takes milliseconds a batch, so with eight clients the next batch is launched while
    # the last is still on the compute stream: its outputs are read, and its events timed, only once it is done.
    model = copy.deepcopy(cuda_daemon._models["clip_vit_b16_image"].module).to("cpu")
    sent: dict[tuple[int, int], np.ndarray] = {}
    got: dict[tuple[int, int], np.ndarray] = {}

    def client(i: int) -> None:
        with InferenceClient(cuda_daemon.settings.socket_path) as c:
            for j in range(6):
                f = np.random.default_rng(i * 100 + j).integers(0, 256, (3, 224, 224, 3), dtype=np.uint8)
                sent[i, j] = f
                got[i, j] = c.infer("clip_vit_b16_image", f, PriorityKey(0.0, float(i)))["embedding"]

    assert _from_clients(client) == [] and not cuda_daemon.crashed.is_set()
    for key, frames in sent.items():
        cpu = engine.forward(model, [torch.from_numpy(frames)], [{}], 8)
        np.testing.assert_allclose(got[key], cpu["embedding"].numpy(), atol=2e-3, err_msg=str(key))


def test_gpu_metrics_are_exported(cuda_daemon: Daemon) -> None:
    text = (
        urllib.request.urlopen(f"http://127.0.0.1:{cuda_daemon.metrics_port}/metrics", timeout=5)
        .read()
        .decode()
    )
    assert "reelgen_gpu_memory_used_bytes" in text and "reelgen_gpu_utilization_ratio" in text
