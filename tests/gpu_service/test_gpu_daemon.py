"""The inference daemon as a real process, driven over its real Unix socket and shared memory."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.daemon_settings import DaemonSettings
from core.errors import DaemonUnavailable, InferenceRejected
from gpu_service import protocol
from gpu_service.client import InferenceClient, wait_until_ready
from gpu_service.priority import PriorityKey
from gpu_service.shm import SHM_DIR
from gpu_service.supervisor import DaemonProcess

ROOT = Path(__file__).resolve().parents[2]
MODELS = "echo_stats,probe,slow_probe"
KEY = PriorityKey(0.0, 0.0)


@dataclass
class DaemonProc:
    proc: subprocess.Popen[bytes]
    socket: Path
    args: list[str]
    log: Path
    status: dict[str, Any] = field(default_factory=dict)

    @property
    def shm(self) -> Path:
        return SHM_DIR / str(self.status["shm"])


def _start(sock: Path, log: Path, *args: str) -> DaemonProc:
    cmd = [
        sys.executable,
        "-m",
        "gpu_service",
        "--socket",
        str(sock),
        "--device",
        "cpu",
        "--models",
        MODELS,
        "--model-modules",
        "tests.gpu_service.test_gpu_models",
        "--threads",
        "1",
        "--log-level",
        "WARNING",
        *args,
    ]
    out = log.open("ab")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    d = DaemonProc(proc, sock, list(args), log)
    deadline = time.monotonic() + 60
    while b"ready" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"daemon did not become ready:\n{log.read_text()}")
        time.sleep(0.05)
    d.status = wait_until_ready(sock, timeout_s=10)
    return d


def _stop(d: DaemonProc) -> None:
    if d.proc.poll() is None:
        d.proc.terminate()
        try:
            d.proc.wait(20)
        except subprocess.TimeoutExpired:
            d.proc.kill()
            d.proc.wait(5)


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    # pytest's tmp_path can exceed the 107-byte limit of a Unix socket path.
    path = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


DaemonFactory = Callable[..., DaemonProc]


@pytest.fixture
def start_daemon(sock_dir: Path) -> Iterator[DaemonFactory]:
    started: list[DaemonProc] = []

    def start(*args: str, name: str = "d.sock") -> DaemonProc:
        d = _start(sock_dir / name, sock_dir / "daemon.log", *args)
        started.append(d)
        return d

    yield start
    for d in started:
        _stop(d)
    for d in started:
        assert not d.shm.exists() or _wait_gone(d.shm), f"{d.shm} leaked"


@pytest.fixture(scope="module")
def shared() -> Iterator[DaemonProc]:
    """One daemon for the tests that leave it running."""
    path = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp"))
    d = _start(
        path / "d.sock",
        path / "daemon.log",
        "--slots",
        "6",
        "--slot-mb",
        "8",
        "--max-batch",
        "8",
        "--buckets",
        "1,2,4,8",
        "--max-delay-ms",
        "2",
        "--metrics-port",
        "0",
    )
    yield d
    _stop(d)
    assert d.proc.returncode == 0
    assert not d.shm.exists()
    shutil.rmtree(path, ignore_errors=True)


def _wait_gone(path: Path, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _wait_for(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def frames(n: int, h: int = 16, w: int = 24, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def connect_raw(sock: Path) -> tuple[socket.socket, dict[str, Any]]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(sock))
    hello = protocol.recv(s)
    assert hello is not None and hello["op"] == "hello"
    return s, hello


# --- serving --------------------------------------------------------------------------------------------------


def test_serves_correct_results_with_contexts_and_owner_only_permissions(shared: DaemonProc) -> None:
    assert shared.socket.stat().st_mode & 0o777 == 0o600
    assert shared.shm.stat().st_mode & 0o777 == 0o600
    with InferenceClient(shared.socket) as client:
        status = client.ping()
        assert status["status"] == "ready" and set(MODELS.split(",")) <= set(status["models"])
        f = frames(13)
        image = frames(1, 9, 7, seed=3)[0]
        out = client.infer("echo_stats", f, KEY, context={"image": image})
        mean = f.reshape(13, -1, 3).mean(1) / 255
        np.testing.assert_allclose(out["mean"], mean, atol=1e-6)
        np.testing.assert_allclose(
            out["image_mean_diff"], mean - image.reshape(-1, 3).mean(0) / 255, atol=1e-6
        )
        assert out["mean"].dtype == np.float32


def test_a_120_frame_720p_batch_is_split_over_slots_and_joined_in_order(shared: DaemonProc) -> None:
    f = np.empty((120, 720, 1280, 3), dtype=np.uint8)
    f[:, 0, 0, :] = np.arange(120 * 3, dtype=np.uint32).reshape(120, 3) % 251
    with InferenceClient(shared.socket) as client:
        before = client.ping()["stats"]["frames"]
        out = client.infer("probe", f, KEY)
        after = client.ping()
    np.testing.assert_array_equal(out["first_pixel"], f[:, 0, 0, :])
    assert after["stats"]["frames"] - before == 120
    assert after["slots_in_use"] <= 1  # at most the slot kept for this connection's next request


def test_requests_from_many_clients_merge_into_batches_within_max_batch(shared: DaemonProc) -> None:
    before = InferenceClient(shared.socket).ping()["stats"]
    results: dict[int, np.ndarray] = {}

    def worker(i: int) -> None:
        with InferenceClient(shared.socket) as client:
            for j in range(2):
                f = frames(3, seed=10 * i + j)
                results[10 * i + j] = client.infer("slow_probe", f, PriorityKey(1.0, float(i)))["first_pixel"]
                np.testing.assert_array_equal(results[10 * i + j], f[:, 0, 0, :])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    after = InferenceClient(shared.socket).ping()["stats"]
    assert len(results) == 12
    assert after["max_batch_frames"] <= 8
    batches = after["batches"] - before["batches"]
    assert (after["frames"] - before["frames"]) / batches > 3, "requests of 3 frames were never merged"


def test_waiting_requests_are_served_by_job_then_item_first_request(shared: DaemonProc) -> None:
    done: list[str] = []
    lock = threading.Lock()

    def call(name: str, key: PriorityKey, n: int = 8) -> None:
        with InferenceClient(shared.socket) as client:
            client.infer("slow_probe", frames(n), key)  # 8 frames = max_batch: one request per batch
        with lock:
            done.append(name)

    # Two batches' worth (two requests, both queued at once) keep the model busy while the rest queue up.
    blocker = threading.Thread(target=call, args=("blocker", PriorityKey(0.0, 0.0), 16))
    blocker.start()
    time.sleep(0.1)
    arrivals = [
        ("job2-item5", PriorityKey(2.0, 5.0)),
        ("job1-item9", PriorityKey(1.0, 9.0)),
        ("job2-item1", PriorityKey(2.0, 1.0)),
        # a later request of an item that started before item9: it overtakes item9
        ("job1-item3-later-request", PriorityKey(1.0, 3.0)),
    ]
    threads = []
    for name, key in arrivals:
        t = threading.Thread(target=call, args=(name, key))
        t.start()
        threads.append(t)
        time.sleep(0.02)
    for t in [blocker, *threads]:
        t.join(30)
    assert done == ["blocker", "job1-item3-later-request", "job1-item9", "job2-item1", "job2-item5"]


def test_metrics_are_served_in_prometheus_text_format(shared: DaemonProc) -> None:
    with InferenceClient(shared.socket) as client:
        client.infer("probe", frames(2), KEY)
        port = client.ping()["metrics_port"]
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    for name in [
        "reelgen_gpu_queue_depth",
        "reelgen_gpu_batch_frames_bucket",
        "reelgen_gpu_queue_wait_seconds_count",
        "reelgen_gpu_compute_seconds_sum",
        'reelgen_gpu_requests_total{device="cpu",outcome="ok"}',
        "reelgen_gpu_slots_in_use",
        "reelgen_gpu_slots{",
    ]:
        assert name in text, name


# --- the client in workers --------------------------------------------------------------------------------------


def test_client_never_imports_torch(shared: DaemonProc) -> None:
    result = python(f"""
        import sys, json, numpy as np
        import gpu_service
        from gpu_service.client import InferenceClient
        from gpu_service.priority import PriorityKey
        client = InferenceClient({str(shared.socket)!r})
        out = client.infer("probe", np.zeros((2, 4, 4, 3), np.uint8), PriorityKey(0, 0))
        print(json.dumps({{"torch": "torch" in sys.modules, "shape": list(out["first_pixel"].shape)}}))
    """)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"torch": False, "shape": [2, 3]}


def test_client_is_fork_safe(shared: DaemonProc) -> None:
    result = python(f"""
        import os, numpy as np
        from gpu_service.client import InferenceClient
        from gpu_service.priority import PriorityKey
        client = InferenceClient({str(shared.socket)!r})
        f = np.arange(2 * 4 * 4 * 3, dtype=np.uint8).reshape(2, 4, 4, 3)
        ok = lambda: (client.infer("probe", f, PriorityKey(0, 0))["first_pixel"] == f[:, 0, 0]).all()
        assert ok()
        parent_pid = client.ping()["pid"]
        pid = os.fork()
        if pid == 0:
            os._exit(0 if ok() and ok() else 3)
        assert ok() and ok()
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"


