"""Sources as sellers upload them: every quirk of the media matrix rendered, and the clip checked frame by frame.

Each clip must have a constant frame rate (the render's output-rate rule), last the window to within one frame,
show at every tick the source frame on screen at that instant (read back from the frame's code blocks), and carry
the source's audio over the same span, in sync to within one video frame.
"""

from __future__ import annotations

import bisect
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from core.errors import RenderError, UnreadableVideo
from tests.support.media import read_code
from tests.support.media_matrix import QUIRKS, Quirk, build
from workers.geometry import CropRect
from workers.media.audio import AUDIO_RATE
from workers.media.render import EncodeOptions, OutputSpec, output_rate, render_window
from workers.media.video import VideoSource

DAMAGED = tuple(name for name in QUIRKS if "damaged" in name or "truncated" in name)
WHOLE = tuple(name for name in QUIRKS if name not in DAMAGED)
FAST = EncodeOptions(crf=12, preset="ultrafast")


def _full_frame_spec(info_w: int, info_h: int, path: Path) -> OutputSpec:
    w, h = info_w - info_w % 2, info_h - info_h % 2
    return OutputSpec(aspect="full", width=w, height=h, crop_at=lambda t: CropRect(0, 0, w, h), path=path)


def _window(quirk: Quirk, start_s: float, duration_s: float) -> tuple[float, float]:
    """A window of up to 2 s inside the video, starting 0.5 s in where there is room."""
    length = min(2.0, duration_s - 0.2)
    offset = min(0.5, max(0.0, duration_s - length) / 2)
    return start_s + offset, start_s + offset + length


def _expected_code(quirk: Quirk, t_rel: float) -> int:
    """The code of the frame on screen at t_rel seconds into the stream (a time before the first frame shows
    the first frame)."""
    return max(0, bisect.bisect_right(quirk.frame_times, t_rel + 1e-6) - 1)


def _clip_video(path: Path) -> tuple[list[float], list[np.ndarray], Fraction]:
    with av.open(str(path)) as clip:
        stream = clip.streams.video[0]
        frames = [(float(f.time), f.to_ndarray(format="rgb24")) for f in clip.decode(stream)]
        rate = stream.average_rate
    assert rate is not None
    return [t for t, _ in frames], [rgb for _, rgb in frames], rate


def _clip_audio(path: Path) -> tuple[float, np.ndarray] | None:
    with av.open(str(path)) as clip:
        if not clip.streams.audio:
            return None
        decoded = list(clip.decode(clip.streams.audio[0]))
    first = float(decoded[0].time or 0.0)
    return first, np.concatenate([f.to_ndarray() for f in decoded], axis=1)[0]


@pytest.mark.parametrize("name", WHOLE)
def test_every_tick_shows_the_source_frame_on_screen_and_the_audio_stays_in_sync(
    name: str, tmp_path: Path
) -> None:
    quirk = build(name, tmp_path)
    with VideoSource(quirk.path) as source:
        info = source.info
    assert (info.width, info.height) == quirk.display_size
    start, end = _window(quirk, info.start_s, info.duration_s)
    spec = _full_frame_spec(info.width, info.height, tmp_path / "clip.mp4")
    render_window(quirk.path, start, end, [spec], FAST)

    times, pictures, clip_rate = _clip_video(spec.path)
    rate = output_rate(info.fps)
    assert clip_rate == rate
    # constant frame rate, the window's length to within one frame
    assert len(times) == round((end - start) * rate)
    assert np.allclose(np.diff(times), float(1 / rate), atol=1e-9)
    assert abs(len(times) / rate - (end - start)) <= 1 / rate
    # each tick shows the source frame on screen at that instant
    # the matrix draws its codes upright at the display size: a clip that did not apply the rotation or the
    # pixel aspect cannot read back
    shown = [read_code(p) for p in pictures]
    ticks = [start + k / float(rate) for k in range(len(times))]
    expected = [_expected_code(quirk, t - quirk.start_offset_s) for t in ticks]
    slack = quirk.time_slack_frames
    wrong = [(k, s, e) for k, (s, e) in enumerate(zip(shown, expected, strict=True)) if abs(s - e) > slack]
    assert not wrong, f"{name}: ticks showing the wrong source frame (tick, shown, expected): {wrong[:8]}"
    assert shown == sorted(shown), f"{name}: frames out of order: {shown}"

    audio = _clip_audio(spec.path)
    if quirk.audio is None:
        assert audio is None
        return
    assert audio is not None
    first, samples = audio
    frame_s = float(1 / rate)
    assert abs(first) <= frame_s
    assert abs(len(samples) / AUDIO_RATE - len(times) / float(rate)) <= frame_s
    # the tone where the source has sound, silence where it has none, placed to within one video frame
    on = np.abs(samples) > 0.02
    heard = np.flatnonzero(on)
    window_rel = (
        quirk.audio.start_s - (start - quirk.start_offset_s),
        quirk.audio.end_s - (start - quirk.start_offset_s),
    )
    if window_rel[0] > 0:
        assert abs(heard[0] / AUDIO_RATE - window_rel[0]) <= frame_s, (
            f"{name}: sound starts at {heard[0] / AUDIO_RATE}"
        )
    if window_rel[1] < len(samples) / AUDIO_RATE:
        assert abs(heard[-1] / AUDIO_RATE - window_rel[1]) <= frame_s, (
            f"{name}: sound ends at {heard[-1] / AUDIO_RATE}"
        )
    middle = samples[max(0, round(window_rel[0] * AUDIO_RATE)) :][: AUDIO_RATE // 2]
    crossings = np.count_nonzero(np.diff(np.sign(middle)) > 0) / (len(middle) / AUDIO_RATE)
    assert crossings == pytest.approx(440, rel=0.03), f"{name}: not the source's 440 Hz tone"


@pytest.mark.parametrize("name", DAMAGED)
def test_a_damaged_source_renders_where_it_decodes_or_fails_as_unreadable(name: str, tmp_path: Path) -> None:
    quirk = build(name, tmp_path)
    with VideoSource(quirk.path) as source:
        info = source.info
    spec = _full_frame_spec(info.width, info.height, tmp_path / "clip.mp4")
    start, end = _window(quirk, info.start_s, info.duration_s)
    try:
        render_window(quirk.path, start, end, [spec], FAST)
    except RenderError as exc:  # pragma: no cover - the failure this test exists to catch
        pytest.fail(f"a decoding failure named as encoding: {exc}")
    except UnreadableVideo as exc:
        assert "damaged" in str(exc) or "decod" in str(exc)
    else:
        times, _, rate = _clip_video(spec.path)
        assert len(times) == round((end - start) * rate)
