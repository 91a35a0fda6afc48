"""The registry of live workers (jobs/ledger/workers.py) and the re-dispatch of what a lost worker held
(Ledger.rescue, jobs/dispatch/reaper.py's LostWorkers), against a real Redis."""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from core.settings import load_settings
from jobs.broker.messages import unacknowledged
from jobs.broker.queues import PREPARE_TASK, QUEUE, RENDER_TASK, UNACKED_KEY, message_item
from jobs.dispatch.reaper import LostWorkers
from jobs.ledger import JobKind, Ledger
from jobs.ledger.keys import WORKERS_KEY, worker_held_key
from jobs.ledger.workers import HeldMessage, WorkerRegistry
from jobs.local.redis_server import EmbeddedRedis


def _job(ledger: Ledger) -> str:
    return ledger.create_job(kind=JobKind.RUN, catalog="c", out="out", config_hash="h", config={}).id


def test_a_superseded_dispatch_begins_nothing_and_a_rescue_happens_once(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    ledger.admit(job, "a", {"item_id": "a"})
    assert ledger.begin_task(job, "a", "t1", 60, 3, "sample_segment", token=1) == 1
    held = HeldMessage("w1", job, "a", 1, "t1")
    assert ledger.rescue(held, lease_s=60, max_dispatches=5) == 2
    assert (
        ledger.rescue(held, lease_s=60, max_dispatches=5) == 0
    )  # another message, or dispatcher, came first
    # the lost worker's messages, redelivered, are stale; the new dispatch's begin
    assert ledger.begin_task(job, "a", "t1", 60, 3, "sample_segment", token=1) == 0
    assert ledger.begin_task(job, "a", "t9", 60, 3, "prepare", token=2) == 2
    assert ledger.finish(job, "a")
    assert ledger.rescue(HeldMessage("w1", job, "a", 2, "t9"), 60, 5) == 0  # done: nothing to re-dispatch
    record = ledger.job(job)
    assert (record.done, record.failed, record.redispatched) == (1, 0, 1)


def test_an_item_that_loses_its_worker_too_often_is_dead_lettered(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    ledger.admit(job, "a", {"item_id": "a"})
    assert ledger.rescue(HeldMessage("w1", job, "a", 1, "t1"), 60, max_dispatches=2) == 2
    assert ledger.rescue(HeldMessage("w2", job, "a", 2, "t2"), 60, max_dispatches=2) == -1
    assert ledger.error_counts(job) == {"WorkerLost": 1}


def test_the_registry_tells_a_silent_worker_from_a_beating_one(redis_client: redis.Redis) -> None:
    registry = WorkerRegistry(redis_client, lost_after_s=0.5)
    one, two = HeldMessage("w1", "j", "a", 1, "t1"), HeldMessage("w1", "j", "b", 3, "t2")
    registry.beat("w1", [one])
    registry.received(two)  # held from its receipt, not from the next beat
    registry.beat("w2", [])
    assert registry.lost() == []
    time.sleep(0.3)
    registry.beat("w2", [])
    time.sleep(0.3)
    assert registry.lost() == ["w1"]
    assert sorted(m.item_id for m in registry.held("w1")) == ["a", "b"]
    assert not registry.forget("w1", [one])  # one message left
    assert registry.forget("w1", [two])
    assert redis_client.zscore(WORKERS_KEY, "w1") is None and not redis_client.exists(worker_held_key("w1"))
    # a worker that beats again after its loss was alive after all: it is not forgotten
    registry.beat("w3", [one])
    time.sleep(0.6)
    registry.beat("w3", [one])
    assert not registry.forget("w3", [one])
    assert redis_client.zscore(WORKERS_KEY, "w3") is not None
    registry.leave("w3")
    assert redis_client.zscore(WORKERS_KEY, "w3") is None


def test_unreadable_held_entries_are_dropped(redis_client: redis.Redis) -> None:
    registry = WorkerRegistry(redis_client, lost_after_s=1)
    redis_client.sadd(worker_held_key("w1"), "not json", '["j", "a", 1, "t"]')
    assert [m.item_id for m in registry.held("w1")] == ["a"]
    assert redis_client.scard(worker_held_key("w1")) == 1


def test_the_messages_a_worker_holds_name_their_item_and_dispatch() -> None:
    state: dict[str, Any] = {"job_id": "j", "item_id": "a", "token": 4}
    assert message_item(PREPARE_TASK, ["j", "a", 2]) == ("j", "a", 2)
    assert message_item(RENDER_TASK, [state]) == ("j", "a", 4)
    assert message_item(RENDER_TASK, [{"job_id": "j", "item_id": "a"}]) is None  # published before tokens
    assert message_item("reelgen.nightly", []) is None
    assert message_item(PREPARE_TASK, "garbage") is None


class Published:
    def __init__(self) -> None:
        self.messages: list[tuple[str, tuple[Any, ...]]] = []

    def send_task(self, name: str, args: tuple[Any, ...], **_: Any) -> None:
        self.messages.append((name, args))


Sent = list[tuple[str, list[tuple[str, int]]]]


def _sweeping(
    redis_client: redis.Redis, monkeypatch: Any, items: list[str]
) -> tuple[Ledger, str, LostWorkers, Sent]:
    """A job with `items` admitted, and a loss sweep (bound 0.35 s) whose re-dispatches are recorded, not sent."""
    import jobs.dispatch.reaper

    ledger = Ledger(redis_client)
    job = _job(ledger)
    for item in items:
        ledger.admit(job, item, {"item_id": item})
    sent: Sent = []
    monkeypatch.setattr(
        jobs.dispatch.reaper, "publish", lambda celery, rec, items: sent.append((rec.id, items))
    )
    settings = load_settings(worker_heartbeat_s=0.1, worker_lost_s=0.35)
    return ledger, job, LostWorkers(ledger, Published(), settings), sent  # type: ignore[arg-type]


def _lose_dead_beside_live(lost: LostWorkers, live_holds: list[HeldMessage]) -> None:
    """Worker "dead" beats once holding nothing and falls silent past the bound; "live" goes on beating."""
    lost.registry.beat("dead", [])
    lost.registry.beat("live", live_holds)
    time.sleep(0.25)
    lost.registry.beat("live", live_holds)
    time.sleep(0.2)


def test_a_sweep_re_dispatches_a_lost_workers_items_once(redis_client: redis.Redis, monkeypatch: Any) -> None:
    ledger, job, lost, sent = _sweeping(redis_client, monkeypatch, ["a", "b"])
    # two segments of "a" on the lost worker; "b" on a live one
    lost.registry.beat(
        "dead", [HeldMessage("dead", job, "a", 1, "s0"), HeldMessage("dead", job, "a", 1, "s1")]
    )
    lost.registry.beat("live", [HeldMessage("live", job, "b", 1, "s2")])
    time.sleep(0.25)
    lost.registry.beat("live", [HeldMessage("live", job, "b", 1, "s2")])
    time.sleep(0.2)
    assert lost.sweep() == 1
    assert sent == [(job, [("a", 2)])]
    assert lost.sweep() == 0  # forgotten: nothing twice
    assert ledger.item(job, "b")["token"] == 1  # type: ignore[index]


def test_an_item_last_begun_on_a_lost_worker_is_rescued_though_no_held_set_names_it(
    redis_client: redis.Redis, monkeypatch: Any
) -> None:
    """The worker took the item's next message and died before registering it (or before the broker marked it
    unacknowledged): the item is found by the worker its last task began on."""
    ledger, job, lost, sent = _sweeping(redis_client, monkeypatch, ["a", "b", "c"])
    # "a": its prepare ran on the dead worker and ended; its next message is nowhere to be seen
    assert ledger.begin_task(job, "a", "p-a", 60, 3, "prepare", token=1, worker="dead") == 1
    ledger.end_task(job, "a", "p-a", HeldMessage("dead", job, "a", 1, "p-a"))
    # "b": began on the dead worker, then on a live one; "c": never begun
    assert ledger.begin_task(job, "b", "p-b", 60, 3, "prepare", token=1, worker="dead") == 1
    assert ledger.begin_task(job, "b", "s-b", 60, 3, "sample_segment", token=1, worker="live") == 2
    assert ledger.item(job, "a")["worker"] == "dead"  # type: ignore[index]
    _lose_dead_beside_live(lost, [HeldMessage("live", job, "b", 1, "s-b")])
    assert lost.sweep() == 1
    assert sent == [(job, [("a", 2)])]
    assert [ledger.item(job, i)["token"] for i in "bc"] == [1, 1]  # type: ignore[index]
    assert ledger.begin_task(job, "a", "s-a", 60, 3, "sample_segment", token=1, worker="live") == 0  # stale
    assert lost.sweep() == 0


def test_the_brokers_unacknowledged_messages_are_read_as_their_items(
    redis_client: redis.Redis, redis_server: EmbeddedRedis
) -> None:
    """A prepare message published by Celery and taken by a consumer that has not acknowledged it, as kombu's
    Redis transport keeps it."""
    from celery import Celery

    from jobs.broker.celery_app import celery_url

    app = Celery("probe", broker=celery_url(redis_server.url))
    app.send_task(PREPARE_TASK, args=("job-1", "sku-9", 3), queue=QUEUE, task_id="task-9")
    with app.connection() as connection:
        queue = connection.SimpleQueue(QUEUE)
        taken = queue.get(timeout=5)  # not acknowledged: in the broker's hash until the consumer acks
        assert unacknowledged(redis_client) == [("job-1", "sku-9", 3, "task-9")]
        taken.ack()
        queue.close()
    assert unacknowledged(redis_client) == []


def test_an_unacknowledged_message_no_live_worker_holds_is_rescued_when_a_worker_is_lost(
    redis_client: redis.Redis, monkeypatch: Any
) -> None:
    """The worker took an item's first message and died before registering it: no task of the item began
    anywhere, but the broker still holds the message as unacknowledged."""
    ledger, job, lost, sent = _sweeping(redis_client, monkeypatch, ["a", "b"])
    for item, task in (("a", "p-a"), ("b", "p-b")):
        message = {
            "headers": {"task": PREPARE_TASK, "id": task},
            "body": json.dumps([[job, item, 1], {}, {}]),
        }
        redis_client.hset(UNACKED_KEY, task, json.dumps([message, "", QUEUE]))
    _lose_dead_beside_live(lost, [HeldMessage("live", job, "b", 1, "p-b")])
    assert lost.sweep() == 1
    assert sent == [(job, [("a", 2)])]  # "b" is held by a live worker: left alone
    assert ledger.item(job, "b")["token"] == 1  # type: ignore[index]
    assert lost.sweep() == 0  # its old message, still unacknowledged, is superseded


def test_after_a_loss_a_dispatch_with_no_message_anywhere_is_rescued_at_its_second_sweep(
    redis_client: redis.Redis, monkeypatch: Any
) -> None:
    """A worker blocked in BRPOP as it dies: Redis hands it the next message published and the worker never reads
    it, so that message is in no queue, no hash and no held set. Items whose message waits in a queue, or that a
    live worker holds, are left alone; before any worker is lost, nothing is looked for."""
    ledger, job, lost, sent = _sweeping(redis_client, monkeypatch, ["gone", "queued", "held"])
    message = {
        "headers": {"task": PREPARE_TASK, "id": "p-q"},
        "body": json.dumps([[job, "queued", 1], {}, {}]),
    }
    redis_client.lpush(QUEUE, json.dumps(message))
    lost.registry.beat("live", [HeldMessage("live", job, "held", 1, "p-h")])
    time.sleep(0.15)
    assert lost.sweep() == 0 and sent == []  # no loss yet: no watch
    _lose_dead_beside_live(lost, [HeldMessage("live", job, "held", 1, "p-h")])
    assert lost.sweep() == 0  # seen once without a message: a message may be between a queue and the hash
    time.sleep(0.15)
    lost.registry.beat("live", [HeldMessage("live", job, "held", 1, "p-h")])
    assert lost.sweep() == 1
    assert sent == [(job, [("gone", 2)])]
    assert ledger.item(job, "queued")["token"] == 1 and ledger.item(job, "held")["token"] == 1  # type: ignore[index]
