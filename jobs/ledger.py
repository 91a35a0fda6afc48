"""The job ledger in Redis: jobs, in-flight items, failures and counters.

Memory per job is bounded by what is in flight plus what failed: a finished item is only a counter. Every item
transition is one Lua script, so it is atomic, and counters move exactly once per item whatever the number of
deliveries (a second `finish` of the same item finds nothing in flight and changes nothing).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import redis

from reelgen.errors import JobNotFound

PREFIX = "rg"


class JobState(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class JobKind(StrEnum):
    RUN = "run"
    BACKFILL = "backfill"
    NIGHTLY = "nightly"
    RETRY = "retry"


class ItemState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class Failure:
    item_id: str
    error: str
    message: str
    attempts: int
    entry: dict[str, Any] | None


@dataclass
class JobRecord:
    id: str
    kind: JobKind
    state: JobState
    submitted_at: float
    catalog: str
    out: str
    config_hash: str
    config: dict[str, Any]
    dispatched: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    exhausted: bool = False
    finished_at: float | None = None
    in_flight: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def settled(self) -> int:
        return self.done + self.failed + self.skipped


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


# KEYS[1]=in-flight hash, KEYS[2]=job hash; ARGV[1]=item id, ARGV[2]=record json
_ADMIT = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], 'dispatched', 1)
return 1
"""

# KEYS[1]=in-flight hash; ARGV[1]=item id, ARGV[2]=now, ARGV[3]=lease deadline. Returns the attempt number,
# or 0 when the item is no longer in flight (a stale duplicate delivery that must do nothing).
_START = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local rec = cjson.decode(raw)
rec['state'] = 'running'
rec['attempts'] = (rec['attempts'] or 0) + 1
if not rec['first_at'] then rec['first_at'] = tonumber(ARGV[2]) end
rec['lease_until'] = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(rec))
return rec['attempts']
"""

# KEYS[1]=in-flight hash, KEYS[2]=job hash, KEYS[3]=failures hash; ARGV[1]=item id, ARGV[2]=counter,
# ARGV[3]=failure json or ''. Moves the item out of flight once; returns 1 if it did.
_SETTLE = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
if ARGV[3] ~= '' then redis.call('HSET', KEYS[3], ARGV[1], ARGV[3]) end
return 1
"""

# Completes a running job whose catalog is exhausted and which has nothing in flight.
_COMPLETE = """
if redis.call('HGET', KEYS[2], 'state') ~= 'running' then return 0 end
if redis.call('HGET', KEYS[2], 'exhausted') ~= '1' then return 0 end
if redis.call('HLEN', KEYS[1]) > 0 then return 0 end
redis.call('HSET', KEYS[2], 'state', 'completed', 'finished_at', ARGV[1])
return 1
"""


