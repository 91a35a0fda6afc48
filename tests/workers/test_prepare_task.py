"""The prepare task in process against a real Redis: a message names its item and the task reads the catalog
entry from the item's in-flight record (a message from an earlier version, carrying the entry, still works)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from core.settings import load_settings
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.submit import submit_catalog_job
from jobs.ledger import JobKind, Ledger
from jobs.local.redis_server import EmbeddedRedis
from workers import tasks


def entry(item_id: str) -> dict[str, str]:
    return {
        "item_id": item_id,
        "video": f"/no/{item_id}.mp4",
        "image": f"/no/{item_id}.jpg",
        "title": item_id,
    }


def test_prepare_reads_the_entry_from_the_ledger_whatever_the_message_carries(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings(
        redis_url=redis_server.url,
        state_dir=str(tmp_path / "state"),
        out=str(tmp_path / "out"),
        task_retries=0,
    )
    monkeypatch.setattr(tasks, "_context", tasks.WorkerContext.create(settings))
    ledger = Ledger(redis_client)
    catalog = tmp_path / "c.jsonl"
    catalog.write_text("".join(json.dumps(entry(i)) + "\n" for i in ("named", "carried")))
    job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    for item_id in ("named", "carried"):
        assert ledger.admit(job.id, item_id, entry(item_id))
    tasks.prepare.apply(args=(job.id, "named", 1))
    tasks.prepare.apply(args=(job.id, entry("carried"), 1))  # published before messages named their item
    tasks.prepare.apply(args=(job.id, "named", 1))  # settled since: a stale delivery changes nothing
    failures = {f.item_id: f for f in ledger.failures(job.id)}
    assert set(failures) == {"named", "carried"} and ledger.job(job.id).failed == 2
    for item_id, failure in failures.items():
        # the source named in the ledger's entry was the one opened
        assert failure.error != "InternalError" and f"/no/{item_id}.mp4" in failure.message, failure
