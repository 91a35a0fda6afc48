"""A worker told to shut down leaves its idle poll at once instead of up to a second later, and its pool
children exit as soon as they leave their work loop instead of sleeping a second first; a task that is running
when the shutdown starts still finishes."""

from __future__ import annotations

import gc
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis
from celery.signals import worker_before_create_process, worker_process_shutdown, worker_shutting_down
from celery.worker import state as worker_state
from kombu.asynchronous import Hub, get_event_loop, set_event_loop

import jobs.schedule  # noqa: F401  (the modules the worker imports connect their receivers)
import workers.tasks  # noqa: F401
from core.settings import load_settings
from jobs.broker.celery_app import BROKER_POLL_S, app, configure
from jobs.broker.prefork import freeze_before_fork
from jobs.broker.worker_shutdown import StopIdlePoolPromptly, WakeOnShutdown, exit_pool_child
from jobs.local.redis_server import EmbeddedRedis
from tests.support.services import spawn, wait

SLOW_TASK = "reelgen.test_slow_touch"


@app.task(name=SLOW_TASK)
def slow_touch(folder: str, seconds: float) -> None:
    """Runs in the worker (imported with --include): says it started, works a while, says it finished."""
    Path(folder, "started").touch()
    time.sleep(seconds)
    Path(folder, "finished").touch()


def test_the_worker_blueprint_runs_the_steps() -> None:
    assert WakeOnShutdown in app.steps["worker"] and StopIdlePoolPromptly in app.steps["worker"]


class _Request:
    """Stands for a celery.worker.request.Request in Celery's (weak) sets of reserved and active requests."""


def test_an_idle_pool_is_joined_without_the_event_loop_and_a_busy_one_keeps_it() -> None:
    hub = Hub()  # type: ignore[no-untyped-call]
    step = StopIdlePoolPromptly(SimpleNamespace())
    request = _Request()  # one that a pool process still runs
    set_event_loop(hub)
    try:
        worker_state.active_requests.add(request)
        step.stop(SimpleNamespace(hub=hub))
        assert get_event_loop() is hub  # the pool drains with Celery's timer thread, as before
        worker_state.active_requests.discard(request)
        step.stop(SimpleNamespace(hub=hub))
        assert get_event_loop() is None
    finally:
        worker_state.active_requests.discard(request)
        set_event_loop(None)
        hub.close()  # type: ignore[no-untyped-call]


def test_the_broker_poll_reaches_kombus_blocking_pop(redis_server: EmbeddedRedis) -> None:
    configure(app, load_settings(redis_url=redis_server.url))
    with app.connection_for_read() as connection:
        assert connection.default_channel.brpop_timeout == BROKER_POLL_S < 1


def test_the_parent_freezes_what_its_children_inherit() -> None:
    gc.unfreeze()
    try:
        responses = worker_before_create_process.send(sender=None)
        assert freeze_before_fork in [receiver for receiver, _ in responses]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


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


def test_a_pool_child_exits_from_the_shutdown_signal_with_billiards_exit_code(tmp_path: Path) -> None:
    # what billiard's _do_exit does first in a child, then what would follow it, in a process of its own
    marker = tmp_path / "went-on"
    code = (
        "import jobs.broker.celery_app\n"
        "from celery.signals import worker_process_shutdown\n"
        "worker_process_shutdown.send(sender=None, pid=0, exitcode=3)\n"
        f"open({str(marker)!r}, 'w').close()\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, timeout=120)
    assert result.returncode == 3, result.stderr.decode(errors="replace")
    assert not marker.exists()


def test_the_exit_is_the_last_shutdown_receiver(monkeypatch: pytest.MonkeyPatch) -> None:
    # any receiver after it would never run
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    responses = worker_process_shutdown.send(sender=None, pid=os.getpid(), exitcode=3)
    assert [receiver for receiver, _ in responses][-1] is exit_pool_child
    assert exits == [3]  # billiard's exit code, passed on


def test_a_warm_shutdown_finishes_the_running_task_and_exits_cleanly(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    env.update(
        REELGEN_REDIS_URL=redis_server.url,
        REELGEN_STATE_DIR=str(tmp_path / "state"),
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    configure(app, load_settings(redis_url=redis_server.url))
    log = tmp_path / "worker.err"
    worker = spawn(
        [sys.executable, "-m", "celery", "-A", "jobs.broker.celery_app", "worker", "--pool", "prefork",
         "--concurrency", "2", "--include", "tests.jobs.test_worker_shutdown", "--without-gossip",
         "--without-mingle", "--loglevel", "INFO"],
        env,
        log,
    )  # fmt: skip
    try:
        app.send_task(SLOW_TASK, args=(str(tmp_path), 2.0), priority=0)
        wait(lambda: (tmp_path / "started").exists(), what="the task to start")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert (tmp_path / "finished").exists()
    text = log.read_text(errors="replace")
    assert f"Task {SLOW_TASK}" in text and "succeeded" in text, text
    for trouble in ("Traceback", "ERROR", "WorkerLostError", "WARNING"):
        assert trouble not in text, text
