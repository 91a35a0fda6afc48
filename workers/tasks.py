"""Celery tasks: thin wrappers that run one pipeline stage and keep the ledger's books.

An item runs as prepare → sample_segment (one per segment, in parallel) → select → render; each stage enqueues
the next at a higher broker priority, and the last segment to finish enqueues select. A named (ReelgenError)
failure fails the item and stops it; a transient one is retried first; any other exception is recorded as
InternalError. Nothing an item does may take the worker down. Workers never import torch: inference goes to
the daemon through gpu_service.client.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import cv2
import redis
from celery import Task
from celery.exceptions import Ignore, Retry, SoftTimeLimitExceeded
from celery.signals import worker_process_init

from core.catalog_entry import CatalogEntry
from core.errors import InternalError, ItemTimeout, ReelgenError
from core.settings import OutputConfig, Settings, load_settings
from gpu_service.client import InferenceClient
from gpu_service.priority import PriorityKey
from jobs.broker.celery_app import REDIS_UNAVAILABLE, app
from jobs.broker.heartbeat import held_message, worker_id
from jobs.broker.queues import (
    PREPARE_TASK,
    PRIORITY_RENDER,
    PRIORITY_SAMPLE,
    PRIORITY_SELECT,
    RENDER_TASK,
    SAMPLE_TASK,
    SELECT_TASK,
)
from jobs.ledger import JobState, Ledger
from monitoring.logging_setup import log_context
from monitoring.metrics import count_item, observe_stage
from storage.cache import NodeCache
from storage.fetch import Fetcher
from storage.store import ObjectStore, open_store
from workers import pipeline, sharing
from workers.fanin import SegmentResults
from workers.media.render import EncodeOptions
from workers.media.sound import sound_options
from workers.stage_state import (
    analysis_from_json,
    analysis_to_json,
    info_from_json,
    info_to_json,
    samples_from_json,
    samples_to_json,
    segment_from_json,
    segment_to_json,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class WorkerContext:
    """What one worker process holds for its lifetime: connections, caches and job configurations."""

    settings: Settings
    ledger: Ledger
    segments: SegmentResults
    fetcher: Fetcher
    inference: InferenceClient
    work_dir: Path
    _configs: dict[str, OutputConfig] = field(default_factory=dict)
    _submitted: dict[str, float] = field(default_factory=dict)
    _stores: dict[str, ObjectStore] = field(default_factory=dict)

    @classmethod
    def create(cls, settings: Settings) -> WorkerContext:
        if settings.redis_url is None:
            raise RuntimeError("workers need REELGEN_REDIS_URL")
        # OpenCV keeps a pool of a thread per core for its own loops (resizes, blurs, feature detection): a worker
        # holds it to its CPU budget, as its codecs, so that a node's workers do not each run a pool over every
        # core (what that costs and does not: docs/performance.md, "OpenCV's threads")
        cv2.setNumThreads(settings.threads_per_worker)
        client = redis.Redis.from_url(settings.redis_url.get_secret_value())
        cache = NodeCache(settings.resolved_cache_dir, settings.cache_max_bytes)
        work_dir = settings.state_dir / "work"
        work_dir.mkdir(parents=True, exist_ok=True)
        inference = InferenceClient(
            settings.daemon_socket,
            settings.daemon.request_timeout_s,
            settings.daemon.max_in_flight,
            settings.daemon_connect_wait_s,
        )
        return cls(
            settings, Ledger(client), SegmentResults(client), Fetcher(settings, cache), inference, work_dir
        )

    def config(self, job_id: str) -> OutputConfig:
        if job_id not in self._configs:
            job = self.ledger.job(job_id)
            self._configs[job_id] = OutputConfig.model_validate(job.config)
            self._submitted[job_id] = job.submitted_at
        return self._configs[job_id]

    def priority(self, job_id: str, item_first_at: float) -> PriorityKey:
        """The daemon serves requests by (job submission, the item's first request): first come, first served."""
        self.config(job_id)
        return PriorityKey(self._submitted[job_id], item_first_at)

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
            sound=sound_options(config),
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


def _guarded(
    task: Task,
    job_id: str,
    item_id: str,
    token: int | None,
    stage: Callable[[WorkerContext, CatalogEntry], T],
    work: str | None = None,
) -> T:
    with log_context(job_id=job_id, item_id=item_id):
        ctx = context()
        task_id = task.request.id or task.name
        # renews the item's lease and notes its stage; a message of a superseded dispatch (`token`: the item was
        # re-dispatched since, e.g. its worker was lost) is dropped; a task id still open from an earlier delivery
        # means that delivery killed its worker, and after crash_limit of those the ledger dead-letters the item
        # (-1) instead of looping
        begun = ctx.ledger.begin_task(
            job_id,
            item_id,
            task_id,
            ctx.settings.lease_s,
            ctx.settings.crash_limit,
            task.name.rsplit(".", 1)[-1],
            token,
            worker_id(),
        )
        retried = False
        try:
            if begun <= 0:
                raise Ignore()  # dead-lettered now, no longer in flight (settled, cancelled), or stale
            # the entry is kept once, in the item's in-flight record: messages name the item, so a catalog entry of
            # any size never sits in the broker once per stage and segment
            record = ctx.ledger.item(job_id, item_id)
            if record is None:
                raise Ignore()  # settled or cancelled since the task began
            return _run_stage(task, job_id, CatalogEntry.from_dict(record["entry"]), stage, ctx, work)
        except Retry:
            retried = True
            raise
        finally:
            # a retry is a new message under the same task id, which this worker may already hold: its entry
            # stays registered (the next heartbeat drops it if another worker took the retry)
            held = None if retried else held_message(job_id, item_id, token, task_id)
            ctx.ledger.end_task(job_id, item_id, task_id, held)


def _run_stage(
    task: Task,
    job_id: str,
    entry: CatalogEntry,
    stage: Callable[[WorkerContext, CatalogEntry], T],
    ctx: WorkerContext,
    work: str | None = None,
) -> T:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        result = stage(ctx, entry)
        stage_name = task.name.rsplit(".", 1)[-1]
        cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
        ctx.ledger.record_stage(job_id, stage_name, cpu_s, wall_s)
        observe_stage(stage_name, wall_s, cpu_s)
        return result
    except (Ignore, Retry):
        raise
    except REDIS_UNAVAILABLE as exc:
        # the ledger's Redis is away (a restart): nothing is wrong with the item, so never fail it for this;
        # the broker redelivers the task, or the lease reaper re-dispatches the item
        log.warning("item %s: Redis unavailable in %s (%s); retrying", entry.item_id, task.name, exc)
        # one more retry each time: Celery's max_retries=None means the task's default (3), not unbounded
        raise task.retry(exc=exc, countdown=5, max_retries=task.request.retries + 1) from exc
    except SoftTimeLimitExceeded:
        error: ReelgenError = ItemTimeout(f"{task.name} ran past its soft time limit")
    except ReelgenError as exc:
        if exc.transient and task.request.retries < ctx.settings.task_retries:
            count_item("retried", type(exc).__name__)
            raise task.retry(exc=exc, countdown=min(60, 2 ** (task.request.retries + 1))) from exc
        error = exc
    except Exception as exc:
        log.exception("item %s of job %s: unexpected error in %s", entry.item_id, job_id, task.name)
        error = InternalError(f"{type(exc).__name__}: {exc}")
    name = type(error).__name__
    log.warning("item %s failed: %s: %s", entry.item_id, name, error)
    if work is not None:
        # the items waiting for this one's work take it up themselves
        ctx.ledger.release_shared(job_id, work, entry.item_id)
    if ctx.ledger.fail(job_id, entry.item_id, name, str(error)):
        count_item("failed", name)
    raise Ignore()


def _item_id(state: dict[str, Any]) -> str:
    # a message published by an earlier version carries the whole entry instead of the item's id
    return str(state["item_id"] if "item_id" in state else state["entry"]["item_id"])


def _shared_work(ctx: WorkerContext, entry: CatalogEntry, config: OutputConfig) -> str:
    """The item's shared work (workers.sharing.work_key), from its video and main image as fetched."""
    with ctx.fetcher.local_path(entry.video) as video:
        if not entry.image:
            return sharing.work_key(video, None, entry, config.config_hash)
        with ctx.fetcher.local_path(entry.image) as image:
            return sharing.work_key(video, image, entry, config.config_hash)


def _renew_lead(ctx: WorkerContext, job_id: str, item_id: str, work: str | None) -> None:
    """Keep the lead of the item's shared work over its stages (the lease's length from each)."""
    if work is not None:
        ctx.ledger.lead_shared(job_id, work, item_id, ctx.settings.lease_s)


@app.task(bind=True, name=PREPARE_TASK, acks_late=True)
def prepare(self: Task, job_id: str, item: str | dict[str, Any], token: int | None = None) -> None:
    # a message names its item; one published by an earlier version carries the whole catalog entry instead
    item_id = item if isinstance(item, str) else str(item["item_id"])
    ctx = context()
    if ctx.ledger.job(job_id).state is JobState.CANCELLED:
        raise Ignore()
    if self.request.retries == 0 and ctx.ledger.start(job_id, item_id, ctx.settings.lease_s, token) == 0:
        raise Ignore()  # a stale delivery: the item is no longer in flight, or was re-dispatched since

    def run(ctx: WorkerContext, entry: CatalogEntry) -> None:
        config = ctx.config(job_id)
        info, segments = pipeline.plan_sampling(entry, ctx.fetcher, ctx.settings, config.sample_fps)
        work = _shared_work(ctx, entry, config) if ctx.settings.share_work else None
        if work is not None:
            kind, other = ctx.ledger.lead_shared(job_id, work, item_id, ctx.settings.lease_s)
            if kind == "done" and other != item_id:
                out = ctx.store(config.out)
                sharing.reuse(out, other, entry, job_id, pipeline.manifest_uri(entry.video))
                if ctx.ledger.finish(job_id, item_id):
                    count_item("done")
                log.info(
                    "item %s done: the clips of %s, which has the same video and settings", item_id, other
                )
                return
            if kind == "wait" and self.request.retries < sharing.waits(ctx.settings.lease_s):
                # one more retry each time (Celery's max_retries=None means the task's default, not unbounded)
                retries = self.request.retries
                raise self.retry(countdown=sharing.wait_s(retries), max_retries=retries + 1)
            if kind == "wait":
                work = None  # waited a lease's length for a lead that never finished: the item does it alone
        ctx.segments.reset(job_id, item_id, token)
        state = {
            "job_id": job_id,
            "item_id": item_id,
            "info": info_to_json(info),
            "first_at": time.time(),
            "segments": len(segments),
            "token": token,
            "work": work,
        }
        for segment in segments:
            sample_segment.apply_async((state, segment_to_json(segment)), priority=PRIORITY_SAMPLE)

    _guarded(self, job_id, item_id, token, run)


@app.task(bind=True, name=SAMPLE_TASK, acks_late=True)
def sample_segment(self: Task, state: dict[str, Any], segment_json: dict[str, Any]) -> None:
    job_id, token = state["job_id"], state.get("token")
    segment = segment_from_json(segment_json)

    def run(ctx: WorkerContext, entry: CatalogEntry) -> None:
        samples = pipeline.sample_segment(
            entry,
            info_from_json(state["info"]),
            segment,
            ctx.fetcher,
            ctx.inference,
            ctx.priority(job_id, state["first_at"]),
            ctx.config(job_id),
            pipeline.Decoding.from_settings(ctx.settings),
        )
        result = samples_to_json(samples)
        if ctx.segments.store(job_id, entry.item_id, token, segment.index, state["segments"], result):
            select.apply_async((state,), priority=PRIORITY_SELECT)

    _guarded(self, job_id, _item_id(state), token, run, state.get("work"))


@app.task(bind=True, name=SELECT_TASK, acks_late=True)
def select(self: Task, state: dict[str, Any]) -> None:
    job_id, token = state["job_id"], state.get("token")

    def run(ctx: WorkerContext, entry: CatalogEntry) -> None:
        _renew_lead(ctx, job_id, entry.item_id, state.get("work"))
        results = ctx.segments.collect(job_id, entry.item_id, token)
        samples = samples_from_json(results)
        info, config = info_from_json(state["info"]), ctx.config(job_id)
        chosen = pipeline.choose(info, samples, config)
        analysis = pipeline.frame_window(
            entry, info, chosen, ctx.fetcher, ctx.inference, ctx.priority(job_id, state["first_at"]), config,
            pipeline.Decoding.from_settings(ctx.settings),
        )  # fmt: skip
        render.apply_async((dict(state, analysis=analysis_to_json(analysis)),), priority=PRIORITY_RENDER)
        ctx.segments.clear(job_id, entry.item_id, token)

    _guarded(self, job_id, _item_id(state), token, run, state.get("work"))


@app.task(bind=True, name=RENDER_TASK, acks_late=True)
def render(self: Task, state: dict[str, Any]) -> None:
    job_id, item_id = state["job_id"], _item_id(state)

    def run(ctx: WorkerContext, entry: CatalogEntry) -> None:
        config = ctx.config(job_id)
        work = state.get("work")
        _renew_lead(ctx, job_id, entry.item_id, work)
        pipeline.render_and_publish(
            entry,
            info_from_json(state["info"]),
            analysis_from_json(state["analysis"]),
            ctx.fetcher,
            ctx.store(config.out),
            config,
            ctx.encode_options(config),
            decoding=pipeline.Decoding.from_settings(ctx.settings),
            work_dir=ctx.work_dir,
            job_id=job_id,
        )
        if work is not None:
            ctx.ledger.shared_done(job_id, work, entry.item_id, sharing.DONE_KEPT_S)
        if ctx.ledger.finish(job_id, entry.item_id):
            count_item("done")

    _guarded(self, job_id, item_id, state.get("token"), run, state.get("work"))
    log.info("item %s done (pid %d)", item_id, os.getpid())
