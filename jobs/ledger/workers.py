"""The registry of live workers: each worker incarnation's heartbeat and the messages it holds.

A worker's main process beats every few seconds, on Redis's own clock, with the whole set of messages it holds
(reserved, waiting for a countdown, or running in a child); a message it receives is added at once, and a child
that ends a task takes its message out. A worker silent for longer than the bound is lost: a dispatcher
re-dispatches every item it held (Ledger.rescue) and then forgets it. The messages themselves are left to the
broker, which redelivers them after its visibility timeout; by then they carry a superseded dispatch token and
change nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import redis

from jobs.ledger.keys import WORKERS_KEY, worker_held_key
from jobs.ledger.records import as_text
from jobs.ledger.scripts import Scripts

# a held set outlives its worker's last beat this many times the loss bound, should no dispatcher ever forget it
HELD_TTL_BOUNDS = 20


@dataclass(frozen=True)
class HeldMessage:
    """One message of an item's dispatch `token`, held by a worker incarnation as task `task_id`."""

    worker: str
    job_id: str
    item_id: str
    token: int
    task_id: str

    @property
    def entry(self) -> str:
        return json.dumps([self.job_id, self.item_id, self.token, self.task_id])

    @classmethod
    def parse(cls, worker: str, entry: str) -> HeldMessage | None:
        try:
            job_id, item_id, token, task_id = json.loads(entry)
            return cls(worker, str(job_id), str(item_id), int(token), str(task_id))
        except (ValueError, TypeError):
            return None


class WorkerRegistry:
    def __init__(self, client: redis.Redis, lost_after_s: float, scripts: Scripts | None = None) -> None:
        self.redis = client
        self.lost_after_s = lost_after_s
        scripts = scripts or Scripts.register(client)
        self._beat, self._lost, self._forget = scripts.beat, scripts.lost, scripts.forget

    def beat(self, worker: str, held: list[HeldMessage]) -> None:
        """The worker is alive and holds exactly `held`."""
        ttl = int(self.lost_after_s * HELD_TTL_BOUNDS) + 1
        keys = [WORKERS_KEY, worker_held_key(worker)]
        self._beat(keys=keys, args=[worker, ttl, *(message.entry for message in held)])

    def received(self, message: HeldMessage) -> None:
        """The worker took a message: held from now, not from its next beat."""
        self.redis.sadd(worker_held_key(message.worker), message.entry)

    def registered(self) -> list[str]:
        """Every worker incarnation registered, live or lost."""
        return [as_text(worker) for worker in self.redis.zrange(WORKERS_KEY, 0, -1)]  # type: ignore[union-attr]

    def lost(self) -> list[str]:
        """Workers silent for longer than the bound."""
        return [as_text(worker) for worker in self._lost(keys=[WORKERS_KEY], args=[self.lost_after_s])]

    def held(self, worker: str) -> list[HeldMessage]:
        key = worker_held_key(worker)
        held, unreadable = [], []
        for raw in self.redis.smembers(key):  # type: ignore[union-attr]
            message = HeldMessage.parse(worker, as_text(raw))
            if message is None:
                unreadable.append(raw)
            else:
                held.append(message)
        if unreadable:  # nothing can be rescued from it, and it would keep the worker registered for ever
            self.redis.srem(key, *unreadable)
        return held

    def forget(self, worker: str, handled: list[HeldMessage]) -> bool:
        """Drop handled messages of a lost worker, and the worker once it holds none; True when it is gone."""
        keys = [WORKERS_KEY, worker_held_key(worker)]
        args: list[str | float] = [worker, self.lost_after_s, *(message.entry for message in handled)]
        return bool(self._forget(keys=keys, args=args))

    def leave(self, worker: str) -> None:
        """A worker that stopped holding nothing: no dispatcher need wait for it."""
        with self.redis.pipeline() as pipe:
            pipe.zrem(WORKERS_KEY, worker)
            pipe.delete(worker_held_key(worker))
            pipe.execute()
