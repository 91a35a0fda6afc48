"""Running the inference daemon as a child process of `reelgen run`: start, wait for ready, restart, stop.

On Kubernetes the daemon is its own container and the kubelet restarts it; locally this does that job.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from gpu_service.client import wait_until_ready
from gpu_service.config import DaemonSettings
from reelgen.errors import DaemonUnavailable
from reelgen.processes import ChildProcess

log = logging.getLogger(__name__)


class DaemonProcess(ChildProcess):
    def __init__(self, settings: DaemonSettings, log_file: Path, ready_timeout_s: float = 180.0) -> None:
        self.settings = settings
        self.log_file = log_file
        self.ready_timeout_s = ready_timeout_s
        self.restarts = 0
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

    def wait_ready(self) -> None:
        assert self._process is not None, "launch() first"
        try:
            wait_until_ready(self.settings.socket_path, self.ready_timeout_s)
        except DaemonUnavailable as exc:
            code = self._process.poll()
            self.stop()
            raise DaemonUnavailable(
                f"the inference daemon did not become ready (exit status {code}); see {self.log_file}"
            ) from exc

    def ensure_running(self) -> None:
        """Restart a daemon that died; workers' in-flight requests failed fast and their tasks retry."""
        if self._process is not None and self._process.poll() is not None:
            log.warning("inference daemon exited with %s; restarting", self._process.returncode)
            self.restarts += 1
            self.start()

    def __enter__(self) -> DaemonProcess:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