def test_departing_clients_never_unlink_the_pool(shared: DaemonProc) -> None:
    code = f"""
        import numpy as np
        from multiprocessing import resource_tracker
        from gpu_service.client import InferenceClient
        from gpu_service.priority import PriorityKey
        resource_tracker.ensure_running()  # a tracker that would unlink anything registered with it
        client = InferenceClient({str(shared.socket)!r})
        client.infer("probe", np.zeros((1, 4, 4, 3), np.uint8), PriorityKey(0, 0))
    """
    for _ in range(2):
        result = python(code)
        assert result.returncode == 0, result.stderr
    assert shared.shm.exists()
    with InferenceClient(shared.socket) as client:
        client.infer("probe", frames(1), KEY)


def test_a_kept_slot_serves_the_next_request_without_a_lease_and_its_release_frees_it(
    shared: DaemonProc,
) -> None:
    s, _hello = connect_raw(shared.socket)
    spec = {"offset": 0, "shape": [2, 4, 4, 3], "dtype": "uint8"}
    with s:
        protocol.send(s, {"op": "lease", "id": 1, "key": [0, 0]})
        slot = protocol.recv(s)["slot"]  # type: ignore[index]
        for rid in (2, 3):  # the second request reuses the kept slot: no lease, one round trip
            protocol.send(
                s, {"op": "infer", "id": rid, "slot": slot, "model": "probe", "key": [0, 0], "frames": spec}
            )
            reply = protocol.recv(s)
            assert reply is not None and reply["id"] == rid and reply["ok"] and reply["kept"] is True
        protocol.send(s, {"op": "release", "slot": slot})
        protocol.send(s, {"op": "ping", "id": 4})
        status = protocol.recv(s)
        assert status is not None and status["id"] == 4 and status["slots_in_use"] == 0
        protocol.send(s, {"op": "release", "slot": slot})  # released twice: refused, nothing freed twice
        reply = protocol.recv(s)
        assert reply is not None and reply["ok"] is False and "release" in reply["message"]


