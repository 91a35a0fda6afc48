from __future__ import annotations

import time

import pytest
import redis

from core.errors import JobNotFound, JobStateError
from jobs.ledger import ItemState, JobAction, JobKind, JobState, Ledger
from tests.support.ledger import index_results


def _job(ledger: Ledger) -> str:
    return ledger.create_job(
        kind=JobKind.RUN, catalog="c.jsonl", out="out", config_hash="h", config={"a": 1}
    ).id


def test_item_lifecycle_counts_once(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    assert ledger.admit(job, "a", {"item_id": "a"})
    assert not ledger.admit(job, "a", {"item_id": "a"})  # already in flight
    assert ledger.item_state(job, "a") is ItemState.PENDING
    assert ledger.start(job, "a", lease_s=60) == 1
    assert ledger.start(job, "a", lease_s=60) == 2  # a redelivery is another attempt
    assert ledger.item_state(job, "a") is ItemState.RUNNING
    assert ledger.finish(job, "a")
    assert not ledger.finish(job, "a")  # a duplicate completion changes nothing
    assert ledger.start(job, "a", lease_s=60) == 0  # nor can a stale delivery restart it
    record = ledger.job(job)
    assert (record.dispatched, record.done, record.failed, record.in_flight) == (1, 1, 0, 0)


def test_failures_are_recorded_with_their_class(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    ledger.admit(job, "b", {"item_id": "b"})
    assert ledger.fail(job, "b", "UnreadableVideo", "b.mp4: truncated", entry={"item_id": "b"})
    assert not ledger.fail(job, "b", "UnreadableVideo", "again")
    ledger.fail(job, "line:4", "BadCatalogLine", "invalid JSON", admitted=False)
    failures = {f.item_id: f for f in ledger.failures(job)}
    assert failures["b"].error == "UnreadableVideo" and failures["b"].entry == {"item_id": "b"}
    assert failures["line:4"].error == "BadCatalogLine"
    assert ledger.item_state(job, "b") is ItemState.FAILED
    assert ledger.job(job).failed == 2


def test_job_completes_only_when_exhausted_and_drained(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    ledger.admit(job, "a", {})
    assert not ledger.complete_if_drained(job)  # catalog not exhausted
    ledger.mark_exhausted(job)
    assert not ledger.complete_if_drained(job)  # "a" still in flight
    ledger.finish(job, "a")
    assert not ledger.complete_if_drained(job)  # "a"'s result is not in the index yet
    index_results(ledger, job)
    assert ledger.complete_if_drained(job)
    assert ledger.job(job).state is JobState.COMPLETED
    assert not ledger.complete_if_drained(job)


def test_stale_tokens_and_the_reaper(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    assert ledger.admit(job, "a", {"item_id": "a", "version": "1"}, lease_s=10)
    assert ledger.expired(job, now=time.time()) == []
    later = time.time() + 11
    assert ledger.expired(job, now=later) == ["a"]
    assert ledger.reap(job, "a", later, lease_s=10, max_dispatches=2) == 2
    item = ledger.item(job, "a")  # the re-dispatched message names the item; its worker reads the entry here
    assert item is not None and item["entry"]["item_id"] == "a"
    assert ledger.start(job, "a", lease_s=10, token=1) == 0  # the lost message, should it come back
    assert ledger.start(job, "a", lease_s=10, token=2) == 1
    # a second expiry reaches max_dispatches: dead-lettered, counted once as failed
    much_later = later + 100
    assert ledger.reap(job, "a", much_later, lease_s=10, max_dispatches=2) == -1
    assert ledger.item_state(job, "a") is ItemState.DEAD
    record = ledger.job(job)
    assert (record.failed, record.dead, record.redispatched, record.in_flight) == (1, 1, 1, 0)
    assert ledger.error_counts(job) == {"LeaseExpired": 1}


def test_a_task_that_kills_its_worker_is_dead_lettered(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    ledger.admit(job, "a", {"item_id": "a"})
    # two different tasks of one item may run at once (segments): not crashes
    assert ledger.begin_task(job, "a", "t1", 60, crash_limit=2) == 1
    assert ledger.begin_task(job, "a", "t2", 60, crash_limit=2) == 2
    ledger.end_task(job, "a", "t2")
    # t1 never ended: its worker died; the broker redelivers it
    assert ledger.begin_task(job, "a", "t1", 60, crash_limit=2) == 3
    assert ledger.begin_task(job, "a", "t1", 60, crash_limit=2) == -1
    assert ledger.item_state(job, "a") is ItemState.DEAD
    failure = ledger.failures(job)[0]
    assert failure.error == "WorkerLost" and failure.dead
    assert ledger.begin_task(job, "a", "t1", 60, crash_limit=2) == 0  # gone: nothing more happens


def test_job_control_transitions(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    assert ledger.control(job, JobAction.PAUSE) is JobState.PAUSED
    assert ledger.admit_status(job, "a", {}, lease_s=60, cursor=1) == -1  # a paused job takes no items
    assert ledger.job(job).cursor == 0
    assert ledger.control(job, JobAction.RESUME) is JobState.RUNNING
    assert ledger.admit(job, "a", {}, cursor=1)
    assert ledger.control(job, JobAction.DRAIN) is JobState.DRAINING
    assert ledger.finish_if_drained(job) is None  # "a" still in flight
    ledger.finish(job, "a")
    index_results(ledger, job)
    assert ledger.finish_if_drained(job) is JobState.DRAINED
    assert job not in ledger.active_jobs()
    with pytest.raises(JobStateError):
        ledger.control(job, JobAction.RESUME)
    other = _job(ledger)
    ledger.admit(other, "b", {})
    assert ledger.control(other, JobAction.CANCEL) is JobState.CANCELLED
    assert ledger.in_flight(other) == 0 and not ledger.finish(other, "b")
    with pytest.raises(JobNotFound):
        ledger.control("nope", JobAction.PAUSE)


def test_active_jobs_order_by_class_then_submission(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    first = ledger.create_job(
        kind=JobKind.BACKFILL, catalog="c", out="o", config_hash="h", config={}, priority=2
    )
    second = ledger.create_job(
        kind=JobKind.BACKFILL, catalog="c", out="o", config_hash="h", config={}, priority=2
    )
    urgent = ledger.create_job(
        kind=JobKind.NIGHTLY, catalog="c", out="o", config_hash="h", config={}, priority=0
    )
    assert ledger.active_jobs() == [urgent.id, first.id, second.id]


def test_retry_claims_are_exclusive(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    parent = _job(ledger)
    ledger.admit(parent, "a", {"item_id": "a"})
    ledger.fail(parent, "a", "SourceUnreachable", "503")
    one, two = _job(ledger), _job(ledger)
    assert ledger.claim_for_retry(parent, one, "a", {"item_id": "a"}, 60) == 1
    assert ledger.claim_for_retry(parent, two, "a", {"item_id": "a"}, 60) == 0
    assert ledger.claim_for_retry(parent, one, "a", {"item_id": "a"}, 60) == 0
    ledger.finish(one, "a")
    ledger.mark_exhausted(one)
    index_results(ledger, one)
    assert ledger.finish_if_drained(one) is JobState.COMPLETED
    # once the first retry has ended, a later retry may take the item again
    assert ledger.claim_for_retry(parent, two, "a", {"item_id": "a"}, 60) == 1


def test_settled_items_reach_the_results_stream_and_logical_dates_are_claimed_once(
    redis_client: redis.Redis,
) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    ledger.admit(job, "a", {"item_id": "a", "version": "7"})
    ledger.finish(job, "a")
    ledger.fail(job, "line:3", "BadCatalogLine", "invalid JSON", admitted=False)
    ledger.fail(job, "line:4", "BadCatalogLine", "invalid JSON", admitted=False)
    results = ledger.read_results(job, count=2)
    assert [(f["i"], f["s"], f["v"]) for _, f in results] == [("a", "done", "7"), ("line:3", "failed", "")]
    assert [f["i"] for _, f in ledger.read_results(job, count=5, after=results[0][0])] == ["line:3", "line:4"]
    # trimming through a result drops it and every older one, and no later one
    ledger.trim_results(job, results[-1][0])
    assert [f["i"] for _, f in ledger.read_results(job, count=5)] == ["line:4"]
    assert ledger.claim_logical_date("nightly", "2026-11-21", "j1") is None
    assert ledger.claim_logical_date("nightly", "2026-11-21", "j2") == "j1"


def test_items_in_flight_are_counted_per_stage_until_they_leave(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    for item in "abcde":
        ledger.admit(job, item, {"item_id": item})
    assert ledger.in_flight_by_stage(job) == {"queued": 5}
    ledger.begin_task(job, "a", "t1", lease_s=60, crash_limit=3, stage="prepare")
    ledger.begin_task(job, "b", "t2", lease_s=60, crash_limit=3, stage="prepare")
    ledger.begin_task(job, "b", "t3", lease_s=60, crash_limit=3, stage="render")  # moved on
    ledger.begin_task(job, "c", "t4", lease_s=60, crash_limit=3, stage="select")
    ledger.begin_task(job, "d", "t5", lease_s=60, crash_limit=3, stage="render")
    assert ledger.in_flight_by_stage(job) == {"queued": 1, "prepare": 1, "render": 2, "select": 1}
    ledger.finish(job, "b")
    ledger.fail(job, "c", "UnreadableVideo", "broken")
    # a reaped item waits in the broker again
    assert ledger.reap(job, "d", time.time() + 3600, lease_s=60, max_dispatches=5) > 0
    assert ledger.in_flight_by_stage(job) == {"queued": 2, "prepare": 1}
    ledger.control(job, JobAction.CANCEL)
    assert ledger.in_flight_by_stage(job) == {"queued": 0}
    assert not redis_client.exists(f"{ledger.job_key(job)}:at")


def test_shared_work_is_led_by_one_item_waited_for_then_reused(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    assert ledger.lead_shared(job, "w", "red", 60) == ("lead", "red")
    assert ledger.lead_shared(job, "w", "blue", 60) == ("wait", "red")
    # the leader asks again at each of its stages (or after its worker was lost): still its own
    assert ledger.lead_shared(job, "w", "red", 60) == ("lead", "red")
    ledger.shared_done(job, "w", "red", 3600)
    assert ledger.lead_shared(job, "w", "blue", 60) == ("done", "red")
    # another work, another job: their own
    assert ledger.lead_shared(job, "v", "blue", 60) == ("lead", "blue")
    assert ledger.lead_shared(_job(ledger), "w", "blue", 60) == ("lead", "blue")


def test_a_failed_or_lost_lead_passes_to_an_item_waiting(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = _job(ledger)
    assert ledger.lead_shared(job, "w", "red", 60) == ("lead", "red")
    ledger.release_shared(job, "w", "blue")  # not its lead: nothing changes
    assert ledger.lead_shared(job, "w", "blue", 60) == ("wait", "red")
    ledger.release_shared(job, "w", "red")  # red failed
    assert ledger.lead_shared(job, "w", "blue", 1) == ("lead", "blue")
    # a lead whose worker was lost lapses with its time
    time.sleep(1.2)
    assert ledger.lead_shared(job, "w", "green", 60) == ("lead", "green")
    # a lead that lapsed and was taken is not given up by its first holder finishing late
    ledger.shared_done(job, "w", "blue", 3600)
    assert ledger.lead_shared(job, "w", "green", 60) == ("done", "blue")
