from __future__ import annotations

import redis

from jobs.ledger import ItemState, JobKind, JobState, Ledger


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
    assert ledger.complete_if_drained(job)
    assert ledger.job(job).state is JobState.COMPLETED
    assert not ledger.complete_if_drained(job)
