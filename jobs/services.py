"""The long-running services `reelgen dispatcher`, `reelgen worker` and `reelgen beat`, as a pod runs them.

Each serves /metrics and /healthz on REELGEN_METRICS_PORT (bound to REELGEN_METRICS_HOST) when that is set;
/healthz answers 200 only while the service can do its work, and SIGTERM stops it well inside its pod's grace
period:

* dispatcher: Redis answers a PING and the dispatch loop has come round recently (a loop stuck in one job would
  otherwise look healthy forever). SIGTERM lets the current tick finish, then the feeds are flushed and the job
  locks released, so another dispatcher takes over at once instead of after the locks expire.
* worker: the Celery consumer holds a broker connection (a consumer bootstep started after Celery's Connection
  step and stopped when the connection is lost or the worker shuts down). The exporter starts once the worker
  is ready, sums the prefork children's samples, and SIGTERM is Celery's warm shutdown.
* beat: Redis (its broker) answers a PING; process metrics only. SIGTERM is Celery beat's own clean exit.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

import redis
from celery import Celery, bootsteps

from core.errors import ConfigError
from core.settings import Settings
from jobs.ledger import Ledger
from monitoring.exporter import HealthCheck, MetricsServer
from monitoring.logging_setup import signal_safe_line

log = logging.getLogger(__name__)

#: the least time without a dispatch loop pass before the dispatcher calls itself stuck
MIN_STALL_S = 120.0


class LoopProgress:
    """When a service loop last came round; unhealthy once it has not for `stall_s`."""

    def __init__(self, stall_s: float) -> None:
        self.stall_s = stall_s
        self._last = time.monotonic()

    def beat(self) -> None:
        self._last = time.monotonic()

    def check(self) -> str | None:
        idle = time.monotonic() - self._last
        if idle > self.stall_s:
            return f"the dispatch loop has not come round for {idle:.0f} s (limit {self.stall_s:.0f} s)"
        return None


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM (the kubelet) and SIGINT set `stop` instead of unwinding whatever runs at that instant."""

    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run_dispatcher(settings: Settings, ledger: Ledger) -> int:
    from jobs.broker.celery_app import app
    from jobs.cluster_metrics import serve_metrics
    from jobs.dispatch.dispatcher import Dispatcher

    dispatcher = Dispatcher(ledger, app, settings)
    stop = threading.Event()
    stop_on_signals(stop)
    progress = LoopProgress(max(MIN_STALL_S, 20 * settings.dispatch_poll_s))
    server = None
    if settings.metrics_port is not None:
        server = serve_metrics(settings.metrics_port, settings, settings.metrics_host, health=progress.check)
        log.info("dispatcher metrics and health on %s:%d", settings.metrics_host, server.port)
    log.info("dispatcher %s serving", dispatcher.owner)
    try:
        dispatcher.serve(stop=stop.is_set, on_tick=progress.beat)
    finally:
        if server is not None:
            server.close()
    log.info("dispatcher %s stopped", dispatcher.owner)
    return 0


class BrokerLink(bootsteps.StartStopStep):
    """A consumer step: started once the consumer holds its broker connection, stopped when the connection is
    lost (Celery restarts the consumer's steps then) or the worker shuts down."""

    requires: ClassVar[tuple[str, ...]] = ("celery.worker.consumer.connection:Connection",)
    connected: ClassVar[threading.Event] = threading.Event()

    def start(self, parent: Any) -> None:
        type(self).connected.set()

    def stop(self, parent: Any) -> None:
        type(self).connected.clear()

    def shutdown(self, parent: Any) -> None:
        type(self).connected.clear()

    @classmethod
    def health(cls) -> str | None:
        return None if cls.connected.is_set() else "the worker holds no broker connection"


def run_worker(settings: Settings, argv: list[str], heartbeat_file: Path | None, heartbeat_s: float) -> int:
    from jobs.broker.celery_app import app
    from jobs.broker.heartbeat import Heartbeat
    from monitoring.metrics import install_worker_metrics

    Heartbeat.file = heartbeat_file
    Heartbeat.interval = heartbeat_s
    app.steps["consumer"].add(BrokerLink)
    if settings.metrics_port is not None:
        install_worker_metrics(settings.metrics_port, settings.metrics_host, health=BrokerLink.health)
    if settings.log_format == "json":
        import celery.apps.worker

        # Celery's signal handlers print their shutdown notices straight to stdout, past logging
        celery.apps.worker.safe_say = signal_safe_line("celery.apps.worker", "WARNING")
    return celery_main(app, argv, settings)


def run_beat(settings: Settings, argv: list[str]) -> int:
    from celery.signals import beat_init
    from prometheus_client import REGISTRY

    from jobs.broker.celery_app import app

    if not app.conf.beat_schedule:
        raise ConfigError("nothing to schedule: set REELGEN_NIGHTLY_CATALOG (and REELGEN_NIGHTLY_CRON)")
    servers: list[MetricsServer] = []
    port = settings.metrics_port
    if port is not None:
        health = _broker_health(settings)

        def serve(**_: Any) -> None:
            # once the scheduler runs: a beat reported healthy has its own SIGTERM handling installed
            servers.append(MetricsServer(REGISTRY, settings.metrics_host, port, health=health))

        beat_init.connect(serve, weak=False)
    try:
        return celery_main(app, argv, settings)
    finally:
        for server in servers:
            server.close()


def _broker_health(settings: Settings) -> HealthCheck:
    from jobs.cluster_metrics import redis_health

    assert settings.redis_url is not None  # the CLI refuses a service without one
    client = redis.Redis.from_url(
        settings.redis_url.get_secret_value(), socket_timeout=5, socket_connect_timeout=5
    )
    return redis_health(client)


def celery_main(app: Celery, argv: list[str], settings: Settings) -> int:
    # Celery prints its banner straight to stdout; a JSON log must hold JSON lines only
    quiet = ["--quiet"] if settings.log_format == "json" else []
    try:
        app.start([*quiet, *argv])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
