"""NodeCache: one download per key across processes, LRU bound, pinning, and no partial entries."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest

from core.errors import SourceUnreachable
from storage.cache import NodeCache, entry_name


def _writer(data: bytes, calls: list[Path] | None = None) -> Any:
    def fetch(tmp: Path) -> None:
        if calls is not None:
            calls.append(tmp)
        tmp.write_bytes(data)

    return fetch


def _data_files(cache: NodeCache) -> list[str]:
    return sorted(p.name for p in (cache.root / "data").iterdir())


def test_second_open_is_a_hit(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "c", max_bytes=10_000)
    calls: list[Path] = []
    with cache.open("s3://b/v.mp4", _writer(b"video", calls)) as first:
        assert first.read_bytes() == b"video"
    with cache.open("s3://b/v.mp4", _writer(b"other", calls)) as second:
        assert second == first
        assert second.read_bytes() == b"video"
    assert len(calls) == 1
    assert first.name == entry_name("s3://b/v.mp4")


def test_entry_name_is_the_hash_of_the_key_alone() -> None:
    for key in ("https://cdn.example/a/b/clip.MP4?sig=1", "https://cdn.example/live.m3u8", "s3://b/x.mp4"):
        assert entry_name(key) == hashlib.sha256(key.encode()).hexdigest()
    assert entry_name("s3://b/x") != entry_name("s3://b/y")


def _hold_until_all_arrive(delay: float) -> None:
    # Stretch the download so the other processes reach the cache while it is still in flight.
    time.sleep(delay)


def _fetch_in_process(root: str, key: str, counter: str, barrier: Any) -> str:
    cache = NodeCache(Path(root), max_bytes=10**6)

    def fetch(tmp: Path) -> None:
        with open(counter, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        _hold_until_all_arrive(0.5)
        tmp.write_bytes(b"payload-" + key.encode())

    barrier.wait()
    with cache.open(key, fetch) as path:
        return hashlib.sha256(path.read_bytes()).hexdigest()


def test_concurrent_processes_download_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    counter = tmp_path / "calls.txt"
    counter.touch()
    barrier = ctx.Manager().Barrier(4)
    key = "https://cdn.example/v.mp4"
    with ctx.Pool(4) as pool:
        results = pool.starmap(_fetch_in_process, [(str(tmp_path / "c"), key, str(counter), barrier)] * 4)
    assert len(counter.read_text().splitlines()) == 1
    assert set(results) == {hashlib.sha256(b"payload-" + key.encode()).hexdigest()}


def _age(cache: NodeCache, key: str, seconds_ago: float) -> None:
    when = time.time() - seconds_ago
    os.utime(cache.path_for(key), (when, when))


def test_least_recently_used_entries_are_evicted(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "c", max_bytes=300)
    for key in ("a", "b", "c"):
        cache.get_or_fetch(key, _writer(b"x" * 100))
    assert cache.total_bytes() == 300
    # explicit ages, so the order does not depend on the file system's timestamp resolution
    _age(cache, "a", 300)
    _age(cache, "b", 200)
    _age(cache, "c", 100)
    cache.get_or_fetch("a", _writer(b"unused"))  # a hit makes 'a' the most recently used

    cache.get_or_fetch("d", _writer(b"x" * 100))

    assert not cache.path_for("b").exists()
    assert all(cache.path_for(k).exists() for k in ("a", "c", "d"))
    assert cache.total_bytes() <= 300


def test_eviction_removes_as_many_entries_as_needed(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "c", max_bytes=250)
    for i, key in enumerate(("a", "b")):
        cache.get_or_fetch(key, _writer(b"x" * 100))
        _age(cache, key, 100 - i)
    cache.get_or_fetch("big", _writer(b"x" * 240))
    assert _data_files(cache) == [entry_name("big")]
    assert cache.total_bytes() == 240


def test_pinned_entry_survives_eviction(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "c", max_bytes=150)
    with cache.open("a", _writer(b"a" * 100)) as pinned:
        _age(cache, "a", 1000)
        cache.get_or_fetch("b", _writer(b"b" * 100))
        assert pinned.read_bytes() == b"a" * 100  # over budget, but 'a' is in use
        assert cache.total_bytes() == 200
    _age(cache, "b", 500)
    cache.get_or_fetch("c", _writer(b"c" * 100))
    assert _data_files(cache) == [entry_name("c")]


def test_failed_fetch_leaves_nothing(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "c", max_bytes=1000)

    def broken(tmp: Path) -> None:
        tmp.write_bytes(b"half a vid")
        raise SourceUnreachable("connection reset")

    with pytest.raises(SourceUnreachable):
        cache.get_or_fetch("k", broken)
    assert _data_files(cache) == []

    calls: list[Path] = []
    assert cache.get_or_fetch("k", _writer(b"whole", calls)).read_bytes() == b"whole"
    assert len(calls) == 1  # the failure was not remembered as an entry


def test_stale_partial_file_from_a_dead_process_is_replaced(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "c", max_bytes=1000)
    stale = cache.path_for("k").with_name(entry_name("k") + ".part")
    stale.write_bytes(b"left by a killed worker")
    assert cache.get_or_fetch("k", _writer(b"fresh")).read_bytes() == b"fresh"
    assert _data_files(cache) == [entry_name("k")]


def test_stale_partial_files_count_and_are_evicted(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "c", max_bytes=150)
    stale = cache.path_for("old").with_name(entry_name("old") + ".part")
    stale.write_bytes(b"x" * 100)
    os.utime(stale, (time.time() - 1000, time.time() - 1000))
    cache.get_or_fetch("new", _writer(b"y" * 100))
    assert _data_files(cache) == [entry_name("new")]
