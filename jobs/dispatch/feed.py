"""One job's feed: its item source read from the job's cursor, turned into ledger steps and broker messages.

A catalog job streams its catalog (never loaded whole); every line becomes exactly one ledger step (admit,
skip, or fail the line) that also moves the job's cursor, atomically, in one Lua call. Steps run a page at a
time in one Redis pipeline, then the admitted items are published in one broker pipeline. Killed at any point
and restarted, a feed resumes after the cursor: every line is handled once, and the only window left (admitted
but not yet published) is closed by re-publishing the job's pending items when a dispatcher takes it over.

A retry job's source is its parent's failures; each one is claimed atomically so that concurrent retries of
the same job enqueue an item once.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from celery import Celery

from core.catalog_entry import CatalogEntry
from core.errors import DuplicateItemId
from core.settings import Settings
from jobs.broker.queues import PREPARE_TASK, PRIORITY_PREPARE, QUEUE
from jobs.intake.catalog import BadLine, line_key, read_catalog
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.fingerprints import FingerprintSet, fingerprint
from jobs.intake.results_index import DoneCheck, IndexWriter, report_gone
from jobs.intake.submit import source_policy
from jobs.ledger import JobKind, JobRecord, Ledger
from storage.store import ObjectStore

log = logging.getLogger(__name__)

# Messages sent to Redis per pipeline: Redis buffers a whole pipeline's request (~1 KB a message) while it runs
# it, so this bounds that buffer, and with it Redis's peak memory, whatever the page size or in-flight limit.
PUBLISH_BATCH = 64


class StepKind(StrEnum):
    ADMIT = "admit"
    SKIP = "skip"
    FAIL = "fail"
    CLAIM = "claim"


@dataclass(frozen=True)
class Step:
    kind: StepKind
    line_no: int | None
    key: str
    entry: dict[str, Any]
    error: str = ""
    message: str = ""


def prepare_priority(job_priority: int) -> int:
    """First stages of higher classes go first in the broker too; every later stage still outranks them."""
    return PRIORITY_PREPARE + max(0, min(3, job_priority))


def publish(celery: Celery, job: JobRecord, items: list[tuple[str, int]]) -> None:
    """Send (item id, token) as prepare messages in one Redis pipeline.

    A message names its item and carries no catalog entry: the worker reads the entry from the item's in-flight
    record, which every delivery that is not stale finds. Up to max_in_flight messages wait in Redis at once, so
    every byte a message carries is held that many times.
    """
    if not items:
        return
    priority = prepare_priority(job.priority)
    with celery.producer_or_acquire() as producer, producer.batch(max_size=PUBLISH_BATCH):
        # the queue is declared once per page, not once per message (a quarter of the publish cost)
        producer.maybe_declare(celery.amqp.queues[QUEUE])
        for item_id, token in items:
            celery.send_task(
                PREPARE_TASK,
                args=(job.id, item_id, token),
                priority=priority,
                producer=producer,
                declare=[],
                # no argsrepr of our own: Celery would copy a given one into the message's properties too
            )


class CatalogSource:
    """A catalog's records after the cursor; records up to it are replayed only into `seen`."""

    def __init__(
        self, records: Iterator[tuple[int, CatalogEntry | BadLine]], cursor: int, feed: JobFeed
    ) -> None:
        self._records = records
        self._feed = feed
        self._cursor = cursor

    def take(self, count: int) -> list[Step]:
        steps: list[Step] = []
        entries: list[tuple[int, CatalogEntry]] = []
        for line_no, record in self._records:
            step_or_entry = self._feed.classify(line_no, record)
            if line_no <= self._cursor:
                continue  # handled before a restart: replayed for duplicate detection only
            if isinstance(step_or_entry, Step):
                steps.append(step_or_entry)
            else:
                steps.append(Step(StepKind.ADMIT, line_no, step_or_entry.item_id, step_or_entry.as_dict()))
                entries.append((len(steps) - 1, step_or_entry))
            if len(steps) >= count:
                break
        skip = self._feed.done_check.skip([e for _, e in entries]) if entries else []
        for (at, entry), done in zip(entries, skip, strict=True):
            if done:
                steps[at] = Step(StepKind.SKIP, steps[at].line_no, entry.item_id, {})
        return steps


class RetrySource:
    """A parent job's failures (optionally of one error class), streamed with HSCAN."""

    def __init__(self, ledger: Ledger, parent: str, error: str | None, include_dead: bool) -> None:
        failures = ledger.iter_failures(parent)
        self._steps: Iterator[Step] = (
            Step(StepKind.CLAIM, None, f.item_id, f.entry or {})
            for f in failures
            if f.entry and (error is None or f.error == error) and (include_dead or not f.dead or error)
        )

    def take(self, count: int) -> list[Step]:
        steps = []
        for step in self._steps:
            steps.append(step)
            if len(steps) >= count:
                break
        return steps


