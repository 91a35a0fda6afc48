"""Items that lost their way are dispatched again (or dead-lettered after too many tries): those whose worker
was lost, within seconds, and those whose lease ran out, as the backstop.

A lost worker is one whose heartbeat has been missing for `worker_lost_s` (jobs/broker/heartbeat.py): every item it
held a message of, every item whose last task began on it, and every item whose message the broker holds as
unacknowledged but no live worker holds, is re-dispatched at once under a new token, so the broker's own redelivery
of those messages, a visibility timeout later, finds them superseded. The last two cover the moment between the
broker handing a worker a message and the worker registering it: a worker killed then leaves the message in no
held set. And for MESSAGELESS_WATCH_S after a loss, an item in flight whose dispatch has no message anywhere in
the broker, at two sweeps a heartbeat apart, is re-dispatched too: a worker's connection waits in BRPOP, so Redis
hands it the next message published even as the worker dies, and that message is then in no queue, no hash and
no held set (the worker never read it). A dispatcher judges silence only once it has itself watched Redis for the
whole bound, so a Redis restart, which silences every worker at once, condemns none of them.

A lease is set when an item is admitted and renewed whenever one of its tasks begins, so it expires only when
no task of the item has started for `lease_s`: its message was lost (a Redis restart without its append-only
file, a purged queue) or its worker hangs. Without the reaper such an item would keep its job running forever.
"""

from __future__ import annotations

import logging
import time

from celery import Celery

from core.errors import JobNotFound
from core.settings import Settings
from jobs.broker.messages import unacknowledged, waiting
from jobs.dispatch.feed import publish
from jobs.ledger import JobRecord, Ledger
from jobs.ledger.workers import HeldMessage, WorkerRegistry

log = logging.getLogger(__name__)

#: how long after a worker is lost items are watched for a dispatch without a message: Redis serves a lost node's
#: connection, blocked in BRPOP, until its TCP keepalive drops it (300 s by default), and a message it takes then
#: is gone; the watch is twice that
MESSAGELESS_WATCH_S = 600.0


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


class LostWorkers:
    """Re-dispatches the items of workers whose heartbeat stopped; `only` confines it to one job's items (the
    dispatcher of `reelgen run`)."""

    def __init__(self, ledger: Ledger, celery: Celery, settings: Settings, only: str | None = None) -> None:
        self.ledger = ledger
        self.celery = celery
        self.settings = settings
        self.only = only
        self.registry = WorkerRegistry(ledger.redis, settings.worker_lost_s, ledger.scripts)
        self._watch_until = 0.0
        #: dispatches seen with no message in the broker, and since when (monotonic seconds)
        self._messageless: dict[tuple[str, str, int], float] = {}

    def sweep(self) -> int:
        """Re-dispatch what every lost worker held; returns how many items were re-dispatched."""
        lost = self.registry.lost()
        handled = 0
        for worker in lost:
            held = [m for m in self.registry.held(worker) if self.only is None or m.job_id == self.only]
            jobs = [self.only] if self.only is not None else self.ledger.active_jobs()
            count = self._rescue(held + self.ledger.last_begun_by(worker, jobs))
            self.registry.forget(worker, held)
            log.warning(
                "worker %s lost (no heartbeat for %.0f s): re-dispatched %d item(s)",
                worker,
                self.settings.worker_lost_s,
                count,
            )
            handled += count
        now = time.monotonic()
        if lost:
            handled += self._unheld(set(lost))
            self._watch_until = now + MESSAGELESS_WATCH_S
        if now < self._watch_until:
            handled += self._without_message(now)
        else:
            self._messageless.clear()
        return handled

    def _without_message(self, now: float) -> int:
        """Re-dispatch the in-flight items whose dispatch had no message in the broker at this sweep and at one
        at least a heartbeat before it: a message between a queue and the hash, or a dispatch between the ledger
        and the broker, is in neither for a moment only."""
        redis_client = self.ledger.redis
        present = {(j, i, t) for j, i, t, _ in [*unacknowledged(redis_client), *waiting(redis_client)]}
        # a live worker registers a message from its receipt: held, it is not lost whatever the hash says
        present |= {
            (m.job_id, m.item_id, m.token) for w in self.registry.registered() for m in self.registry.held(w)
        }
        jobs = [self.only] if self.only is not None else self.ledger.active_jobs()
        dispatches = {(m.job_id, m.item_id, m.token): m for m in self.ledger.in_flight_dispatches(jobs)}
        missing = {key: self._messageless.get(key, now) for key in dispatches if key not in present}
        due = [key for key, since in missing.items() if now - since >= self.settings.worker_heartbeat_s]
        self._messageless = {key: since for key, since in missing.items() if key not in due}
        count = self._rescue([dispatches[key] for key in due])
        if count:
            log.warning("re-dispatched %d item(s) whose dispatch had no message in the broker", count)
        return count

    def _unheld(self, lost: set[str]) -> int:
        """Re-dispatch the unacknowledged messages that no live worker holds: a worker killed after the broker
        handed it a message and before it registered it (an item's first message, before any of its tasks began
        anywhere) leaves the message in the broker's hash and in no held set. A live worker in that same moment
        gets its item re-dispatched too, which costs its work but nothing else: its message is superseded."""
        live = [worker for worker in self.registry.registered() if worker not in lost]
        held = {(m.job_id, m.item_id, m.token) for worker in live for m in self.registry.held(worker)}
        orphans = [
            HeldMessage("", job_id, item_id, token, task_id)
            for job_id, item_id, token, task_id in unacknowledged(self.ledger.redis)
            if (job_id, item_id, token) not in held and (self.only is None or job_id == self.only)
        ]
        count = self._rescue(orphans)
        if count:
            log.warning("re-dispatched %d item(s) whose message no live worker holds", count)
        return count

    def _rescue(self, held: list[HeldMessage]) -> int:
        """Re-dispatch the items of these messages under new tokens; returns how many. An item whose dispatch is
        already superseded (another of its messages came first, or a dispatcher beside this one) is left alone."""
        again: dict[str, list[tuple[str, int]]] = {}
        for message in held:
            token = self.ledger.rescue(message, self.settings.lease_s, self.settings.max_dispatches)
            if token > 0:
                again.setdefault(message.job_id, []).append((message.item_id, token))
            elif token < 0:
                log.warning(
                    "job %s: item %s dead-lettered: re-dispatched too often", message.job_id, message.item_id
                )
        for job_id, items in again.items():
            try:
                publish(self.celery, self.ledger.job(job_id), items)
            except JobNotFound:
                continue  # deleted meanwhile: nothing to finish
        return sum(len(items) for items in again.values())