class Ledger:
    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._admit = client.register_script(_ADMIT)
        self._start = client.register_script(_START)
        self._settle = client.register_script(_SETTLE)
        self._complete = client.register_script(_COMPLETE)

    @staticmethod
    def _job_key(job_id: str) -> str:
        return f"{PREFIX}:job:{job_id}"

    def _keys(self, job_id: str) -> tuple[str, str, str]:
        base = self._job_key(job_id)
        return f"{base}:inflight", base, f"{base}:failed"

    # --- jobs

    def create_job(
        self, *, kind: JobKind, catalog: str, out: str, config_hash: str, config: dict[str, Any]
    ) -> JobRecord:
        now = time.time()
        job_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + "-" + uuid.uuid4().hex[:6]
        record = JobRecord(job_id, kind, JobState.RUNNING, now, catalog, out, config_hash, config)
        mapping: dict[str, str | int] = {
            "id": job_id,
            "kind": kind.value,
            "state": JobState.RUNNING.value,
            "submitted_at": repr(now),
            "catalog": catalog,
            "out": out,
            "config_hash": config_hash,
            "config": json.dumps(config, sort_keys=True),
            "dispatched": 0,
            "done": 0,
            "failed": 0,
            "skipped": 0,
            "exhausted": 0,
        }
        with self.redis.pipeline() as pipe:
            pipe.hset(self._job_key(job_id), mapping=mapping)  # type: ignore[arg-type]
            pipe.zadd(f"{PREFIX}:jobs", {job_id: now})
            pipe.execute()
        return record

    def job(self, job_id: str) -> JobRecord:
        inflight_key, job_key, _ = self._keys(job_id)
        with self.redis.pipeline() as pipe:
            pipe.hgetall(job_key)
            pipe.hlen(inflight_key)
            raw, in_flight = pipe.execute()
        if not raw:
            raise JobNotFound(f"no job {job_id!r} in the ledger")
        fields = {_text(k): _text(v) for k, v in raw.items()}
        return JobRecord(
            id=fields["id"],
            kind=JobKind(fields["kind"]),
            state=JobState(fields["state"]),
            submitted_at=float(fields["submitted_at"]),
            catalog=fields["catalog"],
            out=fields["out"],
            config_hash=fields["config_hash"],
            config=json.loads(fields["config"]),
            dispatched=int(fields["dispatched"]),
            done=int(fields["done"]),
            failed=int(fields["failed"]),
            skipped=int(fields["skipped"]),
            exhausted=fields["exhausted"] == "1",
            finished_at=float(fields["finished_at"]) if "finished_at" in fields else None,
            in_flight=int(in_flight),
        )

    def mark_exhausted(self, job_id: str) -> None:
        self.redis.hset(self._job_key(job_id), "exhausted", 1)

    def count_skipped(self, job_id: str) -> None:
        self.redis.hincrby(self._job_key(job_id), "skipped", 1)

    def complete_if_drained(self, job_id: str) -> bool:
        inflight_key, job_key, _ = self._keys(job_id)
        return bool(self._complete(keys=[inflight_key, job_key], args=[repr(time.time())]))

    def record_stage(self, job_id: str, stage: str, cpu_s: float, wall_s: float) -> None:
        """Accumulate one stage run's CPU and wall seconds (the per-stage cost that benchmarks report)."""
        key = f"{self._job_key(job_id)}:stages"
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrbyfloat(key, f"{stage}:cpu", cpu_s)
            pipe.hincrbyfloat(key, f"{stage}:wall", wall_s)
            pipe.hincrby(key, f"{stage}:runs", 1)
            pipe.execute()

    def stage_totals(self, job_id: str) -> dict[str, dict[str, float]]:
        """{stage: {"cpu": seconds, "wall": seconds, "runs": count}} summed over the job."""
        totals: dict[str, dict[str, float]] = {}
        for field_name, value in self.redis.hgetall(f"{self._job_key(job_id)}:stages").items():
            stage, measure = _text(field_name).rsplit(":", 1)
            totals.setdefault(stage, {})[measure] = float(value)
        return totals

    def in_flight(self, job_id: str) -> int:
        return int(self.redis.hlen(self._keys(job_id)[0]))

    # --- items

    def admit(self, job_id: str, item_id: str, entry: dict[str, Any]) -> bool:
        """Put an item in flight; False when it already is (a duplicate)."""
        inflight_key, job_key, _ = self._keys(job_id)
        record = json.dumps({"state": ItemState.PENDING.value, "attempts": 0, "entry": entry})
        return bool(self._admit(keys=[inflight_key, job_key], args=[item_id, record]))

    def start(self, job_id: str, item_id: str, lease_s: float) -> int:
        """Mark an item running under a lease; returns the attempt number, 0 if it is not in flight."""
        now = time.time()
        return int(self._start(keys=[self._keys(job_id)[0]], args=[item_id, repr(now), repr(now + lease_s)]))

    def item_state(self, job_id: str, item_id: str) -> ItemState | None:
        inflight_key, _, failed_key = self._keys(job_id)
        raw = self.redis.hget(inflight_key, item_id)
        if raw is not None:
            return ItemState(json.loads(raw)["state"])
        return ItemState.FAILED if self.redis.hexists(failed_key, item_id) else None

    def finish(self, job_id: str, item_id: str) -> bool:
        inflight_key, job_key, failed_key = self._keys(job_id)
        return bool(self._settle(keys=[inflight_key, job_key, failed_key], args=[item_id, "done", ""]))

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
    ) -> bool:
        """Record a failed item. admitted=False records an item that never got in flight (a bad catalog line)."""
        inflight_key, job_key, failed_key = self._keys(job_id)
        failure = json.dumps({"error": error, "message": message, "attempts": attempts, "entry": entry})
        if not admitted:
            self.admit(job_id, item_id, entry or {})
        return bool(self._settle(keys=[inflight_key, job_key, failed_key], args=[item_id, "failed", failure]))

    def failures(self, job_id: str) -> list[Failure]:
        raw = self.redis.hgetall(self._keys(job_id)[2])
        failures = []
        for key, value in sorted(raw.items()):
            record = json.loads(value)
            failures.append(
                Failure(_text(key), record["error"], record["message"], record["attempts"], record["entry"])
            )
        return failures