# --- errors ---------------------------------------------------------------------------------------------------


def test_malformed_messages_get_error_replies_and_the_daemon_keeps_serving(shared: DaemonProc) -> None:
    s, _hello = connect_raw(shared.socket)
    with s:
        for body, rid in [
            (b"not json", None),
            (b"[1,2]", None),
            (b'{"op":"launch","id":5}', 5),
            (b'{"op":"infer","id":6,"slot":0}', 6),
            (b'{"op":"release","slot":2}', None),
        ]:
            s.sendall(len(body).to_bytes(4, "big") + body)
            reply = protocol.recv(s)
            assert reply is not None and reply["ok"] is False and reply["id"] == rid
            assert reply["error"] == "InferenceRejected" and reply["message"]
        # infer on a slot this connection never leased
        spec = {"offset": 0, "shape": [1, 4, 4, 3], "dtype": "uint8"}
        protocol.send(s, {"op": "infer", "id": 7, "slot": 0, "model": "probe", "key": [0, 0], "frames": spec})
        assert protocol.recv(s) == {
            "id": 7,
            "ok": False,
            "error": "InferenceRejected",
            "message": "slot 0 is not leased by this connection",
        }
        # wrong shapes on a leased slot: rejected, and the slot goes back to the pool
        for rid, shape in [(8, [1, 4, 4, 4]), (9, [1, 4, 4]), (10, [9, 4, 4, 3]), (11, [1, 4096, 4096, 3])]:
            protocol.send(s, {"op": "lease", "id": 100 + rid, "key": [0, 0]})
            slot = protocol.recv(s)["slot"]  # type: ignore[index]
            bad = {"offset": 0, "shape": shape, "dtype": "uint8"}
            protocol.send(
                s, {"op": "infer", "id": rid, "slot": slot, "model": "probe", "key": [0, 0], "frames": bad}
            )
            reply = protocol.recv(s)
            assert reply is not None and reply["id"] == rid and reply["error"] == "InferenceRejected"
        protocol.send(s, {"op": "ping", "id": 12})
        status = protocol.recv(s)
        assert status is not None and status["ok"] and status["slots_in_use"] <= 1
        # a length the stream cannot recover from: an error reply, then the daemon hangs up on this connection
        s.sendall((1 << 30).to_bytes(4, "big"))
        reply = protocol.recv(s)
        assert reply is not None and reply["ok"] is False
        assert protocol.recv(s) is None
    assert shared.proc.poll() is None
    with InferenceClient(shared.socket) as client:
        assert client.infer("probe", frames(1), KEY)["first_pixel"].shape == (1, 3)


