"""The job ledger in Redis: jobs, in-flight items with leases, failures, counters and a results stream.

Memory per job is bounded by what is in flight plus what failed: a finished item is only a counter (and an
entry in the results stream until the dispatcher moves it into the results index in object storage). Every
item transition is one Lua script, so it is atomic, and counters move exactly once per item whatever the number
of deliveries (a second `finish` of the same item finds nothing in flight and changes nothing).

Keys (all under `rg:`): `jobs` (zset of every job by submission), `jobs:active` (zset of jobs a dispatcher
serves, ordered by priority class then submission), `job:<id>` (the job hash), and per job `:inflight` (item →
JSON record), `:leases` (zset item → lease deadline), `:failed` (item → failure JSON), `:errors` (error class →
count), `:results` (stream of settled items), `:stages` (per-stage CPU/wall sums), `:at` (item in flight → the
stage its last task began; an item without one waits in the broker for its first).

An in-flight item carries a dispatch `token`: every (re-)dispatch bumps it and the message carries it, so a
message that was superseded (its lease expired and the reaper sent a new one) is recognised and dropped.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import redis

from reelgen.errors import JobNotFound, JobStateError

PREFIX = "rg"
#: the stage of an item in flight whose first task has not begun
QUEUED = "queued"
JOBS_KEY = f"{PREFIX}:jobs"
ACTIVE_KEY = f"{PREFIX}:jobs:active"
# the active set's score: priority class first, then submission time (seconds fit well below this factor)
_CLASS_WEIGHT = 1e11


class JobState(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"  # no new items are dispatched; items in flight go on
    DRAINING = "draining"  # like paused, and the job ends (DRAINED) once nothing is in flight
    COMPLETED = "completed"
    DRAINED = "drained"
    CANCELLED = "cancelled"
    # serving it raised unexpected errors too many times in a row (the last one is in `error`); then as cancelled
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (JobState.COMPLETED, JobState.DRAINED, JobState.CANCELLED, JobState.FAILED)


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
    DEAD = "dead"  # dead-lettered: it killed the worker (or lost its lease) too many times


class Reprocess(StrEnum):
    """Which catalog items a job processes, judged against earlier results for the same output root."""

    MISSING = "missing"  # items without a done output for this config hash and source version
    FAILED = "failed"  # only items whose last recorded result for this config and version is a failure
    ALL = "all"  # every item, done or not
    CHANGED = "changed"  # items with no recorded result at all for this config and version (nightly)


class JobAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    DRAIN = "drain"
    CANCEL = "cancel"


@dataclass(frozen=True)
class Failure:
    item_id: str
    error: str
    message: str
    attempts: int
    entry: dict[str, Any] | None
    dead: bool = False


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
    priority: int = 1
    reprocess: Reprocess = Reprocess.MISSING
    max_in_flight: int = 64
    cursor: int = 0
    total: int | None = None
    dispatched: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    dead: int = 0
    redispatched: int = 0
    gone: int = 0
    exhausted: bool = False
    started_at: float | None = None
    finished_at: float | None = None
    in_flight: int = 0
    #: unexpected errors in a row while a dispatcher served the job, and the last one's type and message
    feed_errors: int = 0
    error: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def settled(self) -> int:
        return self.done + self.failed + self.skipped


def _text(value: Any) -> str:
    """A Redis reply as text (replies are bytes unless the client decodes them)."""
    return value.decode() if isinstance(value, bytes) else str(value)


# Shared Lua: settle an in-flight item. Needs KEYS[1]=inflight, [2]=job, [3]=failed, [4]=leases, [5]=errors,
# [6]=results, [7]=at; `item`, `status` ('done'|'failed'|'dead'), `err` and `msg` locals. RET_NONE/RET_DONE are
# replaced by each script's own return values (nothing to settle / settled).
_SETTLE_BODY = """
local raw = redis.call('HGET', KEYS[1], item)
if not raw then return RET_NONE end
local rec = cjson.decode(raw)
redis.call('HDEL', KEYS[1], item)
redis.call('ZREM', KEYS[4], item)
redis.call('HDEL', KEYS[7], item)
local version = ''
if type(rec['entry']) == 'table' and type(rec['entry']['version']) == 'string' then version = rec['entry']['version'] end
if status == 'done' then
  redis.call('HINCRBY', KEYS[2], 'done', 1)
