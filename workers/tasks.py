"""Celery tasks: thin wrappers that run one pipeline stage and keep the ledger's books.

An item runs as prepare → analyse → render, each stage enqueueing the next at a higher broker priority. A named (ReelgenError) failure fails the item and stops
its chain; a transient one is retried first; any other exception is recorded as InternalError. Nothing an item
does may take the worker down.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import redis
from celery import Task
from celery.exceptions import Ignore, Retry, SoftTimeLimitExceeded
from celery.signals import worker_process_init

from jobs.catalog import CatalogEntry
from jobs.celery_app import PRIORITY_ANALYSE, PRIORITY_RENDER, app
from jobs.ledger import JobState, Ledger
from reelgen.errors import InternalError, ItemTimeout, ReelgenError
from reelgen.settings import OutputConfig, Settings, load_settings
from storage.cache import NodeCache
from storage.fetch import Fetcher
from storage.store import ObjectStore, open_store
from workers import pipeline
from workers.render import EncodeOptions

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class WorkerContext:
    """What one worker process holds for its lifetime: connections, caches and job configurations."""

    settings: Settings
    ledger: Ledger
    fetcher: Fetcher
    work_dir: Path
    _configs: dict[str, OutputConfig] = field(default_factory=dict)
    _stores: dict[str, ObjectStore] = field(default_factory=dict)

    @classmethod
    def create(cls, settings: Settings) -> WorkerContext:
        if settings.redis_url is None:
            raise RuntimeError("workers need REELGEN_REDIS_URL")
        client = redis.Redis.from_url(settings.redis_url.get_secret_value())
        cache = NodeCache(settings.resolved_cache_dir, settings.cache_max_bytes)
        work_dir = settings.state_dir / "work"
        work_dir.mkdir(parents=True, exist_ok=True)
        return cls(settings, Ledger(client), Fetcher(settings, cache), work_dir)

    def config(self, job_id: str) -> OutputConfig:
        if job_id not in self._configs:
            self._configs[job_id] = OutputConfig.model_validate(self.ledger.job(job_id).config)
        return self._configs[job_id]

    def store(self, out: str) -> ObjectStore:
        if out not in self._stores:
            self._stores[out] = open_store(out)
        return self._stores[out]

    def encode_options(self, config: OutputConfig) -> EncodeOptions:
        return EncodeOptions(
            crf=config.crf,
            preset=config.preset,
            threads=self.settings.threads_per_worker,
            audio_bitrate=config.audio_bitrate,
        )


_context: WorkerContext | None = None


@worker_process_init.connect
def _init_worker_process(**_: Any) -> None:
    # Connections are made per child process, after the fork, never inherited from the parent.
    global _context
    _context = WorkerContext.create(load_settings())


def context() -> WorkerContext:
    global _context
    if _context is None:
        _context = WorkerContext.create(load_settings())
    return _context


def _guarded(task: Task, job_id: str, entry: CatalogEntry, stage: Callable[[WorkerContext], T]) -> T:
    ctx = context()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        result = stage(ctx)
        stage_name = task.name.rsplit(".", 1)[-1]
        ctx.ledger.record_stage(job_id, stage_name, time.process_time() - cpu0, time.perf_counter() - wall0)
        return result
    except (Ignore, Retry):
        raise
    except SoftTimeLimitExceeded:
        error: ReelgenError = ItemTimeout(f"{task.name} ran past its soft time limit")
    except ReelgenError as exc:
        if exc.transient and task.request.retries < ctx.settings.task_retries:
            raise task.retry(exc=exc, countdown=min(60, 2 ** (task.request.retries + 1))) from exc
        error = exc
    except Exception as exc:
        log.exception("item %s of job %s: unexpected error in %s", entry.item_id, job_id, task.name)
        error = InternalError(f"{type(exc).__name__}: {exc}")
    name = type(error).__name__
    log.warning("item %s failed: %s: %s", entry.item_id, name, error)
    ctx.ledger.fail(job_id, entry.item_id, name, str(error), entry=entry.as_dict())
    raise Ignore()


@app.task(bind=True, name="reelgen.prepare", acks_late=True)
def prepare(self: Task, job_id: str, entry_json: dict[str, Any]) -> None:
    entry = CatalogEntry.from_dict(entry_json)
    ctx = context()
    if ctx.ledger.job(job_id).state is JobState.CANCELLED:
        raise Ignore()
    if (
        self.request.retries == 0
        and ctx.ledger.start(job_id, entry.item_id, ctx.settings.task_time_limit_s) == 0
    ):
        raise Ignore()  # a stale delivery of an item that is no longer in flight

    def run(ctx: WorkerContext) -> None:
        info = pipeline.probe(entry, ctx.fetcher, ctx.settings)
        state = {"job_id": job_id, "entry": entry_json, "info": pipeline.info_to_json(info)}
        analyse.apply_async((state,), priority=PRIORITY_ANALYSE)

    _guarded(self, job_id, entry, run)


@app.task(bind=True, name="reelgen.analyse", acks_late=True)
def analyse(self: Task, state: dict[str, Any]) -> None:
    job_id, entry = state["job_id"], CatalogEntry.from_dict(state["entry"])

    def run(ctx: WorkerContext) -> None:
        info = pipeline.info_from_json(state["info"])
        analysis = pipeline.analyse(
            entry, info, ctx.fetcher, ctx.config(job_id), ctx.settings.threads_per_worker
        )
        render.apply_async((dict(state, analysis=analysis.to_json()),), priority=PRIORITY_RENDER)

    _guarded(self, job_id, entry, run)


@app.task(bind=True, name="reelgen.render", acks_late=True)
def render(self: Task, state: dict[str, Any]) -> None:
    job_id, entry = state["job_id"], CatalogEntry.from_dict(state["entry"])

    def run(ctx: WorkerContext) -> None:
        config = ctx.config(job_id)
        pipeline.render_and_publish(
            entry,
            pipeline.info_from_json(state["info"]),
            pipeline.Analysis.from_json(state["analysis"]),
            ctx.fetcher,
            ctx.store(config.out),
            config,
            ctx.encode_options(config),
            work_dir=ctx.work_dir,
            job_id=job_id,
        )
        ctx.ledger.finish(job_id, entry.item_id)

    _guarded(self, job_id, entry, run)
    log.info("item %s done (pid %d)", entry.item_id, os.getpid())
