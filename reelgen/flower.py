"""Flower, the Celery dashboard, started against reelgen's broker with basic auth on by default.

`reelgen flower` calls `run_flower(settings, extra_args)`. Flower shows workers and tasks from the events the
workers send (jobs/broker/celery_app.py turns them on); it does not show queue depth per priority sub-queue, which
monitoring/metrics.py exports instead.

Credentials come from `FlowerSettings.basic_auth` ("user:password", several separated by commas;
core/flower_settings.py), nested in reelgen's Settings as the field `flower` (environment: `REELGEN_FLOWER__BASIC_AUTH`), or from an
explicit `--basic-auth=...`/`--auth=...` in extra_args. Without any, Flower is refused unless
`allow_unauthenticated` is set (or `--allow-unauthenticated` given): its dashboard can revoke and kill tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import ConfigError
from core.flower_settings import FlowerSettings

if TYPE_CHECKING:
    from core.settings import Settings

ALLOW_FLAG = "--allow-unauthenticated"
_AUTH_OPTIONS = ("--basic-auth", "--basic_auth", "--auth")


def _has_option(args: list[str], names: tuple[str, ...]) -> bool:
    return any(arg.split("=", 1)[0] in names for arg in args)


def flower_argv(settings: Settings, flower: FlowerSettings, extra_args: list[str]) -> list[str]:
    """The `celery flower` arguments (after the program name); raises ConfigError when auth is missing."""
    if settings.redis_url is None:
        raise ConfigError("Flower needs the broker: set REELGEN_REDIS_URL")
    allow = flower.allow_unauthenticated or ALLOW_FLAG in extra_args
    forwarded = [arg for arg in extra_args if arg != ALLOW_FLAG]
    argv = [
        "flower",
        f"--address={flower.address}",
        f"--port={flower.port}",
        f"--max_tasks={flower.max_tasks}",
    ]
    if flower.url_prefix:
        argv.append(f"--url_prefix={flower.url_prefix}")
    if flower.purge_offline_workers_s is not None:
        argv.append(f"--purge_offline_workers={flower.purge_offline_workers_s}")
    explicit_auth = _has_option(forwarded, _AUTH_OPTIONS)
    if flower.basic_auth is not None and not explicit_auth:
        argv.append(f"--basic_auth={flower.basic_auth.get_secret_value()}")
    elif not explicit_auth and not allow:
        raise ConfigError(
            "Flower refuses to start without authentication: set REELGEN_FLOWER__BASIC_AUTH=user:password "
            f"(or pass --basic-auth=...), or pass {ALLOW_FLAG} on a trusted network"
        )
    # later options win in tornado's parser, so an explicit --port or --address in extra_args overrides ours
    return argv + forwarded


def run_flower(settings: Settings, extra_args: list[str]) -> int:
    """Run Flower in this process until it is stopped; returns its exit status."""
    from celery import Celery

    try:
        import flower  # noqa: F401  (an optional extra: workers, dispatcher and daemon images need none of it)
    except ModuleNotFoundError:
        raise ConfigError(
            "Flower is not installed: install reelgen with its extra, pip install 'reelgen[flower]'"
        ) from None

    from jobs.broker.celery_app import configure

    argv = flower_argv(settings, settings.flower, extra_args)
    # A fresh app configured like the workers' one, without their task modules: Flower only reads events and
    # talks to workers through the broker, so its pod needs none of the pipeline's imports (torch, PyAV).
    app = Celery("reelgen")
    configure(app, settings)
    # the credentials travel in this list, in-process: they never appear in /proc/<pid>/cmdline
    code = app.start(argv)
    return int(code or 0)
