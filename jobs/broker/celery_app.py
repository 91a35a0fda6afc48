"""The Celery application: broker, queues and delivery semantics, configured from Settings.

Workers start as `celery -A jobs.broker.celery_app worker`; the module configures the app from the environment when a
Redis URL is set, and `reelgen run` configures it explicitly after it has started an embedded Redis.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger, worker_init
from kombu.exceptions import OperationalError

from core.errors import ConfigError
from core.processes import exit_with_parent
from core.settings import Settings, load_settings
from jobs.broker import prefork  # noqa: F401  (connects its signal receiver)
from jobs.broker.cron import beat_schedule
from jobs.broker.heartbeat import Heartbeat
from jobs.broker.queues import PRIORITIES, QUEUE, SEP, TASK_MODULES
from jobs.broker.worker_shutdown import StopIdlePoolPromptly, WakeOnShutdown
from monitoring.logging_setup import prepare_handler

BROKER_POLL_S = 0.25

# the longest wait before a transient failure's retry (workers/tasks.py: min(60, 2 ** (retries + 1)))
MAX_RETRY_COUNTDOWN_S = 60

# Redis (ledger and broker) is away, e.g. restarting: kombu reports a broker that cannot be reached as
# OperationalError, redis-py its own commands as ConnectionError/TimeoutError. Nothing is wrong with any item.
REDIS_UNAVAILABLE = (redis.ConnectionError, redis.TimeoutError, OperationalError)

app = Celery("reelgen", include=list(TASK_MODULES))
app.steps["worker"].add(WakeOnShutdown)
app.steps["worker"].add(Heartbeat)
app.steps["worker"].add(StopIdlePoolPromptly)


def celery_url(redis_url: str) -> str:
    """Kombu spells a Unix-socket Redis as redis+socket://."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


def visibility_timeout(settings: Settings) -> int:
    return settings.visibility_timeout_s or settings.task_time_limit_s + 600


def check_timeouts(settings: Settings) -> None:
    """Refuse timeouts that contradict each other (checked whenever the app is configured).

    The broker redelivers a message unacknowledged for the visibility timeout, so that timeout must exceed the
    longest task and any retry countdown, or running tasks are delivered twice. An item's lease is renewed when
    each of its tasks begins, so it must outlast the longest task, or the reaper re-dispatches live items.
    """
    longest = settings.task_time_limit_s + MAX_RETRY_COUNTDOWN_S
    if visibility_timeout(settings) <= longest:
        raise ConfigError(
            f"visibility_timeout_s {visibility_timeout(settings)} must exceed task_time_limit_s + the longest "
            f"retry countdown ({longest}); raise REELGEN_VISIBILITY_TIMEOUT_S or lower REELGEN_TASK_TIME_LIMIT_S"
        )
    if settings.lease_s <= settings.task_time_limit_s:
        raise ConfigError(
            f"lease_s {settings.lease_s} must exceed task_time_limit_s {settings.task_time_limit_s}, "
            "or the reaper re-dispatches items whose tasks are still running"
        )


def configure(celery: Celery, settings: Settings) -> None:
    if settings.redis_url is None:
        return
    check_timeouts(settings)
    url = celery_url(settings.redis_url.get_secret_value())
    if celery.conf.broker_url != url and celery._pool is not None:
        # connections pooled for an earlier broker would keep publishing there
        celery._pool.force_close_all()
        celery._pool = None
        celery.amqp._producer_pool = None
    celery.conf.update(
        broker_url=url,
        result_backend=None,
        task_ignore_result=True,
        task_default_queue=QUEUE,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_time_limit=settings.task_time_limit_s,
        task_soft_time_limit=settings.task_soft_time_limit_s,
        # a 'sent' event is one more publish per message, outside the publish pipeline: it halves the rate a
        # dispatcher feeds the broker; Flower shows tasks from 'received' on
        task_send_sent_event=False,
        worker_send_task_events=True,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "priority_steps": list(PRIORITIES),
            "sep": SEP,
            "queue_order_strategy": "priority",
            # the BRPOP timeout: a worker's shutdown waits for its outstanding BRPOP to return (its reply may
            # carry a message that must be restored), on average half of this; the default 1 s cost every
            # run's end ~0.5 s, while four idle BRPOPs a second per worker are nothing to Redis
            "polling_interval": BROKER_POLL_S,
            # a task unacknowledged this long is redelivered: it must exceed the longest task and retry wait
            "visibility_timeout": visibility_timeout(settings),
        },
        task_serializer="json",
        accept_content=["json"],
        timezone="UTC",
        enable_utc=True,
        beat_schedule=beat_schedule(settings),
    )


_STARTUP_SETTINGS = load_settings()
configure(app, _STARTUP_SETTINGS)


@worker_init.connect
def stop_with_the_run(**_: Any) -> None:
    """A worker that `reelgen run` started stops when the run ends, even when the run is killed outright."""
    if _STARTUP_SETTINGS.parent_pid is not None:
        exit_with_parent(_STARTUP_SETTINGS.parent_pid)


@after_setup_logger.connect
@after_setup_task_logger.connect
def escape_worker_logs(logger: logging.Logger, **_: Any) -> None:
    """A worker's log quotes items' sources and errors: text from a catalog must not forge its lines. Its
    handlers, Celery's own included, write the configured format and name the job and item of each line."""
    for handler in logger.handlers:
        prepare_handler(handler, _STARTUP_SETTINGS.log_format)
