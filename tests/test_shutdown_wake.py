"""A worker told to shut down leaves its idle poll at once instead of up to a second later."""

from __future__ import annotations

import select
from types import SimpleNamespace

from celery.signals import worker_shutting_down
from kombu.asynchronous import Hub

from jobs.celery_app import app
from jobs.shutdown_wake import WakeOnShutdown


def test_the_worker_blueprint_runs_the_step() -> None:
    assert WakeOnShutdown in app.steps["worker"]


def test_the_shutdown_signal_ends_the_event_loops_poll_at_once() -> None:
    hub = Hub()  # type: ignore[no-untyped-call]
    parent = SimpleNamespace(hub=hub)
    step = WakeOnShutdown(parent)
    step.start(parent)
    try:
        assert step._pipe is not None
        read_end = step._pipe[0]
        assert read_end in hub.readers
        assert select.select([read_end], [], [], 0)[0] == []
        worker_shutting_down.send(sender="w@h", sig="SIGTERM", how="Warm", exitcode=0)
        assert select.select([read_end], [], [], 0)[0] == [read_end]  # what the loop's poll wakes on
        # one pass of the worker's loop: its poll returns on the byte and drains it
        next(hub.create_loop())  # type: ignore[no-untyped-call]
        assert select.select([read_end], [], [], 0)[0] == []
    finally:
        step.stop(parent)
        hub.close()  # type: ignore[no-untyped-call]
    assert step._pipe is None and read_end not in hub.readers
    worker_shutting_down.send(sender="w@h", sig="SIGTERM", how="Warm", exitcode=0)  # disconnected: a no-op
