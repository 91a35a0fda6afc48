"""The daemon's device set-up: which device, the compute thread's cores and torch threads, and on CUDA the slot
pool page-locked once, so that every host-to-device copy is an asynchronous DMA."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np
import torch

from core.daemon_settings import DaemonSettings
from core.errors import ConfigError
from gpu_service.shm import Segment

PinnedView = np.ndarray[Any, np.dtype[np.uint8]]


def resolve_device(spec: str) -> torch.device:
    if spec == "auto":
        return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    device = torch.device(spec)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {spec!r} was asked for but CUDA is not available; use auto or cpu")
        index = device.index or 0
        if index >= torch.cuda.device_count():
            raise ConfigError(f"device {spec!r}: only {torch.cuda.device_count()} CUDA devices exist")
        return torch.device("cuda", index)
    return device


def pin_compute_thread(settings: DaemonSettings) -> int:
    """Pin the calling thread to `pin_cores` and size torch's intra-op pool; returns torch's thread count."""
    if settings.pin_cores is not None:
        # On Linux this pins the calling thread only; torch's intra-op threads, created later by this
        # thread, inherit the mask.
        os.sched_setaffinity(0, settings.pin_cores)
    threads = settings.torch_threads or (len(settings.pin_cores) if settings.pin_cores else 0)
    if threads:
        torch.set_num_threads(threads)
    # the models' pre- and post-processing (resizes, the text detector's contours) runs in OpenCV's own pool:
    # held to the same budget, so that it does not spin on the workers' cores
    cv2.setNumThreads(torch.get_num_threads())
    return torch.get_num_threads()


def page_lock(segment: Segment) -> PinnedView:
    """Page-lock the whole slot pool; `page_unlock` undoes it before the segment is closed."""
    view = np.frombuffer(segment.mm, dtype=np.uint8)
    err = torch.cuda.cudart().cudaHostRegister(  # type: ignore[no-untyped-call]
        view.ctypes.data, segment.size, 0
    )
    if int(err) != 0:
        raise ConfigError(f"page-locking the {segment.size} byte slot pool failed (CUDA error {err})")
    return view


def page_unlock(view: PinnedView) -> None:
    torch.cuda.cudart().cudaHostUnregister(view.ctypes.data)  # type: ignore[no-untyped-call]


def gpu_gauges(device: torch.device) -> tuple[Callable[[], float], Callable[[], float], Callable[[], float]]:
    """Readers of the device's utilisation, reserved memory and total memory, for the daemon's gauges."""

    def utilization() -> float:
        try:
            return float(torch.cuda.utilization(device)) / 100.0
        except Exception:  # NVML missing (nvidia-ml-py not installed) or not permitted
            return float("nan")

    return (
        utilization,
        lambda: float(torch.cuda.memory_reserved(device)),
        lambda: float(torch.cuda.get_device_properties(device).total_memory),
    )
