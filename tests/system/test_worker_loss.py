"""A lost worker node and a lost inference daemon, with the deployment's own processes: a `reelgen gpu-daemon`, a
`reelgen worker` in its own process group (as a pod's), a `reelgen dispatcher`, and a backfill through them.

SIGKILL of the worker's whole process group mid-backfill: the items it held are re-dispatched once its heartbeat
has been missing for the loss bound, and every item is done exactly once, whether the worker is started again
or a second worker takes over. Then the broker's own redelivery of the killed worker's messages (what its
visibility timeout does, forced here) changes nothing. SIGKILL of the daemon: the stages wait for its restart
and retry, and no item fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kombu.connection import Connection

from jobs.broker.celery_app import celery_url
from jobs.broker.messages import unacknowledged
from jobs.broker.queues import PRIORITIES, SEP, UNACKED_KEY, queue_keys
from jobs.ledger import JobState, Ledger
from jobs.ledger.keys import WORKERS_KEY, JobKeys, worker_held_key
from jobs.ledger.records import as_text
from jobs.local.redis_server import EmbeddedRedis
from reelgen.sample_catalog import write_sample_catalog
from tests.support.faults import base_env
from tests.support.services import wait

REELGEN = str(Path(sys.executable).with_name("reelgen"))
ITEMS = 6
HEARTBEAT_S = 1.0
LOST_S = 4.0


class Node:
    """The services of one node, each in its own process group."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *args: str) -> None:
        with open(self.logs / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(
                [REELGEN, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A Redis of the test's own, not the session's: no process another test left behind takes its messages."""
    with EmbeddedRedis(tmp_path / "redis") as server:
        yield server


@pytest.fixture
def redis_client(redis_server: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url)
    yield client
    client.close()


@pytest.fixture
def node(tmp_path: Path, redis_server: EmbeddedRedis) -> Iterator[Node]:
    env = base_env(
        tmp_path,
        REELGEN_REDIS_URL=redis_server.url,
        REELGEN_ASPECTS="1:1,9:16",
        REELGEN_INDEX_FLUSH_S="0.2",
        REELGEN_WORKER_HEARTBEAT_S=str(HEARTBEAT_S),
        REELGEN_WORKER_LOST_S=str(LOST_S),
        REELGEN_ALLOW_LOCAL_SOURCES="true",
        REELGEN_DAEMON__SOCKET_PATH=str(tmp_path / "state" / "gpu.sock"),
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    services = Node(env, logs)
    services.start("daemon", "gpu-daemon", "--socket", env["REELGEN_DAEMON__SOCKET_PATH"])
    services.start("worker", "worker", "--loglevel", "INFO")
    services.start("dispatcher", "dispatcher")
    try:
        yield services
    finally:
        services.stop()


def backfill(node: Node, folder: Path) -> str:
    catalog = write_sample_catalog(folder, ITEMS, seed=11, size=(320, 180), duration_s=(4.0, 6.0), fps=10)
    done = subprocess.run(
        [REELGEN, "backfill", str(catalog), "--max-in-flight", "3"],
        env=node.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def running(ledger: Ledger, job_id: str) -> int:
    """Items whose task began (any stage but waiting in the broker)."""
    return sum(n for stage, n in ledger.in_flight_by_stage(job_id).items() if stage != "queued")


def why(redis_client: redis.Redis, ledger: Ledger, job_id: str, logs: Path) -> str:
    """What a timed-out wait saw: the items in flight, the broker's queues, the workers and what they hold, and
    the last lines of each service's log."""
    records = {
        as_text(item): {k: v for k, v in json.loads(raw).items() if k != "entry"}
        for item, raw in redis_client.hgetall(JobKeys.of(job_id).inflight).items()
    }
    queued = {name: redis_client.llen(key) for name, key in queue_keys().items()}
    workers = {
        as_text(worker): sorted(as_text(m) for m in redis_client.smembers(worker_held_key(as_text(worker))))
        for worker in redis_client.zrange(WORKERS_KEY, 0, -1)
    }
    tails = {
        log.name: log.read_text(errors="replace").splitlines()[-15:] for log in sorted(logs.glob("*.log"))
    }
    state = {
        "job": ledger.job(job_id).state,
        "in_flight": records,
        "queued": queued,
        "unacked": [list(message) for message in unacknowledged(redis_client)],
        "workers": workers,
        "logs": tails,
    }
    return json.dumps(state, indent=1, default=str)


def manifests(out: Path) -> dict[str, float]:
    return {path.parent.name: path.stat().st_mtime for path in out.glob("*/manifest.json")}


@pytest.mark.parametrize("after", ["restart", "takeover"])
def test_a_killed_worker_node_costs_the_loss_bound_not_the_visibility_timeout(
    tmp_path: Path, node: Node, redis_client: redis.Redis, after: str
) -> None:
    ledger = Ledger(redis_client)
    started = time.monotonic()
    job_id = backfill(node, tmp_path / "catalog")
    wait(lambda: ledger.job(job_id).done >= 1 and running(ledger, job_id) > 0, 300, "an item under way")
    # one item's time on this machine, from the first done: what the bound allows beyond the loss bound
    item_s = time.monotonic() - started
    node.kill("worker")
    killed = time.monotonic()
    node.start("worker-2" if after == "takeover" else "worker", "worker", "--loglevel", "INFO")

    wait(
        lambda: ledger.job(job_id).state.finished,
        300,
        "the backfill after the kill",
        lambda: why(redis_client, ledger, job_id, node.logs),
    )
    took = time.monotonic() - killed
    job = ledger.job(job_id)
    assert (job.state, job.done, job.failed) == (JobState.COMPLETED, ITEMS, 0)
    assert job.redispatched >= 1  # the killed worker's items, re-dispatched
    # the loss bound plus a sweep, then what is left of the job (at most a few items' time on two cores)
    assert took < LOST_S + 2 * HEARTBEAT_S + 3 * item_s + 30, (took, item_s)
    out = tmp_path / "out"
    written = manifests(out)
    assert sorted(written) == sorted(f"sku-{i:04d}" for i in range(1, ITEMS + 1))
    for item in written:
        assert json.loads((out / item / "manifest.json").read_text())["item_id"] == item

    # the broker's redelivery of the killed worker's messages, as its visibility timeout would make it: they
    # carry a superseded token or find their item done, and change nothing
    assert redis_client.hlen(UNACKED_KEY) >= 1
    url = celery_url(node.env["REELGEN_REDIS_URL"])
    layout = {"priority_steps": list(PRIORITIES), "sep": SEP, "queue_order_strategy": "priority"}
    with Connection(url, transport_options={**layout, "visibility_timeout": 0}) as connection:  # type: ignore[no-untyped-call]
        connection.default_channel.qos.restore_visible(num=100)
    # the live worker may take a restored message at once (it is unacknowledged again while it runs), so what
    # shows the redelivery is that the killed worker's entries, which nothing else would clear, drain
    wait(
        lambda: (
            not any(redis_client.llen(key) for key in queue_keys().values())
            and not redis_client.hlen(UNACKED_KEY)
        ),
        60,
        "the redelivered messages to be consumed",
    )
    time.sleep(2)
    again = ledger.job(job_id)
    assert (again.done, again.failed, again.redispatched) == (ITEMS, 0, job.redispatched)
    assert manifests(out) == written


def test_a_killed_inference_daemon_is_waited_for_and_no_item_fails(
    tmp_path: Path, node: Node, redis_client: redis.Redis
) -> None:
    ledger = Ledger(redis_client)
    job_id = backfill(node, tmp_path / "catalog")
    wait(lambda: running(ledger, job_id) > 0, 300, "an item under way")
    node.kill("daemon")
    time.sleep(3)  # the sidecar's restart
    node.start("daemon", "gpu-daemon", "--socket", node.env["REELGEN_DAEMON__SOCKET_PATH"])
    wait(lambda: ledger.job(job_id).state.finished, 300, "the backfill after the daemon's restart")
    job = ledger.job(job_id)
    assert (job.state, job.done, job.failed) == (JobState.COMPLETED, ITEMS, 0)