def test_client_names_bad_requests(shared: DaemonProc) -> None:
    with InferenceClient(shared.socket) as client:
        with pytest.raises(InferenceRejected, match="uint8"):
            client.infer("probe", np.zeros((1, 4, 4, 3), np.float32), KEY)  # type: ignore[arg-type]
        with pytest.raises(InferenceRejected, match="unknown model"):
            client.infer("no_such_model", frames(1), KEY)
        with pytest.raises(InferenceRejected, match="unknown context"):
            client.infer("echo_stats", frames(1), KEY, context={"mask": np.zeros((2, 2), np.uint8)})
        with pytest.raises(InferenceRejected, match="raise slot_bytes"):
            client.infer("probe", np.zeros((1, 2000, 2000, 3), np.uint8), KEY)
        assert client.infer("probe", frames(1), KEY)["first_pixel"].shape == (1, 3)


def test_no_daemon_is_a_named_transient_error(sock_dir: Path) -> None:
    with pytest.raises(DaemonUnavailable, match="no inference daemon") as info:
        InferenceClient(sock_dir / "absent.sock", timeout_s=2).ping()
    assert info.value.transient


def test_a_client_waits_for_a_daemon_that_is_still_starting_but_not_past_its_bound(
    sock_dir: Path, start_daemon: DaemonFactory
) -> None:
    began = time.monotonic()
    with pytest.raises(DaemonUnavailable, match="no inference daemon"):
        InferenceClient(sock_dir / "d.sock", timeout_s=2, connect_wait_s=0.3).ping()
    assert time.monotonic() - began >= 0.3
    answers: list[dict[str, Any]] = []
    waiting = InferenceClient(sock_dir / "d.sock", timeout_s=10, connect_wait_s=60)
    caller = threading.Thread(target=lambda: answers.append(waiting.ping()))
    caller.start()  # before the daemon exists: it connects once the daemon listens
    start_daemon()
    caller.join(60)
    waiting.close()
    assert answers and answers[0]["status"] == "ready"


