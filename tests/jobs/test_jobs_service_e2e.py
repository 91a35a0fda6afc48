"""Catalog operations as a service, end to end through the `reelgen` entry point: backfill returns at once, a
`reelgen dispatcher` and a `reelgen worker` (real Celery processes, heartbeat file) process it, `status --json`
reports it, `retry` re-enqueues exactly the failed item, job control acts on a live job, the nightly job of a
date is registered once, and an item whose task kills its worker is dead-lettered instead of looping."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Task

from core.catalog_entry import CatalogEntry
from core.settings import load_settings
from jobs.broker.celery_app import app
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.submit import submit_retry
from jobs.ledger import ItemState, JobState, Ledger
from jobs.local.redis_server import EmbeddedRedis
from jobs.local.runner import local_daemon_settings
from reelgen.sample_catalog import write_sample_catalog
from tests.support.ledger import index_results
from tests.support.services import spawn, wait

REELGEN = str(Path(sys.executable).with_name("reelgen"))
CRASH_TASK = "reelgen.test_crash"


@app.task(bind=True, name=CRASH_TASK, acks_late=True)
def crash(self: Task, job_id: str, item_id: str) -> None:
    """Runs in the worker (imported with --include): a stage that kills the worker process."""
    from workers.tasks import _guarded

    _guarded(self, job_id, item_id, None, lambda ctx, entry: os._exit(1))


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REELGEN, *args], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def service_env(tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    env.update(
        REELGEN_REDIS_URL=redis_server.url,
        REELGEN_STATE_DIR=str(tmp_path / "state"),
        REELGEN_OUT=str(tmp_path / "out"),
        REELGEN_ASPECTS="1:1",
        REELGEN_WORKERS="2",
        REELGEN_CPUS="2",
        REELGEN_TASK_RETRIES="0",
        REELGEN_DISPATCH_POLL_S="0.1",
        REELGEN_INDEX_FLUSH_S="0.2",
        REELGEN_CRASH_LIMIT="2",
        # the backfills here read media beside their catalog, as an operator who trusts its catalogs allows
        REELGEN_ALLOW_LOCAL_SOURCES="true",
        REELGEN_DAEMON__SOCKET_PATH=str(tmp_path / "state" / "gpu.sock"),
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    return env


@pytest.fixture
def services(service_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, Any]]:
    """An inference daemon, a `reelgen worker` and a `reelgen dispatcher`, stopped with SIGTERM afterwards."""
    from gpu_service.supervisor import DaemonProcess

    saved = dict(os.environ)
    os.environ.update(service_env)
    try:
        settings = load_settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    heartbeat = tmp_path / "state" / "worker.heartbeat"
    logs = tmp_path / "state" / "logs"
    logs.mkdir(parents=True)
    with DaemonProcess(local_daemon_settings(settings), logs / "daemon.log"):
        worker = spawn(
            [
                REELGEN,
                "worker",
                "--heartbeat-file",
                str(heartbeat),
                "--heartbeat-s",
                "0.5",
                "--loglevel",
                "WARNING",
            ],
            service_env,
            logs / "worker.err",
        )
        dispatcher = spawn([REELGEN, "dispatcher"], service_env, logs / "dispatcher.err")
        try:
            yield {"heartbeat": heartbeat, "worker": worker, "dispatcher": dispatcher, "logs": logs}
        finally:
            for process in (dispatcher, worker):
                process.send_signal(signal.SIGTERM)
            for process in (dispatcher, worker):
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def test_backfill_status_retry_and_control_through_the_services(
    tmp_path: Path, service_env: dict[str, str], services: dict[str, Any], redis_client: redis.Redis
) -> None:
    folder = tmp_path / "catalog"
    catalog = write_sample_catalog(folder, 2, seed=5, size=(320, 180), duration_s=(4.0, 5.0), fps=10)
    (folder / "videos" / "broken.mp4").write_bytes((folder / "videos" / "sku-0001.mp4").read_bytes()[:3000])
    lines = catalog.read_text().splitlines()
    broken = json.loads(lines[0]) | {"item_id": "broken", "video": "videos/broken.mp4"}
    catalog.write_text("\n".join([*lines, json.dumps(broken)]) + "\n")
    ledger = Ledger(redis_client)

    started = time.monotonic()
    submitted = cli(service_env, "backfill", str(catalog), "--max-in-flight", "2")
    assert submitted.returncode == 0, submitted.stderr
    assert time.monotonic() - started < 30  # registers and returns; the services do the work
    job_id = submitted.stdout.strip()

    wait(lambda: ledger.job(job_id).state.finished, what="the backfill")
    status = cli(service_env, "status", job_id, "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert (report["state"], report["done"], report["failed"], report["total"]) == ("completed", 2, 1, 3)
    assert report["top_errors"] == [{"error": "UnreadableVideo", "count": 1}]
    assert report["rate_per_s"] > 0 and report["eta_s"] == 0
    assert (tmp_path / "out" / "sku-0001" / "manifest.json").is_file()
    assert "UnreadableVideo x1" in cli(service_env, "status").stdout

    # the worker's heartbeat is fresh
    assert time.time() - float(services["heartbeat"].read_text()) < 10

    # retry: a dry run names the item; a real retry re-enqueues exactly it (still broken: fails again)
    dry = cli(service_env, "retry", "--job", job_id, "--dry-run")
    assert dry.returncode == 0 and "would retry 1 item" in dry.stdout and "UnreadableVideo x1" in dry.stdout
    assert (
        "would retry 0"
        in cli(service_env, "retry", "--job", job_id, "--error", "SourceNotFound", "--dry-run").stdout
    )
    retried = cli(service_env, "retry", "--job", job_id)
    assert retried.returncode == 0, retried.stderr
    retry_id = retried.stdout.strip()
    wait(lambda: ledger.job(retry_id).state.finished, what="the retry")
    retry = ledger.job(retry_id)
    assert (retry.kind.value, retry.dispatched, retry.failed, retry.done) == ("retry", 1, 1, 0)
    assert [f.item_id for f in ledger.failures(retry_id)] == ["broken"]
    # two retries of the same job at once: the item is enqueued by one of them only
    settings = load_settings(redis_url=service_env["REELGEN_REDIS_URL"])
    both = [submit_retry(ledger, settings, job_id).id for _ in range(2)]
    wait(lambda: all(ledger.job(j).state.finished for j in both), what="the concurrent retries")
    assert sorted(ledger.job(j).dispatched for j in both) == [0, 1]

    # job control on a live job: pause keeps its cursor, cancel ends it
    resubmitted = cli(service_env, "backfill", str(catalog), "--reprocess", "all", "--max-in-flight", "1")
    live = resubmitted.stdout.strip()
    assert cli(service_env, "job", "pause", live).stdout.strip() == f"{live}: paused"
    cursor = ledger.job(live).cursor
    time.sleep(1)
    assert ledger.job(live).cursor == cursor
    assert cli(service_env, "job", "limit", live, "3").returncode == 0
    assert ledger.job(live).max_in_flight == 3
    assert cli(service_env, "job", "cancel", live).stdout.strip() == f"{live}: cancelled"
    bad = cli(service_env, "job", "resume", live)
    assert bad.returncode == 2 and "JobStateError" in bad.stderr
    assert cli(service_env, "job", "pause", "no-such-job").returncode == 2


def test_nightly_is_registered_once_per_logical_date(
    tmp_path: Path, service_env: dict[str, str], redis_client: redis.Redis
) -> None:
    catalog = tmp_path / "c.jsonl"
    catalog.write_text(
        json.dumps({"item_id": "a", "video": "/no/a.mp4", "image": "/no/a.jpg", "title": "a"}) + "\n"
    )
    env = service_env | {"REELGEN_NIGHTLY_CATALOG": str(catalog)}
    first = cli(env, "nightly", "--date", "2026-11-21")
    again = cli(env, "nightly", "--date", "2026-11-21")
    assert first.returncode == 0 and first.stdout.strip() == "nightly-2026-11-21", first.stderr
    assert "already registered" in again.stdout
    ledger = Ledger(redis_client)
    assert [j.id for j in ledger.jobs() if j.kind.value == "nightly"] == ["nightly-2026-11-21"]
    assert ledger.job("nightly-2026-11-21").reprocess.value == "changed"


def test_an_item_that_kills_its_worker_is_dead_lettered(
    tmp_path: Path, service_env: dict[str, str], redis_client: redis.Redis
) -> None:
    from jobs.broker.celery_app import configure
    from jobs.intake.submit import submit_catalog_job
    from jobs.ledger import JobKind

    ledger = Ledger(redis_client)
    catalog = tmp_path / "c.jsonl"
    entry = {"item_id": "poison", "video": "/no/p.mp4", "image": "/no/p.jpg", "title": "p"}
    catalog.write_text(json.dumps(entry) + "\n")
    settings = load_settings(redis_url=service_env["REELGEN_REDIS_URL"], out=str(tmp_path / "out"))
    configure(app, settings)
    job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    ledger.admit(job.id, "poison", CatalogEntry(**entry).as_dict(), cursor=1)
    ledger.mark_exhausted(job.id)
    app.send_task(CRASH_TASK, args=(job.id, "poison"), priority=6)
    logs = tmp_path / "logs"
    logs.mkdir()
    worker = spawn(
        [sys.executable, "-m", "celery", "-A", "jobs.broker.celery_app", "worker", "--pool", "prefork",
         "--concurrency", "1", "--include", "tests.jobs.test_jobs_service_e2e", "--without-gossip",
         "--without-mingle", "--loglevel", "WARNING"],
        service_env,
        logs / "worker.err",
    )  # fmt: skip
    try:
        wait(lambda: ledger.item_state(job.id, "poison") in (ItemState.DEAD, None), what="dead-letter")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    failure = ledger.failures(job.id)[0]
    assert failure.error == "WorkerLost" and failure.dead
    index_results(ledger, job.id)
    assert ledger.finish_if_drained(job.id) is JobState.COMPLETED
    assert ledger.job(job.id).dead == 1
