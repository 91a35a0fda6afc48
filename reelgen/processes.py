"""Stopping the child processes reelgen supervises (workers, the inference daemon)."""

from __future__ import annotations

import signal
import subprocess
import time


def terminate(*processes: subprocess.Popen[bytes] | None, timeout_s: float) -> None:
    """SIGTERM (a graceful shutdown for Celery and the daemon), then SIGKILL whatever is not gone in time.

    Several processes are signalled together and share the deadline, so their shutdowns overlap.
    """
    running = [p for p in processes if p is not None and p.poll() is None]
    for process in running:
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for process in running:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class ChildProcess:
    """A supervised child process: stopped gracefully on its own, or handed over to be stopped with others."""

    #: how long a graceful shutdown may take before SIGKILL
    stop_timeout_s = 20.0

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None

    def detach(self) -> subprocess.Popen[bytes] | None:
        """Hand the process to a caller that stops it together with others (terminate)."""
        process, self._process = self._process, None
        return process

    def stop(self) -> None:
        terminate(self.detach(), timeout_s=self.stop_timeout_s)
