"""The progress arithmetic (recent rate, an ETA that holds) and the plain-line display, on a simulated clock."""

from __future__ import annotations

import io
import itertools

import pytest

from monitoring.progress import Eta, Progress, ProgressDisplay, RateWindow, Snapshot


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_is_that_of_the_recent_window() -> None:
    window = RateWindow(window_s=60, min_items=5)
    assert window.rate(0.0) is None
    for t in range(0, 120):  # one item a second for two minutes...
        window.add(float(t), t)
    for t in range(120, 240, 4):  # ...then one every four seconds
        window.add(float(t), 120 + (t - 120) // 4)
    # 14 items in the last minute (the count stood at 135 when it opened at 180 s, 149 now)
    assert window.rate(240.0) == pytest.approx(14 / 60)
    # nothing more for a minute: the window holds fewer than min_items, so it reaches back to cover them (the
    # count reached 144 at 216 s)
    assert window.rate(300.0) == pytest.approx(5 / (300 - 216))


def test_a_slow_pipeline_still_has_a_rate_between_its_items() -> None:
    window = RateWindow(window_s=60, min_items=2)
    window.add(0.0, 0)
    window.add(90.0, 1)
    window.add(180.0, 2)
    assert window.rate(200.0) == pytest.approx(2 / 200)


def test_at_a_steady_rate_the_eta_appears_then_only_counts_down() -> None:
    clock = Clock()
    progress = Progress(clock)
    etas = []
    for second in range(0, 200):
        clock.now = 1000.0 + second
        reading = progress.update(Snapshot(done=second // 2, total=200, stages={"render": 2}))
        etas.append(reading.eta_s)
    assert etas[0] is None  # nothing settled: no rate, no ETA (the old line's ETA counted up here)
    shown = [e for e in etas if e is not None]
    assert len(shown) > 150
    assert all(later <= earlier for earlier, later in itertools.pairwise(shown))
    # 100 items to go at 0.5 items/s
    assert shown[-1] == pytest.approx(200, rel=0.1)


def test_when_the_rate_falls_the_eta_is_withdrawn_not_counted_up() -> None:
    clock = Clock()
    progress = Progress(clock)
    etas: list[float | None] = []
    done = 0
    for second in range(0, 400):
        clock.now = 1000.0 + second
        if second < 120 and second % 2 == 0:
            done += 1  # then every item in flight stalls
        etas.append(progress.update(Snapshot(done=done, total=200, stages={"render": 4})).eta_s)
    before, during = [e for e in etas[:120] if e is not None], etas[120:]
    assert before and all(later <= earlier for earlier, later in itertools.pairwise(before))
    shown = [e for e in during if e is not None]
    # it counts down a while (within the slack), then is withdrawn for good: nothing settles any more
    assert shown == sorted(shown, reverse=True) and shown[0] <= before[-1]
    assert during.index(None) < 60 and all(e is None for e in during[during.index(None) :])


def test_a_rate_that_changes_is_shown_again_once_it_holds() -> None:
    eta = Eta(confirm_s=10)
    assert eta.update(0.0, 100, 1.0) is None  # a first estimate is a candidate
    assert eta.update(5.0, 95, 1.0) is None
    assert eta.update(11.0, 89, 1.0) == pytest.approx(89)
    assert eta.update(12.0, 88, 0.25) is None  # four times slower: 352 s, not 88
    assert eta.update(20.0, 86, 0.25) is None
    assert eta.update(23.0, 85, 0.25) == pytest.approx(340, rel=0.05)
    assert eta.update(24.0, 0, 0.25) == 0.0


def test_off_a_terminal_it_prints_a_plain_line_every_few_seconds() -> None:
    clock = Clock()
    stream = io.StringIO()
    with ProgressDisplay(stream, every_s=5, clock=clock) as display:
        for second in range(12):
            clock.now = 1000.0 + second
            stages = {"queued": 1, "sample_segment": 2, "render": 1}
            display.update(Snapshot(done=second // 3, failed=0, skipped=1, total=10, stages=stages))
        clock.now += 1
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4, lines  # at 0 s, 5 s and 10 s, and the final state
    assert lines[0].startswith("1/10 settled: 0 done, 0 failed, 1 skipped")
    assert "in flight 4 (queued 1, sample 2, render 1)" in lines[0]
    assert "elapsed 10s" in lines[2] and "elapsed 12s" in lines[3]
    assert "ETA - (waiting for a steady rate)" in lines[0]
    assert "\x1b" not in stream.getvalue()  # no terminal codes in a log