def test_the_supervisor_names_a_daemon_that_exits_before_it_is_ready(sock_dir: Path) -> None:
    settings = DaemonSettings(socket_path=sock_dir / "d.sock", device="cpu", models=("no_such_model",))
    daemon = DaemonProcess(settings, sock_dir / "daemon.log", ready_timeout_s=120)
    daemon.launch()
    began = time.monotonic()
    with pytest.raises(DaemonUnavailable, match="did not become ready") as info:
        while not daemon.poll_ready():
            time.sleep(0.05)
    assert time.monotonic() - began < 60  # told when it exits, not after the ready timeout
    assert str(sock_dir / "daemon.log") in str(info.value) and "no_such_model" in daemon.log_file.read_text()
    assert daemon.detach() is None  # stopped: nothing left to supervise


def test_a_daemon_that_dies_before_the_supervisor_saw_it_ready_is_restarted(sock_dir: Path) -> None:
    # workers reach a daemon as soon as it listens, so it can serve and be killed between two of the
    # supervisor's looks: that is a daemon to restart, not a broken one
    daemon = DaemonProcess(
        DaemonSettings(socket_path=sock_dir / "d.sock", device="cpu"), sock_dir / "daemon.log"
    )
    daemon.launch()
    try:
        first = daemon.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while not daemon.ready:
            assert time.monotonic() < deadline, daemon.log_file.read_text()
            daemon.ensure_running()
            time.sleep(0.05)
        assert daemon.restarts == 1 and daemon.pid != first
    finally:
        daemon.stop()


def test_a_daemon_that_never_becomes_ready_is_given_up_after_a_few_launches(sock_dir: Path) -> None:
    settings = DaemonSettings(socket_path=sock_dir / "d.sock", device="cpu", models=("no_such_model",))
    daemon = DaemonProcess(settings, sock_dir / "daemon.log", ready_timeout_s=120)
    daemon.launch()
    deadline = time.monotonic() + 180
    with pytest.raises(DaemonUnavailable, match="did not become ready"):
        while time.monotonic() < deadline:
            daemon.ensure_running()
            time.sleep(0.05)
    assert daemon.restarts == 2 and daemon.detach() is None
    assert daemon.log_file.read_text().count("no_such_model") >= 3


# --- leases, crashes and restarts -------------------------------------------------------------------------------


