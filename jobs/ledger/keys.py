"""Every Redis key reelgen keeps outside the broker's own, in one place: they are what queued work and running
jobs hold, so a name here changes only with a migration.

All sit under `rg:`: `jobs` (zset of every job by submission), `jobs:active` (zset of jobs a dispatcher serves,
ordered by priority class then submission), `job:<id>` (the job hash), and per job `:inflight` (item → JSON
record), `:leases` (zset item → lease deadline), `:failed` (item → failure JSON), `:errors` (error class →
count), `:results` (stream of settled items), `:stages` (per-stage CPU/wall sums), `:at` (item in flight → the
stage its last task began), `:claims` (a parent's items taken by retry jobs) and `:segments:<item>` (an item's
segment results while it is analysed, per dispatch token). Besides: `schedule:<name>:<date>` (a scheduled job's
logical date), `lock:dispatch:<id>` (the dispatcher serving a job), `workers` (zset of live worker incarnations by
their last heartbeat, Redis's own clock) and `worker:<id>:held` (the messages a worker incarnation holds).
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "rg"
JOBS_KEY = f"{PREFIX}:jobs"
ACTIVE_KEY = f"{PREFIX}:jobs:active"
WORKERS_KEY = f"{PREFIX}:workers"


@dataclass(frozen=True)
class JobKeys:
    """The keys of one job."""

    job: str

    @classmethod
    def of(cls, job_id: str) -> JobKeys:
        return cls(f"{PREFIX}:job:{job_id}")

    @property
    def inflight(self) -> str:
        return f"{self.job}:inflight"

    @property
    def leases(self) -> str:
        return f"{self.job}:leases"

    @property
    def failed(self) -> str:
        return f"{self.job}:failed"

    @property
    def errors(self) -> str:
        return f"{self.job}:errors"

    @property
    def results(self) -> str:
        return f"{self.job}:results"

    @property
    def stages(self) -> str:
        return f"{self.job}:stages"

    @property
    def at(self) -> str:
        return f"{self.job}:at"

    @property
    def claims(self) -> str:
        return f"{self.job}:claims"

    def shared(self, work: str) -> list[str]:
        """A shared work's keys (workers/sharing.py): which item did it, and which item is doing it."""
        return [f"{self.job}:shared:{work}:done", f"{self.job}:shared:{work}:lead"]

    def segments(self, item_id: str, token: int | None = None) -> str:
        """One dispatch's segment results: a superseded attempt's late results never join a newer one's."""
        suffix = "" if token is None else f":{token}"
        return f"{self.job}:segments:{item_id}{suffix}"

    @property
    def settle(self) -> list[str]:
        """The keys of every script that settles an item (lua/settle_body.lua), in their order."""
        return [self.inflight, self.job, self.failed, self.leases, self.errors, self.results, self.at]


def schedule_key(name: str, logical_date: str) -> str:
    return f"{PREFIX}:schedule:{name}:{logical_date}"


def dispatch_lock_key(job_id: str) -> str:
    return f"{PREFIX}:lock:dispatch:{job_id}"


def worker_held_key(worker_id: str) -> str:
    return f"{PREFIX}:worker:{worker_id}:held"
