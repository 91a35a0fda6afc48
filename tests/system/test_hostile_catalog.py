"""A catalog written by an attacker, as ONE `reelgen run` with normal items beside the hostile ones.

Every probe fails its own item with a named error (or, where the input is legal but costly, is processed within
bounds); the normal items finish; no traceback; nothing on the node outside the catalog's folder is read; and the
run's whole process tree stays under a stated peak memory.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import psutil
import pytest

from tests.support.faults import (
    REELGEN,
    ROOT,
    base_env,
    catalog_line,
    manifests,
    summary_failures,
    write_image,
    write_video,
)
from tests.support.media import write_mjpeg_sizes, write_png_header

DONE = "done"
#: what the run's process tree (reelgen run, its workers, daemon and redis) may hold at its peak
PEAK_LIMIT_BYTES = 3 * 2**30
SECRET = "TOP-SECRET-NODE-FILE"


def _fast_source(path: Path, fps: int, seconds: float, size: tuple[int, int]) -> Path:
    """An H.264 MP4 at fps frames per second (1000 fps: a five-second clip of 5000 frames if played as is)."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = *size, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        for k in range(int(fps * seconds)):
            picture = np.full((size[1], size[0], 3), (k * 7) % 255, np.uint8)
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts, frame.time_base = k, Fraction(1, fps)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return path


class _Trickle(http.server.BaseHTTPRequestHandler):
    """A source that sends a byte every half second: a worker must not wait for it until the task limit."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        for _ in range(200):
            try:
                self.wfile.write(b"\0")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.5)

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class HostileRun:
    result: subprocess.CompletedProcess[str]
    expected: dict[str, str]
    out: Path
    peak_bytes: int


def _tree_rss(root: psutil.Process) -> int:
    total = 0
    for process in [root, *root.children(recursive=True)]:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue
    return total


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileRun]:
    tmp = tmp_path_factory.mktemp("hostile")
    folder = tmp / "catalog"
    folder.mkdir()
    outside = tmp / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n" * 40)
    write_image(folder / "main.png")
    write_video(folder / "normal.mp4")
    write_video(folder / "normal-2.mp4", seconds=3)
    (folder / "notes.txt").write_text(f"{SECRET}\n" * 40)
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "list.m3u8").write_text(
        "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nnormal.mp4\n#EXT-X-ENDLIST\n"
    )
    (folder / "concat.mp4").write_text("ffconcat version 1.0\nfile normal.mp4\n")
    write_mjpeg_sizes(folder / "needle.mkv", [(4, 4000)] * 10)
    write_mjpeg_sizes(folder / "switch.mkv", [(320, 240)] * 5 + [(4000, 2500)] * 20)
    _fast_source(folder / "thousand-fps.mp4", 1000, 2.5, (64, 64))
    write_png_header(folder / "bomb.png", 20_000, 20_000)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    slow_url = f"http://127.0.0.1:{server.server_address[1]}/slow.mp4"

    lines: list[str] = []
    expected: dict[str, str] = {}

    def item(item_id: str, outcome: str, video: str, picture: str = "main.png", **extra: str) -> None:
        fields = json.loads(catalog_line(item_id, video, picture)) | extra
        lines.append(json.dumps(fields))
        expected[item_id] = outcome

    def raw(line: str, outcome: str) -> None:
        lines.append(line)
        expected[f"line:{len(lines)}"] = outcome

    item("normal", DONE, "normal.mp4")
    item("tty-text", "UnreadableVideo", "notes.txt")
    item("link-out", "ForbiddenSource", "link.txt")
    item("dotdot-out", "ForbiddenSource", "../elsewhere/secret.txt")
    item("absolute-out", "ForbiddenSource", str(outside / "secret.txt"))
    item("hls-playlist", "UnreadableVideo", "list.m3u8")
    item("ffconcat", "UnreadableVideo", "concat.mp4")
    item("needle-4x4000", "VideoLimitExceeded", "needle.mkv")
    item("resolution-switch", "VideoLimitExceeded", "switch.mkv")
    item("png-bomb", "ImageError", "normal.mp4", "bomb.png")
    item("thousand-fps", DONE, "thousand-fps.mp4")
    item("slow-source", "SourceTooSlow", slow_url)
    raw("[" * 50_000 + "]" * 50_000, "BadCatalogLine")
    raw(
        '{"item_id": "huge-int", "video": "normal.mp4", "image": "main.png", "title": ' + "9" * 5000 + "}",
        "BadCatalogLine",
    )
    # a 2 MB description: the line is refused by its length before it is parsed
    big = json.loads(catalog_line("big-field", "normal.mp4", "main.png")) | {"description": "x" * 2_000_000}
    raw(json.dumps(big), "BadCatalogLine")
    item("normal-2", DONE, "normal-2.mp4")
    catalog = folder / "catalog.jsonl"
    catalog.write_text("\n".join(lines) + "\n")

    env = base_env(
        tmp,
        REELGEN_ALLOW_PRIVATE_HTTP="true",  # the slow source is on loopback
        REELGEN_DOWNLOAD_DEADLINE_S="6",
        REELGEN_TASK_RETRIES="0",
    )
    process = subprocess.Popen(
        [REELGEN, "run", str(catalog)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    root = psutil.Process(process.pid)
    peak = 0
    deadline = time.monotonic() + 400
    while process.poll() is None and time.monotonic() < deadline:
        peak = max(peak, _tree_rss(root))
        time.sleep(0.1)
    if process.poll() is None:
        process.kill()
    stdout, stderr = process.communicate()
    server.shutdown()
    print(f"peak RSS of the run's process tree: {peak / 2**20:.0f} MiB")
    yield HostileRun(
        subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr),
        expected,
        tmp / "out",
        peak,
    )


def test_every_hostile_item_fails_named_and_the_normal_ones_finish(hostile: HostileRun) -> None:
    output = hostile.result.stdout + hostile.result.stderr
    assert hostile.result.returncode == 1, output
    failures = summary_failures(hostile.result.stdout)
    done = set(manifests(hostile.out))
    outcomes = {key: failures.get(key, DONE if key in done else "missing") for key in hostile.expected}
    assert outcomes == hostile.expected, output
    assert "Traceback" not in output and "InternalError" not in output


def test_nothing_outside_the_catalog_was_read_and_memory_stayed_bounded(hostile: HostileRun) -> None:
    assert SECRET not in hostile.result.stdout + hostile.result.stderr
    for manifest in manifests(hostile.out).values():
        assert SECRET not in json.dumps(manifest)
    assert hostile.peak_bytes < PEAK_LIMIT_BYTES, f"{hostile.peak_bytes / 2**20:.0f} MiB"


def test_a_thousand_fps_source_gives_a_clip_at_the_output_cap(hostile: HostileRun) -> None:
    manifest = manifests(hostile.out)["thousand-fps"]
    output = manifest["outputs"][0]
    assert Fraction(output["fps"]) <= 60 and output["frames"] <= 60 * 2.5 + 1
    assert len(json.dumps(manifest)) < 64_000
    assert os.path.getsize(output["uri"]) > 0