def test_slots_of_a_sigkilled_client_are_reclaimed(start_daemon: DaemonFactory) -> None:
    d = start_daemon("--slots", "3", "--slot-mb", "1", "--max-batch", "4", "--buckets", "4")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import socket, sys, time
        from gpu_service import protocol
        s = socket.socket(socket.AF_UNIX); s.connect({str(d.socket)!r}); protocol.recv(s)
        slots = []
        for i in range(3):
            protocol.send(s, {{"op": "lease", "id": i, "key": [0, 0]}})
            slots.append(protocol.recv(s)["slot"])
        spec = {{"offset": 0, "shape": [4, 8, 8, 3], "dtype": "uint8"}}
        for i in (0, 1):  # one runs in the model, one waits in the queue, one stays leased
            protocol.send(s, {{"op": "infer", "id": 10 + i, "slot": slots[i], "model": "slow_probe",
                              "key": [0, 0], "frames": spec}})
        print("held", flush=True)
        time.sleep(60)
    """),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        client = InferenceClient(d.socket, timeout_s=30)
        _wait_for(lambda: client.ping()["slots_in_use"] == 3)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        _wait_for(lambda: client.ping()["slots_in_use"] == 0)
        status = client.ping()
        assert status["stats"]["requests"]["cancelled"] >= 1
        # all three slots are usable again: a 12-frame call keeps three 4-frame requests in flight
        f = frames(12)
        np.testing.assert_array_equal(client.infer("probe", f, KEY)["first_pixel"], f[:, 0, 0, :])
        client.close()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(5)


def test_a_full_pool_makes_clients_wait_not_fail(start_daemon: DaemonFactory) -> None:
    d = start_daemon(
        "--slots", "2", "--slot-mb", "1", "--max-batch", "4", "--buckets", "4", "--max-delay-ms", "0"
    )
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            with InferenceClient(d.socket, timeout_s=30) as client:
                f = frames(4, seed=i)
                np.testing.assert_array_equal(
                    client.infer("slow_probe", f, KEY)["first_pixel"], f[:, 0, 0, :]
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    status = InferenceClient(d.socket).ping()
    assert status["slots_peak"] == 2 and status["stats"]["requests"]["ok"] == 5


def test_daemon_restart_mid_run_loses_no_item(start_daemon: DaemonFactory, sock_dir: Path) -> None:
    d1 = start_daemon("--slots", "4", "--slot-mb", "1", "--max-batch", "4", "--buckets", "4")
    items = {i: frames(4, seed=100 + i) for i in range(14)}
    results: dict[int, np.ndarray] = {}
    failures: list[float] = []
    progress = threading.Event()

    def celery_like_worker() -> None:
        client = InferenceClient(d1.socket, timeout_s=30)
        for i, f in items.items():
            for _attempt in range(200):  # the task layer retries transient errors
                try:
                    results[i] = client.infer("slow_probe", f, PriorityKey(1.0, float(i)))["first_pixel"]
                    break
                except DaemonUnavailable:
                    failures.append(time.monotonic())
                    time.sleep(0.05)
            if len(results) == 4:
                progress.set()
        client.close()

    worker = threading.Thread(target=celery_like_worker)
    worker.start()
    assert progress.wait(30)
    time.sleep(0.1)  # land the kill inside a request
    killed_at = time.monotonic()
    d1.proc.send_signal(signal.SIGKILL)
    d1.proc.wait(10)
    _wait_for(lambda: bool(failures), timeout=5)
    assert failures[0] - killed_at < 2.0, "in-flight requests must fail fast, not wait for the timeout"
    # the supervisor (reelgen run, or Kubernetes) starts a new daemon on the same socket
    d2 = start_daemon("--slots", "4", "--slot-mb", "1", "--max-batch", "4", "--buckets", "4")
    worker.join(60)
    assert sorted(results) == sorted(items)
    for i, f in items.items():
        np.testing.assert_array_equal(results[i], f[:, 0, 0, :])
    assert d2.status["shm"] != d1.status["shm"]
    assert _wait_gone(d1.shm), "a SIGKILLed daemon's segment must not outlive it"


def test_sigterm_stops_cleanly_and_pinning_reaches_the_compute_thread(start_daemon: DaemonFactory) -> None:
    d = start_daemon("--pin-cores", "0", "--max-delay-ms", "5000")
    with InferenceClient(d.socket) as client:
        t0 = time.monotonic()
        client.infer("probe", frames(1), KEY)
        # The only client already waits, so nobody can join its batch: it must not sit out the 5 s delay.
        assert time.monotonic() - t0 < 2.5
    status = d.status
    assert status["compute_affinity"] == [0] and status["torch_threads"] == 1
    task = Path(f"/proc/{status['pid']}/task/{status['compute_tid']}/status").read_text()
    assert "Cpus_allowed_list:\t0\n" in task
    waiting: list[BaseException] = []

    def blocked_call() -> None:
        try:
            with InferenceClient(d.socket, timeout_s=30) as client:
                client.infer("slow_probe", frames(8), KEY)
                client.infer("slow_probe", frames(8), KEY)
        except BaseException as exc:
            waiting.append(exc)

    t = threading.Thread(target=blocked_call)
    t.start()
    time.sleep(0.1)
    d.proc.send_signal(signal.SIGTERM)
    assert d.proc.wait(20) == 0
    t.join(10)
    assert not t.is_alive()
    assert not waiting or isinstance(waiting[0], DaemonUnavailable)
    assert not d.socket.exists()
    assert not d.shm.exists()


def test_a_second_daemon_on_a_live_socket_refuses_to_start(
    start_daemon: DaemonFactory, sock_dir: Path
) -> None:
    d = start_daemon()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpu_service",
            "--socket",
            str(d.socket),
            "--device",
            "cpu",
            "--models",
            "probe",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "already serves" in result.stderr
    assert InferenceClient(d.socket).ping()["pid"] == d.proc.pid
    bad = subprocess.run(
        [sys.executable, "-m", "gpu_service", "--socket", str(sock_dir / "x.sock"), "--buckets", "4,2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "buckets" in bad.stderr


def test_the_environment_reaches_the_daemon_through_settings_json(sock_dir: Path) -> None:
    from core.daemon_settings import DaemonSettings
    from gpu_service.daemon import build_parser, settings_from_args

    base = DaemonSettings(socket_path=sock_dir / "a.sock", models=("probe",), max_batch=4, buckets=(2, 4))
    args = build_parser().parse_args(
        [
            "--settings-json",
            base.model_dump_json(),
            "--max-batch",
            "2",
            "--pin-cores",
            "0-1,3",
            "--weights",
            "probe=/w.pt",
            "--slot-mb",
            "2",
        ]
    )
    s = settings_from_args(args)
    assert (s.max_batch, s.buckets, s.pin_cores, s.weights, s.slot_bytes) == (
        2,
        (2, 4),
        (0, 1, 3),
        {"probe": "/w.pt"},
        2 << 20,
    )
    assert os.fspath(s.socket_path).endswith("a.sock")


def test_stop_ends_every_daemon_thread(sock_dir: Path) -> None:
    from gpu_service.server import Daemon

    daemon = Daemon(DaemonSettings(socket_path=sock_dir / "s.sock", device="cpu", models=("probe",), slots=2))
    daemon.start()
    try:
        with InferenceClient(daemon.settings.socket_path) as client:
            client.infer("probe", frames(2), KEY)
            # the accept thread records a connection's thread after starting it, which may be after the reply
            deadline = time.monotonic() + 5
            while len(daemon._threads) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            threads = [daemon._compute, *daemon._threads]  # compute, accept, this client's connection
            assert len(threads) == 3 and all(t is not None and t.is_alive() for t in threads)
    finally:
        daemon.stop()
    # the accept thread blocks in accept() without a timeout: only stop's shutdown of the listener ends it
    assert not any(t is not None and t.is_alive() for t in threads)


def test_usage_reports_batches_frames_and_the_busy_fraction_since_ready(start_daemon: DaemonFactory) -> None:
    from gpu_service.usage import read_usage

    d = start_daemon()
    idle = read_usage(d.socket)
    assert idle is not None and idle.device == "cpu" and idle.batches == 0 and idle.busy_fraction == 0.0
    with InferenceClient(d.socket) as client:
        for n in (2, 3):
            client.infer("slow_probe", frames(n), KEY)  # sleeps in the model: a busy compute thread
    used = read_usage(d.socket)
    assert used is not None and (used.batches, used.frames, used.mean_batch) == (2, 5, 2.5)
    assert 0 < used.busy_s < used.serving_s and 0 < used.busy_fraction < 1
    assert "2 batches of 2.5 frames on average" in used.describe()
    d.proc.terminate()
    d.proc.wait(30)
    assert read_usage(d.socket) is None
