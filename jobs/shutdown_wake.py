"""Ending a Celery worker's idle wait when it is told to shut down.

Celery's SIGTERM handler only sets a flag, which the worker's event loop reads once its poll returns: on an
idle worker up to a second later (kombu polls with a one-second timeout when no timer is due, and the signal
does not end the poll). `reelgen run` stops its workers when the job is over, and Kubernetes stops pods the same
way, so every shutdown paid that second. A byte written from the handler to a pipe the loop watches ends the
poll at once; the loop then sees the flag and starts the warm shutdown.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from celery import bootsteps
from celery.signals import worker_shutting_down


class WakeOnShutdown(bootsteps.StartStopStep):
    requires = ("celery.worker.components:Hub",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._pipe: tuple[int, int] | None = None

    def start(self, parent: Any) -> None:
        if parent.hub is None:  # pools without an event loop (solo, threads) poll no hub
            return
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        os.set_blocking(write_end, False)
        parent.hub.add_reader(read_end, self._drain, read_end)
        self._pipe = (read_end, write_end)
        worker_shutting_down.connect(self._wake, weak=False)

    def stop(self, parent: Any) -> None:
        if self._pipe is None:
            return
        worker_shutting_down.disconnect(self._wake)
        read_end, write_end = self._pipe
        self._pipe = None
        with contextlib.suppress(Exception):  # the hub may already be closed during shutdown
            parent.hub.remove_reader(read_end)
        os.close(read_end)
        os.close(write_end)

    def _wake(self, **_: Any) -> None:
        # runs inside the signal handler: one non-blocking write (a full pipe already wakes the loop)
        if self._pipe is not None:
            with contextlib.suppress(BlockingIOError):
                os.write(self._pipe[1], b"\0")

    @staticmethod
    def _drain(fd: int) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(fd, 4096)
