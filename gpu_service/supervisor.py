"""Running the inference daemon as a child process of `reelgen run`: start, wait for ready, restart, stop.

On Kubernetes the daemon is its own container and the kubelet restarts it; locally this does that job.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from core.daemon_settings import DaemonSettings
from core.errors import DaemonUnavailable
from core.processes import ChildProcess
from gpu_service.client import ping_or_none

log = logging.getLogger(__name__)

_READY_POLL_S = 0.05
#: launches in a row that exit before this supervisor saw them answer, after which the daemon is taken for
#: broken (a missing model, a bad setting) rather than killed: as a crash loop, not forever
_UNREADY_LAUNCHES = 3


class DaemonProcess(ChildProcess):
    def __init__(self, settings: DaemonSettings, log_file: Path, ready_timeout_s: float = 180.0) -> None:
        self.settings = settings
        self.log_file = log_file
        self.ready_timeout_s = ready_timeout_s
        self.restarts = 0
        self.ready = False
        self._unready_exits = 0
        self._launched_at = 0.0
        super().__init__()

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the process without waiting: the caller can start other things while the models load."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.settings.socket_path.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "gpu_service", "--settings-json", self.settings.model_dump_json()]
        with open(self.log_file, "ab") as log_handle:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log_handle, stderr=subprocess.STDOUT
            )
        self.ready = False
        self._launched_at = time.monotonic()

    def wait_ready(self) -> None:
        while not self.poll_ready():
            time.sleep(_READY_POLL_S)

    def poll_ready(self) -> bool:
        """Whether the daemon answers yet; DaemonUnavailable once it has exited or overrun ready_timeout_s
        without answering (it is stopped then)."""
        assert self._process is not None, "launch() first"
        if self.ready:
            return True
        code = self._process.poll()
        if code is None:
            if ping_or_none(self.settings.socket_path) is not None:
                self.ready = True
                self._unready_exits = 0
                return True
            if time.monotonic() - self._launched_at < self.ready_timeout_s:
                return False
        self.stop()
        raise DaemonUnavailable(
            f"the inference daemon did not become ready (exit status {code}); see {self.log_file}"
        )

    def ensure_running(self) -> None:
        """Follow a daemon's start, and restart one that died: workers' in-flight requests failed fast and their
        tasks retry; new requests wait for the new daemon's socket. A daemon can serve and die between two looks
        (workers connect as soon as it listens), so an exit before this supervisor saw it ready is restarted too,
        up to _UNREADY_LAUNCHES in a row."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self.poll_ready()
            return
        if not self.ready:
            self._unready_exits += 1
            if self._unready_exits >= _UNREADY_LAUNCHES:
                self.poll_ready()  # names the exit and stops
        log.warning("inference daemon exited with %s; restarting", self._process.returncode)
        self.restarts += 1
        self.launch()

    def __enter__(self) -> DaemonProcess:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
