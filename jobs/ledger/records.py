"""What the ledger holds, as Python sees it: job and item states, the job record and how a job hash reads back
into it, failures, and the in-flight item record the scripts (jobs/ledger/lua/) read and write."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

QUEUED = "queued"


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


def as_text(value: Any) -> str:
    """A Redis reply as text (replies are bytes unless the client decodes them)."""
    return value.decode() if isinstance(value, bytes) else str(value)


INT_FIELDS = (
    "cursor", "dispatched", "done", "failed", "skipped", "dead", "redispatched", "gone", "feed_errors",
)  # fmt: skip
_KNOWN = {
    "id", "kind", "state", "submitted_at", "catalog", "out", "config_hash", "config", "priority", "reprocess",
    "max_in_flight", "total", "exhausted", "started_at", "finished_at", "error", *INT_FIELDS,
}  # fmt: skip


def item_record(entry: dict[str, Any], token: int = 1) -> str:
    return json.dumps({"state": ItemState.PENDING.value, "attempts": 0, "token": token, "entry": entry})


def job_record(fields: dict[str, str], in_flight: int) -> JobRecord:
    """A job's record from its hash (fields as text) and its count of items in flight."""

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
        **{name: int(fields.get(name, 0)) for name in INT_FIELDS},  # type: ignore[arg-type]
    )