else
  redis.call('HINCRBY', KEYS[2], 'failed', 1)
  if status == 'dead' then redis.call('HINCRBY', KEYS[2], 'dead', 1) end
  redis.call('HINCRBY', KEYS[5], err, 1)
  redis.call('HSET', KEYS[3], item, cjson.encode({error=err, message=msg, attempts=rec['attempts'] or 0,
    entry=rec['entry'], dead=(status == 'dead')}))
end
redis.call('XADD', KEYS[6], '*', 'i', item, 's', status, 'v', version, 'e', err, 'm', msg)
return RET_DONE
"""

# KEYS: inflight, job, leases; ARGV: item, record json, lease deadline, cursor line ('' = leave)
# Returns 1 admitted, 0 already in flight, -1 the job no longer takes items (the cursor is left alone then).
_ADMIT = """
if redis.call('HGET', KEYS[2], 'state') ~= 'running' then return -1 end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'cursor', ARGV[4]) end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'dispatched', 1)
if not redis.call('HGET', KEYS[2], 'started_at') then redis.call('HSET', KEYS[2], 'started_at', ARGV[5]) end
return 1
"""

# KEYS: job; ARGV: cursor line. A line skipped (already done): counted with its cursor move, atomically.
_SKIP = """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return -1 end
redis.call('HINCRBY', KEYS[1], 'skipped', 1)
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'cursor', ARGV[1]) end
return 1
"""

# KEYS: job, failed, errors, results; ARGV: key, error class, message, cursor line ('' = leave), entry json.
# A catalog line that never got in flight (bad line, bad or repeated id).
_FAIL_LINE = """
if ARGV[4] ~= '' then
  if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return -1 end
  redis.call('HSET', KEYS[1], 'cursor', ARGV[4])
end
redis.call('HINCRBY', KEYS[1], 'failed', 1)
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode({error=ARGV[2], message=ARGV[3], attempts=0,
  entry=cjson.decode(ARGV[5]), dead=false}))
redis.call('XADD', KEYS[4], '*', 'i', ARGV[1], 's', 'failed', 'v', '', 'e', ARGV[2], 'm', ARGV[3])
return 1
"""

# KEYS: inflight, leases; ARGV: item, now, lease deadline, token ('' = any). Marks the item running under a
# lease; returns the attempt number, or 0 when the item is not in flight or the message's token is stale.
_START = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local rec = cjson.decode(raw)
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= (rec['token'] or 1) then return 0 end
rec['state'] = 'running'
rec['attempts'] = (rec['attempts'] or 0) + 1
if not rec['first_at'] then rec['first_at'] = tonumber(ARGV[2]) end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(rec))
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return rec['attempts']
"""

# KEYS: inflight, job, failed, leases, errors, results, at; ARGV: item, task id, lease deadline, crash limit,
# message, stage ('' = leave). One task of the item begins: renews the lease, counts the delivery, notes the stage. A task id still open from an earlier
# delivery means that delivery killed its worker (a finished task closes itself); after `crash limit` such
# deliveries the item is dead-lettered instead of looping. Returns deliveries, 0 if not in flight, -1 if dead.
_BEGIN = (
    """
local item = ARGV[1]
local raw = redis.call('HGET', KEYS[1], item)
if not raw then return 0 end
local rec = cjson.decode(raw)
if type(rec['open']) ~= 'table' then rec['open'] = {} end
rec['deliveries'] = (rec['deliveries'] or 0) + 1
if rec['open'][ARGV[2]] then rec['crashes'] = (rec['crashes'] or 0) + 1 end
if (rec['crashes'] or 0) >= tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[1], item, cjson.encode(rec))
  local status, err, msg = 'dead', 'WorkerLost', ARGV[5]
"""
    + _SETTLE_BODY.replace("RET_NONE", "0").replace("RET_DONE", "-1")
    + """
end
rec['open'][ARGV[2]] = 1
rec['state'] = 'running'
redis.call('HSET', KEYS[1], item, cjson.encode(rec))
redis.call('ZADD', KEYS[4], ARGV[3], item)
if ARGV[6] and ARGV[6] ~= '' then redis.call('HSET', KEYS[7], item, ARGV[6]) end
return rec['deliveries']
"""
)

