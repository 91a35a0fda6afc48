"""install_worker_metrics in a real Celery prefork worker: samples from every child summed on one /metrics.

The worker process imports this module as its app (`celery -A tests.monitoring.test_metrics_worker`); the app and the hook
are set up only there (the environment variable below), never in the pytest process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from celery import Celery

from jobs.broker.celery_app import celery_url
from jobs.local.redis_server import EmbeddedRedis
from monitoring.metrics import count_item, install_worker_metrics, observe_stage
from tests.support.metrics import samples

ROOT = Path(__file__).resolve().parents[2]
_PORT_VAR = "REELGEN_TEST_WORKER_METRICS_PORT"

app = Celery("metrics-test", broker=os.environ.get("REELGEN_TEST_BROKER", "memory://"))

if _PORT_VAR in os.environ:
    install_worker_metrics(int(os.environ[_PORT_VAR]), host="127.0.0.1")


@app.task(name="metrics_test.settle")
def settle(error: str) -> None:
    count_item("failed" if error else "done", error)
    observe_stage("render", 1.5, cpu_s=2.0)


def test_prefork_worker_exports_the_sum_of_its_children(redis_server: EmbeddedRedis, tmp_path: Path) -> None:
    from tests.support.net import free_port

    port = free_port()
    samples_dir = tmp_path / "samples"
    samples_dir.mkdir()
    (samples_dir / "counter_1.db").write_bytes(b"stale samples of a previous container run")
    broker = celery_url(redis_server.url)
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(samples_dir), REELGEN_TEST_BROKER=broker)
    env[_PORT_VAR] = str(port)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.monitoring.test_metrics_worker", "worker", "--pool", "prefork",
         "--concurrency", "2", "--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    client = Celery("sender", broker=broker)
    try:
        for error in ("", "", "", "UnreadableVideo", ""):
            client.send_task("metrics_test.settle", args=(error,))
        done = (("error", ""), ("outcome", "done"))
        deadline = time.monotonic() + 60
        got: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        while got.get(("reelgen_items_total", done)) != 4 or len(got) < 3:
            assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
            assert time.monotonic() < deadline, f"worker metrics never showed the tasks: {got}"
            time.sleep(0.3)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                    got = samples(response.read().decode())
            except OSError:
                continue
    finally:
        worker.terminate()
        worker.wait(30)
        client.close()
    assert got[("reelgen_items_total", (("error", "UnreadableVideo"), ("outcome", "failed")))] == 1
    assert got[("reelgen_stage_seconds_count", (("stage", "render"),))] == 5
    assert got[("reelgen_stage_cpu_seconds_total", (("stage", "render"),))] == 10
    assert not (samples_dir / "counter_1.db").exists()  # wiped at worker start, before the children forked
