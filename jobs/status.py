"""`reelgen status`: per job counts, rate, ETA, items in flight per stage and the most frequent error classes;
for the broker, the messages waiting per stage and the workers that answer."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import redis
from celery import Celery

from core.text import printable
from jobs.broker.queues import PRIORITY_PREPARE, PRIORITY_RENDER, PRIORITY_SAMPLE, PRIORITY_SELECT, QUEUE
from jobs.ledger import JobRecord, JobState, Ledger
from monitoring.progress import STAGE_LABELS, format_duration

#: the broker's priority lists, by the stage whose messages wait there (prepare: one list per priority class)
_STAGE_PRIORITIES = {
    "prepare": range(PRIORITY_PREPARE, 10),
    "sample": (PRIORITY_SAMPLE,),
    "select": (PRIORITY_SELECT,),
    "render": (PRIORITY_RENDER,),
}
#: seconds `status` waits for workers to answer
WORKERS_ANSWER_S = 1.0


@dataclass(frozen=True)
class JobStatus:
    id: str
    kind: str
    state: str
    priority: int
    submitted_at: float
    catalog: str
    out: str
    total: int | None
    dispatched: int
    done: int
    failed: int
    skipped: int
    dead: int
    gone: int
    redispatched: int
    in_flight: int
    #: items in flight by stage (queued: waiting for their first task)
    in_flight_stages: dict[str, int]
    max_in_flight: int
    #: items settled (done or failed) per second since the job's first dispatch
    rate_per_s: float
    eta_s: float | None
    top_errors: list[tuple[str, int]]
    #: unexpected errors in a row while serving the job, and the last one (why a failed job failed)
    feed_errors: int
    error: str
    extra: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["top_errors"] = [{"error": e, "count": n} for e, n in self.top_errors]
        return data


def job_status(ledger: Ledger, job: JobRecord, now: float | None = None, top: int = 5) -> JobStatus:
    now = time.time() if now is None else now
    end = job.finished_at or now
    elapsed = end - job.started_at if job.started_at else 0.0
    worked = job.done + job.failed
    rate = worked / elapsed if elapsed > 0 else 0.0
    eta: float | None = None
    if job.total is not None and not job.state.finished:
        remaining = max(0, job.total - job.settled)
        eta = remaining / rate if rate > 0 else None
    elif job.state.finished:
        eta = 0.0
    errors = sorted(ledger.error_counts(job.id).items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return JobStatus(
        id=job.id,
        kind=job.kind.value,
        state=job.state.value,
        priority=job.priority,
        submitted_at=job.submitted_at,
        catalog=job.catalog,
        out=job.out,
        total=job.total,
        dispatched=job.dispatched,
        done=job.done,
        failed=job.failed,
        skipped=job.skipped,
        dead=job.dead,
        gone=job.gone,
        redispatched=job.redispatched,
        in_flight=job.in_flight,
        in_flight_stages=ledger.in_flight_by_stage(job.id) if not job.state.finished else {},
        max_in_flight=job.max_in_flight,
        rate_per_s=round(rate, 3),
        eta_s=None if eta is None else round(eta, 1),
        top_errors=errors,
        feed_errors=job.feed_errors,
        error=job.error,
        extra=job.extra,
    )


def render(status: JobStatus) -> str:
    submitted = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(status.submitted_at))
    total = "?" if status.total is None else str(status.total)
    eta = "-" if status.eta_s is None else format_duration(status.eta_s)
    lines = [
        f"{status.id}  {status.kind}  {status.state}  class {status.priority}  submitted {submitted} UTC",
        f"  {status.done} done, {status.failed} failed ({status.dead} dead), {status.skipped} skipped of {total}; "
        f"{status.in_flight}/{status.max_in_flight} in flight; {status.rate_per_s * 60:.1f} items/min; ETA {eta}",
    ]
    stages = {STAGE_LABELS.get(k, k): n for k, n in status.in_flight_stages.items() if n}
    if stages:
        lines.append("  in flight: " + ", ".join(f"{k} {n}" for k, n in stages.items()))
    if status.gone:
        lines.append(f"  {status.gone} item(s) gone from the catalog (outputs kept; see _reelgen/gone/)")
    if status.state == JobState.FAILED:
        lines.append(f"  the job failed: {printable(status.error)}")
    elif status.feed_errors:
        lines.append(
            f"  serving it failed {status.feed_errors} time(s) in a row, last: {printable(status.error)}"
        )
    if status.top_errors:
        lines.append("  errors: " + ", ".join(f"{printable(e)} x{n}" for e, n in status.top_errors))
    return "\n".join(lines)


@dataclass(frozen=True)
class BrokerStatus:
    """What every job shares: the messages waiting in the broker per stage, and the workers that answered."""

    queued: dict[str, int]
    #: worker node -> its pool's processes
    workers: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def broker_status(client: redis.Redis, celery: Celery, answer_s: float = WORKERS_ANSWER_S) -> BrokerStatus:
    """Queue depth from the broker's priority lists (kombu names them QUEUE and QUEUE:<priority>), and the
    workers that answer a stats request within answer_s."""
    lists = {
        stage: [QUEUE if p == 0 else f"{QUEUE}:{p}" for p in ps] for stage, ps in _STAGE_PRIORITIES.items()
    }
    with client.pipeline(transaction=False) as pipe:
        for names in lists.values():
            for name in names:
                pipe.llen(name)
        lengths = iter(pipe.execute())
    queued = {stage: sum(int(next(lengths)) for _ in names) for stage, names in lists.items()}
    stats = celery.control.inspect(timeout=answer_s).stats() or {}
    workers = {node: len((info.get("pool") or {}).get("processes") or []) for node, info in stats.items()}
    return BrokerStatus(queued, workers)


def render_broker(status: BrokerStatus) -> str:
    waiting = sum(status.queued.values())
    stages = ", ".join(f"{stage} {n}" for stage, n in status.queued.items() if n)
    queued = f"{waiting} message(s) waiting" + (f" ({stages})" if stages else "")
    if status.workers:
        processes = sum(status.workers.values())
        # node names come from whatever answered on the broker: shown escaped
        names = ", ".join(printable(node) for node in sorted(status.workers))
        workers = f"{len(status.workers)} worker node(s) alive, {processes} process(es): {names}"
    else:
        workers = f"no worker answered within {WORKERS_ANSWER_S:g} s"
    return f"broker: {queued}; {workers}"