# KEYS: inflight; ARGV: item, task id. A task ended (success, named failure or retry): close it.
_END = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local rec = cjson.decode(raw)
if type(rec['open']) ~= 'table' or not rec['open'][ARGV[2]] then return 0 end
rec['open'][ARGV[2]] = nil
if next(rec['open']) == nil then rec['open'] = {} end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(rec))
return 1
"""

# KEYS: inflight, job, failed, leases, errors, results, at; ARGV: item, status, error class, message
_SETTLE = "local item, status, err, msg = ARGV[1], ARGV[2], ARGV[3], ARGV[4]\n" + _SETTLE_BODY.replace(
    "RET_NONE", "0"
).replace("RET_DONE", "1")

# KEYS: inflight, job, failed, leases, errors, results, at; ARGV: item, now, new deadline, max dispatches, message.
# Re-dispatch an item whose lease expired: bump its token (the lost message, should it ever come back, is then
# stale) or dead-letter it after max dispatches. Returns the new token, 0 not expired, -1 dead.
_REAP = (
    """
local item = ARGV[1]
local raw = redis.call('HGET', KEYS[1], item)
if not raw then redis.call('ZREM', KEYS[4], item) return 0 end
local deadline = redis.call('ZSCORE', KEYS[4], item)
if deadline and tonumber(deadline) > tonumber(ARGV[2]) then return 0 end
local rec = cjson.decode(raw)
local token = (rec['token'] or 1)
if token >= tonumber(ARGV[4]) then
  local status, err, msg = 'dead', 'LeaseExpired', ARGV[5]
"""
    + _SETTLE_BODY.replace("RET_NONE", "0").replace("RET_DONE", "-1")
    + """
end
rec['token'] = token + 1
rec['state'] = 'pending'
rec['open'] = {}
redis.call('HSET', KEYS[1], item, cjson.encode(rec))
redis.call('ZADD', KEYS[4], ARGV[3], item)
redis.call('HDEL', KEYS[7], item)
redis.call('HINCRBY', KEYS[2], 'redispatched', 1)
return rec['token']
"""
)

# KEYS: inflight, leases, job; ARGV: new deadline. Re-dispatch every item still pending (not yet started):
# used when a dispatcher takes a job over, since its predecessor may have died between admitting a page and
# publishing it. Returns a flat list item, token, ...
_REPUBLISH = """
local out = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local rec = cjson.decode(all[i + 1])
  if rec['state'] == 'pending' then
    rec['token'] = (rec['token'] or 1) + 1
    redis.call('HSET', KEYS[1], all[i], cjson.encode(rec))
    redis.call('ZADD', KEYS[2], ARGV[1], all[i])
    table.insert(out, all[i]) table.insert(out, rec['token'])
  end
end
return out
"""

# KEYS: job, active, inflight, leases, at; ARGV: action, now. Job control; returns the new state or 'err:<state>'.
_CONTROL = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'err:missing' end
local action = ARGV[1]
local to = nil
if action == 'pause' and state == 'running' then to = 'paused'
elseif action == 'resume' and (state == 'paused' or state == 'draining') then to = 'running'
elseif action == 'drain' and (state == 'running' or state == 'paused') then to = 'draining'
elseif action == 'cancel' and (state == 'running' or state == 'paused' or state == 'draining') then to = 'cancelled'
end
if not to then return 'err:' .. state end
redis.call('HSET', KEYS[1], 'state', to)
if to == 'cancelled' then
  redis.call('HSET', KEYS[1], 'finished_at', ARGV[2], 'cancelled_in_flight', redis.call('HLEN', KEYS[3]))
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
  redis.call('ZREM', KEYS[2], redis.call('HGET', KEYS[1], 'id'))
end
return to
"""

# KEYS: inflight, job, active, results; ARGV: now. Ends a job that has nothing in flight and no result left
# unindexed, and either read its whole catalog (completed) or is draining (drained). Returns the final state
# or ''.
_COMPLETE = """
local state = redis.call('HGET', KEYS[2], 'state')
if redis.call('HLEN', KEYS[1]) > 0 or redis.call('XLEN', KEYS[4]) > 0 then return '' end
local to = nil
if state == 'running' and redis.call('HGET', KEYS[2], 'exhausted') == '1' then to = 'completed'
elseif state == 'draining' then to = 'drained' end
if not to then return '' end
redis.call('HSET', KEYS[2], 'state', to, 'finished_at', ARGV[1])
redis.call('ZREM', KEYS[3], redis.call('HGET', KEYS[2], 'id'))
return to
"""

