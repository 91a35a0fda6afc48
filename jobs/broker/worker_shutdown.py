"""Up to two and a half seconds off every Celery worker shutdown: `reelgen run` stops its workers when the job
is over, and Kubernetes stops pods the same way, so each run and each rollout paid them.

Waking the idle loop: Celery's SIGTERM handler only sets a flag, which the worker's event loop reads once its
poll returns: on an idle worker up to a second later (kombu polls with a one-second timeout when no timer is due,
and the signal does not end the poll). A byte written from the handler to a pipe the loop watches ends the poll
at once; the loop then sees the flag and starts the warm shutdown.

Pool children exiting at once: a billiard child that leaves its work loop (the pool is closing, or the child is
being recycled) reports its death to the parent and then sleeps one second so that the parent can read the
report and SIGTERM it; while the worker shuts down nobody reads the report, so the sleep ran to its end and the
parent's join waited for it. The child has nothing left to do at that point (its last result is already sent,
and billiard ends it with os._exit, which runs no clean-up, after the sleep anyway), so it exits from Celery's
`worker_process_shutdown` signal, which billiard calls just before the report. The parent learns of the exit by
reaping the process, as it does for a child that was killed.

An idle pool stopping without the timer thread: while the pool drains, Celery's prefork pool keeps the event
loop's timers firing from a thread that sleeps half a second between passes and is joined after the pool, so
every stop waited out one nap even when the pool had nothing to drain. With no task received and unfinished
there is nothing to drain and no timer worth firing in the milliseconds the children take to exit, so the step
below unsets the current event loop just before the pool stops, which is Celery's own condition for joining
the pool directly (as it does for pools without an event loop); the Hub step still closes the loop itself.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from celery import bootsteps
from celery.signals import worker_process_shutdown, worker_shutting_down
from celery.worker import state as worker_state
from kombu.asynchronous import get_event_loop, set_event_loop


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


class StopIdlePoolPromptly(bootsteps.StartStopStep):
    # after the Pool step, so that its stop runs just before the pool's
    requires = ("celery.worker.components:Pool",)

    def stop(self, parent: Any) -> None:
        idle = not worker_state.reserved_requests and not worker_state.active_requests
        if idle and get_event_loop() is not None:
            set_event_loop(None)


@worker_process_shutdown.connect
def exit_pool_child(exitcode: int | None = None, **_: Any) -> None:
    """In a pool child leaving its work loop: exit now, with the exit code billiard would use after its sleep."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken stream must not keep the child alive
            stream.flush()
    os._exit(exitcode or 0)
