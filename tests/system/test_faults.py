"""Faults, part 1: with real processes on one machine; nothing lost, nothing done twice, nothing leaked.

"Exactly once" (docs/architecture.md, Contracts): one manifest per item per config hash, counters incremented once, and every clip
the manifest names written by the attempt that wrote the manifest; the work itself may run more than once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import av
import pytest
import redis
from celery.exceptions import Ignore, Retry
from kombu.exceptions import OperationalError

from core.catalog_entry import CatalogEntry
from gpu_service.shm import SHM_DIR
from jobs.intake.results_index import read_index
from jobs.ledger import JobKind, Ledger
from storage.store import LocalStore
from tests.support.faults import (
    REELGEN,
    Leaks,
    base_env,
    cmdline,
    manifests,
    processes_with,
    redis_server,
    small_catalog,
    summary_failures,
    wait_for,
    write_video,
)
from workers.tasks import _run_stage


def start_run(catalog: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([REELGEN, "run", str(catalog)], env=env, stdout=out, stderr=subprocess.STDOUT)


def finish(process: subprocess.Popen[bytes], log: Path, timeout_s: float = 240) -> str:
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        raise AssertionError(f"the run hung:\n{log.read_text(errors='replace')}") from None
    return log.read_text(errors="replace")


def check_exactly_once(out: Path, job_id: str, item_ids: list[str], config_hash: str | None = None) -> None:
    """One manifest per item, naming clips that exist and decode to the frames it records, and one
    result per item in the job's results index."""
    found = manifests(out)
    assert sorted(found) == sorted(item_ids)
    for manifest in found.values():
        assert manifest["status"] == "done" and manifest["job_id"] == job_id
        if config_hash is not None:
            assert manifest["config_hash"] == config_hash
        outputs = manifest["outputs"]
        assert isinstance(outputs, list) and outputs
        for output in outputs:
            clip = Path(output["uri"])
            with av.open(str(clip)) as container:
                assert sum(1 for _ in container.decode(video=0)) == output["frames"] == len(output["crops"])
    index = list(read_index(LocalStore(out), job_id))
    assert sorted(r["item_id"] for r in index if r["status"] == "done") == sorted(item_ids)
    assert not [r for r in index if r["status"] != "done"]


def job_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("job ")).split()[1].rstrip(":")


# --- SIGKILL a worker mid-item


def owner_only_modes(state: Path, tmp: Path) -> dict[str, int]:
    """Modes of the run's daemon socket, its shared-memory segment and the embedded Redis's socket."""
    daemons = [p for p in processes_with(str(state)) if "gpu_service" in cmdline(p)]
    paths = [*state.glob("*.sock"), *tmp.rglob("*.socket")]
    for pid in daemons:
        paths += SHM_DIR.glob(f"reelgen-gpu-{os.getuid()}-{pid}-*")
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in paths}


def test_a_worker_killed_mid_render_completes_its_item_exactly_once(tmp_path: Path) -> None:
    """Also checks, on the processes `reelgen run` started, that the daemon's socket and segment and the
    embedded Redis's socket are owner-only (tests/gpu_service/test_gpu_daemon.py checks a bare daemon)."""
    folder = tmp_path / "catalog"
    catalog = small_catalog(folder, 2, seconds=4.0)
    for k in range(2):  # larger sources make the render long enough to be caught in the act
        write_video(folder / f"item-{k}.mp4", seconds=4.0, size=(640, 360), fps=25)
    env = base_env(tmp_path, REELGEN_ASPECTS="1:1,9:16,16:9")
    state, out, work = tmp_path / "state", tmp_path / "out", tmp_path / "state" / "work"
    leaks = Leaks(str(state), temp_dirs=[tmp_path / "tmp", out, state])
    log = tmp_path / "run.log"
    run = start_run(catalog, env, log)
    killed: dict[str, float] = {}
    modes: dict[str, int] = {}
    try:

        def kill_a_render() -> bool:
            for scratch in work.glob("item-*-*.*-*") if work.is_dir() else []:
                modes.update(owner_only_modes(state, tmp_path / "tmp"))
                pid = int(scratch.name.rsplit("-", 2)[-2].split(".")[1])
                item_id = scratch.name.rsplit("-", 2)[0]
                leaks.watch_daemons()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed[item_id] = time.time()
                    return True
            assert run.poll() is None, "the run ended before any render could be killed"
            return False

        wait_for(kill_a_render, 180, "a render to kill")
        output = finish(run, log)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, output
    assert "2 done, 0 failed, 0 skipped" in output  # the done counter moved once per item
    ((item_id, killed_at),) = killed.items()
    worker_log = "".join(p.read_text(errors="replace") for p in (state / "logs").glob("worker-*.log"))
    assert "signal 9" in worker_log  # the kill really took a pool process down mid-task
    job_id = job_line(output)
    check_exactly_once(out, job_id, ["item-0", "item-1"])
    # the killed item's manifest and every clip it names come from the attempt after the kill
    manifest = manifests(out)[item_id]
    assert float(str(manifest["created_at"])) > killed_at
    for output_record in manifest["outputs"]:
        assert Path(output_record["uri"]).stat().st_mtime > killed_at
    assert {".sock", ".socket", ""} == {Path(n).suffix for n in modes}, modes  # all three kinds were seen
    assert all(mode & 0o077 == 0 for mode in modes.values()), modes
    leaks.check()


