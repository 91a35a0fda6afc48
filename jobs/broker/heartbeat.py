"""A worker's heartbeat: to Redis, where dispatchers tell a lost worker from a slow one, and to a file that a
container liveness probe reads.

It beats on the worker's own timer (the main process's event loop), which goes on while the prefork children
work: a long render is not silence, and silence means the node, the pod or the main process is gone or stuck.
Each beat registers this worker incarnation (the node's name, the main process and a random part, so a restarted
worker is a new one and the old one's messages stay its own) with the whole set of messages it holds now; a
message it receives is registered at once, and the child that ends a task takes its message out
(`held_message`). A dispatcher that finds a worker silent for `worker_lost_s` re-dispatches what it held.

The file holds the timestamp of the last beat, which a probe checks without talking to the broker:
`test $(( $(date +%s) - $(cut -d. -f1 FILE) )) -lt 60`.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

import redis
from celery import bootsteps
from celery.signals import task_received
from celery.worker import state as worker_state

from core.settings import load_settings
from jobs.broker.queues import message_item
from jobs.ledger.workers import HeldMessage, WorkerRegistry

log = logging.getLogger(__name__)

# a beat must never hold the worker's event loop for long: Redis away is a warning, not a stall
REDIS_TIMEOUT_S = 2.0

#: this process's worker incarnation, set in the main process before the pool forks its children
_worker_id: str | None = None


def worker_id() -> str | None:
    """This process's worker incarnation; None outside a registered worker."""
    return _worker_id


def held_message(job_id: str, item_id: str, token: int | None, task_id: str) -> HeldMessage | None:
    """The message a task of this worker runs as its worker registered it; None outside a registered worker (a
    task run in-process) or for a message without a token."""
    if _worker_id is None or token is None:
        return None
    return HeldMessage(_worker_id, job_id, item_id, token, task_id)


def write_heartbeat(path: Path) -> None:
    """Replace the file atomically, so a probe never reads half a timestamp."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".hb-", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{time.time():.3f}\n")
    os.replace(tmp, path)


def _held(worker: str, request: Any) -> HeldMessage | None:
    found = message_item(request.name, request.args)
    return None if found is None else HeldMessage(worker, *found, request.id)


class Heartbeat(bootsteps.StartStopStep):
    """A step of every worker; `reelgen worker` sets `file` (and may set `interval`) first."""

    requires: ClassVar[set[str]] = {"celery.worker.components:Timer"}
    file: ClassVar[Path | None] = None
    interval: ClassVar[float | None] = None

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        global _worker_id
        super().__init__(worker, **kwargs)
        settings = load_settings()
        self.path = type(self).file
        self.every = type(self).interval or settings.worker_heartbeat_s
        self.worker_id = f"{worker.hostname}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.registry: WorkerRegistry | None = None
        if settings.redis_url is not None:
            client = redis.Redis.from_url(
                settings.redis_url.get_secret_value(),
                socket_timeout=REDIS_TIMEOUT_S,
                socket_connect_timeout=REDIS_TIMEOUT_S,
            )
            self.registry = WorkerRegistry(client, settings.worker_lost_s)
            _worker_id = self.worker_id
            task_received.connect(self._received, weak=False, dispatch_uid="reelgen-heartbeat")
        self._entry: Any = None

    def start(self, worker: Any) -> None:
        self._beat()
        self._entry = worker.timer.call_repeatedly(self.every, self._beat, priority=10)
        log.info("worker %s: heartbeat every %.1f s", self.worker_id, self.every)

    def holding(self) -> list[HeldMessage]:
        """Every message this worker holds: reserved, waiting for its countdown, or running."""
        held = (_held(self.worker_id, request) for request in list(worker_state.requests.values()))
        return [message for message in held if message is not None]

    def _received(self, request: Any = None, **_: Any) -> None:
        message = None if request is None else _held(self.worker_id, request)
        if message is None or self.registry is None:
            return
        try:
            self.registry.received(message)
        except redis.RedisError as exc:  # the next beat registers it
            log.warning("cannot register message %s: %s", request.id, exc)

    def _beat(self) -> None:
        if self.registry is not None:
            try:
                self.registry.beat(self.worker_id, self.holding())
            except redis.RedisError as exc:  # Redis away (a restart): the worker beats again when it is back
                log.warning("cannot send heartbeat to Redis: %s", exc)
        if self.path is not None:
            try:
                write_heartbeat(self.path)
            except OSError as exc:  # a full or read-only disk must not kill the worker; the stale file tells
                log.warning("cannot write heartbeat %s: %s", self.path, exc)

    def stop(self, worker: Any) -> None:
        if self._entry is not None:
            self._entry.cancel()
            self._entry = None
        # a worker that stops holding nothing leaves at once; one that still holds messages is left to the loss
        # bound, which re-dispatches its items should the broker not give them back
        if self.registry is not None:
            try:
                held = self.holding()
                if held:
                    self.registry.beat(self.worker_id, held)
                else:
                    self.registry.leave(self.worker_id)
            except redis.RedisError as exc:
                log.warning("cannot deregister worker %s: %s", self.worker_id, exc)
