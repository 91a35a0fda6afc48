"""The ledger of a local run, for every command that works on one: run itself, status, job and retry.

`reelgen run` keeps its ledger in an embedded Redis whose data lies in its state folder. Other commands given the
same folder use that server while it runs, or start it on the saved ledger when it does not, so a finished run
can be inspected and retried like a running one. The server is stopped (saving the ledger) by the last process
that uses it: each holds a shared lock on the folder's `redis.lock` while it does, and one that can take the lock
exclusively on leaving knows it is the last. A run killed outright leaves its server behind; the next command
on the folder uses it and, being the last, stops it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import redis
from pydantic import SecretStr

from core.errors import ConfigError
from core.private import private_dir
from core.settings import Settings
from jobs.intake.preflight import check_redis
from jobs.ledger import Ledger
from jobs.local.redis_server import EmbeddedRedis, serving

log = logging.getLogger(__name__)

LOCK_NAME = "redis.lock"
DATA_NAME = "redis.rdb"


def has_ledger(state_dir: Path) -> bool:
    """Whether a local run kept a ledger in this folder (saved, or in a server that runs now)."""
    return (state_dir / DATA_NAME).is_file() or serving(state_dir)


@contextlib.contextmanager
def local_redis(state_dir: Path, *, existing: bool = False) -> Iterator[str]:
    """The URL of the state folder's embedded Redis for the duration of the block.

    existing=True: only a folder where a run kept its ledger will do (ConfigError otherwise), so a mistyped
    --state-dir is named instead of answered from an empty ledger.
    """
    if existing and not has_ledger(state_dir):
        raise ConfigError(
            f"no local run in {state_dir}: give the --state-dir that `reelgen run` took "
            "(or set REELGEN_REDIS_URL for a shared Redis)"
        )
    private_dir(state_dir)
    fd = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        # waits while the last user of a server is stopping it, so nobody connects to a server that is going
        fcntl.flock(fd, fcntl.LOCK_SH)
        server = EmbeddedRedis(state_dir).start()
        try:
            yield server.url
        finally:
            _leave(fd, server)
    finally:
        os.close(fd)


def _leave(fd: int, server: EmbeddedRedis) -> None:
    # Dropping the shared lock before asking for the exclusive one: two users leaving at once cannot both see
    # the other's lock and both leave the server running.
    fcntl.flock(fd, fcntl.LOCK_UN)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log.info("embedded redis left running: another process uses it")
        server.detach()
        return
    server.stop()


@contextlib.contextmanager
def job_ledger(settings: Settings) -> Iterator[tuple[Settings, Ledger]]:
    """The ledger a command about jobs works on, with settings naming its Redis (the Celery app configured for
    it): the shared Redis of REELGEN_REDIS_URL, or else that of the local run kept in settings.state_dir."""
    from jobs.broker.celery_app import app, configure

    if settings.redis_url is not None:
        check_redis(settings.redis_url.get_secret_value())
        configure(app, settings)
        yield settings, Ledger(redis.Redis.from_url(settings.redis_url.get_secret_value()))
        return
    with local_redis(settings.state_dir, existing=True) as url:
        local = settings.model_copy(update={"redis_url": SecretStr(url)})
        configure(app, local)
        client = redis.Redis.from_url(url)
        try:
            yield local, Ledger(client)
        finally:
            client.close()
