"""A worker bootstep that writes a heartbeat file: the timestamp of the worker's last sign of life.

It runs on the worker's own timer (the main process's event loop), so a stale file means that loop is stuck or
gone, which a container liveness probe can check without talking to the broker:
`test $(( $(date +%s) - $(cut -d. -f1 FILE) )) -lt 60`.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from celery import bootsteps

log = logging.getLogger(__name__)


def write_heartbeat(path: Path) -> None:
    """Replace the file atomically, so a probe never reads half a timestamp."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".hb-", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{time.time():.3f}\n")
    os.replace(tmp, path)


class Heartbeat(bootsteps.StartStopStep):
    """Added to the app's worker steps by `reelgen worker`, which sets `file` and `interval` first."""

    requires: ClassVar[set[str]] = {"celery.worker.components:Timer"}
    file: ClassVar[Path | None] = None
    interval: ClassVar[float] = 10.0

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.path = type(self).file
        self.every = type(self).interval
        self._entry: Any = None

    def start(self, worker: Any) -> None:
        if self.path is None:
            return
        write_heartbeat(self.path)
        self._entry = worker.timer.call_repeatedly(self.every, self._beat, priority=10)
        log.info("heartbeat every %.0f s to %s", self.every, self.path)

    def _beat(self) -> None:
        assert self.path is not None
        try:
            write_heartbeat(self.path)
        except OSError as exc:  # a full or read-only disk must not kill the worker; the stale file tells
            log.warning("cannot write heartbeat %s: %s", self.path, exc)

    def stop(self, worker: Any) -> None:
        if self._entry is not None:
            self._entry.cancel()
            self._entry = None
