"""Stopping the child processes reelgen supervises (workers, the inference daemon)."""

from __future__ import annotations

import signal
import subprocess


def terminate(process: subprocess.Popen[bytes] | None, timeout_s: float) -> None:
    """SIGTERM (a graceful shutdown for Celery and the daemon), then SIGKILL if it is not gone in time."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
