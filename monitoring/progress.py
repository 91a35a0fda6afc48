"""The progress of a running job as `reelgen run` shows it: settled counts, items per stage, elapsed time, the rate
over a recent window and an ETA that is shown only while that rate holds.

On a terminal it is a live display drawn by rich, which keeps it at the bottom of the screen: log records and
anything else written to stdout/stderr meanwhile print above it. Elsewhere (a pipe, a CI log) it is a plain line
every few seconds. The arithmetic (RateWindow, Eta) is kept apart from the drawing so it can be checked alone.
"""

from __future__ import annotations

import bisect
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

#: the stages of an item, in pipeline order, as the display names them
STAGE_LABELS = {
    "queued": "queued",
    "prepare": "prepare",
    "sample_segment": "sample",
    "select": "select",
    "render": "render",
}


BAR_WIDTH = 30


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class RateWindow:
    """Items processed per second over the last `window_s` seconds, stretched back to cover at least the last
    `min_items` items when they took longer (a slow pipeline still gets a rate, not zeros between items)."""

    def __init__(self, window_s: float = 60.0, min_items: int = 5, keep: int = 10_000) -> None:
        self.window_s = window_s
        self.min_items = min_items
        self.keep = keep
        self._times: list[float] = []
        self._counts: list[int] = []

    def add(self, now: float, processed: int) -> None:
        if not self._counts or processed != self._counts[-1]:
            self._times.append(now)
            self._counts.append(processed)
            if len(self._times) > self.keep:
                del self._times[: len(self._times) - self.keep]
                del self._counts[: len(self._counts) - self.keep]

    def rate(self, now: float) -> float | None:
        """Per second; None while nothing was processed in the window."""
        if not self._times:
            return None
        latest = self._counts[-1]
        # the count as it stood when the window opened: the last change at or before that moment
        opened = now - self.window_s
        at = bisect.bisect_right(self._times, opened) - 1
        since = opened
        if at < 0:  # every change lies inside the window: measured from the first observation
            at, since = 0, self._times[0]
        # stretched back to the change that left min_items to come, when that lies further back
        back = bisect.bisect_right(self._counts, latest - self.min_items) - 1
        if 0 <= back < at:
            at, since = back, self._times[back]
        span, done = now - since, latest - self._counts[at]
        return done / span if span > 0 and done > 0 else None


class Eta:
    """Seconds to go, shown only once the rate has held: estimates agreed for `confirm_s` seconds while items
    settled. While shown it only counts down (the projected finish never moves later). When a new estimate lands
    later than the shown finish by more than the slack (the rate fell), the ETA is withdrawn until the new rate
    has held in turn. Estimates agree when their finishes differ by at most `tolerance` of the time left (and
    at least floor_s); a rate that only decays, with nothing settling, never holds."""

    def __init__(self, confirm_s: float = 10.0, tolerance: float = 0.2, floor_s: float = 5.0) -> None:
        self.confirm_s = confirm_s
        self.tolerance = tolerance
        self.floor_s = floor_s
        self._candidate: float | None = None
        self._since = 0.0
        self._remaining = 0
        self._finish: float | None = None

    def update(self, now: float, remaining: int, rate: float | None) -> float | None:
        if remaining <= 0:
            self._reset(None, now, remaining)
            return 0.0
        if rate is None or rate <= 0:
            self._reset(None, now, remaining)
            return None
        estimate = now + remaining / rate
        slack = max(self.floor_s, self.tolerance * (estimate - now))
        if self._finish is not None:
            if estimate > self._finish + slack:
                self._reset(estimate, now, remaining)
                return None
            self._finish = min(self._finish, estimate)
            return max(0.0, self._finish - now)
        if self._candidate is None or abs(estimate - self._candidate) > slack:
            self._reset(estimate, now, remaining)
            return None
        if now - self._since < self.confirm_s or remaining >= self._remaining:
            return None
        self._finish = min(self._candidate, estimate)
        return max(0.0, self._finish - now)

    def _reset(self, candidate: float | None, now: float, remaining: int) -> None:
        self._candidate, self._since, self._remaining, self._finish = candidate, now, remaining, None


@dataclass(frozen=True)
class Snapshot:
    """A job's counts at one moment (from the ledger)."""

    done: int = 0
    failed: int = 0
    skipped: int = 0
    total: int | None = None
    #: items in flight by stage (ledger.in_flight_by_stage)
    stages: Mapping[str, int] = field(default_factory=dict)
    state: str = "running"

    @property
    def settled(self) -> int:
        return self.done + self.failed + self.skipped

    @property
    def in_flight(self) -> int:
        return sum(self.stages.values())


