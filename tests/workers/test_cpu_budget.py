"""A process keeps to its CPU budget in OpenCV's pool as in its codecs: a worker at its threads per worker, the
daemon at its torch threads. OpenCV's default is a thread per core: a pool over every core in every worker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import pytest
import torch

from core.daemon_settings import DaemonSettings
from core.settings import load_settings
from gpu_service.device import pin_compute_thread
from jobs.local.redis_server import EmbeddedRedis
from workers import tasks


@pytest.fixture
def opencv_threads() -> Iterator[None]:
    """OpenCV's and torch's pools as they were before the test."""
    before, torch_before = cv2.getNumThreads(), torch.get_num_threads()
    yield
    cv2.setNumThreads(before)
    torch.set_num_threads(torch_before)


@pytest.mark.parametrize("threads", [1, 3])
def test_a_worker_holds_opencv_to_its_threads_per_worker(
    threads: int, tmp_path: Path, redis_server: EmbeddedRedis, opencv_threads: None
) -> None:
    settings = load_settings(
        redis_url=redis_server.url,
        state_dir=str(tmp_path / "state"),
        out=str(tmp_path),
        cpus=3,
        workers=1,
        codec_threads=threads,
    )
    tasks.WorkerContext.create(settings)
    assert cv2.getNumThreads() == settings.threads_per_worker == threads


@pytest.mark.parametrize("threads", [1, 3])
def test_the_daemon_holds_opencv_to_its_torch_threads(threads: int, opencv_threads: None) -> None:
    assert pin_compute_thread(DaemonSettings(torch_threads=threads)) == threads
    assert cv2.getNumThreads() == threads
