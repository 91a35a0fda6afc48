"""bench/analysis_cost.py's accounting: a part's CPU is its own, less the parts it calls, per thread."""

from __future__ import annotations

import threading
import time

import pytest

from bench.analysis_cost import PartClock


class FakeClock:
    """thread_time that each thread advances by hand."""

    def __init__(self) -> None:
        self.now: dict[int, float] = {}

    def spend(self, seconds: float) -> None:
        ident = threading.get_ident()
        self.now[ident] = self.now.get(ident, 0.0) + seconds

    def __call__(self) -> float:
        return self.now.get(threading.get_ident(), 0.0)


def test_a_part_counts_what_it_spends_itself_and_a_nested_part_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeClock()
    monkeypatch.setattr(time, "thread_time", fake)
    clock = PartClock()
    with clock.part("outer"):
        fake.spend(1.0)
        with clock.part("inner"):
            fake.spend(2.0)
            with clock.part("innermost"):
                fake.spend(4.0)
        fake.spend(0.5)
    assert dict(clock.cpu) == {"outer": 1.5, "inner": 2.0, "innermost": 4.0}


def test_a_part_on_another_thread_is_not_taken_from_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeClock()
    monkeypatch.setattr(time, "thread_time", fake)
    clock = PartClock()

    def detect() -> None:
        with clock.part("model"):
            fake.spend(3.0)

    with clock.part("decode"):
        fake.spend(1.0)
        worker = threading.Thread(target=detect)
        worker.start()
        worker.join()
    assert dict(clock.cpu) == {"decode": 1.0, "model": 3.0}


def test_a_wrapped_call_is_timed_under_the_name_it_gives_at_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeClock()
    monkeypatch.setattr(time, "thread_time", fake)
    clock = PartClock()

    class Source:
        def decode(self, seconds: float) -> str:
            fake.spend(seconds)
            return "frames"

    stage = ["sample"]
    clock.wrap(Source, "decode", lambda: f"{stage[0]}: decode")
    assert Source().decode(2.0) == "frames"
    stage[0] = "select"
    Source().decode(0.5)
    assert dict(clock.cpu) == {"sample: decode": 2.0, "select: decode": 0.5}


def test_within_names_the_innermost_open_part_of_those_asked_on_this_thread() -> None:
    clock = PartClock()
    seen: list[str] = []
    with clock.part("select"), clock.part("planner"):
        seen.append(clock.within({"sample", "select"}))
        worker = threading.Thread(target=lambda: seen.append(clock.within({"sample", "select"})))
        worker.start()
        worker.join()
    assert seen == ["select", "?"]
