"""The Celery application: broker, queues and delivery semantics, configured from Settings.

Workers start as `celery -A jobs.celery_app worker`; the module configures the app from the environment when a
Redis URL is set, and `reelgen run` configures it explicitly after it has started an embedded Redis.
"""

from __future__ import annotations

from celery import Celery

from reelgen.settings import Settings, load_settings

QUEUE = "reelgen"
# Redis-transport priorities: 0 is served first. Later stages outrank first stages so that items already under
# way finish before new ones start (the seed's first-come-first-served, inside the broker).
PRIORITY_PREPARE = 6
PRIORITY_ANALYSE = 3
PRIORITY_RENDER = 0

app = Celery("reelgen", include=["workers.tasks"])


def celery_url(redis_url: str) -> str:
    """Kombu spells a Unix-socket Redis as redis+socket://."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


def configure(celery: Celery, settings: Settings) -> None:
    if settings.redis_url is None:
        return
    url = celery_url(settings.redis_url.get_secret_value())
    celery.conf.update(
        broker_url=url,
        result_backend=None,
        task_ignore_result=True,
        task_default_queue=QUEUE,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_time_limit=settings.task_time_limit_s,
        task_soft_time_limit=max(5, settings.task_time_limit_s - 30),
        task_send_sent_event=True,
        worker_send_task_events=True,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "priority_steps": list(range(10)),
            "sep": ":",
            "queue_order_strategy": "priority",
            # a task unacknowledged this long is redelivered: it must exceed the longest task and retry wait
            "visibility_timeout": settings.task_time_limit_s + 600,
        },
        task_serializer="json",
        accept_content=["json"],
    )


configure(app, load_settings())