@dataclass(frozen=True)
class Reading:
    """What the display shows: a snapshot with its timing."""

    snapshot: Snapshot
    elapsed_s: float
    rate_per_s: float | None
    eta_s: float | None

    def counts(self) -> str:
        s = self.snapshot
        total = f"/{s.total}" if s.total is not None else ""
        return f"{s.settled}{total} settled: {s.done} done, {s.failed} failed, {s.skipped} skipped"

    def stages(self) -> str:
        s = self.snapshot
        ordered = [k for k in STAGE_LABELS if k in s.stages] + sorted(
            k for k in s.stages if k not in STAGE_LABELS
        )
        parts = [f"{STAGE_LABELS.get(k, k)} {s.stages[k]}" for k in ordered if s.stages[k]]
        return f"in flight {s.in_flight}" + (f" ({', '.join(parts)})" if parts else "")

    def timing(self) -> str:
        rate = "-" if self.rate_per_s is None else f"{self.rate_per_s * 60:.1f}"
        if self.eta_s is not None:
            eta = format_duration(self.eta_s)
        elif self.snapshot.total is None:
            eta = "- (catalog size unknown)"
        else:
            eta = "- (waiting for a steady rate)"
        state = "" if self.snapshot.state == "running" else f"; job {self.snapshot.state}"
        return f"elapsed {format_duration(self.elapsed_s)}; {rate} items/min (recent); ETA {eta}{state}"

    def line(self) -> str:
        return f"{self.counts()}; {self.stages()}; {self.timing()}"


class Progress:
    """Turns snapshots into readings: elapsed time, recent rate and a holding ETA."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window_s: float = 60.0) -> None:
        self.clock = clock
        self.started = clock()
        self.rate = RateWindow(window_s)
        self.eta = Eta()
        self.latest = Reading(Snapshot(), 0.0, None, None)
        self.updates = 0

    def update(self, snapshot: Snapshot) -> Reading:
        self.updates += 1
        now = self.clock()
        self.rate.add(now, snapshot.done + snapshot.failed)
        rate = self.rate.rate(now)
        remaining = None if snapshot.total is None else max(0, snapshot.total - snapshot.settled)
        eta = None if remaining is None else self.eta.update(now, remaining, rate)
        self.latest = Reading(snapshot, now - self.started, rate, eta)
        return self.latest

    def now(self) -> Reading:
        """The latest reading with the elapsed time brought up to now (the display redraws between snapshots)."""
        latest = self.latest
        return Reading(latest.snapshot, self.clock() - self.started, latest.rate_per_s, latest.eta_s)


#: log handlers moved onto rich's redirected streams, with the streams they had
Moved = list[tuple[logging.StreamHandler[TextIO], TextIO]]


class ProgressDisplay:
    """`with ProgressDisplay() as display: display.update(snapshot)`: live on a terminal, plain lines elsewhere."""

    def __init__(
        self,
        stream: TextIO = sys.stderr,
        *,
        every_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.every_s = every_s
        self.progress = Progress(clock)
        self.console = Console(file=stream, highlight=False)
        self._live: Live | None = None
        self._last_line_at: float | None = None
        self._last_line = ""
        self._closed = False
        self._moved: Moved = []

    def __enter__(self) -> ProgressDisplay:
        if self.console.is_terminal:
            self._live = Live(
                get_renderable=self._render,
                console=self.console,
                refresh_per_second=4,
                redirect_stdout=True,
                redirect_stderr=True,
            )
            self._live.start()
            self._moved = _through_redirects()
        return self

    def update(self, snapshot: Snapshot) -> None:
        reading = self.progress.update(snapshot)
        if self._live is not None:
            return  # the live display redraws itself from the latest reading
        now = self.progress.clock()
        line = reading.line()
        if self._last_line_at is None or now - self._last_line_at >= self.every_s:
            self._print(line)
            self._last_line_at = now
        self._last_line = line

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the display, leaving its last state on screen (or in the log); closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._live is not None:
            self._live.stop()
            _restore(self._moved)
            self._live = None
        elif self._last_line:
            self._print(self.progress.now().line())

    def _print(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def _render(self) -> Group:
        reading = self.progress.now()
        if self.progress.updates == 0:
            return Group(Text(f"starting; elapsed {format_duration(reading.elapsed_s)}"))
        snapshot = reading.snapshot
        bar = ProgressBar(
            total=float(snapshot.total) if snapshot.total else None,
            completed=snapshot.settled,
            width=BAR_WIDTH,
        )
        top = Table.grid(padding=(0, 1))
        top.add_row(bar, Text(reading.counts()))
        return Group(top, Text(reading.stages()), Text(reading.timing()))


def _through_redirects() -> Moved:
    """While the live display runs, the root logger's handlers that write to the terminal write through rich's
    redirected stdout/stderr instead (they hold the streams they were made with), so each record prints above the
    display; returns what was moved, for _restore."""
    redirected = {id(sys.__stderr__): sys.stderr, id(sys.__stdout__): sys.stdout}
    moved: Moved = []
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and id(handler.stream) in redirected:
            moved.append((handler, handler.stream))
            handler.setStream(redirected[id(handler.stream)])
    return moved


def _restore(moved: Moved) -> None:
    for handler, stream in moved:
        handler.setStream(stream)
