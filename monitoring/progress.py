"""A terminal progress line for a running job: done/failed counts, rate and ETA."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def progress_line(
    *,
    done: int,
    failed: int,
    skipped: int,
    total: int | None,
    in_flight: int,
    elapsed_s: float,
    width: int = 24,
) -> str:
    settled = done + failed + skipped
    rate = (done + failed) / elapsed_s * 60 if elapsed_s > 0 else 0.0
    parts = []
    if total:
        filled = min(width, round(width * settled / total))
        parts.append(f"[{'#' * filled}{'.' * (width - filled)}] {settled}/{total}")
    else:
        parts.append(f"{settled} items")
    parts.append(f"done {done}  failed {failed}")
    if skipped:
        parts.append(f"skipped {skipped}")
    parts.append(f"in flight {in_flight}  {rate:.1f} items/min")
    if total and rate > 0 and settled < total:
        parts.append(f"ETA {format_duration((total - settled) / rate * 60)}")
    return "  ".join(parts)


class ProgressBar:
    """Redraws one line on a terminal; on a pipe, prints a line at most every `every_s` seconds."""

    def __init__(self, stream: TextIO = sys.stderr, every_s: float = 5.0) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.every_s = every_s
        self.started = time.monotonic()
        self._last_print = 0.0
        self._last_line = ""

    def update(self, *, done: int, failed: int, skipped: int, total: int | None, in_flight: int) -> None:
        now = time.monotonic()
        line = progress_line(
            done=done,
            failed=failed,
            skipped=skipped,
            total=total,
            in_flight=in_flight,
            elapsed_s=now - self.started,
        )
        if self.tty:
            self.stream.write("\r" + line.ljust(len(self._last_line)))
            self.stream.flush()
        elif now - self._last_print >= self.every_s and line != self._last_line:
            self.stream.write(line + "\n")
            self.stream.flush()
            self._last_print = now
        self._last_line = line

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
        elif self._last_line:
            self.stream.write(self._last_line + "\n")
        self.stream.flush()
