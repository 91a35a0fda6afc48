"""The dispatcher: streams a job's catalog into the broker with a bounded number of items in flight.

It never loads the catalog whole. Items whose manifest already exists for the job's config hash and source
version are counted as skipped; bad lines and bad or repeated item ids fail their own item in the ledger.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from celery import Celery

from jobs.catalog import BadLine, CatalogEntry, line_key, read_catalog
from jobs.celery_app import PRIORITY_PREPARE
from jobs.ledger import JobRecord, Ledger
from reelgen.errors import DuplicateItemId
from storage.manifest import is_done
from storage.store import ObjectStore

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(
        self,
        ledger: Ledger,
        celery: Celery,
        store: ObjectStore,
        job: JobRecord,
        *,
        max_in_flight: int,
        poll_s: float = 0.05,
    ) -> None:
        self.ledger = ledger
        self.celery = celery
        self.store = store
        self.job = job
        self.max_in_flight = max_in_flight
        self.poll_s = poll_s
        self._seen: set[str] = set()

    def run(self, catalog: Path, on_tick: Callable[[], None] = lambda: None) -> None:
        self.feed(read_catalog(catalog), on_tick)

    def feed(
        self, records: Iterable[tuple[int, CatalogEntry | BadLine]], on_tick: Callable[[], None]
    ) -> None:
        job_id = self.job.id
        for line_no, record in records:
            if isinstance(record, BadLine):
                self._fail_line(record)
                continue
            if record.item_id in self._seen:
                error = DuplicateItemId(
                    f"line {line_no}: item id {record.item_id!r} appears again in the catalog"
                )
                self._fail_line(BadLine(line_no, line_key(line_no), error))
                continue
            self._seen.add(record.item_id)
            if is_done(self.store, record.item_id, self.job.config_hash, record.version):
                self.ledger.count_skipped(job_id)
                continue
            while self.ledger.in_flight(job_id) >= self.max_in_flight:
                on_tick()
                time.sleep(self.poll_s)
            if self.ledger.admit(job_id, record.item_id, record.as_dict()):
                self.celery.send_task(
                    "reelgen.prepare", args=(job_id, record.as_dict()), priority=PRIORITY_PREPARE
                )
            on_tick()
        self.ledger.mark_exhausted(job_id)

    def _fail_line(self, bad: BadLine) -> None:
        # a bad line that still names a fresh, valid id is recorded under that id; otherwise under its line
        key = bad.key if bad.key not in self._seen else line_key(bad.line_no)
        self._seen.add(key)
        log.info("catalog %s: %s", key, bad.error)
        self.ledger.fail(self.job.id, key, type(bad.error).__name__, str(bad.error), admitted=False)