class JobFeed:
    def __init__(
        self, ledger: Ledger, celery: Celery, settings: Settings, job: JobRecord, store: ObjectStore
    ) -> None:
        self.ledger = ledger
        self.celery = celery
        self.settings = settings
        self.job = job
        self.store = store
        self.seen = FingerprintSet()
        self.index = IndexWriter(ledger, store, job.id, job.config_hash)
        self._buffer: deque[Step] = deque()
        self._stack = contextlib.ExitStack()
        self.exhausted = job.exhausted
        self.source: CatalogSource | RetrySource
        if job.kind is JobKind.RETRY:
            parent = job.extra["parent"]
            error = job.extra.get("error_filter") or None
            self.source = RetrySource(ledger, parent, error, job.extra.get("include_dead") == "1")
            self.parent = parent
        else:
            self.done_check = DoneCheck(store, job.config_hash, job.reprocess)
            self.source = CatalogSource(self._read_catalog(job.catalog), job.cursor, self)

    def _read_catalog(self, text: str) -> Iterator[tuple[int, CatalogEntry | BadLine]]:
        policy = source_policy(self.job, self.settings)
        # the job record keeps the reference as a string: it is parsed again here, where it is read back
        catalog = CatalogRef.parse(text)
        if catalog.path is not None:
            return read_catalog(catalog.path, policy)
        # a remote catalog is downloaded once into the node cache and pinned for as long as the feed reads it
        from storage.fetch import Fetcher

        copy = self._stack.enter_context(Fetcher(self.settings).local_path(catalog.uri.raw))
        return read_catalog(copy, policy, source=catalog.uri.raw)

    def classify(self, line_no: int, record: CatalogEntry | BadLine) -> Step | CatalogEntry:
        """Duplicate and bad-line handling; updates `seen` (also while replaying lines before the cursor)."""
        if isinstance(record, BadLine):
            return self._bad(record)
        key = fingerprint(record.item_id)
        if key in self.seen:
            error = DuplicateItemId(
                f"line {line_no}: item id {record.item_id!r} appears again in the catalog"
            )
            return self._bad(BadLine(line_no, line_key(line_no), error))
        self.seen.add(key)
        return record

    def _bad(self, bad: BadLine) -> Step:
        # a bad line that still names a fresh, valid id is recorded under that id; otherwise under its line
        key = bad.key if fingerprint(bad.key) not in self.seen else line_key(bad.line_no)
        self.seen.add(fingerprint(key))
        return Step(StepKind.FAIL, bad.line_no, key, {}, type(bad.error).__name__, str(bad.error))

    def step(self, capacity: int) -> int:
        """Handle up to one page of lines, admitting at most `capacity` items; returns the number admitted."""
        page: list[Step] = []
        admits = 0
        while admits < capacity and len(page) < self.settings.dispatch_page:
            if not self._buffer:
                self._buffer.extend(self.source.take(self.settings.dispatch_page))
                if not self._buffer:
                    break
            step = self._buffer.popleft()
            page.append(step)
            admits += step.kind in (StepKind.ADMIT, StepKind.CLAIM)
        if not page:
            if not self.exhausted:
                self.ledger.mark_exhausted(self.job.id)
                self.exhausted = True
            return 0
        results = self._execute(page)
        stopped = next((at for at, r in enumerate(results) if r == -1), len(page))
        # the job stopped taking items mid-page (paused, drained, cancelled): the rest waits in the buffer
        self._buffer.extendleft(reversed(page[stopped:]))
        admitted = [
            (s.key, 1)
            for s, r in zip(page[:stopped], results[:stopped], strict=True)
            if r == 1 and s.kind in (StepKind.ADMIT, StepKind.CLAIM)
        ]
        publish(self.celery, self.job, admitted)
        return len(admitted)

    def _execute(self, page: list[Step]) -> list[int]:
        ledger, job_id, lease = self.ledger, self.job.id, self.settings.lease_s
        with ledger.redis.pipeline(transaction=False) as pipe:
            for s in page:
                if s.kind is StepKind.ADMIT:
                    ledger.queue_admit(pipe, job_id, s.key, s.entry, lease, s.line_no)
                elif s.kind is StepKind.SKIP:
                    ledger.queue_skip(pipe, job_id, s.line_no)
                elif s.kind is StepKind.FAIL:
                    ledger.queue_fail_line(pipe, job_id, s.key, s.error, s.message, s.line_no)
                else:
                    pipe.echo("claim")  # claims run one by one below: each reads another job's state
            replies = pipe.execute()
        results = [int(r) if not isinstance(r, bytes | str) else 0 for r in replies]
        for at, s in enumerate(page):
            if s.kind is StepKind.CLAIM:
                results[at] = ledger.claim_for_retry(self.parent, job_id, s.key, s.entry, lease)
        return results

    def republish_pending(self) -> int:
        pending = self.ledger.republish_pending(self.job.id, self.settings.lease_s)
        publish(self.celery, self.job, pending)
        return len(pending)

    def finish(self) -> None:
        """The job ended: move the last results into the index and report items gone from the catalog."""
        self.index.flush()
        # an ended job settles nothing more (stale deliveries find nothing in flight): drop the empty stream
        self.ledger.redis.delete(self.ledger.results_key(self.job.id))
        final = self.ledger.job(self.job.id)
        if self.job.kind is not JobKind.RETRY and final.exhausted and final.state.value == "completed":
            gone = report_gone(self.store, self.job.id, self.seen)
            self.ledger.set_field(self.job.id, "gone", gone)
        self.close()

    def close(self) -> None:
        self._stack.close()
