"""Stopping the child processes reelgen supervises (workers, the inference daemon), and their ending with it."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def exit_with_parent(parent_pid: int) -> None:
    """In a process that `reelgen run` started: have the kernel send it SIGTERM (a graceful stop) when that
    process ends, however it ends. A run killed with SIGKILL or by the OOM killer cannot stop its children
    itself; without this its daemon and workers ran on for good, and the next run on the same state folder
    found the old daemon holding its socket.

    The kernel ties the signal to the thread that forked this process; the run starts its children from its
    main thread, which lives as long as the run."""
    if not sys.platform.startswith("linux"):
        log.debug("no parent-death signal on %s: this process may outlive its run", sys.platform)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG): {os.strerror(err)}")
    if os.getppid() != parent_pid:  # the run ended before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


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

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def detach(self) -> subprocess.Popen[bytes] | None:
        """Hand the process to a caller that stops it together with others (terminate)."""
        process, self._process = self._process, None
        return process

    def stop(self) -> None:
        terminate(self.detach(), timeout_s=self.stop_timeout_s)
