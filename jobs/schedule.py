"""The nightly schedule: a Celery beat entry (UTC cron) whose task registers at most one job per logical date.

The logical date is the UTC date of the schedule's most recent fire time, not of the moment the task runs, so a
beat that fires twice, two beats, or a late delivery just after midnight all name the same date; a Redis
`SET NX` on that date makes the second and later attempts return the first job instead of creating another.
A nightly job processes only items new or changed (by catalog `version`/`updated_at`) since earlier runs:
items with any recorded result for this config hash and version are skipped.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import redis

from core.errors import ConfigError
from core.settings import Settings, load_settings
from jobs.broker.celery_app import app
from jobs.broker.cron import SCHEDULE_NAME, last_fire, parse_cron
from jobs.broker.queues import NIGHTLY_TASK
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.submit import submit_catalog_job
from jobs.ledger import JobKind, JobRecord, Ledger, Reprocess

log = logging.getLogger(__name__)


def logical_date(settings: Settings, now: datetime | None = None) -> str:
    return last_fire(parse_cron(settings.nightly_cron), now or datetime.now(UTC)).date().isoformat()


def create_nightly(
    ledger: Ledger, settings: Settings, date: str, catalog: CatalogRef | None = None
) -> tuple[JobRecord, bool]:
    """The nightly job of a logical date: (job, True) if this call created it, (existing job, False) if not.
    Without `catalog`, the one REELGEN_NIGHTLY_CATALOG names."""
    named = settings.nightly_catalog
    if catalog is None and not named:
        raise ConfigError("no nightly catalog: set REELGEN_NIGHTLY_CATALOG")
    job_id = f"nightly-{date}"
    existing = ledger.claim_logical_date(SCHEDULE_NAME, date, job_id)
    if existing is not None:
        return ledger.job(existing), False
    try:
        # parsed after the claim: a second fire for a date already registered returns its job, whatever has
        # become of the catalog since
        job = submit_catalog_job(
            ledger,
            settings,
            JobKind.NIGHTLY,
            catalog or CatalogRef.parse(named or ""),
            reprocess=Reprocess.CHANGED,
            extra={"logical_date": date},
            job_id=job_id,
        )
    except BaseException:
        ledger.release_logical_date(SCHEDULE_NAME, date)  # let the next fire try again
        raise
    log.info("nightly job %s registered for %s", job.id, date)
    return job, True


@app.task(name=NIGHTLY_TASK, ignore_result=True)
def nightly(date: str | None = None) -> str:
    settings = load_settings()
    if settings.redis_url is None:
        raise ConfigError("the nightly task needs REELGEN_REDIS_URL")
    ledger = Ledger(redis.Redis.from_url(settings.redis_url.get_secret_value()))
    job, _created = create_nightly(ledger, settings, date or logical_date(settings))
    return job.id
