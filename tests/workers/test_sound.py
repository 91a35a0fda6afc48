"""A clip's sound (workers/media/sound.py): brought to the loudness target as an independent BS.1770 meter
(pyloudnorm) reads it, never past the true-peak ceiling, faded at its edges, silence left silent; and so in a
clip rendered from real footage with sound."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pyloudnorm
import pytest
from scipy.signal import resample_poly

from devtools.real_media import mgt_pianist
from workers.geometry import CropRect
from workers.media.audio import AUDIO_RATE
from workers.media.render import EncodeOptions, OutputSpec, render_window
from workers.media.sound import SoundOptions, finish
from workers.media.video import VideoSource

RATE = AUDIO_RATE
METER = pyloudnorm.Meter(RATE)  # BS.1770-4, K-weighted and gated


def lufs(pcm: np.ndarray) -> float:
    return float(METER.integrated_loudness(pcm.T.astype(np.float64)))


def true_peak_dbtp(pcm: np.ndarray) -> float:
    """BS.1770's true peak: the sample peak of the signal oversampled four times."""
    over = resample_poly(pcm.astype(np.float64), 4, 1, axis=1)
    return float(20 * np.log10(np.abs(over).max()))


def programme(seconds: float, level: float, seed: int = 0) -> np.ndarray:
    """Speech-like sound: a few tones under noise, its level swelling and falling, in stereo."""
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * RATE)) / RATE
    tones = sum(np.sin(2 * np.pi * f * t + p) for f, p in ((180, 0.0), (440, 1.0), (1250, 2.0)))
    voice = (tones / 3 + 0.3 * rng.standard_normal(t.size)) * (0.6 + 0.4 * np.sin(2 * np.pi * 0.7 * t))
    return np.stack([voice, 0.8 * voice]).astype(np.float32) * level


def test_a_quiet_recording_is_brought_to_the_target_loudness() -> None:
    quiet = programme(5.0, 0.01)
    assert lufs(quiet) < -35
    out, report = finish(quiet, RATE, SoundOptions(loudness_lufs=-14.0))
    assert abs(lufs(out) - -14.0) < 0.5, lufs(out)
    assert report.source_lufs is not None and abs(report.source_lufs - lufs(quiet)) < 0.5
    assert not report.peak_limited and report.gain_db > 20
    assert true_peak_dbtp(out) <= -1.0 + 0.1


def test_a_loud_recording_is_turned_down_to_the_target() -> None:
    loud = programme(5.0, 0.9, seed=1)
    out, report = finish(loud, RATE, SoundOptions(loudness_lufs=-16.0))
    assert abs(lufs(out) - -16.0) < 0.5
    assert report.gain_db < 0


def test_a_peaky_recording_stops_at_the_true_peak_ceiling_short_of_the_target() -> None:
    quiet = programme(5.0, 0.005, seed=2)
    clicks = np.zeros_like(quiet)
    clicks[:, :: RATE // 2] = 0.5  # a clap twice a second: peaks far above the programme's loudness
    out, report = finish(quiet + clicks, RATE, SoundOptions(loudness_lufs=-14.0, true_peak_dbtp=-1.0))
    assert report.peak_limited
    assert true_peak_dbtp(out) <= -1.0 + 0.1
    assert lufs(out) < -14.0 - 1  # short of the target: a gain, not a limiter that would squash the claps


def test_silence_stays_silent_and_level_can_be_left_as_recorded() -> None:
    silent, report = finish(np.zeros((2, RATE * 3), np.float32), RATE, SoundOptions())
    assert not silent.any() and report.source_lufs is None and report.gain_db == 0
    sound = programme(3.0, 0.2, seed=3)
    kept, report = finish(sound, RATE, SoundOptions(loudness_lufs=None, fade_s=0.1))
    assert report.gain_db == 0 and report.source_lufs is not None
    middle = slice(RATE // 2, -RATE // 2)
    assert np.array_equal(kept[:, middle], sound[:, middle])


def test_the_edges_fade_in_and_out() -> None:
    sound = programme(3.0, 0.2, seed=4)
    out, _ = finish(sound, RATE, SoundOptions(loudness_lufs=None, fade_s=0.1))
    fade = round(0.1 * RATE)
    assert np.abs(out[:, :10]).max() < 1e-3 * np.abs(sound).max()
    assert np.abs(out[:, -10:]).max() < 1e-3 * np.abs(sound).max()
    # rising over the fade, untouched after it
    assert np.abs(out[:, fade // 4]).max() < np.abs(sound[:, fade // 4]).max()
    assert np.array_equal(out[:, fade:-fade], sound[:, fade:-fade])


def _clip_sound(path: Path) -> np.ndarray:
    with av.open(str(path)) as clip:
        frames = [f.to_ndarray() for f in clip.decode(clip.streams.audio[0])]
    return np.concatenate(frames, axis=1)


def test_a_clip_of_real_footage_plays_at_the_target_loudness(tmp_path: Path) -> None:
    path = mgt_pianist()
    if path is None:
        pytest.skip("musicalgestures' pianist.avi is not unpacked (python -m devtools.fetch_real_media)")
    with VideoSource(path) as source:
        info = source.info
    full = CropRect(0, 0, info.width // 2 * 2, info.height // 2 * 2)
    spec = OutputSpec(
        aspect="full", width=320, height=180, crop_at=lambda t: full, path=tmp_path / "clip.mp4"
    )
    rendered = render_window(path, 2.0, 7.0, [spec], EncodeOptions(preset="ultrafast"))
    assert rendered.audio is not None and rendered.audio.source_lufs is not None
    heard = _clip_sound(spec.path)
    measured = lufs(heard)
    if rendered.audio.peak_limited:
        assert measured < -14.0 + 0.5
    else:
        assert abs(measured - -14.0) < 1.0, (measured, rendered.audio)  # AAC's own change included
    assert true_peak_dbtp(heard) <= -1.0 + 0.5
    assert np.abs(heard[:, :48]).max() < 0.05  # the first millisecond: faded in, no click
