"""`reelgen probe FILE|URI`: what reelgen sees in one video, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.media_matrix import build
from workers.media.containers import Timing
from workers.media.video import REPAIR_DAMAGED

REELGEN = str(Path(sys.executable).with_name("reelgen"))


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REELGEN, "probe", *args], capture_output=True, text=True, timeout=120)


def test_probe_shows_streams_timing_and_the_clip_rate(tmp_path: Path) -> None:
    quirk = build("avi_h264_bframes_mp3", tmp_path)
    shown = _probe(str(quirk.path))
    assert shown.returncode == 0, shown.stderr
    assert "container  avi" in shown.stdout
    assert "stream #0 video: codec h264" in shown.stdout and "stream #1 audio: codec mp3" in shown.stdout
    assert "timestamps from dts" in shown.stdout  # written in decode order: the repair it makes
    assert "clips at 25 fps" in shown.stdout and "decodes    yes" in shown.stdout

    facts = json.loads(_probe("--json", str(quirk.path)).stdout)
    assert facts["video"]["timing"] == Timing.DTS.value
    assert facts["video"]["frames"] == len(quirk.frame_times)
    assert abs(facts["video"]["measured_fps"] - quirk.nominal_fps) < 0.5


def test_probe_counts_damage_and_reports_what_does_not_decode(tmp_path: Path) -> None:
    damaged = build("mp4_damaged", tmp_path)
    facts = json.loads(_probe("--json", str(damaged.path)).stdout)
    assert facts["decodes"] and facts["repairs"][REPAIR_DAMAGED] > 0

    text = tmp_path / "notes.txt"
    text.write_text("a secret the tty demuxer would draw\n" * 20)
    refused = _probe(str(text))
    assert refused.returncode == 1
    assert "decodes    NO: UnreadableVideo: notes.txt: not a video file reelgen opens" in refused.stdout
    assert "secret" not in refused.stdout + refused.stderr

    playlist = tmp_path / "list.m3u8"
    playlist.write_text(
        f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{damaged.path.name}\n#EXT-X-ENDLIST\n"
    )
    assert "decodes    NO: UnreadableVideo" in _probe(str(playlist)).stdout

    missing = _probe(str(tmp_path / "nothing.mp4"))
    assert missing.returncode == 2 and missing.stderr.strip().endswith("nothing.mp4: no such file")
