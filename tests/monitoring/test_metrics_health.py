"""The probes the chart runs (`python -m monitoring.health ...`), against real files and a real daemon."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitoring import health

ROOT = Path(__file__).resolve().parents[2]


def probe(*args: str) -> subprocess.CompletedProcess[str]:
    """The probe as the kubelet runs it: a fresh interpreter, judged by its exit status."""
    return subprocess.run(
        [sys.executable, "-m", "monitoring.health", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_heartbeat_probe_fails_on_a_missing_or_stale_file(tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    result = probe("heartbeat", "--file", str(beat), "--max-age", "60")
    assert result.returncode == 1 and "no heartbeat file" in result.stderr
    beat.touch()
    assert probe("heartbeat", "--file", str(beat), "--max-age", "60").returncode == 0
    old = time.time() - 120
    os.utime(beat, (old, old))
    result = probe("heartbeat", "--file", str(beat), "--max-age", "60")
    assert result.returncode == 1 and "stuck" in result.stderr


def test_heartbeat_age_is_measured_from_the_files_mtime(tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    beat.touch()
    mtime = beat.stat().st_mtime
    assert health.check_heartbeat(beat, 10, now=mtime + 9.5)[0]
    assert not health.check_heartbeat(beat, 10, now=mtime + 10.5)[0]


def test_probe_module_imports_no_heavy_packages() -> None:
    # a probe runs every few seconds in a fresh interpreter; torch or numpy there would cost seconds of CPU
    code = (
        "import sys, monitoring.health; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'torch', 'pydantic', 'celery', 'redis'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    # pytest's tmp_path can exceed the 107-byte limit of a Unix socket path
    path = Path(tempfile.mkdtemp(prefix="rg-health-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_daemon_probe_passes_only_while_the_daemon_serves(sock_dir: Path) -> None:
    sock = sock_dir / "daemon.sock"
    assert probe("daemon", "--socket", str(sock)).returncode == 1  # not started: no socket
    log = sock_dir / "daemon.log"
    cmd = [sys.executable, "-m", "gpu_service", "--socket", str(sock), "--device", "cpu"]
    cmd += ["--models", "echo_stats", "--threads", "1", "--log-level", "WARNING"]
    with log.open("ab") as out:
        daemon = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while b"ready" not in log.read_bytes():
            assert daemon.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        result = probe("daemon", "--socket", str(sock))
        assert result.returncode == 0, result.stdout + result.stderr
        assert "daemon ready on cpu" in result.stdout
    finally:
        daemon.terminate()
        daemon.wait(30)
    result = probe("daemon", "--socket", str(sock), "--timeout", "2")
    assert result.returncode == 1 and "daemon at" in result.stderr


def test_daemon_probe_rejects_a_socket_that_is_not_the_daemon(sock_dir: Path) -> None:
    import socket
    import threading

    sock = sock_dir / "impostor.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock))
    server.listen(1)

    def answer() -> None:
        conn, _ = server.accept()
        body = b'{"op": "nope"}'
        conn.sendall(len(body).to_bytes(4, "big") + body)
        conn.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    ok, message = health.check_daemon(sock, timeout_s=5)
    thread.join(5)
    server.close()
    assert not ok and "hello" in message