# --- SIGKILL the daemon under load


def test_the_daemon_killed_under_load_restarts_and_every_item_completes(tmp_path: Path) -> None:
    catalog = small_catalog(tmp_path / "catalog", 4, seconds=4.0)
    with redis_server(tmp_path / "redis") as server:
        env = base_env(tmp_path, REELGEN_REDIS_URL=server.url, REELGEN_SEGMENT_S="1")
        state = tmp_path / "state"
        leaks = Leaks(str(state), temp_dirs=[tmp_path / "tmp", tmp_path / "out", state])
        ledger = Ledger(redis.Redis.from_url(server.url))
        log = tmp_path / "run.log"
        run = start_run(catalog, env, log)
        try:

            def daemons() -> list[int]:
                return [p for p in processes_with(str(state)) if "gpu_service" in cmdline(p)]

            def the_daemon(other_than: int = -1) -> int:
                """The one running daemon: under load one may be starting or restarting for a moment, so a
                single look can see none, or two; the answer is taken from the look that saw exactly one."""
                deadline = time.monotonic() + 60
                while True:
                    found = [p for p in daemons() if p != other_than]
                    if len(found) == 1:
                        return found[0]
                    assert time.monotonic() < deadline, f"no single running daemon: {found}"
                    time.sleep(0.1)

            def sampling() -> bool:
                jobs = ledger.jobs()
                assert run.poll() is None, log.read_text()
                return (
                    bool(jobs)
                    and ledger.stage_totals(jobs[0].id).get("sample_segment", {}).get("runs", 0) >= 2
                )

            wait_for(sampling, 120, "sampling to start")
            job = ledger.jobs()[0]
            assert ledger.job(job.id).done < 4, "no load left to kill the daemon under"
            # a daemon restarting for another reason (a slow start under load) is briefly not there
            first = the_daemon()
            leaks.watch_daemons()
            old_segments = {p.name for p in SHM_DIR.glob(f"reelgen-gpu-{os.getuid()}-{first}-*")}
            assert old_segments
            os.kill(first, signal.SIGKILL)
            second = the_daemon(other_than=first)
            leaks.watch_daemons()
            output = finish(run, log)
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 0, output
        final = ledger.job(job.id)
        assert (final.done, final.failed, final.dispatched) == (4, 0, 4), output
        # the killed daemon's segment was swept by its successor; no segment of either is left now
        assert not [n for n in old_segments if (SHM_DIR / n).exists()]
        daemon_logs = "".join(p.read_text(errors="replace") for p in (state / "logs").glob("daemon-*.log"))
        assert daemon_logs.count("ready") >= 2, daemon_logs
        worker_log = "".join(p.read_text(errors="replace") for p in (state / "logs").glob("worker-*.log"))
        assert "DaemonUnavailable" in worker_log  # the kill hit requests in flight, which were retried
        check_exactly_once(tmp_path / "out", job.id, [f"item-{k}" for k in range(4)])
        assert second != first
        leaks.check()


# --- restart Redis mid-backfill


@pytest.mark.parametrize(
    ("raised", "failed"),
    [
        (OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused."), {}),
        (redis.ConnectionError("Connection closed by server."), {}),
        (ValueError("a bug"), {"item-0": "InternalError"}),
    ],
)
def test_a_stage_that_cannot_reach_redis_or_the_broker_is_retried_not_failed(
    redis_client: redis.Redis, raised: Exception, failed: dict[str, str]
) -> None:
    # a Redis restart while a stage enqueues its successor reaches the task as kombu's OperationalError
    ledger = Ledger(redis_client)
    job_id = ledger.create_job(kind=JobKind.RUN, catalog="c", out="o", config_hash="h", config={}).id
    ledger.admit(job_id, "item-0", {"item_id": "item-0"})
    retries: list[BaseException] = []

    class Task:
        name = "reelgen.select"
        request = SimpleNamespace(retries=0)

        def retry(self, exc: BaseException, **_: object) -> Retry:
            retries.append(exc)
            return Retry(exc=exc)

    def stage(*_: object) -> None:
        raise raised

    ctx = SimpleNamespace(ledger=ledger, settings=SimpleNamespace(task_retries=2))
    entry = CatalogEntry.from_dict({"item_id": "item-0", "video": "v.mp4", "image": "i.jpg", "title": "t"})
    with pytest.raises((Retry, Ignore)):
        _run_stage(Task(), job_id, entry, stage, ctx)  # type: ignore[arg-type]
    assert {f.item_id: f.error for f in ledger.failures(job_id)} == failed
    assert retries == ([] if failed else [raised])


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)


