"""The dispatcher: feeds every running job's items into the broker, oldest and most urgent first.

ONE implementation serves `reelgen run` (in process, for its own job) and `reelgen dispatcher` (a service, for
every job). Each tick it takes the active jobs in order (priority class, then submission time), and gives each
as many new items as its own in-flight limit (changeable on a live job) and the global one allow, so older and
higher-class jobs fill first and Redis holds a bounded number of items whatever the catalog sizes. It also
re-dispatches the items of lost workers and runs the lease reaper (jobs/dispatch/reaper.py), moves settled results into
each job's results index, and ends jobs that are done.
A job is fed by one dispatcher at a time (a lock in Redis that expires if its holder dies).

Whatever goes wrong in serving one job (its catalog gone, a store that refuses the index, a bug) stays with that
job: it is tried again from its cursor after a growing pause, and failed with the cause once dispatch_attempts
tries in a row went wrong, while the dispatcher serves the other jobs throughout.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable

from celery import Celery

from core.errors import JobNotFound, ReelgenError
from core.settings import Settings
from core.text import printable
from jobs.broker.celery_app import REDIS_UNAVAILABLE
from jobs.dispatch.feed import JobFeed
from jobs.dispatch.reaper import LostWorkers, Reaper
from jobs.ledger import JobState, Ledger
from jobs.ledger.keys import JobKeys
from monitoring.logging_setup import log_context
from storage.store import ObjectStore, open_store

log = logging.getLogger(__name__)

# the longest pause before a job whose serving failed is tried again, and the most of its cause that is kept
MAX_RETRY_WAIT_S = 60.0
CAUSE_CHARS = 500


class Dispatcher:
    def __init__(
        self,
        ledger: Ledger,
        celery: Celery,
        settings: Settings,
        *,
        only: str | None = None,
        store_factory: Callable[[str], ObjectStore] = open_store,
    ) -> None:
        self.ledger = ledger
        self.celery = celery
        self.settings = settings
        self.only = only
        self.store_factory = store_factory
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.feeds: dict[str, JobFeed] = {}
        self.reaper = Reaper(ledger, celery, settings)
        self.lost_workers = LostWorkers(ledger, celery, settings, only)
        self._last_flush: dict[str, float] = {}
        self._last_reap = 0.0
        self._last_sweep = 0.0
        #: since when this dispatcher has seen Redis answer without a break: it judges a worker's silence only
        #: once that spans the whole loss bound (after a Redis restart every worker is silent for a moment)
        self._redis_since = time.monotonic()
        #: jobs whose last serving failed, and when they may be tried again
        self._retry_at: dict[str, float] = {}

    def tick(self) -> int:
        """One pass over the active jobs; returns the number of items admitted."""
        ids = self.ledger.active_jobs()
        if self.only is not None:
            ids = [job_id for job_id in ids if job_id == self.only]
        with self.ledger.redis.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.hlen(JobKeys.of(job_id).inflight)
                pipe.xlen(JobKeys.of(job_id).results)
            replies = [int(n) for n in pipe.execute()]
        in_flight = dict(zip(ids, replies[0::2], strict=True))
        unindexed = dict(zip(ids, replies[1::2], strict=True))
        total_in_flight = sum(in_flight.values())
        admitted = 0
        now = time.monotonic()
        reap_due = now - self._last_reap >= self.settings.reaper_interval_s
        for job_id in ids:
            if self._retry_at.get(job_id, now) > now:
                continue  # serving it failed a moment ago
            if not self.ledger.acquire_lock(job_id, self.owner, self.settings.dispatch_lock_s):
                continue  # another dispatcher feeds it
            capacity = self.settings.max_in_flight_total - total_in_flight
            with log_context(job_id=job_id):
                try:
                    count = self._serve_job(
                        job_id, capacity, in_flight[job_id], unindexed[job_id], now, reap_due
                    )
                except REDIS_UNAVAILABLE:
                    raise  # nothing is wrong with the job: serve() waits for Redis
                except Exception as exc:
                    self._job_failed(job_id, exc, now)
                    continue
            admitted += count
            total_in_flight += count
        if reap_due:
            self._last_reap = now
        self._sweep_lost_workers(now)
        # jobs that left the active set otherwise (cancelled) get their last results indexed too
        for job_id in [j for j in self.feeds if j not in ids]:
            self._close(job_id, None)
        for job_id in [j for j in self._retry_at if j not in ids]:
            del self._retry_at[job_id]
        return admitted

    def _sweep_lost_workers(self, now: float) -> None:
        """Every heartbeat interval: re-dispatch what lost workers held."""
        if now - self._last_sweep < self.settings.worker_heartbeat_s:
            return
        if now - self._redis_since < self.settings.worker_lost_s:
            return
        self._last_sweep = now
        self.lost_workers.sweep()

    def _serve_job(
        self, job_id: str, capacity: int, in_flight: int, unindexed: int, now: float, reap_due: bool
    ) -> int:
        """Feed one job up to its limits, reap its leases, index its results, end it when done; the number of
        items admitted."""
        feed = self.feeds.get(job_id) or self._open(job_id)
        if feed is None:
            return 0
        job = self.ledger.job(job_id)
        feed.job.max_in_flight = job.max_in_flight
        count = 0
        if job.state is JobState.RUNNING and not feed.exhausted:
            capacity = min(job.max_in_flight - job.in_flight, capacity)
            if capacity > 0:
                count = feed.step(capacity)
        if reap_due:
            self.reaper.reap(feed.job)
        # Waiting results move to the index every index_flush_s, or sooner once index_flush_items wait (Redis
        # holds a bounded number whatever the throughput), and at once when nothing is in flight: a job
        # completes only once its results stream is empty.
        due = now - self._last_flush[job_id] >= self.settings.index_flush_s
        if unindexed and (due or unindexed >= self.settings.index_flush_items or not in_flight):
            feed.index.flush()
            self._last_flush[job_id] = now
        if job.feed_errors:
            self.ledger.feed_recovered(job_id)
            self._retry_at.pop(job_id, None)
        final = self.ledger.finish_if_drained(job_id)
        if final is not None:
            self._close(job_id, final)
        return count

    def _job_failed(self, job_id: str, exc: Exception, now: float) -> None:
        """Serving a job raised: drop its feed (a catalog reader that raised is over, and a feed kept would take
        the rest of its catalog for empty), try it again from its cursor later, and fail it once
        dispatch_attempts tries in a row went wrong."""
        cause = printable(f"{type(exc).__name__}: {exc}")[:CAUSE_CHARS]
        # a named error says what is wrong; anything else is a bug, whose traceback the operator needs
        log.error(
            "job %s: serving it failed: %s",
            job_id,
            cause,
            exc_info=None if isinstance(exc, ReelgenError) else exc,
        )
        feed = self.feeds.pop(job_id, None)
        self._last_flush.pop(job_id, None)
        if feed is not None:
            try:
                feed.close()
            except Exception:
                log.exception("job %s: closing its feed failed", job_id)
        tries = self.ledger.feed_failed(job_id, cause, self.settings.dispatch_attempts)
        if tries == 0:
            log.error(
                "job %s failed: serving it went wrong %d times in a row",
                job_id,
                self.settings.dispatch_attempts,
            )
            self._retry_at.pop(job_id, None)
            self.ledger.release_lock(job_id, self.owner)
            return
        self._retry_at[job_id] = now + min(
            MAX_RETRY_WAIT_S, self.settings.dispatch_poll_s * 2 ** max(1, tries)
        )

    def _open(self, job_id: str) -> JobFeed | None:
        try:
            job = self.ledger.job(job_id)
        except JobNotFound:
            return None
        feed = JobFeed(self.ledger, self.celery, self.settings, job, self.store_factory(job.out))
        republished = feed.republish_pending()
        if republished:
            log.info("job %s: re-published %d pending item(s) on take-over", job_id, republished)
        self.feeds[job_id] = feed
        self._last_flush[job_id] = time.monotonic()  # the job's flush clock starts with its feed
        return feed

    def _close(self, job_id: str, final: JobState | None) -> None:
        feed = self.feeds.pop(job_id, None)
        if feed is not None:
            feed.finish()
        self.ledger.release_lock(job_id, self.owner)
        self._last_flush.pop(job_id, None)
        if final is not None:
            log.info("job %s %s", job_id, final.value)

    def serve(
        self, stop: Callable[[], bool] = lambda: False, on_tick: Callable[[], None] = lambda: None
    ) -> None:
        """Tick until stop() says so; sleeps only when a tick found nothing to do.

        A Redis that goes away (a restart) pauses dispatching with a growing back-off instead of ending the
        service: every step is atomic in Redis, so the next tick carries on from the saved cursors.
        """
        backoff = 0.0
        try:
            while not stop():
                try:
                    busy = self.tick()
                    backoff = 0.0
                except REDIS_UNAVAILABLE as exc:
                    # a page of lines read but not admitted would be lost with the feeds' buffers: the feeds
                    # open again from the cursors Redis kept
                    self._drop_feeds()
                    backoff = min(10.0, max(0.5, backoff * 2))
                    log.warning("Redis unavailable (%s); dispatching again in %.1f s", exc, backoff)
                    time.sleep(backoff)
                    self._redis_since = time.monotonic()
                    continue
                on_tick()
                if not busy and not stop():  # a tick that ended the job ends the loop now, not a poll later
                    time.sleep(self.settings.dispatch_poll_s)
        finally:
            self.close()

    def _drop_feeds(self) -> None:
        """Forget every feed without touching Redis."""
        for job_id in list(self.feeds):
            self.feeds.pop(job_id).close()
            self._last_flush.pop(job_id, None)

    def close(self) -> None:
        for job_id in list(self.feeds):
            feed = self.feeds.pop(job_id)
            feed.index.flush()
            feed.close()
            self.ledger.release_lock(job_id, self.owner)
