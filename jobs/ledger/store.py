"""The job ledger in Redis: jobs, in-flight items with leases, failures, counters and a results stream.

Memory per job is bounded by what is in flight plus what failed: a finished item is only a counter (and an
entry in the results stream until the dispatcher moves it into the results index in object storage). Every
item transition is one Lua script, so it is atomic, and counters move exactly once per item whatever the number
of deliveries (a second `finish` of the same item finds nothing in flight and changes nothing).

The keys are jobs/ledger/keys.py's, the scripts jobs/ledger/lua/'s, the records jobs/ledger/records.py's; this
module is the one way in. Kept whole: each method is one script call or a few commands, and the class is the
single place where keys meet scripts, so splitting it by subject would only spread that seam over files. An item without a stage in `:at` waits in the broker for its first task.

An in-flight item carries a dispatch `token`: every (re-)dispatch bumps it and every message of the item carries
it, so a message that was superseded (its lease expired, or its worker was lost, and the dispatcher sent a new
one) is recognised and dropped.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import redis
from redis.client import Pipeline

from core.errors import JobNotFound, JobStateError
from jobs.ledger.keys import (
    ACTIVE_KEY,
    JOBS_KEY,
    JobKeys,
    dispatch_lock_key,
    schedule_key,
    worker_held_key,
)
from jobs.ledger.records import (
    INT_FIELDS,
    QUEUED,
    Failure,
    ItemState,
    JobAction,
    JobKind,
    JobRecord,
    JobState,
    Reprocess,
    as_text,
    item_record,
    job_record,
)
from jobs.ledger.scripts import Scripts
from jobs.ledger.workers import HeldMessage

# the active set's score: priority class first, then submission time (seconds fit well below this factor)
_CLASS_WEIGHT = 1e11


class Ledger:
    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self.scripts = Scripts.register(client)

    @staticmethod
    def job_key(job_id: str) -> str:
        return JobKeys.of(job_id).job

    @staticmethod
    def results_key(job_id: str) -> str:
        return JobKeys.of(job_id).results

    # --- jobs

    def create_job(
        self,
        *,
        kind: JobKind,
        catalog: str,
        out: str,
        config_hash: str,
        config: dict[str, Any],
        priority: int = 1,
        reprocess: Reprocess = Reprocess.MISSING,
        max_in_flight: int = 64,
        total: int | None = None,
        extra: dict[str, str] | None = None,
        job_id: str | None = None,
    ) -> JobRecord:
        now = time.time()
        job_id = job_id or time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + "-" + uuid.uuid4().hex[:6]
        mapping: dict[str, str | int | float] = {
            "id": job_id,
            "kind": kind.value,
            "state": JobState.RUNNING.value,
            "submitted_at": repr(now),
            "catalog": catalog,
            "out": out,
            "config_hash": config_hash,
            "config": json.dumps(config, sort_keys=True),
            "priority": priority,
            "reprocess": reprocess.value,
            "max_in_flight": max_in_flight,
            "exhausted": 0,
            **dict.fromkeys(INT_FIELDS, 0),
            **(extra or {}),
        }
        if total is not None:
            mapping["total"] = total
        with self.redis.pipeline() as pipe:
            pipe.hset(self.job_key(job_id), mapping=mapping)  # type: ignore[arg-type]
            pipe.zadd(JOBS_KEY, {job_id: now})
            pipe.zadd(ACTIVE_KEY, {job_id: priority * _CLASS_WEIGHT + now})
            pipe.execute()
        return self.job(job_id)

    def job(self, job_id: str) -> JobRecord:
        keys = JobKeys.of(job_id)
        with self.redis.pipeline() as pipe:
            pipe.hgetall(keys.job)
            pipe.hlen(keys.inflight)
            raw, in_flight = pipe.execute()
        if not raw:
            raise JobNotFound(f"no job {job_id!r} in the ledger")
        return job_record({as_text(k): as_text(v) for k, v in raw.items()}, int(in_flight))

    def jobs(self, limit: int = 20) -> list[JobRecord]:
        """The most recently submitted jobs, newest first."""
        ids = [as_text(j) for j in self.redis.zrevrange(JOBS_KEY, 0, limit - 1)]
        records = []
        for job_id in ids:
            try:
                records.append(self.job(job_id))
            except JobNotFound:
                continue
        return records

    def active_jobs(self) -> list[str]:
        """Jobs a dispatcher serves, by priority class then submission time."""
        return [as_text(j) for j in self.redis.zrange(ACTIVE_KEY, 0, -1)]

    def set_field(self, job_id: str, name: str, value: str | int | float) -> None:
        self.redis.hset(self.job_key(job_id), name, value)

    def set_max_in_flight(self, job_id: str, limit: int) -> None:
        """Change how many items a live job may have in flight; the dispatcher reads it every tick."""
        self.job(job_id)
        self.redis.hset(self.job_key(job_id), "max_in_flight", limit)

    def control(self, job_id: str, action: JobAction) -> JobState:
        keys = JobKeys.of(job_id)
        result = as_text(
            self.scripts.control(
                keys=[keys.job, ACTIVE_KEY, keys.inflight, keys.leases, keys.at],
                args=[action.value, repr(time.time())],
            )
        )
        if result == "err:missing":
            raise JobNotFound(f"no job {job_id!r} in the ledger")
        if result.startswith("err:"):
            raise JobStateError(f"cannot {action.value} job {job_id}: it is {result[4:]}")
        return JobState(result)

    def feed_failed(self, job_id: str, cause: str, attempts: int) -> int:
        """Count an unexpected error in serving a job; the job fails once `attempts` came in a row. Returns the
        failures in a row so far, 0 when the job failed now, -1 when it had already ended."""
        keys = JobKeys.of(job_id)
        job_keys = [keys.job, ACTIVE_KEY, keys.inflight, keys.leases, keys.at]
        return int(self.scripts.feed_failed(keys=job_keys, args=[cause, attempts, repr(time.time())]))

    def feed_recovered(self, job_id: str) -> None:
        """A job was served again after failures: the count of failures in a row starts over."""
        with self.redis.pipeline() as pipe:
            pipe.hset(self.job_key(job_id), "feed_errors", 0)
            pipe.hdel(self.job_key(job_id), "error")
            pipe.execute()

    def mark_exhausted(self, job_id: str) -> None:
        self.redis.hset(self.job_key(job_id), "exhausted", 1)

    def count_skipped(self, job_id: str, cursor: int | None = None) -> bool:
        return int(self.scripts.skip(keys=[self.job_key(job_id)], args=[_cursor(cursor)])) == 1

    def queue_skip(self, pipe: Pipeline, job_id: str, cursor: int | None) -> None:
        """count_skipped, queued on a pipeline."""
        self.scripts.skip(keys=[self.job_key(job_id)], args=[_cursor(cursor)], client=pipe)

    def complete_if_drained(self, job_id: str) -> bool:
        return self.finish_if_drained(job_id) is not None

    def finish_if_drained(self, job_id: str) -> JobState | None:
        """Complete (or, draining, end) the job once nothing is in flight and every settled item's result has
        left the results stream for the index: a finished job's index is whole."""
        keys = JobKeys.of(job_id)
        job_keys = [keys.inflight, keys.job, ACTIVE_KEY, keys.results]
        result = as_text(self.scripts.complete(keys=job_keys, args=[repr(time.time())]))
        return JobState(result) if result else None

    def record_stage(self, job_id: str, stage: str, cpu_s: float, wall_s: float) -> None:
        """Accumulate one stage run's CPU and wall seconds (the per-stage cost that benchmarks report)."""
        key = JobKeys.of(job_id).stages
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrbyfloat(key, f"{stage}:cpu", cpu_s)
            pipe.hincrbyfloat(key, f"{stage}:wall", wall_s)
            pipe.hincrby(key, f"{stage}:runs", 1)
            pipe.execute()

    def stage_totals(self, job_id: str) -> dict[str, dict[str, float]]:
        """{stage: {"cpu": seconds, "wall": seconds, "runs": count}} summed over the job."""
        totals: dict[str, dict[str, float]] = {}
        for field_name, value in self.redis.hgetall(JobKeys.of(job_id).stages).items():
            stage, measure = as_text(field_name).rsplit(":", 1)
            totals.setdefault(stage, {})[measure] = float(value)
        return totals

    def in_flight(self, job_id: str) -> int:
        return int(self.redis.hlen(JobKeys.of(job_id).inflight))

    def in_flight_by_stage(self, job_id: str) -> dict[str, int]:
        """Items in flight per stage their last task began in; QUEUED: not begun yet (waiting in the broker)."""
        keys = JobKeys.of(job_id)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hlen(keys.inflight)
            pipe.hvals(keys.at)
            total, stages = pipe.execute()
        counts = Counter(as_text(stage) for stage in stages)
        counts[QUEUED] = max(0, int(total) - sum(counts.values()))
        return dict(counts)

    def error_counts(self, job_id: str) -> dict[str, int]:
        raw = self.redis.hgetall(JobKeys.of(job_id).errors)
        return {as_text(k): int(v) for k, v in raw.items()}

    # --- items

    def admit(
        self,
        job_id: str,
        item_id: str,
        entry: dict[str, Any],
        *,
        lease_s: float = 3600,
        cursor: int | None = None,
    ) -> bool:
        """Put an item in flight under a lease; False when it already is (a duplicate) or the job stopped."""
        return self.admit_status(job_id, item_id, entry, lease_s=lease_s, cursor=cursor) == 1

    def admit_status(
        self, job_id: str, item_id: str, entry: dict[str, Any], *, lease_s: float, cursor: int | None
    ) -> int:
        keys, args = self._admit_call(job_id, item_id, entry, lease_s, cursor)
        return int(self.scripts.admit(keys=keys, args=args))

    def queue_admit(
        self,
        pipe: Pipeline,
        job_id: str,
        item_id: str,
        entry: dict[str, Any],
        lease_s: float,
        cursor: int | None,
    ) -> None:
        """admit_status, queued on a pipeline: its reply comes with the pipeline's."""
        keys, args = self._admit_call(job_id, item_id, entry, lease_s, cursor)
        self.scripts.admit(keys=keys, args=args, client=pipe)

    @staticmethod
    def _admit_call(
        job_id: str, item_id: str, entry: dict[str, Any], lease_s: float, cursor: int | None
    ) -> tuple[list[str], list[Any]]:
        keys = JobKeys.of(job_id)
        now = time.time()
        args = [item_id, item_record(entry), repr(now + lease_s), _cursor(cursor), repr(now)]
        return [keys.inflight, keys.job, keys.leases], args

    def start(self, job_id: str, item_id: str, lease_s: float, token: int | None = None) -> int:
        """Mark an item running under a lease; the attempt number, 0 if not in flight or token is stale."""
        now = time.time()
        keys = JobKeys.of(job_id)
        return int(
            self.scripts.start(
                keys=[keys.inflight, keys.leases], args=[item_id, repr(now), repr(now + lease_s), token or ""]
            )
        )

    def begin_task(
        self,
        job_id: str,
        item_id: str,
        task_id: str,
        lease_s: float,
        crash_limit: int,
        stage: str = "",
        token: int | None = None,
        worker: str | None = None,
    ) -> int:
        """A task of the item begins (see begin.lua): deliveries so far, 0 if not in flight or its message's dispatch
        `token` is stale, -1 if dead-lettered. `stage` names the task's stage for the counts of items per stage;
        `worker`, the worker incarnation running it, is noted as the item's last."""
        message = f"its tasks killed the worker process {crash_limit} times; dead-lettered"
        args: list[Any] = [
            item_id,
            task_id,
            repr(time.time() + lease_s),
            crash_limit,
            message,
            stage,
            token or "",
            worker or "",
        ]
        return int(self.scripts.begin(keys=JobKeys.of(job_id).settle, args=args))

    def end_task(self, job_id: str, item_id: str, task_id: str, held: HeldMessage | None = None) -> None:
        """A task ended; `held`, its message as its worker registered it, is held no more."""
        keys = [
            JobKeys.of(job_id).inflight,
            worker_held_key(held.worker) if held else JobKeys.of(job_id).inflight,
        ]
        self.scripts.end(keys=keys, args=[item_id, task_id, held.entry if held else ""])

    def item_state(self, job_id: str, item_id: str) -> ItemState | None:
        keys = JobKeys.of(job_id)
        raw = self.redis.hget(keys.inflight, item_id)
        if raw is not None:
            return ItemState(json.loads(raw)["state"])
        failure = self.redis.hget(keys.failed, item_id)
        if failure is None:
            return None
        return ItemState.DEAD if json.loads(failure).get("dead") else ItemState.FAILED

    def item(self, job_id: str, item_id: str) -> dict[str, Any] | None:
        """The in-flight record of an item (state, attempts, deliveries, crashes, token, entry)."""
        raw = self.redis.hget(JobKeys.of(job_id).inflight, item_id)
        return json.loads(raw) if raw is not None else None

    # --- work shared between items (workers/sharing.py)

    def lead_shared(self, job_id: str, work: str, item_id: str, lead_s: int) -> tuple[str, str]:
        """("done", the item that did the work), ("lead", item_id) where this item now does it (the lead
        renewed for lead_s), or ("wait", the item doing it)."""
        kind, item = self.scripts.share_lead(keys=JobKeys.of(job_id).shared(work), args=[item_id, lead_s])
        return as_text(kind), as_text(item)

    def shared_done(self, job_id: str, work: str, item_id: str, keep_s: int) -> None:
        self.scripts.share_done(keys=JobKeys.of(job_id).shared(work), args=[item_id, keep_s])

    def release_shared(self, job_id: str, work: str, item_id: str) -> None:
        self.scripts.share_release(keys=JobKeys.of(job_id).shared(work)[1:], args=[item_id])

    def finish(self, job_id: str, item_id: str) -> bool:
        return bool(self.scripts.settle(keys=JobKeys.of(job_id).settle, args=[item_id, "done", "", ""]))

    def queue_finish(self, pipe: Pipeline, job_id: str, item_id: str) -> None:
        """finish, queued on a pipeline."""
        self.scripts.settle(keys=JobKeys.of(job_id).settle, args=[item_id, "done", "", ""], client=pipe)

    def fail(
        self,
        job_id: str,
        item_id: str,
        error: str,
        message: str,
        *,
        attempts: int = 1,
        entry: dict[str, Any] | None = None,
        admitted: bool = True,
        cursor: int | None = None,
    ) -> bool:
        """Record a failed item. admitted=False records an item that never got in flight (a bad catalog line)."""
        if admitted:
            return bool(
                self.scripts.settle(keys=JobKeys.of(job_id).settle, args=[item_id, "failed", error, message])
            )
        return self.fail_line_status(job_id, item_id, error, message, entry, cursor) == 1

    def fail_line_status(
        self,
        job_id: str,
        key: str,
        error: str,
        message: str,
        entry: dict[str, Any] | None,
        cursor: int | None,
    ) -> int:
        keys, args = self._fail_line_call(job_id, key, error, message, entry, cursor)
        return int(self.scripts.fail_line(keys=keys, args=args))

    def queue_fail_line(
        self, pipe: Pipeline, job_id: str, key: str, error: str, message: str, cursor: int | None
    ) -> None:
        """fail_line_status of a line without an entry, queued on a pipeline."""
        keys, args = self._fail_line_call(job_id, key, error, message, None, cursor)
        self.scripts.fail_line(keys=keys, args=args, client=pipe)

    @staticmethod
    def _fail_line_call(
        job_id: str, key: str, error: str, message: str, entry: dict[str, Any] | None, cursor: int | None
    ) -> tuple[list[str], list[Any]]:
        keys = JobKeys.of(job_id)
        args = [key, error, message, _cursor(cursor), json.dumps(entry or {})]
        return [keys.job, keys.failed, keys.errors, keys.results], args

    def failures(self, job_id: str) -> list[Failure]:
        return sorted(self.iter_failures(job_id), key=lambda f: f.item_id)

    def iter_failures(self, job_id: str) -> Iterator[Failure]:
        """Failures streamed with HSCAN: a job with a million failures is never read in one reply."""
        for key, value in self.redis.hscan_iter(JobKeys.of(job_id).failed, count=500):
            record = json.loads(value)
            yield Failure(
                as_text(key),
                record["error"],
                record["message"],
                record.get("attempts", 0),
                record.get("entry") or None,
                bool(record.get("dead", False)),
            )

    # --- leases

    def expired(self, job_id: str, now: float, limit: int = 500) -> list[str]:
        key = JobKeys.of(job_id).leases
        return [as_text(i) for i in self.redis.zrangebyscore(key, "-inf", now, start=0, num=limit)]

    def reap(self, job_id: str, item_id: str, now: float, lease_s: float, max_dispatches: int) -> int:
        """Re-dispatch an item whose lease expired: its new token, 0 if not expired, -1 if dead-lettered."""
        message = f"its lease expired {max_dispatches} times (lost messages or hung workers); dead-lettered"
        args: list[Any] = [
            item_id,
            repr(now),
            repr(now + lease_s),
            max_dispatches,
            message,
            "",
            "LeaseExpired",
        ]
        return int(self.scripts.reap(keys=JobKeys.of(job_id).settle, args=args))

    def last_begun_by(self, worker: str, job_ids: list[str]) -> list[HeldMessage]:
        """The in-flight items of these jobs whose last task began on `worker`, as the dispatch it ran them under
        (a message without a task id: the worker may have taken the next one and died before registering it)."""
        return [
            HeldMessage(worker, job_id, item, token, "")
            for job_id, item, token, rec in self._in_flight_records(job_ids)
            if rec.get("worker") == worker
        ]

    def in_flight_dispatches(self, job_ids: list[str]) -> list[HeldMessage]:
        """Every in-flight item of these jobs, as the dispatch it is under (no worker, no task id)."""
        return [
            HeldMessage("", job_id, item, token, "")
            for job_id, item, token, _ in self._in_flight_records(job_ids)
        ]

    def _in_flight_records(self, job_ids: list[str]) -> list[tuple[str, str, int, dict[str, Any]]]:
        with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hgetall(JobKeys.of(job_id).inflight)
            replies = pipe.execute()
        found = []
        for job_id, records in zip(job_ids, replies, strict=True):
            for item, raw in records.items():
                rec = json.loads(raw)
                found.append((job_id, as_text(item), int(rec.get("token", 1)), rec))
        return found

    def rescue(self, held: HeldMessage, lease_s: float, max_dispatches: int) -> int:
        """Re-dispatch an item a lost worker held, unless it was re-dispatched (or settled) since: its new token,
        0 if nothing was to do, -1 if dead-lettered."""
        message = f"it was re-dispatched {max_dispatches} times (lost workers, leases); dead-lettered"
        now = time.time()
        args: list[Any] = [held.item_id, repr(now), repr(now + lease_s), max_dispatches, message, held.token]
        return int(self.scripts.reap(keys=JobKeys.of(held.job_id).settle, args=[*args, "WorkerLost"]))

    def republish_pending(self, job_id: str, lease_s: float) -> list[tuple[str, int]]:
        keys = JobKeys.of(job_id)
        reply = self.scripts.republish(
            keys=[keys.inflight, keys.leases, keys.job], args=[repr(time.time() + lease_s)]
        )
        return [(as_text(reply[i]), int(reply[i + 1])) for i in range(0, len(reply), 2)]

    # --- retry claims

    def claim_for_retry(
        self, parent_id: str, retry_id: str, item_id: str, entry: dict[str, Any], lease_s: float
    ) -> int:
        """Admit a parent's failed item into a retry job: 1 claimed, 0 another retry has it, -1 job stopped."""
        retry = JobKeys.of(retry_id)
        keys = [JobKeys.of(parent_id).claims, retry.job, retry.inflight, retry.leases]
        now = time.time()
        return int(
            self.scripts.claim(keys=keys, args=[item_id, item_record(entry), repr(now + lease_s), repr(now)])
        )

    # --- results stream (drained into the results index by the dispatcher)

    def read_results(
        self, job_id: str, count: int, after: str | None = None
    ) -> list[tuple[str, dict[str, str]]]:
        """Up to `count` results from the oldest, or from the first after the stream id `after` (Redis 6.2+)."""
        start = "-" if after is None else f"({after}"
        raw: Any = self.redis.xrange(self.results_key(job_id), start, "+", count=count)
        return [(as_text(i), {as_text(k): as_text(v) for k, v in f.items()}) for i, f in raw]

    def trim_results(self, job_id: str, through: str) -> None:
        """Drop every result up to the stream id `through`, included, in one short command whatever their number
        (XTRIM MINID, Redis 6.2+): results are only appended, with growing ids, so none of them was left unread."""
        ms, seq = through.split("-")
        self.redis.xtrim(self.results_key(job_id), minid=f"{ms}-{int(seq) + 1}", approximate=False)

    # --- nightly

    def claim_logical_date(self, name: str, logical_date: str, job_id: str) -> str | None:
        """Reserve a logical date for one scheduled job: None if ours now, else the job that already has it."""
        key = schedule_key(name, logical_date)
        if self.redis.set(key, job_id, nx=True):
            return None
        existing = self.redis.get(key)
        return as_text(existing) if existing is not None else None

    def release_logical_date(self, name: str, logical_date: str) -> None:
        self.redis.delete(schedule_key(name, logical_date))

    # --- dispatcher locks

    def acquire_lock(self, job_id: str, owner: str, ttl_s: float) -> bool:
        """Hold the right to dispatch one job (one dispatcher per job); renewing it when already held."""
        key = dispatch_lock_key(job_id)
        ms = int(ttl_s * 1000)
        if self.redis.set(key, owner, nx=True, px=ms):
            return True
        held = self.redis.get(key)
        if held is not None and as_text(held) == owner:
            self.redis.pexpire(key, ms)
            return True
        return False

    def release_lock(self, job_id: str, owner: str) -> None:
        key = dispatch_lock_key(job_id)
        held = self.redis.get(key)
        if held is not None and as_text(held) == owner:
            self.redis.delete(key)


def _cursor(cursor: int | None) -> int | str:
    """A catalog line for the scripts: '' leaves the job's cursor where it is."""
    return "" if cursor is None else cursor