def test_a_redis_restart_mid_backfill_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    count = 6
    catalog = small_catalog(tmp_path / "catalog", count, seconds=3.0)
    sock_dir = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp"))  # a short path for the daemon's socket
    with redis_server(tmp_path / "redis") as server:
        env = base_env(
            tmp_path,
            REELGEN_REDIS_URL=server.url,
            REELGEN_DAEMON__SOCKET_PATH=str(sock_dir / "d.sock"),
            REELGEN_LEASE_S="15",
            REELGEN_TASK_TIME_LIMIT_S="12",
            REELGEN_VISIBILITY_TIMEOUT_S="600",
            REELGEN_REAPER_INTERVAL_S="1",
            REELGEN_INDEX_FLUSH_S="0.5",
            REELGEN_ALLOW_LOCAL_SOURCES="true",  # a backfill of media beside its catalog
        )
        state, logs = tmp_path / "state", tmp_path / "logs"
        logs.mkdir()
        leaks = Leaks(str(state), temp_dirs=[tmp_path / "tmp", tmp_path / "out", state])
        ledger = Ledger(redis.Redis.from_url(server.url))
        settings_json = json.dumps({"socket_path": str(sock_dir / "d.sock"), "torch_threads": 1})
        services = {
            "daemon": [sys.executable, "-m", "gpu_service", "--settings-json", settings_json],
            "worker": [REELGEN, "worker", "--loglevel", "INFO"],
            "dispatcher": [REELGEN, "dispatcher"],
        }
        running = {name: _spawn(args, env, logs / f"{name}.log") for name, args in services.items()}
        restarted: list[str] = []
        try:
            submitted = subprocess.run(
                [REELGEN, "backfill", str(catalog), "--max-in-flight", "3"],
                env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert submitted.returncode == 0, submitted.stderr
            job_id = submitted.stdout.strip()

            def supervise() -> None:
                # what Kubernetes does for a service container that exits
                for name, process in running.items():
                    if process.poll() is not None:
                        restarted.append(name)
                        running[name] = _spawn(services[name], env, logs / f"{name}.log")

            def midway() -> bool:
                supervise()
                job = ledger.job(job_id)
                return job.done >= 1 and job.in_flight >= 1

            wait_for(midway, 120, "the backfill to be midway")
            before = ledger.job(job_id)
            assert before.done < count
            server.stop()
            time.sleep(1.0)
            server.start()

            def finished() -> bool:
                supervise()
                with contextlib.suppress(redis.RedisError):
                    return ledger.job(job_id).state.finished
                return False

            wait_for(finished, 150, "the backfill to finish after the restart")
        finally:
            for process in running.values():
                process.send_signal(signal.SIGTERM)
            for process in running.values():
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            shutil.rmtree(sock_dir, ignore_errors=True)
        final = ledger.job(job_id)
        service_logs = {p.name: p.read_text(errors="replace")[-3000:] for p in logs.iterdir()}
        assert (final.state.value, final.done, final.failed, final.dispatched) == (
            "completed", count, 0, count,
        ), (final, ledger.failures(job_id), restarted, service_logs)  # fmt: skip
        check_exactly_once(tmp_path / "out", job_id, [f"item-{k}" for k in range(count)])
        print(f"redispatched by the reaper: {final.redispatched}; services restarted: {restarted}")
        leaks.check()


# --- disk full in the work folder


def _can_mount_tmpfs() -> bool:
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True
    )
    return probe.returncode == 0


@pytest.mark.skipif(
    shutil.which("unshare") is None or os.geteuid() != 0 or not _can_mount_tmpfs(),
    reason="needs root (or a user namespace) to mount a small tmpfs in a private mount namespace",
)
def test_a_full_work_folder_fails_the_item_with_a_named_error(tmp_path: Path) -> None:
    """The work folder is an 8 KiB tmpfs, mounted in a mount namespace of the run alone (nothing else sees it):
    the render's scratch files cannot fit, the item fails with DiskFull, the run and its workers go on."""
    folder = tmp_path / "catalog"
    catalog = small_catalog(folder, 1, seconds=3.0)
    write_video(folder / "item-0.mp4", seconds=3.0, size=(640, 360), fps=25)
    env = base_env(tmp_path, REELGEN_TASK_RETRIES="0")
    state = tmp_path / "state"
    (state / "work").mkdir(parents=True)
    leaks = Leaks(str(state), temp_dirs=[tmp_path / "tmp", tmp_path / "out", state])
    script = 'mount -t tmpfs -o size=8k tmpfs "$REELGEN_STATE_DIR/work" && exec "$0" run "$1"'
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, REELGEN, str(catalog)],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert summary_failures(result.stdout) == {"item-0": "DiskFull"}, result.stdout
    assert "no space left" in result.stdout.lower()
    assert not (tmp_path / "out" / "item-0").exists()
    worker_log = "".join(p.read_text(errors="replace") for p in (state / "logs").glob("worker-*.log"))
    assert "signal" not in worker_log and "Traceback" not in worker_log
    leaks.check()
