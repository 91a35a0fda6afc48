"""bench/resolution.py: the scaled copy keeps every frame, its timing and its sound, and its truth scales alike."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import av
import cv2
import pytest

from bench.quality import RunResult
from bench.resolution import _scaled, reencode, stage_figures
from tests.support.media import make_code_video, read_code


def test_an_upscaled_video_keeps_every_frame_in_order_at_its_time_and_its_audio(tmp_path: Path) -> None:
    source, target = tmp_path / "small.mp4", tmp_path / "large.mp4"
    times = make_code_video(source, seconds=1.0, size=(320, 192))
    reencode(source, target, 640, 384)
    with av.open(str(target)) as container:
        frames = [(f.time, f.to_ndarray(format="rgb24")) for f in container.decode(video=0)]
    with av.open(str(target)) as container:
        audio = container.streams.audio[0]
        heard = sum(f.samples for f in container.decode(audio)) / audio.rate
    assert [rgb.shape[:2] for _, rgb in frames] == [(384, 640)] * len(times)
    # read at the size the code was drawn at
    assert [
        read_code(cv2.resize(rgb, (320, 192), interpolation=cv2.INTER_AREA)) for _, rgb in frames
    ] == list(range(len(times)))
    assert [t for t, _ in frames] == pytest.approx(times, abs=1e-3)
    # the source's tone runs a frame past the last picture
    assert heard == pytest.approx(times[-1] + 1 / 25, abs=0.05)


def test_truth_coordinates_scale_through_nested_lists_and_absent_boxes_stay_absent() -> None:
    assert _scaled(None, 1.5) is None
    assert _scaled([10, 20, 30, 40], 1.5) == [15, 30, 45, 60]
    assert _scaled([[1.0, 2.0], [3.0, 4.0]], 2) == [[2.0, 4.0], [6.0, 8.0]]
    assert _scaled([], 3) == []


def test_stage_figures_are_per_item_and_absent_where_the_ledger_has_no_such_stage(tmp_path: Path) -> None:
    stages = {
        "sample_segment": {"cpu": 6.0, "wall": 9.0, "runs": 8},
        "render": {"cpu": 10.0, "wall": 11.0, "runs": 4},
    }
    run = RunResult(0, 30.0, tmp_path, 4, stages, 2.0, "")
    assert stage_figures(run) == {
        "prepare_cpu_s_per_item": None,
        "sample_segment_cpu_s_per_item": 1.5,
        "select_cpu_s_per_item": None,
        "render_cpu_s_per_item": 2.5,
        "daemon_busy_s_per_item": 0.5,
    }
    assert stage_figures(replace(run, daemon_busy_s=None))["daemon_busy_s_per_item"] is None