# KEYS: parent claims hash, retry job, retry inflight, retry leases; ARGV: item, record json, deadline, now.
# A retry job takes a parent's failed item: once, whatever the number of concurrent retries. An item claimed by
# a retry job that has since finished may be claimed again.
_CLAIM = """
local owner = redis.call('HGET', KEYS[1], ARGV[1])
if owner then
  local state = redis.call('HGET', 'rg:job:' .. owner, 'state')
  if state == 'running' or state == 'paused' or state == 'draining' or owner == redis.call('HGET', KEYS[2], 'id') then
    return 0
  end
end
if redis.call('HGET', KEYS[2], 'state') ~= 'running' then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], redis.call('HGET', KEYS[2], 'id'))
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'dispatched', 1)
if not redis.call('HGET', KEYS[2], 'started_at') then redis.call('HSET', KEYS[2], 'started_at', ARGV[4]) end
return 1
"""

# KEYS: job, active, inflight, leases, at; ARGV: cause, attempts, now. Serving the job raised an unexpected error:
# count it, and once `attempts` came in a row fail the job, dropping its items in flight as a cancel does.
# Returns the failures in a row so far, 0 when the job failed now, -1 when it was no longer live.
_FEED_FAILED = """
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'running' and state ~= 'paused' and state ~= 'draining' then return -1 end
local tries = redis.call('HINCRBY', KEYS[1], 'feed_errors', 1)
redis.call('HSET', KEYS[1], 'error', ARGV[1])
if tries < tonumber(ARGV[2]) then return tries end
redis.call('HSET', KEYS[1], 'state', 'failed', 'finished_at', ARGV[3], 'failed_in_flight', redis.call('HLEN', KEYS[3]))
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
redis.call('ZREM', KEYS[2], redis.call('HGET', KEYS[1], 'id'))
return 0
"""

_INT_FIELDS = (
    "cursor", "dispatched", "done", "failed", "skipped", "dead", "redispatched", "gone", "feed_errors",
)  # fmt: skip
_KNOWN = {
    "id", "kind", "state", "submitted_at", "catalog", "out", "config_hash", "config", "priority", "reprocess",
    "max_in_flight", "total", "exhausted", "started_at", "finished_at", "error", *_INT_FIELDS,
}  # fmt: skip


def item_record(entry: dict[str, Any], token: int = 1) -> str:
    return json.dumps({"state": ItemState.PENDING.value, "attempts": 0, "token": token, "entry": entry})


