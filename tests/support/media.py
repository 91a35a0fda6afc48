"""Test videos with known answers: every frame carries its index as a row of black/white blocks."""

from __future__ import annotations

import struct
import zlib
from contextlib import AbstractContextManager, nullcontext
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from av.video.codeccontext import VideoCodecContext

CODE_BITS = 10
BLOCK = 16


def code_frame(index: int, width: int, height: int) -> np.ndarray:
    """An RGB frame whose centre row of blocks spells index in binary (most significant bit first)."""
    frame = np.full((height, width, 3), 90, np.uint8)
    frame[:, : width // 4] = (200, 60, 60)  # a coloured left quarter makes orientation visible
    y0 = height // 2 - BLOCK // 2
    x0 = width // 2 - CODE_BITS * BLOCK // 2
    for bit in range(CODE_BITS):
        on = (index >> (CODE_BITS - 1 - bit)) & 1
        frame[y0 : y0 + BLOCK, x0 + bit * BLOCK : x0 + (bit + 1) * BLOCK] = 255 if on else 0
    return frame


def read_code(rgb: np.ndarray) -> int:
    """The index spelled by code_frame's blocks at the centre of rgb."""
    height, width = rgb.shape[:2]
    y = height // 2
    x0 = width // 2 - CODE_BITS * BLOCK // 2
    value = 0
    for bit in range(CODE_BITS):
        x = x0 + bit * BLOCK + BLOCK // 2
        patch = rgb[y - 3 : y + 3, x - 3 : x + 3].astype(np.float32).mean()
        value = (value << 1) | int(patch > 128)
    return value


def make_code_video(
    path: Path,
    *,
    seconds: float = 4.0,
    fps: int = 25,
    size: tuple[int, int] = (640, 360),
    rotation: int = 0,
    audio: bool = True,
    keyint: int | None = None,
    frame_times: list[float] | None = None,
) -> list[float]:
    """Write an H.264 (+AAC) video whose frame k shows k; returns each frame's presentation time.

    size is the coded size; a rotation stores a display matrix so players turn the picture. frame_times gives
    explicit (variable-rate) timestamps.
    """
    width, height = size
    times = frame_times if frame_times is not None else [k / fps for k in range(int(seconds * fps))]
    time_base = Fraction(1, 90_000)
    with av.open(str(path), "w", format="mp4") as container:
        video = container.add_stream("libx264", rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.time_base = time_base
        video.codec_context.time_base = time_base
        if keyint is not None:
            video.options = {"g": str(keyint), "keyint_min": str(keyint)}
        if rotation:
            video.set_display_rotation(rotation)
        sound = container.add_stream("aac", rate=48_000) if audio else None
        if sound is not None:
            sound.layout = "stereo"
        for k, t in enumerate(times):
            frame = av.VideoFrame.from_ndarray(code_frame(k, width, height), format="rgb24")
            frame.pts = round(t / time_base)
            frame.time_base = time_base
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if sound is not None:
            mux_tone(container, sound, times[-1] + 1 / fps)
    return times


def mux_tone(container: av.container.OutputContainer, sound: av.AudioStream, seconds: float) -> None:
    """A 440 Hz stereo tone of `seconds` from 0, encoded by `sound` (an AAC stream at 48 kHz) and flushed."""
    total = int(seconds * 48_000)
    tone = (0.2 * np.sin(2 * np.pi * 440 * np.arange(total) / 48_000)).astype(np.float32)
    for start in range(0, total, 1024):
        chunk = np.ascontiguousarray(np.stack([tone[start : start + 1024]] * 2))
        samples = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
        samples.sample_rate = 48_000
        samples.pts = start
        container.mux(sound.encode(samples))
    container.mux(sound.encode(None))


def write_mjpeg_sizes(path: Path, sizes: list[tuple[int, int]], fps: int = 10) -> Path:
    """An MJPEG MKV whose frames have the given sizes (each JPEG carries its own): a resolution switch."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mjpeg", rate=fps)
        stream.width, stream.height, stream.pix_fmt = *sizes[0], "yuvj420p"
        encoders: dict[tuple[int, int], VideoCodecContext] = {sizes[0]: stream.codec_context}
        for k, (w, h) in enumerate(sizes):
            if (w, h) not in encoders:
                extra = av.CodecContext.create("mjpeg", "w")
                assert isinstance(extra, VideoCodecContext)
                extra.width, extra.height, extra.pix_fmt, extra.time_base = w, h, "yuvj420p", Fraction(1, fps)
                encoders[(w, h)] = extra
            frame = av.VideoFrame.from_ndarray(np.full((h, w, 3), (k * 37) % 255, np.uint8), format="rgb24")
            frame = frame.reformat(format="yuvj420p")
            frame.pts, frame.time_base = k, Fraction(1, fps)
            for packet in encoders[(w, h)].encode(frame):
                packet.stream, packet.pts, packet.dts, packet.time_base = stream, k, k, Fraction(1, fps)
                container.mux(packet)
    return path


def write_png_header(path: Path, width: int, height: int) -> Path:
    """A PNG that claims width×height (a decompression bomb's header) with one tiny compressed row."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path


def write_rgb_video(path: Path, frames: list[np.ndarray], fps: int) -> Path:
    """An H.264 MP4 (no sound) of RGB frames, all of the first one's size, one per tick at fps."""
    height, width = frames[0].shape[:2]
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.time_base = Fraction(1, fps)
        for k, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = k
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return path


class LocalOpener:
    """A source opener for local paths as given (pipeline.SourceOpener without a fetcher)."""

    def local_path(self, uri: str) -> AbstractContextManager[Path]:
        return nullcontext(Path(uri))
