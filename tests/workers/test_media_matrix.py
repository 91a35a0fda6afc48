"""The media matrix's own claims: every quirk builds, verifies itself, and its truth is self-consistent."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.media_matrix import QUIRKS, Quirk, _probe, _verify, build


@pytest.mark.parametrize("name", QUIRKS)
def test_every_quirk_builds_and_verifies(tmp_path: Path, name: str) -> None:
    quirk = build(name, tmp_path)  # raises AssertionError if the file lacks its quirk
    assert isinstance(quirk, Quirk) and quirk.name == name
    assert quirk.path.parent == tmp_path and quirk.path.stat().st_size > 0
    assert quirk.checks and "every reliable code decoded once" in quirk.checks
    assert quirk.frame_count > 0 and quirk.nominal_fps > 0
    assert all(b > a for a, b in itertools.pairwise(quirk.frame_times))
    assert quirk.unreliable_codes <= set(range(quirk.frame_count))
    assert len(quirk.unreliable_codes) < quirk.frame_count
    assert quirk.time_slack_frames >= 0 and min(quirk.display_size) >= 144
    if quirk.audio is not None:
        assert quirk.audio.end_s > quirk.audio.start_s >= 0 and quirk.audio.channels >= 1


def test_quirk_names_are_unique_and_cover_the_brief() -> None:
    assert len(set(QUIRKS)) == len(QUIRKS) >= 30
    for needle in (
        "pts_is_dts",
        "avi_h264",
        "avi_mpeg4",
        "mjpeg",
        "cinepak",
        "opus",
        "vp8",
        "vp9",
        "av1",
        "ts_",
        "flv",
        "5fps",
        "120fps",
        "vfr",
        "176x144",
        "1080p",
        "sar",
        "10bit",
        "yuv422p",
        "yuv444p",
        "full_range",
        "limited_range",
        "interlaced",
        "rotated",
        "editlist",
        "mono_8k",
        "5_1",
        "96k",
        "starts_late",
        "ends_early",
        "no_audio",
        "damaged",
        "truncated",
    ):
        assert any(needle in name for name in QUIRKS), needle


def test_unknown_quirk_is_a_key_error(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="unknown quirk"):
        build("no_such_quirk", tmp_path)


def test_verification_rejects_a_false_claim(tmp_path: Path) -> None:
    quirk = build("mp4_sar_4_3", tmp_path)
    probe = _probe(quirk.path)

    def verify(claim: Quirk) -> None:
        _verify(claim, probe, codec="h264", pix_fmt="yuv420p", container="mp4", coded_size=(480, 360))

    verify(quirk)
    with pytest.raises(AssertionError, match="display size"):
        verify(replace(quirk, display_size=(480, 360)))
    times = list(quirk.frame_times)
    times[3] += 0.02
    with pytest.raises(AssertionError, match="code 3 is at"):
        verify(replace(quirk, frame_times=times))
    assert quirk.audio is not None
    with pytest.raises(AssertionError, match="audio from"):
        verify(replace(quirk, audio=replace(quirk.audio, start_s=0.5)))
