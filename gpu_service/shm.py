"""The shared-memory slot pool: one POSIX segment owned by the daemon, cut into equal slots, and their leases.

Why not `multiprocessing.shared_memory.SharedMemory` on the client side: on Python < 3.13 attaching to a
segment registers it with the attaching process's resource tracker, which unlinks it when that process exits,
so a departing Celery worker would destroy the daemon's pool. Clients therefore map `/dev/shm/<name>` directly
and never touch the tracker. The daemon, which owns the segment, does register it, so that even a SIGKILLed
daemon's segment is unlinked by its tracker; a restarted daemon also sweeps segments left by dead daemons of
this user.

/dev/shm is shared by every user: a name someone else created there, even one in our pattern, is never
adopted or removed: the daemon skips it (with a log line), and takes another name if it is the one it drew.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import itertools
import logging
import math
import mmap
import os
import secrets
from dataclasses import dataclass, field
from enum import StrEnum
from multiprocessing import resource_tracker
from pathlib import Path

import numpy as np
import numpy.typing as npt

from core.errors import ConfigError

SHM_DIR = Path("/dev/shm")
PREFIX = "reelgen-gpu"
ALIGN = 64
PAGE = mmap.PAGESIZE
_TRACKER_TYPE = "shared_memory"
#: fresh names tried before giving up: a random name is taken only if someone planted it
_NAME_TRIES = 8

log = logging.getLogger(__name__)


def align(n: int, to: int = ALIGN) -> int:
    return -(-n // to) * to


def _segment_prefix() -> str:
    return f"{PREFIX}-{os.getuid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Unlink this user's pool segments whose daemon process no longer exists."""
    removed: list[str] = []
    if not SHM_DIR.is_dir():
        return removed
    for path in SHM_DIR.glob(_segment_prefix() + "*"):
        pid_text = path.name[len(_segment_prefix()) :].split("-", 1)[0]
        if not pid_text.isdigit() or _pid_alive(int(pid_text)):
            continue
        try:
            owner = path.lstat().st_uid
            if owner != os.getuid():
                log.warning("skipping %s: it has our name pattern but belongs to uid %d", path, owner)
                continue
            path.unlink()
            removed.append(path.name)
        except FileNotFoundError:
            pass
    return removed