class Ledger:
    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._admit = client.register_script(_ADMIT)
        self._skip = client.register_script(_SKIP)
        self._fail_line = client.register_script(_FAIL_LINE)
        self._start = client.register_script(_START)
        self._begin = client.register_script(_BEGIN)
        self._end = client.register_script(_END)
        self._settle = client.register_script(_SETTLE)
        self._reap = client.register_script(_REAP)
        self._republish = client.register_script(_REPUBLISH)
        self._control = client.register_script(_CONTROL)
        self._complete = client.register_script(_COMPLETE)
        self._claim = client.register_script(_CLAIM)
        self._feed_failed = client.register_script(_FEED_FAILED)

    @staticmethod
    def job_key(job_id: str) -> str:
        return f"{PREFIX}:job:{job_id}"

    def _keys(self, job_id: str) -> tuple[str, str, str]:
        base = self.job_key(job_id)
        return f"{base}:inflight", base, f"{base}:failed"

    def _settle_keys(self, job_id: str) -> list[str]:
        base = self.job_key(job_id)
        return [
            f"{base}:inflight",
            base,
            f"{base}:failed",
            f"{base}:leases",
            f"{base}:errors",
            f"{base}:results",
            f"{base}:at",
        ]

    def results_key(self, job_id: str) -> str:
        return f"{self.job_key(job_id)}:results"

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
            **dict.fromkeys(_INT_FIELDS, 0),
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

    @staticmethod
    def _record(fields: dict[str, str], in_flight: int) -> JobRecord:
        def number(name: str) -> float | None:
            return float(fields[name]) if fields.get(name) else None

        total = fields.get("total")
        return JobRecord(
            id=fields["id"],
            kind=JobKind(fields["kind"]),
            state=JobState(fields["state"]),
            submitted_at=float(fields["submitted_at"]),
            catalog=fields["catalog"],
            out=fields["out"],
            config_hash=fields["config_hash"],
            config=json.loads(fields["config"]),
            priority=int(fields.get("priority", 1)),
            reprocess=Reprocess(fields.get("reprocess", Reprocess.MISSING.value)),
            max_in_flight=int(fields.get("max_in_flight", 64)),
            total=int(total) if total else None,
            exhausted=fields.get("exhausted") == "1",
            started_at=number("started_at"),
            finished_at=number("finished_at"),
            in_flight=in_flight,
            error=fields.get("error", ""),
            extra={k: v for k, v in fields.items() if k not in _KNOWN},
            **{name: int(fields.get(name, 0)) for name in _INT_FIELDS},  # type: ignore[arg-type]
        )

    def job(self, job_id: str) -> JobRecord:
        inflight_key, job_key, _ = self._keys(job_id)
        with self.redis.pipeline() as pipe:
            pipe.hgetall(job_key)
            pipe.hlen(inflight_key)
            raw, in_flight = pipe.execute()
        if not raw:
            raise JobNotFound(f"no job {job_id!r} in the ledger")
        return self._record({_text(k): _text(v) for k, v in raw.items()}, int(in_flight))

    def jobs(self, limit: int = 20) -> list[JobRecord]:
        """The most recently submitted jobs, newest first."""
        ids = [_text(j) for j in self.redis.zrevrange(JOBS_KEY, 0, limit - 1)]
        records = []
        for job_id in ids:
            try:
                records.append(self.job(job_id))
            except JobNotFound:
                continue
        return records

    def active_jobs(self) -> list[str]:
        """Jobs a dispatcher serves, by priority class then submission time."""
        return [_text(j) for j in self.redis.zrange(ACTIVE_KEY, 0, -1)]

    def set_field(self, job_id: str, name: str, value: str | int | float) -> None:
        self.redis.hset(self.job_key(job_id), name, value)

    def set_max_in_flight(self, job_id: str, limit: int) -> None:
        """Change how many items a live job may have in flight; the dispatcher reads it every tick."""
        self.job(job_id)
        self.redis.hset(self.job_key(job_id), "max_in_flight", limit)

    def control(self, job_id: str, action: JobAction) -> JobState:
        inflight_key, job_key, _ = self._keys(job_id)
        leases = f"{job_key}:leases"
        result = _text(
            self._control(
                keys=[job_key, ACTIVE_KEY, inflight_key, leases, f"{job_key}:at"],
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
        inflight_key, job_key, _ = self._keys(job_id)
        keys = [job_key, ACTIVE_KEY, inflight_key, f"{job_key}:leases", f"{job_key}:at"]
        return int(self._feed_failed(keys=keys, args=[cause, attempts, repr(time.time())]))

    def feed_recovered(self, job_id: str) -> None:
        """A job was served again after failures: the count of failures in a row starts over."""
        with self.redis.pipeline() as pipe:
            pipe.hset(self.job_key(job_id), "feed_errors", 0)
            pipe.hdel(self.job_key(job_id), "error")
            pipe.execute()

    def mark_exhausted(self, job_id: str) -> None:
        self.redis.hset(self.job_key(job_id), "exhausted", 1)

    def count_skipped(self, job_id: str, cursor: int | None = None) -> bool:
        return int(self._skip(keys=[self.job_key(job_id)], args=["" if cursor is None else cursor])) == 1

    def complete_if_drained(self, job_id: str) -> bool:
        return self.finish_if_drained(job_id) is not None

    def finish_if_drained(self, job_id: str) -> JobState | None:
        """Complete (or, draining, end) the job once nothing is in flight and every settled item's result has
        left the results stream for the index: a finished job's index is whole."""
        inflight_key, job_key, _ = self._keys(job_id)
        keys = [inflight_key, job_key, ACTIVE_KEY, self.results_key(job_id)]
        result = _text(self._complete(keys=keys, args=[repr(time.time())]))
        return JobState(result) if result else None

    def record_stage(self, job_id: str, stage: str, cpu_s: float, wall_s: float) -> None:
        """Accumulate one stage run's CPU and wall seconds (the per-stage cost that benchmarks report)."""
        key = f"{self.job_key(job_id)}:stages"
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrbyfloat(key, f"{stage}:cpu", cpu_s)
            pipe.hincrbyfloat(key, f"{stage}:wall", wall_s)
            pipe.hincrby(key, f"{stage}:runs", 1)
            pipe.execute()

    def stage_totals(self, job_id: str) -> dict[str, dict[str, float]]:
        """{stage: {"cpu": seconds, "wall": seconds, "runs": count}} summed over the job."""
        totals: dict[str, dict[str, float]] = {}
        for field_name, value in self.redis.hgetall(f"{self.job_key(job_id)}:stages").items():
            stage, measure = _text(field_name).rsplit(":", 1)
            totals.setdefault(stage, {})[measure] = float(value)
        return totals

    def in_flight(self, job_id: str) -> int:
        return int(self.redis.hlen(self._keys(job_id)[0]))

    def in_flight_by_stage(self, job_id: str) -> dict[str, int]:
        """Items in flight per stage their last task began in; QUEUED: not begun yet (waiting in the broker)."""
        inflight_key, job_key, _ = self._keys(job_id)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hlen(inflight_key)
            pipe.hvals(f"{job_key}:at")
            total, stages = pipe.execute()
        counts = Counter(_text(stage) for stage in stages)
        counts[QUEUED] = max(0, int(total) - sum(counts.values()))
        return dict(counts)

    def error_counts(self, job_id: str) -> dict[str, int]:
        raw = self.redis.hgetall(f"{self.job_key(job_id)}:errors")
        return {_text(k): int(v) for k, v in raw.items()}

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
        return int(
            self._admit(keys=self.admit_keys(job_id), args=self.admit_args(item_id, entry, lease_s, cursor))
        )

    def admit_keys(self, job_id: str) -> list[str]:
        base = self.job_key(job_id)
        return [f"{base}:inflight", base, f"{base}:leases"]

    @staticmethod
    def admit_args(item_id: str, entry: dict[str, Any], lease_s: float, cursor: int | None) -> list[Any]:
        now = time.time()
        return [item_id, item_record(entry), repr(now + lease_s), "" if cursor is None else cursor, repr(now)]

    def start(self, job_id: str, item_id: str, lease_s: float, token: int | None = None) -> int:
        """Mark an item running under a lease; the attempt number, 0 if not in flight or token is stale."""
        now = time.time()
        keys = [self._keys(job_id)[0], f"{self.job_key(job_id)}:leases"]
        return int(self._start(keys=keys, args=[item_id, repr(now), repr(now + lease_s), token or ""]))

    def begin_task(
        self, job_id: str, item_id: str, task_id: str, lease_s: float, crash_limit: int, stage: str = ""
    ) -> int:
        """A task of the item begins (see _BEGIN): deliveries so far, 0 if not in flight, -1 if dead-lettered.
        `stage` names the task's stage for the counts of items per stage."""
        message = f"its tasks killed the worker process {crash_limit} times; dead-lettered"
        args: list[Any] = [item_id, task_id, repr(time.time() + lease_s), crash_limit, message, stage]
        return int(self._begin(keys=self._settle_keys(job_id), args=args))

    def end_task(self, job_id: str, item_id: str, task_id: str) -> None:
        self._end(keys=[self._keys(job_id)[0]], args=[item_id, task_id])

    def item_state(self, job_id: str, item_id: str) -> ItemState | None:
        inflight_key, _, failed_key = self._keys(job_id)
        raw = self.redis.hget(inflight_key, item_id)
        if raw is not None:
            return ItemState(json.loads(raw)["state"])
        failure = self.redis.hget(failed_key, item_id)
        if failure is None:
            return None
        return ItemState.DEAD if json.loads(failure).get("dead") else ItemState.FAILED

    def item(self, job_id: str, item_id: str) -> dict[str, Any] | None:
        """The in-flight record of an item (state, attempts, deliveries, crashes, token, entry)."""
        raw = self.redis.hget(self._keys(job_id)[0], item_id)
        return json.loads(raw) if raw is not None else None

    def finish(self, job_id: str, item_id: str) -> bool:
        return bool(self._settle(keys=self._settle_keys(job_id), args=[item_id, "done", "", ""]))

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
                self._settle(keys=self._settle_keys(job_id), args=[item_id, "failed", error, message])
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
        base = self.job_key(job_id)
        keys = [base, f"{base}:failed", f"{base}:errors", f"{base}:results"]
        args = [key, error, message, "" if cursor is None else cursor, json.dumps(entry or {})]
        return int(self._fail_line(keys=keys, args=args))

    def failures(self, job_id: str) -> list[Failure]:
        return sorted(self.iter_failures(job_id), key=lambda f: f.item_id)

    def iter_failures(self, job_id: str) -> Iterator[Failure]:
        """Failures streamed with HSCAN: a job with a million failures is never read in one reply."""
        for key, value in self.redis.hscan_iter(self._keys(job_id)[2], count=500):
            record = json.loads(value)
            yield Failure(
                _text(key),
                record["error"],
                record["message"],
                record.get("attempts", 0),
                record.get("entry") or None,
                bool(record.get("dead", False)),
            )

    # --- leases

    def expired(self, job_id: str, now: float, limit: int = 500) -> list[str]:
        key = f"{self.job_key(job_id)}:leases"
        return [_text(i) for i in self.redis.zrangebyscore(key, "-inf", now, start=0, num=limit)]

    def reap(self, job_id: str, item_id: str, now: float, lease_s: float, max_dispatches: int) -> int:
        """Re-dispatch an item whose lease expired: its new token, 0 if not expired, -1 if dead-lettered."""
        message = f"its lease expired {max_dispatches} times (lost messages or hung workers); dead-lettered"
        args: list[Any] = [item_id, repr(now), repr(now + lease_s), max_dispatches, message]
        return int(self._reap(keys=self._settle_keys(job_id), args=args))

    def republish_pending(self, job_id: str, lease_s: float) -> list[tuple[str, int]]:
        inflight_key, job_key, _ = self._keys(job_id)
        reply = self._republish(
            keys=[inflight_key, f"{job_key}:leases", job_key], args=[repr(time.time() + lease_s)]
        )
        return [(_text(reply[i]), int(reply[i + 1])) for i in range(0, len(reply), 2)]

    # --- retry claims

    def claim_for_retry(
        self, parent_id: str, retry_id: str, item_id: str, entry: dict[str, Any], lease_s: float
    ) -> int:
        """Admit a parent's failed item into a retry job: 1 claimed, 0 another retry has it, -1 job stopped."""
        base = self.job_key(retry_id)
        keys = [f"{self.job_key(parent_id)}:claims", base, f"{base}:inflight", f"{base}:leases"]
        now = time.time()
        return int(self._claim(keys=keys, args=[item_id, item_record(entry), repr(now + lease_s), repr(now)]))

    # --- results stream (drained into the results index by the dispatcher)

    def read_results(
        self, job_id: str, count: int, after: str | None = None
    ) -> list[tuple[str, dict[str, str]]]:
        """Up to `count` results from the oldest, or from the first after the stream id `after` (Redis 6.2+)."""
        start = "-" if after is None else f"({after}"
        raw: Any = self.redis.xrange(self.results_key(job_id), start, "+", count=count)
        return [(_text(i), {_text(k): _text(v) for k, v in f.items()}) for i, f in raw]

    def trim_results(self, job_id: str, through: str) -> None:
        """Drop every result up to the stream id `through`, included, in one short command whatever their number
        (XTRIM MINID, Redis 6.2+): results are only appended, with growing ids, so none of them was left unread."""
        ms, seq = through.split("-")
        self.redis.xtrim(self.results_key(job_id), minid=f"{ms}-{int(seq) + 1}", approximate=False)

    # --- nightly

    def claim_logical_date(self, name: str, logical_date: str, job_id: str) -> str | None:
        """Reserve a logical date for one scheduled job: None if ours now, else the job that already has it."""
        key = f"{PREFIX}:schedule:{name}:{logical_date}"
        if self.redis.set(key, job_id, nx=True):
            return None
        existing = self.redis.get(key)
        return _text(existing) if existing is not None else None

    # --- dispatcher locks

    def acquire_lock(self, job_id: str, owner: str, ttl_s: float) -> bool:
        """Hold the right to dispatch one job (one dispatcher per job); renewing it when already held."""
        key = f"{PREFIX}:lock:dispatch:{job_id}"
        ms = int(ttl_s * 1000)
        if self.redis.set(key, owner, nx=True, px=ms):
            return True
        held = self.redis.get(key)
        if held is not None and _text(held) == owner:
            self.redis.pexpire(key, ms)
            return True
        return False

    def release_lock(self, job_id: str, owner: str) -> None:
        key = f"{PREFIX}:lock:dispatch:{job_id}"
        held = self.redis.get(key)
        if held is not None and _text(held) == owner:
            self.redis.delete(key)
