"""The dispatcher against a real Redis: bounded in-flight, done-skipping from the results index, priorities,
lease reaping, job control, and a dispatcher process killed mid-catalog that resumes with no duplicate and no
lost item. Items are settled by an ack-only consumer (bench/backfill.py) so no media work is involved; the
real-worker path is tests/jobs/test_jobs_service_e2e.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from bench.backfill import queue_keys
from jobs.broker.celery_app import app
from jobs.dispatch.dispatcher import Dispatcher
from jobs.intake import results_index
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.results_index import GONE_PREFIX, read_index
from jobs.intake.submit import submit_catalog_job
from jobs.ledger import JobAction, JobKind, JobState, Ledger, Reprocess
from jobs.local.redis_server import EmbeddedRedis
from storage.store import LocalStore
from tests.support.dispatch import Consumer, drive, make_settings, write_catalog

REELGEN = str(Path(sys.executable).with_name("reelgen"))


DUPLICATE = json.dumps(
    {"item_id": "sku-001", "video": "s3://media/x.mp4", "image": "s3://media/x.jpg", "title": "again"}
)


def finished(ledger: Ledger, job_id: str) -> Callable[[], bool]:
    return lambda: ledger.job(job_id).state.finished


def queued(client: redis.Redis) -> int:
    return sum(int(client.llen(key)) for key in queue_keys())


@pytest.fixture
def ledger(redis_client: redis.Redis) -> Iterator[Ledger]:
    yield Ledger(redis_client)


def test_in_flight_is_bounded_changeable_live_and_the_index_records_every_item(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis, ledger: Ledger
) -> None:
    ids = [f"sku-{k:03d}" for k in range(40)]
    settings = make_settings(tmp_path, redis_server)
    catalog = write_catalog(tmp_path / "c.jsonl", ids, extra_lines=(DUPLICATE,))
    job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    dispatcher = Dispatcher(ledger, app, settings)
    dispatcher.tick()
    dispatcher.tick()
    assert ledger.in_flight(job.id) == 5 and queued(redis_client) == 5  # K, however many ticks
    ledger.set_max_in_flight(job.id, 8)
    dispatcher.tick()
    assert ledger.in_flight(job.id) == 8 and ledger.job(job.id).cursor == 8
    with Consumer(redis_server.url, tmp_path / "stop"):
        drive(dispatcher, finished(ledger, job.id))
    final = ledger.job(job.id)
    assert final.state is JobState.COMPLETED
    assert (final.done, final.failed, final.dispatched, final.total) == (40, 1, 40, 41)
    assert ledger.failures(job.id)[0].error == "DuplicateItemId"
    index = list(read_index(LocalStore(tmp_path / "out"), job.id))
    assert sorted(line["item_id"] for line in index if line["status"] == "done") == ids
    assert all(line["config_hash"] == job.config_hash for line in index)
    assert queued(redis_client) == 0 and not redis_client.exists(ledger.results_key(job.id))


def test_serving_ends_right_after_the_tick_that_finishes_the_job_not_a_poll_later(
    tmp_path: Path, redis_server: EmbeddedRedis, ledger: Ledger
) -> None:
    settings = make_settings(tmp_path, redis_server, dispatch_poll_s=30.0)
    ticks: list[int] = []
    began = time.monotonic()
    # nothing to dispatch, so the tick is idle, and what it saw (on_tick) says stop
    Dispatcher(ledger, app, settings).serve(stop=lambda: bool(ticks), on_tick=lambda: ticks.append(1))
    assert len(ticks) == 1 and time.monotonic() - began < 25  # no 30 s poll after it


def test_results_go_to_the_index_after_a_count_or_a_time_whichever_comes_first(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis, ledger: Ledger
) -> None:
    # more lines than in flight: a job with nothing in flight indexes its results at once
    ids = [f"sku-{k:02d}" for k in range(20)]
    settings = make_settings(tmp_path, redis_server, max_in_flight=6, index_flush_s=3600, index_flush_items=4)
    job = submit_catalog_job(
        ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(write_catalog(tmp_path / "c.jsonl", ids)))
    )
    dispatcher = Dispatcher(ledger, app, settings)
    dispatcher.tick()
    results = ledger.results_key(job.id)
    store = LocalStore(tmp_path / "out")
    for item_id in ids[:3]:
        ledger.finish(job.id, item_id)
    dispatcher.tick()
    assert redis_client.xlen(results) == 3  # fewer than the count, long before the time: they wait
    ledger.finish(job.id, ids[3])
    dispatcher.tick()
    assert redis_client.xlen(results) == 0
    assert sorted(line["item_id"] for line in read_index(store, job.id)) == ids[:4]


def test_an_index_flush_reads_a_few_results_per_command_into_parts_of_bounded_size(
    tmp_path: Path,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(results_index, "READ_RESULTS", 2)
    monkeypatch.setattr(results_index, "PART_RESULTS", 3)
    ids = [f"sku-{k:02d}" for k in range(7)]
    settings = make_settings(tmp_path, redis_server, max_in_flight=7)
    job = submit_catalog_job(
        ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(write_catalog(tmp_path / "c.jsonl", ids)))
    )
    Dispatcher(ledger, app, settings).tick()
    for item_id in ids:
        ledger.finish(job.id, item_id)
    store = LocalStore(tmp_path / "out")
    assert results_index.IndexWriter(ledger, store, job.id, job.config_hash).flush() == 7
    parts = list(results_index.list_keys(store, f"{results_index.INDEX_PREFIX}{job.id}/"))
    assert sorted(len((store.get_bytes(part) or b"").splitlines()) for part in parts) == [1, 3, 3]
    assert [line["item_id"] for line in read_index(store, job.id)] == ids
    assert redis_client.xlen(ledger.results_key(job.id)) == 0


def test_done_items_are_skipped_changed_ones_redone_and_gone_ones_reported(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis, ledger: Ledger
) -> None:
    settings = make_settings(tmp_path, redis_server, max_in_flight=50)
    store = LocalStore(tmp_path / "out")
    ids = [f"sku-{k}" for k in range(6)]

    def run(catalog: Path, reprocess: Reprocess = Reprocess.MISSING) -> Any:
        job = submit_catalog_job(
            ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)), reprocess=reprocess
        )
        with Consumer(redis_server.url, tmp_path / f"stop-{job.id}"):
            drive(Dispatcher(ledger, app, settings), finished(ledger, job.id))
        for item_id in ids:  # item folders as the real pipeline leaves them (the ack consumer writes none)
            (tmp_path / "out" / item_id).mkdir(parents=True, exist_ok=True)
        return ledger.job(job.id)

    first = run(write_catalog(tmp_path / "a.jsonl", ids))
    assert (first.done, first.skipped) == (6, 0)
    again = run(tmp_path / "a.jsonl")
    assert (again.done, again.skipped) == (0, 6)
    # sku-0 changed (new version); sku-5 left the catalog: reported, its folder kept
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    changed = [json.dumps(json.loads(lines[0]) | {"version": "2"}), *lines[1:5]]
    (tmp_path / "b.jsonl").write_text("\n".join(changed) + "\n")
    third = run(tmp_path / "b.jsonl")
    assert (third.done, third.skipped, third.gone) == (1, 4, 1)
    gone = store.get_bytes(f"{GONE_PREFIX}{third.id}.jsonl")
    assert gone is not None and json.loads(gone)["item_id"] == "sku-5"
    assert (tmp_path / "out" / "sku-5").is_dir()
    everything = run(tmp_path / "b.jsonl", Reprocess.ALL)
    assert (everything.done, everything.skipped) == (5, 0)

    dry = subprocess.run(
        [REELGEN, "backfill", str(tmp_path / "b.jsonl"), "--out", str(tmp_path / "out"), "--dry-run"],
        env=_env(redis_server), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert dry.returncode == 0 and "0 to process, 5 already done" in dry.stdout, dry.stderr


def test_higher_class_jobs_fill_first_and_a_paused_job_waits(
    tmp_path: Path, redis_server: EmbeddedRedis, ledger: Ledger
) -> None:
    settings = make_settings(tmp_path, redis_server, max_in_flight_total=4)
    catalog = write_catalog(tmp_path / "c.jsonl", [f"i{k}" for k in range(10)])
    backfill = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    nightly = submit_catalog_job(ledger, settings, JobKind.NIGHTLY, CatalogRef.parse(str(catalog)))
    assert (backfill.priority, nightly.priority) == (2, 0)
    dispatcher = Dispatcher(ledger, app, settings)
    dispatcher.tick()
    assert (ledger.in_flight(nightly.id), ledger.in_flight(backfill.id)) == (4, 0)
    ledger.control(nightly.id, JobAction.PAUSE)
    ledger.redis.hset(ledger.job_key(nightly.id), "max_in_flight", 1)
    with Consumer(redis_server.url, tmp_path / "stop"):
        drive(dispatcher, finished(ledger, backfill.id))
        assert ledger.job(nightly.id).state is JobState.PAUSED
        assert ledger.job(nightly.id).cursor == 4  # nothing dispatched while paused
        ledger.control(nightly.id, JobAction.RESUME)
        drive(dispatcher, finished(ledger, nightly.id))
    assert ledger.job(nightly.id).done == 10


def test_lost_messages_are_redispatched_by_the_reaper(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis, ledger: Ledger
) -> None:
    settings = make_settings(tmp_path, redis_server, max_in_flight=3, lease_s=60, task_time_limit_s=10)
    catalog = write_catalog(tmp_path / "c.jsonl", ["a", "b", "c"])
    job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    dispatcher = Dispatcher(ledger, app, settings)
    dispatcher.tick()
    redis_client.delete(*queue_keys())  # the broker lost its messages (a Redis restart without persistence)
    assert dispatcher.reaper.reap(ledger.job(job.id)) == 0  # leases still valid: nothing to do yet
    assert dispatcher.reaper.reap(ledger.job(job.id), now=time.time() + 61) == 3
    with Consumer(redis_server.url, tmp_path / "stop"):
        drive(dispatcher, finished(ledger, job.id))
    final = ledger.job(job.id)
    assert (final.done, final.redispatched, final.dispatched) == (3, 3, 3)


def _env(server: EmbeddedRedis, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    env.update(REELGEN_REDIS_URL=server.url, **extra)
    return env


def test_a_killed_dispatcher_resumes_from_its_cursor(
    tmp_path: Path, redis_server: EmbeddedRedis, ledger: Ledger
) -> None:
    ids = [f"sku-{k:04d}" for k in range(400)]
    settings = make_settings(tmp_path, redis_server, max_in_flight=10)
    job = submit_catalog_job(
        ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(write_catalog(tmp_path / "c.jsonl", ids)))
    )
    env = _env(
        redis_server,
        REELGEN_STATE_DIR=str(tmp_path / "state"),
        REELGEN_DISPATCH_POLL_S="0.01",
        REELGEN_DISPATCH_LOCK_S="1",
        REELGEN_DISPATCH_PAGE="7",
        REELGEN_INDEX_FLUSH_S="0.1",
    )

    def dispatcher_process() -> subprocess.Popen[bytes]:
        return subprocess.Popen([REELGEN, "dispatcher"], env=env, stderr=subprocess.PIPE)

    with Consumer(redis_server.url, tmp_path / "stop"):
        first = dispatcher_process()
        deadline = time.monotonic() + 60
        while ledger.job(job.id).cursor < 100:
            assert time.monotonic() < deadline and first.poll() is None, first.stderr
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        stopped_at = ledger.job(job.id).cursor
        assert 100 <= stopped_at < 400
        second = dispatcher_process()
        try:
            deadline = time.monotonic() + 60
            while not ledger.job(job.id).state.finished:
                assert time.monotonic() < deadline and second.poll() is None
                time.sleep(0.05)
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(10)
    final = ledger.job(job.id)
    # every line handled exactly once: no item admitted twice, none lost
    assert (final.done, final.dispatched, final.failed, final.skipped) == (400, 400, 0, 0)
    indexed = [line["item_id"] for line in read_index(LocalStore(tmp_path / "out"), job.id)]
    assert sorted(set(indexed)) == ids
