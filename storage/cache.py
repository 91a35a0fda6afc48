"""A node-local download cache shared by every worker process on one node.

Layout under root:
    data/<sha256(key)>             a complete entry
    data/<sha256(key)>.part        an entry being downloaded (or left by a process that died mid-download)
    locks/<sha256(key)>.lock       the entry's flock file, apart from data so a rename never swaps its inode
    evict.lock                     one eviction pass at a time

Folders are created 0700 and files 0600 (core/private.py): the entries are sellers' media, not for other users
of the node.

An entry's name carries no extension from its URI: a name is something a decoder may go by (a source URI
ending in .m3u8 would have made a cached "video" a playlist to FFmpeg), and the URI is the seller's choice.
Entries named with one by earlier versions are never hit again; eviction removes them like any other.

Pinning, the chosen design: `open(key, fetch)` is a context manager that holds a SHARED flock on the entry's
lock file while the caller uses the path. Filling an entry takes the EXCLUSIVE lock, so concurrent callers for
the same key wait for one download and then share it; eviction only removes an entry whose exclusive lock it
can take without waiting, so it never removes an entry that is pinned or being filled. `get_or_fetch` is the
unpinned shortcut: its path may be evicted once it returns, so use it only when the file is opened at once.

LRU: an entry's mtime is its last use (touched on every hit; entries are never written after their rename, and
atime is unreliable under relatime/noatime). After each fill the oldest unpinned entries are removed until the
total is within max_bytes; pinned entries can hold the total above it until they are released.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core.errors import ConfigError
from core.private import private_dir

_PART = ".part"


def entry_name(key: str) -> str:
    """The file name of key's entry: its hash alone (keys are URIs of any length and alphabet)."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class _Entry:
    name: str
    path: Path
    size: int
    used_at: float


class NodeCache:
    """Downloaded sources keyed by URI, bounded by max_bytes, safe across processes on one node."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ConfigError(f"cache max_bytes must be positive, got {max_bytes}")
        self.root = root
        self.max_bytes = max_bytes
        self._data = root / "data"
        self._locks = root / "locks"
        try:
            private_dir(self._data)
            private_dir(self._locks)
        except OSError as exc:
            raise ConfigError(f"cannot create cache folder {root}: {exc}; set REELGEN_CACHE_DIR") from exc

    def path_for(self, key: str) -> Path:
        return self._data / entry_name(key)

    @contextlib.contextmanager
    def open(self, key: str, fetch: Callable[[Path], None]) -> Iterator[Path]:
        """Yield key's entry, calling fetch(tmp_path) to fill it first if missing; pinned while open."""
        name = entry_name(key)
        target = self._data / name
        lock = _EntryLock(self._locks / f"{name}.lock")
        try:
            while True:
                lock.acquire(fcntl.LOCK_SH)
                if target.exists():
                    break
                # Not atomic on Linux (the shared lock is dropped first): hence the re-check under each lock.
                lock.acquire(fcntl.LOCK_EX)
                if not target.exists():
                    self._fill(target, fetch)
            os.utime(target)
            yield target
        finally:
            lock.release()

    def get_or_fetch(self, key: str, fetch: Callable[[Path], None]) -> Path:
        """The entry's path, unpinned: eviction may remove it after this returns."""
        with self.open(key, fetch) as path:
            return path

    def total_bytes(self) -> int:
        return sum(entry.size for entry in self._entries())

    def _fill(self, target: Path, fetch: Callable[[Path], None]) -> None:
        # The exclusive lock makes this process the only writer of the .part file, so a stale one from a
        # crashed process can simply be replaced.
        part = target.with_name(target.name + _PART)
        part.unlink(missing_ok=True)
        try:
            # fetch opens the file for writing, which keeps the owner-only mode it is created with here
            os.close(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            fetch(part)
            os.replace(part, target)
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        self._evict()

    def _evict(self) -> None:
        with _EntryLock(self.root / "evict.lock") as guard:
            guard.acquire(fcntl.LOCK_EX)
            entries = sorted(self._entries(), key=lambda e: e.used_at)
            total = sum(entry.size for entry in entries)
            for entry in entries:
                if total <= self.max_bytes:
                    break
                if self._remove_if_unpinned(entry):
                    total -= entry.size

    def _remove_if_unpinned(self, entry: _Entry) -> bool:
        base = entry.name.removesuffix(_PART)
        lock_path = self._locks / f"{base}.lock"
        with _EntryLock(lock_path) as lock:
            if not lock.try_acquire(fcntl.LOCK_EX):
                return False
            entry.path.unlink(missing_ok=True)
            # Removing the lock file while holding it is safe: _EntryLock re-checks the inode after locking.
            if not (self._data / base).exists() and not (self._data / (base + _PART)).exists():
                lock_path.unlink(missing_ok=True)
            return True

    def _entries(self) -> Iterator[_Entry]:
        for path in self._data.iterdir():
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            yield _Entry(path.name, path, stat.st_size, stat.st_mtime)


class _EntryLock:
    """An flock on a lock file that may be unlinked by an evictor at any time.

    After each lock the path must still name the locked inode; otherwise the file was removed (and perhaps
    re-created) in between and a lock on the old inode excludes nobody, so it reopens and tries again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> _EntryLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()

    def acquire(self, mode: int) -> None:
        self._lock(mode)

    def try_acquire(self, mode: int) -> bool:
        return self._lock(mode | fcntl.LOCK_NB)

    def _lock(self, operation: int) -> bool:
        while True:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(self._fd, operation)
            except BlockingIOError:
                return False
            if self._still_linked(self._fd):
                return True
            self.release()

    def _still_linked(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
