"""reelgen's state is owner-only whatever the umask it starts with: folders 0700 and files 0600 (the state folder,
the node cache, the embedded Redis's files), the daemon's socket 0600 from the moment it exists, and /dev/shm
names planted by another user neither adopted, removed nor in the way of the daemon's start."""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.daemon_settings import DaemonSettings
from core.private import private_dir
from gpu_service import shm
from gpu_service.shm import SHM_DIR, Segment, sweep_stale
from jobs.local.redis_server import EmbeddedRedis
from storage.cache import NodeCache
from storage.http_download import HostSlots

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's file takes root")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def test_private_dir_creates_every_missing_part_0700_and_leaves_existing_ones(
    tmp_path: Path, umask: int
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    leaf = private_dir(shared / "a" / "b")
    assert leaf.is_dir()
    assert mode(shared / "a") == mode(leaf) == 0o700
    assert mode(shared) == 0o755  # the operator's folder (it may be /tmp) is not ours to change


def test_node_cache_folders_entries_and_locks_are_owner_only(tmp_path: Path, umask: int) -> None:
    cache = NodeCache(tmp_path / "state" / "cache", 10**6)

    def fetch(dest: Path) -> None:
        with open(dest, "wb") as out:  # as the HTTP and S3 downloads write
            out.write(b"video")

    with cache.open("https://cdn.example/a.mp4", fetch) as entry:
        assert mode(entry) == 0o600
    for folder in (tmp_path / "state", cache.root, cache.root / "data", cache.root / "locks"):
        assert mode(folder) == 0o700, folder
    files = [*(cache.root / "locks").iterdir(), cache.root / "evict.lock"]
    assert files and all(mode(f) == 0o600 for f in files)


def test_host_slot_files_are_owner_only(tmp_path: Path, umask: int) -> None:
    slots = HostSlots(tmp_path / "cache" / "hosts", per_host=2)
    with slots.hold("cdn.example", 0):
        pass
    assert mode(slots.root) == 0o700
    locks = list(slots.root.iterdir())
    assert len(locks) == 2 and all(mode(f) == 0o600 for f in locks)


def test_embedded_redis_state_is_owner_only(tmp_path: Path, umask: int) -> None:
    state = tmp_path / "state" / "run"
    with EmbeddedRedis(state) as server:
        assert server.socket_path is not None
        client = server._server
        client.set("k", "v")  # type: ignore[attr-defined]
        client.save()  # type: ignore[attr-defined]
        assert mode(state / "redis.rdb") == 0o600
        assert mode(server.socket_path) & 0o077 == 0
    # saved again on the way out (SHUTDOWN SAVE), by the server that inherited the umask
    assert mode(state / "redis.rdb") == 0o600
    assert mode(state / "redis.rdb.settings") == 0o600
    assert mode(state) == mode(state.parent) == 0o700


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    # pytest's tmp_path can exceed the 107-byte limit of a Unix socket path
    path = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def planted() -> Iterator[list[Path]]:
    """Files in /dev/shm that belong to another user; removed afterwards."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        path.unlink(missing_ok=True)


def _plant(planted: list[Path], name: str) -> Path:
    path = SHM_DIR / name
    path.write_bytes(b"not yours")
    os.chown(path, NOBODY, NOBODY)
    planted.append(path)
    return path


@as_root
def test_sweeping_skips_a_dead_daemons_name_that_another_user_planted(
    planted: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    path = _plant(planted, f"{shm.PREFIX}-{os.getuid()}-{_dead_pid()}-0badc0de")
    with caplog.at_level(logging.WARNING, logger="gpu_service.shm"):
        assert path.name not in sweep_stale()
    assert path.exists() and path.stat().st_uid == NOBODY
    assert f"belongs to uid {NOBODY}" in caplog.text


@as_root
def test_a_planted_segment_name_is_skipped_for_a_fresh_one(
    planted: list[Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    taken = _plant(planted, f"{shm.PREFIX}-{os.getuid()}-{os.getpid()}-planted0")
    draws = iter(["planted0", "fresh001"])
    monkeypatch.setattr(secrets, "token_hex", lambda _n: next(draws))
    with caplog.at_level(logging.WARNING, logger="gpu_service.shm"):
        segment = Segment.create(shm.PAGE)
    try:
        assert segment.name.endswith("-fresh001")
        assert mode(segment.path) == 0o600
    finally:
        segment.close()
        segment.unlink()
    assert taken.read_bytes() == b"not yours" and taken.stat().st_uid == NOBODY
    assert "taking another name" in caplog.text


@as_root
def test_the_daemon_starts_past_planted_names_and_binds_its_socket_owner_only(
    sock_dir: Path, planted: list[Path], monkeypatch: pytest.MonkeyPatch, umask: int
) -> None:
    from gpu_service.server import Daemon

    _plant(planted, f"{shm.PREFIX}-{os.getuid()}-{_dead_pid()}-0badc0de")
    _plant(planted, f"{shm.PREFIX}-{os.getuid()}-{os.getpid()}-planted0")
    draws = iter(["planted0", "fresh002"])
    monkeypatch.setattr(secrets, "token_hex", lambda _n: next(draws))

    def no_chmod(path: object, mode: int, **_: object) -> None:
        raise AssertionError(f"chmod {path}: the mode must be right from creation on")

    monkeypatch.setattr(os, "chmod", no_chmod)
    socket_path = sock_dir / "new" / "d.sock"
    daemon = Daemon(DaemonSettings(socket_path=socket_path, device="cpu", models=("probe",), slots=2))
    daemon.start()
    try:
        assert mode(socket_path) == 0o600
        assert mode(socket_path.parent) == 0o700
    finally:
        daemon.stop()
    assert all(path.exists() for path in planted)
