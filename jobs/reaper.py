"""The lease reaper: items whose lease ran out are dispatched again (or dead-lettered after too many tries).

A lease is set when an item is admitted and renewed whenever one of its tasks begins, so it expires only when
no task of the item has started for `lease_s`: its message was lost (a Redis restart, a purged queue) or its
worker hangs. Without the reaper such an item would keep its job running forever.
"""

from __future__ import annotations

import logging
import time

from celery import Celery

from jobs.feed import publish
from jobs.ledger import JobRecord, Ledger
from reelgen.settings import Settings

log = logging.getLogger(__name__)


class Reaper:
    def __init__(self, ledger: Ledger, celery: Celery, settings: Settings) -> None:
        self.ledger = ledger
        self.celery = celery
        self.settings = settings

    def reap(self, job: JobRecord, now: float | None = None) -> int:
        """Re-dispatch the job's expired items; returns how many were re-dispatched or dead-lettered."""
        now = time.time() if now is None else now
        handled = 0
        while True:
            expired = self.ledger.expired(job.id, now)
            if not expired:
                return handled
            again = []
            for item_id in expired:
                token = self.ledger.reap(
                    job.id, item_id, now, self.settings.lease_s, self.settings.max_dispatches
                )
                if token > 0:
                    again.append((item_id, token))
                elif token < 0:
                    log.warning("job %s: item %s dead-lettered: lease expired too often", job.id, item_id)
                handled += token != 0
            publish(self.celery, job, again)
            if again:
                log.warning("job %s: re-dispatched %d item(s) whose lease expired", job.id, len(again))
            if len(expired) < 500 or not handled:
                return handled
