"""A window's sound for its clips: read from the source by its timestamps, made ready to publish
(workers.media.sound), and encoded once as AAC for every clip to copy."""

from __future__ import annotations

import io
from pathlib import Path

import av
import av.error
import numpy as np

from workers.media.containers import open_media
from workers.media.sound import SoundOptions, SoundReport, finish, pcm_frames

AUDIO_RATE = 48_000


def encoded_audio(
    path: Path, start: float, seconds: float, bitrate: int, sound: SoundOptions
) -> tuple[bytes, SoundReport] | None:
    """The window's audio, made ready to publish (workers.media.sound), as 48 kHz stereo AAC in an in-memory
    MP4, exactly `seconds` long, and what was done to it; None when the source has no audio stream."""
    raw = _window_audio(path, start, seconds)
    if raw is None:
        return None
    pcm, report = finish(raw, AUDIO_RATE, sound)
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp4") as container:
        stream = container.add_stream("aac", rate=AUDIO_RATE)
        stream.layout = "stereo"
        stream.bit_rate = bitrate
        for chunk in pcm_frames(pcm, AUDIO_RATE):
            container.mux(stream.encode(chunk))
        container.mux(stream.encode(None))
    return buffer.getvalue(), report


# A jump in the source's audio timestamps larger than this is a gap (filled with silence) or an overlap (the
# repeated part dropped); smaller ones are the resampler's own delay and rounding, and are ignored.
_AUDIO_GAP_S = 0.05


def _window_audio(path: Path, start: float, seconds: float) -> np.ndarray | None:
    """[start, start + seconds) of the source's first audio stream as stereo float samples at AUDIO_RATE,
    placed by the source's timestamps: silence where the audio starts late, ends early or has gaps; damaged
    packets are skipped."""
    container = open_media(path)
    try:
        if not container.streams.audio:
            return None
        try:
            container.seek(int(max(0.0, start - 1.0) * av.time_base))
        except av.error.FFmpegError:
            # a demuxer that cannot seek (FLV without an index) may have moved anyway: read from the start
            container.close()
            container = open_media(path)
        return _placed_samples(container, start, seconds)
    finally:
        container.close()


def _placed_samples(container: av.container.InputContainer, start: float, seconds: float) -> np.ndarray:
    stream = container.streams.audio[0]
    resampler = av.AudioResampler(format="fltp", layout="stereo", rate=AUDIO_RATE)
    total = round(seconds * AUDIO_RATE)
    first_sample = round(start * AUDIO_RATE)
    pcm = np.zeros((2, total), np.float32)
    position: int | None = None
    for packet in container.demux(stream):
        try:
            decoded = packet.decode()
        except av.error.InvalidDataError:
            continue
        for frame in decoded:
            if frame.time is not None:
                stamped = round(float(frame.time) * AUDIO_RATE)
                if position is None or abs(stamped - position) > _AUDIO_GAP_S * AUDIO_RATE:
                    position = stamped
            if position is None:
                continue
            for converted in resampler.resample(frame):
                samples = converted.to_ndarray()
                at = position - first_sample
                lo, hi = max(0, at), min(total, at + samples.shape[1])
                if hi > lo:
                    pcm[:, lo:hi] = samples[:, lo - at : hi - at]
                position += samples.shape[1]
        if position is not None and position - first_sample >= total:
            break
    return pcm
