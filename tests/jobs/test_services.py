"""What the services' /healthz means, in pieces the chart contract test cannot force: a stuck dispatch loop, a
worker that lost its broker connection, a dispatcher whose Redis went away."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from jobs.local.redis_server import EmbeddedRedis
from jobs.services import BrokerLink, LoopProgress
from tests.support.net import free_port

REELGEN = str(Path(sys.executable).with_name("reelgen"))


def test_a_loop_that_stops_coming_round_turns_unhealthy(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    progress = LoopProgress(stall_s=120)
    now[0] += 119
    assert progress.check() is None
    now[0] += 2
    assert "has not come round for 121 s" in (progress.check() or "")
    progress.beat()
    assert progress.check() is None


def test_a_worker_is_ready_only_while_its_consumer_holds_the_broker() -> None:
    step = BrokerLink.__new__(BrokerLink)  # the bootstep's own state lives on the class
    step.stop(None)
    assert BrokerLink.health() == "the worker holds no broker connection"
    step.start(None)
    assert BrokerLink.health() is None
    step.shutdown(None)
    assert BrokerLink.health() is not None


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_dispatcher_is_unready_while_its_redis_is_gone_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    server = EmbeddedRedis(tmp_path / "redis")
    server.__enter__()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    env.update(REELGEN_REDIS_URL=server.url, REELGEN_METRICS_PORT=str(port), REELGEN_STATE_DIR=str(tmp_path))
    dispatcher = subprocess.Popen([REELGEN, "dispatcher"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert dispatcher.poll() is None, dispatcher.stderr.read() if dispatcher.stderr else ""
            try:
                if get(f"http://127.0.0.1:{port}/healthz") == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the dispatcher never became ready"
            time.sleep(0.2)
        server.__exit__(None, None, None)
        assert get(f"http://127.0.0.1:{port}/healthz") == 503
        dispatcher.send_signal(signal.SIGTERM)
        assert dispatcher.wait(30) == 0
    finally:
        if dispatcher.poll() is None:
            dispatcher.kill()
            dispatcher.wait(10)
        server.__exit__(None, None, None)
