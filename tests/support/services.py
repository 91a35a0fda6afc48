"""reelgen's service processes started for a test, and waits on them."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as errors:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)


def wait(
    until: Callable[[], bool], timeout_s: float = 120, what: str = "", seen: Callable[[], str] | None = None
) -> None:
    """Poll until `until()`; a timeout says what was awaited and, given `seen`, what the system looked like."""
    deadline = time.monotonic() + timeout_s
    while not until():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f"\n{seen()}" if seen else ""))
        time.sleep(0.2)
