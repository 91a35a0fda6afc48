"""The nightly schedule's cron arithmetic and its Celery beat entry (no app import: celery_app uses it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from celery.schedules import crontab

from core.errors import ConfigError
from core.settings import Settings
from jobs.broker.queues import NIGHTLY_TASK

SCHEDULE_NAME = "nightly"


def parse_cron(text: str) -> crontab:
    fields = text.split()
    if len(fields) != 5:
        raise ConfigError(
            f"nightly_cron {text!r} must have 5 fields: minute hour day-of-month month day-of-week"
        )
    minute, hour, day_of_month, month, day_of_week = fields
    try:
        return crontab(
            minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month, day_of_week=day_of_week
        )
    except ValueError as exc:
        raise ConfigError(f"nightly_cron {text!r}: {exc}") from exc


def _matches(cron: crontab, at: datetime) -> bool:
    return (
        at.minute in cron.minute
        and at.hour in cron.hour
        and at.day in cron.day_of_month
        and at.month in cron.month_of_year
        and at.isoweekday() % 7 in cron.day_of_week
    )


def last_fire(cron: crontab, now: datetime) -> datetime:
    """The schedule's most recent fire time at or before now (UTC, minute resolution, at most 8 days back)."""
    at = now.astimezone(UTC).replace(second=0, microsecond=0)
    for _ in range(8 * 24 * 60):
        if _matches(cron, at):
            return at
        at -= timedelta(minutes=1)
    return now.astimezone(UTC)


def beat_schedule(settings: Settings) -> dict[str, dict[str, object]]:
    if not settings.nightly_catalog:
        return {}
    return {
        SCHEDULE_NAME: {
            "task": NIGHTLY_TASK,
            "schedule": parse_cron(settings.nightly_cron),
            "options": {"priority": 0},
        }
    }
