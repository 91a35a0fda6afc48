"""Local Celery worker processes for `reelgen run`, started, supervised and stopped by the run."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from core.processes import ChildProcess
from jobs.broker.queues import QUEUE

log = logging.getLogger(__name__)


class WorkerPool(ChildProcess):
    """One `celery worker` (prefork, `concurrency` children); restarted if it dies while the run goes on.

    Stopping is Celery's warm shutdown: finish running tasks, take no more.
    """

    stop_timeout_s = 30.0

    def __init__(
        self, *, concurrency: int, env: dict[str, str], log_file: Path, name: str = "reelgen"
    ) -> None:
        self.concurrency = concurrency
        self.env = env
        self.log_file = log_file
        self.name = name
        self.restarts = 0
        super().__init__()

    def _command(self) -> list[str]:
        return [
            sys.executable, "-m", "celery", "-A", "jobs.broker.celery_app", "worker",
            "--pool", "prefork", "--concurrency", str(self.concurrency), "--queues", QUEUE,
            "--hostname", f"{self.name}-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
            "--loglevel", "INFO", "--logfile", str(self.log_file), "--events",
        ]  # fmt: skip

    def start(self) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file.with_suffix(".err"), "ab") as errors:
            self._process = subprocess.Popen(
                self._command(),
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )

    def ensure_running(self) -> None:
        """Restart the worker if it exited; its unacknowledged tasks come back through the broker."""
        if self._process is not None and self._process.poll() is not None:
            log.warning("worker exited with %s; restarting", self._process.returncode)
            self.restarts += 1
            self.start()

    def __enter__(self) -> WorkerPool:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