def _create_exclusive() -> tuple[str, int]:
    """A new segment file under a fresh name, and its descriptor."""
    for _ in range(_NAME_TRIES):
        name = f"{_segment_prefix()}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            # O_EXCL and 0o600: never adopt someone else's segment, and nobody but this user may map ours.
            return name, os.open(SHM_DIR / name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            log.warning("%s already exists (not ours to use); taking another name", SHM_DIR / name)
    raise ConfigError(f"{_NAME_TRIES} fresh names in {SHM_DIR} were all taken: someone is planting them")


def _map(fd: int, size: int) -> mmap.mmap:
    # Pre-faulting the mapping once here keeps page faults out of every later frame copy.
    mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
    # Huge pages cut TLB misses in the frame copies where the host allows them for shared memory
    # (/sys/kernel/mm/transparent_hugepage/shmem_enabled = advise); elsewhere this is a no-op.
    with contextlib.suppress(OSError, AttributeError):
        mm.madvise(mmap.MADV_HUGEPAGE)
    return mm


class Segment:
    """A mapped shared-memory segment; `create` in the daemon, `attach` in clients."""

    def __init__(self, name: str, size: int, mm: mmap.mmap, owner: bool) -> None:
        self.name = name
        self.size = size
        self.mm = mm
        self.owner = owner

    @property
    def path(self) -> Path:
        return SHM_DIR / self.name

    @classmethod
    def create(cls, size: int) -> Segment:
        if not SHM_DIR.is_dir():
            raise ConfigError(f"shared-memory staging needs a POSIX {SHM_DIR} (Linux); none exists here")
        name, fd = _create_exclusive()
        try:
            try:
                # tmpfs allocates lazily; reserving now turns "too small /dev/shm" into an error at start
                # instead of a SIGBUS in some worker later.
                os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                os.unlink(SHM_DIR / name)
                if exc.errno in (errno.ENOSPC, errno.ENOMEM):
                    free = os.statvfs(SHM_DIR)
                    raise ConfigError(
                        f"the slot pool needs {size / 2**20:.0f} MiB of {SHM_DIR} but only "
                        f"{free.f_bavail * free.f_frsize / 2**20:.0f} MiB are free: lower slots or "
                        f"slot_bytes, or enlarge {SHM_DIR} (Docker --shm-size; a Memory emptyDir on "
                        "Kubernetes)"
                    ) from exc
                raise
            mm = _map(fd, size)
        finally:
            os.close(fd)
        resource_tracker.register("/" + name, _TRACKER_TYPE)
        return cls(name, size, mm, owner=True)

    @classmethod
    def attach(cls, name: str, size: int) -> Segment:
        if "/" in name or not name.startswith(PREFIX):
            raise ValueError(f"not a pool segment name: {name!r}")
        fd = os.open(SHM_DIR / name, os.O_RDWR)
        try:
            if os.fstat(fd).st_size < size:
                raise ValueError(f"segment {name} is smaller than the announced {size} bytes")
            mm = _map(fd, size)
        finally:
            os.close(fd)
        return cls(name, size, mm, owner=False)

    def array(self, offset: int, shape: tuple[int, ...], dtype: npt.DTypeLike) -> npt.NDArray[np.generic]:
        dt = np.dtype(dtype)
        count = math.prod(shape)
        if offset < 0 or offset + count * dt.itemsize > self.size:
            raise ValueError(f"array of {shape} {dt} at offset {offset} exceeds the segment")
        return np.frombuffer(self.mm, dtype=dt, count=count, offset=offset).reshape(shape)

    def unlink(self) -> None:
        if not self.owner:
            raise RuntimeError("only the daemon that created a segment unlinks it")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        resource_tracker.unregister("/" + self.name, _TRACKER_TYPE)

    def close(self) -> None:
        # An array may still view the mapping; then the kernel unmaps it when the process exits.
        with contextlib.suppress(BufferError):
            self.mm.close()


class SlotState(StrEnum):
    FREE = "free"
    LEASED = "leased"  # the client is writing its inputs
    QUEUED = "queued"  # inputs submitted, waiting in the scheduler
    RUNNING = "running"  # in the batch the device is working on
    DONE = "done"  # outputs written, the client is reading them


class SlotError(Exception):
    """A client named a slot it does not hold, or in the wrong state."""


@dataclass(frozen=True)
class Grant:
    owner: int
    request_id: int
    slot: int


@dataclass
class _Slot:
    state: SlotState = SlotState.FREE
    owner: int | None = None
    orphaned: bool = False


@dataclass(order=True)
class _Waiter:
    order: tuple[float, float, int]
    owner: int = field(compare=False)
    request_id: int = field(compare=False)


class SlotPool:
    """Lease bookkeeping. Not thread-safe: the daemon calls it under its lock.

    A full pool queues lease requests (backpressure) and grants freed slots to them in priority order, so a
    worker waits instead of failing, and the earliest job still gets the next slot.
    """

    def __init__(self, count: int, keep_reserve: int | None = None) -> None:
        self._slots = [_Slot() for _ in range(count)]
        # Slots that must stay free (or busy) rather than kept by idle connections.
        self.keep_reserve = max(1, count // 4) if keep_reserve is None else keep_reserve
        self._free = list(range(count - 1, -1, -1))
        self._waiters: list[_Waiter] = []
        self._seq = itertools.count()
        self.peak_in_use = 0

    @property
    def count(self) -> int:
        return len(self._slots)

    @property
    def in_use(self) -> int:
        return len(self._slots) - len(self._free)

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def state(self, slot: int) -> SlotState:
        return self._slots[slot].state

    def owner(self, slot: int) -> int | None:
        return self._slots[slot].owner

    def lease(self, owner: int, request_id: int, key: tuple[float, float]) -> Grant | None:
        """A slot now, or None: the request waits and a later `release` grants it."""
        if self._free and not self._waiters:
            return self._grant(owner, request_id)
        heapq.heappush(self._waiters, _Waiter((key[0], key[1], next(self._seq)), owner, request_id))
        return None

    def _grant(self, owner: int, request_id: int) -> Grant:
        index = self._free.pop()
        self._slots[index] = _Slot(SlotState.LEASED, owner)
        self.peak_in_use = max(self.peak_in_use, self.in_use)
        return Grant(owner, request_id, index)

    def move(self, slot: int, owner: int, expect: SlotState, to: SlotState) -> None:
        if not 0 <= slot < len(self._slots):
            raise SlotError(f"slot {slot} does not exist (the pool has {len(self._slots)})")
        entry = self._slots[slot]
        if entry.owner != owner or entry.state != expect:
            raise SlotError(f"slot {slot} is not {expect.value} by this connection")
        entry.state = to

    def finish(self, slot: int) -> list[Grant]:
        """The device is done with a RUNNING slot: DONE for its client, or freed if the client is gone."""
        entry = self._slots[slot]
        if entry.orphaned:
            return self.release(slot)
        entry.state = SlotState.DONE
        return []

    def keep(self, slot: int) -> bool:
        """Let a DONE slot's owner keep it leased for its next request, if nobody needs it."""
        if self._slots[slot].state != SlotState.DONE or self._waiters or len(self._free) < self.keep_reserve:
            return False
        self._slots[slot].state = SlotState.LEASED
        return True

    def give_back(self, slot: int, owner: int) -> list[Grant]:
        """The owner's release of a slot it has read (DONE) or was keeping (LEASED)."""
        if not 0 <= slot < len(self._slots):
            raise SlotError(f"slot {slot} does not exist (the pool has {len(self._slots)})")
        entry = self._slots[slot]
        if entry.owner != owner or entry.state not in (SlotState.DONE, SlotState.LEASED):
            raise SlotError(f"slot {slot} is not held idle by this connection")
        return self.release(slot)

    @property
    def kept(self) -> int:
        return sum(1 for s in self._slots if s.state == SlotState.LEASED)

    def release(self, slot: int) -> list[Grant]:
        self._slots[slot] = _Slot()
        self._free.append(slot)
        grants: list[Grant] = []
        while self._free and self._waiters:
            waiter = heapq.heappop(self._waiters)
            grants.append(self._grant(waiter.owner, waiter.request_id))
        return grants

    def reclaim(self, owner: int) -> list[Grant]:
        """Free everything `owner` holds except RUNNING slots, which are freed by `finish`.

        The caller cancels the owner's QUEUED requests in the scheduler first.
        """
        self._waiters = [w for w in self._waiters if w.owner != owner]
        heapq.heapify(self._waiters)
        grants: list[Grant] = []
        for index, entry in enumerate(self._slots):
            if entry.owner != owner:
                continue
            if entry.state == SlotState.RUNNING:
                entry.orphaned = True
            else:
                grants.extend(self.release(index))
        return grants

    def held_by(self, owner: int) -> list[int]:
        return [i for i, s in enumerate(self._slots) if s.owner == owner]
