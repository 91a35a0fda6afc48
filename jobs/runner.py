"""`reelgen run`: register a job, dispatch its catalog, run local workers, wait, summarise.

Exit status (DESIGN.md §5): 0 all items done, 1 some failed, 2 usage or configuration error.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import redis
from pydantic import SecretStr

from jobs.celery_app import app, configure
from jobs.dispatcher import Dispatcher
from jobs.ledger import JobKind, JobRecord, Ledger
from jobs.redis_server import EmbeddedRedis
from jobs.worker_pool import WorkerPool
from monitoring.progress import ProgressBar
from reelgen.errors import CatalogError
from reelgen.settings import Settings
from storage.store import open_store

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def count_lines(catalog: Path) -> int:
    with open(catalog, "rb") as handle:
        lines = sum(1 for line in handle if line.strip())
    return lines - 1 if catalog.suffix.lower() == ".csv" else lines


def worker_env(settings: Settings, redis_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        REELGEN_REDIS_URL=redis_url,
        REELGEN_STATE_DIR=str(settings.state_dir.resolve()),
        REELGEN_CPUS=str(settings.cpus),
        REELGEN_WORKERS=str(settings.worker_count),
        REELGEN_CODEC_THREADS=str(settings.threads_per_worker),
    )
    return env


def summarise(ledger: Ledger, job: JobRecord, out_uri: str, elapsed_s: float, stream: TextIO) -> None:
    print(
        f"job {job.id}: {job.done} done, {job.failed} failed, {job.skipped} skipped "
        f"in {elapsed_s:.1f} s; outputs in {out_uri}",
        file=stream,
    )
    for failure in ledger.failures(job.id):
        print(f"  FAILED {failure.item_id}: {failure.error}: {failure.message}", file=stream)


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int
    job: JobRecord
    #: {stage: {"cpu": s, "wall": s, "runs": n}} summed over the job's items
    stages: dict[str, dict[str, float]]


def run_catalog(settings: Settings, catalog: Path, *, stream: TextIO = sys.stdout) -> RunOutcome:
    if not catalog.is_file():
        raise CatalogError(f"catalog {catalog} does not exist or is not a file")
    started = time.monotonic()
    config = settings.output_config()
    store = open_store(config.out)
    with ExitStack() as stack:
        if settings.redis_url is None:
            embedded = stack.enter_context(EmbeddedRedis(settings.state_dir))
            redis_url = embedded.url
            settings = settings.model_copy(update={"redis_url": SecretStr(redis_url)})
        else:
            redis_url = settings.redis_url.get_secret_value()
        configure(app, settings)
        ledger = Ledger(redis.Redis.from_url(redis_url))
        job = ledger.create_job(
            kind=JobKind.RUN,
            catalog=str(catalog.resolve()),
            out=store.root,
            config_hash=config.config_hash,
            config=config.model_dump(mode="json"),
        )
        print(f"job {job.id}: {catalog} -> {store.root} ({', '.join(config.aspects)})", file=stream)
        pool = stack.enter_context(
            WorkerPool(
                concurrency=settings.worker_count,
                env=worker_env(settings, redis_url),
                log_file=settings.state_dir / "logs" / f"worker-{job.id}.log",
            )
        )
        bar = ProgressBar()
        total = count_lines(catalog)

        def tick() -> None:
            pool.ensure_running()
            current = ledger.job(job.id)
            bar.update(
                done=current.done, failed=current.failed, skipped=current.skipped,
                total=total, in_flight=current.in_flight,
            )  # fmt: skip

        Dispatcher(ledger, app, store, job, max_in_flight=settings.max_in_flight).run(catalog, tick)
        while not ledger.complete_if_drained(job.id):
            tick()
            time.sleep(0.25)
        tick()
        bar.close()
        final = ledger.job(job.id)
        summarise(ledger, final, store.root, time.monotonic() - started, stream)
        stages = ledger.stage_totals(job.id)
    return RunOutcome(EXIT_OK if final.failed == 0 else EXIT_FAILED, final, stages)
