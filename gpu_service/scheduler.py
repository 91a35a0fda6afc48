"""Which waiting requests the daemon serves next, and how they are merged into one batch.

Pure logic: no torch, no sockets, no clock reads (callers pass `now`), so each rule is unit-tested directly.

Order: strictly by (job submission time, the item's first request time, arrival). An item that started early
keeps its place for all its later requests, so items flow through the pipeline instead of all waiting on each
other.

Batching: a batch is the longest prefix of that order whose requests share the head's group (same model and
compatible inputs) and whose frames fit `max_batch`; requests are never split across batches. Taking only a
prefix keeps the order strict: no request is served before an earlier-keyed one that was already waiting.
A batch is served once it is closed (full, or the next request cannot join it) or its longest-waiting request
has waited `max_delay_s`, or when the caller says no other request can come (every client that sends inference
already has one waiting or running: waiting longer would only idle the device). Its frames are padded up to the smallest bucket that holds them, so a compiled model
or a CUDA graph per bucket can serve it; a batch larger than every bucket runs unpadded (the fallback path).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from gpu_service.priority import PriorityKey

T = TypeVar("T")


@dataclass(eq=False)
class Pending(Generic[T]):
    """One waiting request: `frames` frames of `group`, owned by a connection, carrying daemon data."""

    key: PriorityKey
    frames: int
    group: Hashable
    owner: int
    arrived_at: float
    payload: T
    seq: int = -1

    @property
    def order(self) -> tuple[float, float, int]:
        return (self.key.job_submitted_at, self.key.item_first_request_at, self.seq)


@dataclass(frozen=True)
class Batch(Generic[T]):
    requests: tuple[Pending[T], ...]
    frames: int
    bucket: int
    oldest_arrival: float

    def spans(self) -> list[tuple[int, int]]:
        """Each request's [start, stop) rows in the batch."""
        out: list[tuple[int, int]] = []
        start = 0
        for req in self.requests:
            out.append((start, start + req.frames))
            start += req.frames
        return out


def bucket_for(frames: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds `frames`; `frames` itself when none does."""
    index = bisect.bisect_left(buckets, frames)
    return buckets[index] if index < len(buckets) else frames


class Scheduler(Generic[T]):
    """Not thread-safe: the daemon calls it under its own lock."""

    def __init__(self, max_batch: int, max_delay_s: float, buckets: Sequence[int]) -> None:
        if max_batch < 1 or max_delay_s < 0 or not buckets:
            raise ValueError("max_batch >= 1, max_delay_s >= 0 and at least one bucket are required")
        self.max_batch = max_batch
        self.max_delay_s = max_delay_s
        self.buckets = tuple(sorted(buckets))
        self._queue: list[Pending[T]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def waiting_frames(self) -> int:
        return sum(r.frames for r in self._queue)

    def push(self, req: Pending[T]) -> None:
        if not 1 <= req.frames <= self.max_batch:
            raise ValueError(f"a request carries 1..{self.max_batch} frames, not {req.frames}")
        req.seq = next(self._seq)
        bisect.insort(self._queue, req, key=lambda r: r.order)

    def _candidate(self) -> tuple[list[Pending[T]], bool]:
        """The head's batch as it stands, and whether waiting could still grow it."""
        chosen: list[Pending[T]] = []
        total = 0
        for req in self._queue:
            if chosen and (req.group != chosen[0].group or total + req.frames > self.max_batch):
                return chosen, True
            chosen.append(req)
            total += req.frames
        return chosen, total >= self.max_batch

    def ready_at(self) -> float | None:
        """When the head's batch is due (-inf: now); None while nothing waits."""
        chosen, closed = self._candidate()
        if not chosen:
            return None
        if closed:
            return -math.inf
        return min(r.arrived_at for r in chosen) + self.max_delay_s

    def take(self, now: float, *, force: bool = False) -> Batch[T] | None:
        """Remove and return the head's batch if it is due (or `force`), else None."""
        due = self.ready_at()
        if due is None or (due > now and not force):
            return None
        chosen, _ = self._candidate()
        del self._queue[: len(chosen)]
        frames = sum(r.frames for r in chosen)
        return Batch(
            requests=tuple(chosen),
            frames=frames,
            bucket=bucket_for(frames, self.buckets),
            oldest_arrival=min(r.arrived_at for r in chosen),
        )

    def cancel(self, owner: int) -> list[Pending[T]]:
        """Remove every waiting request of `owner` (a connection that went away)."""
        gone = [r for r in self._queue if r.owner == owner]
        if gone:
            self._queue = [r for r in self._queue if r.owner != owner]
        return gone

    def drain(self) -> list[Pending[T]]:
        gone, self._queue = self._queue, []
        return gone
