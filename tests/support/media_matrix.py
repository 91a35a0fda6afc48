"""A media matrix: small videos that each carry one real-world quirk, with known answers.

`build(name, folder)` writes one quirk's file and returns a `Quirk` that says what a correct reader must get out of
it; `QUIRKS` names them all (38). Every frame is drawn by `tests.support.media.code_frame`, so each decoded picture names
itself (`tests.support.media.read_code`; grey 90 background, a (200, 60, 60) left quarter, black/white code blocks), and
every audio track is a 440 Hz sine at amplitude 0.2 in every channel. Pictures are drawn upright at the display
size: in the rotated and non-square-pixel files a code reads back only once the rotation / aspect ratio is applied.
Files are small (320x240 or less, 1.5-3 s) except where the size is the point (the 1080p second).

The truth is recorded from what was written (the timestamps given to the encoder, the samples given to the audio
encoder, the bytes damaged or cut), never from what a decoder reports. Each build then reads its file back with
PyAV and raises AssertionError if the file lacks its quirk (container, codec, pixel format, profile, range flag and
luma range, interlace flag, aspect ratio, rotation, edit list, reordered or decode-order timestamps, sparse index,
damage, truncation...), if a code is not decoded where the truth says it is, or if the audio is not what and where
the truth says. `Quirk.checks` lists what was verified.

Timeline. `Quirk.frame_times[k]` is the true presentation time, in seconds, of the frame that shows code k, on the
stream's own timeline as a player shows it: FFmpeg's timestamp of that frame minus the video stream's start time.
That start time is `Quirk.start_offset_s`: 1.48 s for the MPEG-TS file (the usual muxing delay), 0.025 s / 0.08 s
for the FLV files (FLV cannot store negative times, so its muxer shifts every stream by the MP3 priming or the
B-frame delay), 0 elsewhere; FFmpeg's absolute time of code k is `frame_times[k] + start_offset_s`.
`AudioSpec.start_s`/`end_s` are on the same timeline. A frame stays on screen from its time until the next frame's
(this matters for the variable-rate and sparse files). A negative frame time means the frame was encoded but lies
before the start of the presentation (cut by an edit list). Such codes, and any other a correct reader may not
deliver intact (hidden by the container, inside or after a damaged run until the next keyframe, past a truncation),
are in `Quirk.unreliable_codes`; every other code is decoded by FFmpeg exactly once, with the right picture, at its
time (checked at build time).

Timing slack. Files whose timestamps were written in decode order (AVI with B-frames, an MP4 whose pts were set to
its dts) have `time_slack_frames` = the encoder's reorder delay D in frames (from the packet order written):
FFmpeg's best-effort timing of those frames (the decoded frame's packet dts, what FFmpeg falls back to when pts are
faulty) is within D frames of the truth, and that is checked. The raw `frame.pts` of such files is a permutation
of decode-order stamps and can be off by more (3 frames in the H.264 AVI, 5 in the MP4, with x264's B-pyramid).
Every other file has exact timestamps (within one container tick, at most 1 ms) and slack 0.

Audio truth. Audio is present on [start_s, end_s). Lossy codecs add their own delay where the container has no
way to trim it (MP3 in AVI starts about 25 ms late, AC-3 in AVI about 5 ms); the build checks onset and end within
60 ms, the tone's frequency within 3 % and every channel's peak within 0.14-0.28.

Nothing the brief asked for is skipped. The AV1 file needs SVT-AV1 at preset 10 or slower (presets 11-12 blur the
16-px code blocks until odd codes read as even). The damaged MP4 has garbage over the video samples of a stretch of
the file rather than over every byte of it, so the AAC interleaved there (and the AudioSpec) stays intact.

Cost: building all 38 quirks, encode plus verification, took 6.4 s of CPU (6.0 s wall) and wrote 2.6 MB on the
shared 2-core development machine; the 1080p second is the largest share (0.6 s). libvpx runs single-threaded: its
worker threads spin and cost 10x the CPU on a busy machine.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from tests.support.media import code_frame, read_code

TONE_HZ = 440.0
TONE_AMPLITUDE = 0.2
#: PyAV's `VideoFrame.pict_type` for a B picture
_PICT_B = 3
#: FFmpeg's AVColorRange values
RANGE_LIMITED = 1
RANGE_FULL = 2
_AUDIO_SLACK_S = 0.06


@dataclass(frozen=True)
class AudioSpec:
    """The audio a correct reader hears: codec (FFmpeg's canonical name: "aac", "mp3", "ac3", "pcm_s16le",
    "opus", "vorbis"), rate, channels, and the span [start_s, end_s) of the video timeline the tone covers."""

    codec: str
    rate: int
    channels: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Quirk:
    """One matrix file and its known answers; see the module docstring for the timeline."""

    name: str  # e.g. "avi_h264_bframes_mp3"
    path: Path
    frame_times: list[float]  # true presentation time (s) of the frame showing code k, minus start_offset_s
    nominal_fps: (
        float  # the rate the container declares (FFmpeg's average rate for MP4/MKV, which store none)
    )
    display_size: tuple[int, int]  # (width, height) a correct player shows: aspect ratio and rotation applied
    audio: AudioSpec | None  # None when the file has no audio
    time_slack_frames: int  # 0 for exact timestamps; for decode-order timestamps, the reorder delay in frames
    start_offset_s: float = 0.0  # the video stream's start time as FFmpeg reports it
    unreliable_codes: frozenset[int] = frozenset()  # codes a correct reader may not deliver intact
    checks: tuple[str, ...] = ()  # what the build verified

    @property
    def frame_count(self) -> int:
        return len(self.frame_times)


# --- plans


@dataclass(frozen=True)
class _Video:
    """What to encode: code k is shown at times[k] (seconds, before any container offset)."""

    codec: str
    times: tuple[float, ...]
    rate: int | Fraction
    size: tuple[int, int] = (320, 240)
    pix_fmt: str = "yuv420p"
    options: Mapping[str, str] = field(default_factory=dict)
    time_base: Fraction = Fraction(1, 90_000)
    sar: Fraction | None = None
    rotation: int = 0  # PyAV's convention: counter-clockwise degrees, as np.rot90 turns
    color_range: int | None = None
    tag_bt709: bool = False

    @property
    def display_size(self) -> tuple[int, int]:
        width, height = self.size
        if self.sar is not None:
            width = round(width * self.sar)
        return (height, width) if _quarter_turns(self.rotation) % 2 else (width, height)

    @property
    def end_s(self) -> float:
        return self.times[-1] + 1 / float(self.rate)


@dataclass(frozen=True)
class _Audio:
    encoder: str
    rate: int
    layout: str
    start_s: float
    end_s: float
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def channels(self) -> int:
        return av.AudioLayout(self.layout).nb_channels


@dataclass
class _Written:
    """What the encoder produced: the code of each video packet, in decode order."""

    codes: list[int] = field(default_factory=list)

    @property
    def reorder_delay(self) -> int:
        """How many packets a decoder must hold before it can show frames in order."""
        return max([0, *(index - code for index, code in enumerate(self.codes))])

    @property
    def reordered(self) -> bool:
        return self.codes != sorted(self.codes)


def _regular(seconds: float, rate: float) -> tuple[float, ...]:
    return tuple(k / rate for k in range(round(seconds * rate)))


def _quarter_turns(rotation: float) -> int:
    return round(rotation / 90.0) % 4


# --- writing


def _picture(video: _Video, code: int) -> av.VideoFrame:
    """Code k drawn upright at the display size, then turned and squeezed into the coded picture."""
    rgb = code_frame(code, *video.display_size)
    turns = _quarter_turns(video.rotation)
    if turns:  # a player turns the coded picture by `turns` quarter turns counter-clockwise: undo that
        rgb = np.ascontiguousarray(np.rot90(rgb, -turns))
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
    coded_w, coded_h = video.size
    return frame.reformat(
        width=coded_w, height=coded_h, format=video.pix_fmt, dst_color_range=video.color_range
    )


def _tone(audio: _Audio, first: int, count: int) -> np.ndarray:
    """count samples of the tone from sample index first (time 0 = sample 0), one row per channel, float32."""
    t = (np.arange(first, first + count, dtype=np.float64)) / audio.rate
    wave = (TONE_AMPLITUDE * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32)
    return np.ascontiguousarray(np.tile(wave, (audio.channels, 1)))


def _audio_frames(audio: _Audio, chunk: int = 1024) -> Iterator[tuple[float, av.AudioFrame]]:
    first, last = round(audio.start_s * audio.rate), round(audio.end_s * audio.rate)
    for start in range(first, last, chunk):
        samples = av.AudioFrame.from_ndarray(
            _tone(audio, start, min(chunk, last - start)), format="fltp", layout=audio.layout
        )
        samples.sample_rate = audio.rate
        samples.pts = start
        samples.time_base = Fraction(1, audio.rate)
        yield start / audio.rate, samples


def _encode(
    path: Path,
    fmt: str,
    video: _Video,
    audio: _Audio | None = None,
    *,
    container_options: Mapping[str, str] | None = None,
    packet_hook: Callable[[av.Packet[Any]], None] | None = None,
) -> _Written:
    """Write video (and audio, interleaved by time); returns the encoder's video packets in decode order."""
    written = _Written()
    tb = video.time_base
    code_of_pts = {round(t / tb): k for k, t in enumerate(video.times)}
    assert len(code_of_pts) == len(video.times), "two frames share a timestamp at this time base"
    with av.open(str(path), "w", format=fmt, options=dict(container_options or {})) as container:
        stream = container.add_stream(video.codec, rate=video.rate)
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height = video.size
        stream.pix_fmt = video.pix_fmt
        stream.time_base = tb
        context = stream.codec_context
        context.time_base = tb
        if video.options:
            stream.options = dict(video.options)
        if video.sar is not None:
            context.sample_aspect_ratio = video.sar
        if video.rotation:
            stream.set_display_rotation(video.rotation)
        if video.color_range is not None:
            context.color_range = video.color_range
        if video.tag_bt709:
            context.color_primaries = context.color_trc = context.colorspace = 1
        sound: av.AudioStream | None = None
        if audio is not None:
            added = container.add_stream(audio.encoder, rate=audio.rate)
            assert isinstance(added, av.AudioStream)
            sound = added
            sound.layout = audio.layout
            if audio.options:
                sound.options = dict(audio.options)
        tones = _audio_frames(audio) if audio is not None else iter(())
        pending = next(tones, None)

        def mux_video(packets: list[av.Packet[Any]]) -> None:
            for packet in packets:
                assert packet.pts is not None and packet.dts is not None
                written.codes.append(code_of_pts[packet.pts])
                if packet_hook is not None:
                    packet_hook(packet)
                container.mux(packet)

        for code, t in enumerate(video.times):
            while sound is not None and pending is not None and pending[0] <= t:
                container.mux(sound.encode(pending[1]))
                pending = next(tones, None)
            frame = _picture(video, code)
            frame.pts = round(t / tb)
            frame.time_base = tb
            mux_video(stream.encode(frame))
        mux_video(stream.encode(None))
        if sound is not None:
            while pending is not None:
                container.mux(sound.encode(pending[1]))
                pending = next(tones, None)
            container.mux(sound.encode(None))
    assert sorted(written.codes) == list(range(len(video.times))), f"{path.name}: the encoder dropped frames"
    return written


# --- reading back


@dataclass
class _Shown:
    code: int
    pts: int | None
    dts: int | None
    pict_type: int
    interlaced: bool
    color_range: int
    rotation: int
    size: tuple[int, int]  # as displayed (aspect ratio and rotation applied)


@dataclass(frozen=True)
class _Packet:
    pts: int | None
    dts: int | None
    size: int
    pos: int  # byte offset in the file, -1 if unknown
    key: bool


@dataclass
class _Heard:
    codec: str
    rate: int
    channels: int
    onset_s: float
    end_s: float
    peaks: list[float]
    frequency: float


@dataclass
class _Probe:
    format_name: str
    codec: str
    pix_fmt: str
    profile: str | None
    coded_size: tuple[int, int]
    sar: Fraction | None
    rate: float
    start_s: float
    header_frames: int
    time_base: Fraction
    packets: list[_Packet]  # video, demux order
    frames: list[_Shown]
    errors: int
    luma: tuple[int, int]  # darkest and brightest luma sample over the first frames with a white block
    audio: _Heard | None
    audio_streams: int
    audio_packets: list[tuple[float, float, int, int]]  # start, end (on the video timeline), pos, size

    def seconds(self, ticks: int) -> float:
        return float(ticks * self.time_base) - self.start_s


def _as_display(frame: av.VideoFrame, sar: Fraction | None) -> np.ndarray:
    width = frame.width if not sar else round(frame.width * sar)
    rgb = frame.to_ndarray(format="rgb24", width=width, height=frame.height)
    turns = _quarter_turns(frame.rotation or 0)
    return np.ascontiguousarray(np.rot90(rgb, turns)) if turns else rgb


def _luma(frame: av.VideoFrame) -> np.ndarray:
    plane = frame.planes[0]
    deep = frame.format.components[0].bits > 8
    data = np.frombuffer(bytes(plane), np.uint16 if deep else np.uint8)
    row = plane.line_size // (2 if deep else 1)
    return data.reshape(-1, row)[: plane.height, : plane.width]


def _samples(frame: av.AudioFrame) -> np.ndarray:
    """(channels, n) float64 in [-1, 1]."""
    data = frame.to_ndarray()
    channels = frame.layout.nb_channels
    if not frame.format.is_planar:
        data = data.reshape(-1, channels).T
    if data.dtype == np.int16:
        return data.astype(np.float64) / 32768
    if data.dtype == np.int32:
        return data.astype(np.float64) / 2**31
    if data.dtype == np.uint8:
        return (data.astype(np.float64) - 128) / 128
    return data.astype(np.float64)


def _listen(stream: av.AudioStream, frames: list[av.AudioFrame], video_start: float) -> _Heard:
    rate = stream.codec_context.sample_rate
    first = frames[0].time
    assert first is not None
    track = np.concatenate([_samples(f) for f in frames], axis=1)
    offset = first - video_start
    channels = track.shape[0]
    loud = np.nonzero(np.abs(track[0]) > TONE_AMPLITUDE / 2)[0]
    assert loud.size, "the audio track is silent"
    onset, last = int(loud[0]), int(loud[-1])
    body = track[0, onset : last + 1]
    crossings = np.count_nonzero(np.diff(np.signbit(body)))
    peaks = [float(np.abs(track[c, onset : last + 1]).max()) for c in range(channels)]
    return _Heard(
        codec=stream.codec_context.codec.canonical_name,
        rate=rate,
        channels=channels,
        onset_s=offset + onset / rate,
        end_s=offset + (last + 1) / rate,
        peaks=peaks,
        frequency=crossings / 2 / max(body.size / rate, 1e-9),
    )


def _probe(path: Path) -> _Probe:
    with av.open(str(path)) as container:
        video = container.streams.video[0]
        sound = container.streams.audio[0] if container.streams.audio else None
        context = video.codec_context
        tb = video.time_base
        assert tb is not None
        start = float(video.start_time * tb) if video.start_time is not None else 0.0
        rate = video.average_rate or video.guessed_rate or video.base_rate
        packets: list[_Packet] = []
        shown: list[_Shown] = []
        sounds: list[av.AudioFrame] = []
        heard_packets: list[tuple[float, float, int, int]] = []
        errors = 0
        dark, bright = 1 << 16, 0
        sar: Fraction | None = None
        streams = [video] if sound is None else [video, sound]
        for packet in container.demux(streams):
            if packet.stream is video and packet.size:
                packets.append(
                    _Packet(packet.pts, packet.dts, packet.size, packet.pos or -1, packet.is_keyframe)
                )
            elif packet.size and packet.pts is not None and packet.time_base is not None:
                begin = float(packet.pts * packet.time_base) - start
                heard_packets.append(
                    (
                        begin,
                        begin + float((packet.duration or 0) * packet.time_base),
                        packet.pos or -1,
                        packet.size,
                    )
                )
            try:
                decoded = packet.decode()
            except (av.error.FFmpegError, ValueError):
                errors += 1
                continue
            for item in decoded:
                if isinstance(item, av.AudioFrame):
                    sounds.append(item)
                    continue
                assert isinstance(item, av.VideoFrame)
                sar = sar or context.sample_aspect_ratio or video.sample_aspect_ratio
                rgb = _as_display(item, sar)
                code = read_code(rgb)
                if len(shown) < 8 and code:
                    y = _luma(item)
                    dark, bright = min(dark, int(y.min())), max(bright, int(y.max()))
                shown.append(
                    _Shown(
                        code=code,
                        pts=item.pts,
                        dts=item.dts,
                        pict_type=int(item.pict_type),
                        interlaced=item.interlaced_frame,
                        color_range=int(item.color_range),
                        rotation=round(item.rotation or 0),
                        size=(rgb.shape[1], rgb.shape[0]),
                    )
                )
        heard = _listen(sound, sounds, start) if sound is not None and sounds else None
        return _Probe(
            format_name=container.format.name,
            codec=context.codec.canonical_name,
            pix_fmt=context.pix_fmt or "",
            profile=context.profile,
            coded_size=(context.width, context.height),
            sar=sar,
            rate=float(rate) if rate else 0.0,
            start_s=start,
            header_frames=video.frames,
            time_base=tb,
            packets=packets,
            frames=shown,
            errors=errors,
            luma=(dark, bright),
            audio=heard,
            audio_streams=len(container.streams.audio),
            audio_packets=heard_packets,
        )


# --- verification


class _Checks:
    """Collects what was verified; a failed expectation raises AssertionError naming the quirk."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.done: list[str] = []

    def that(self, ok: bool, claim: str, seen: object = "") -> None:
        if not ok:
            raise AssertionError(f"{self.name}: expected {claim}" + (f"; found {seen}" if seen != "" else ""))
        if claim not in self.done:
            self.done.append(claim)


def _verify(
    quirk: Quirk,
    probe: _Probe,
    *,
    codec: str,
    pix_fmt: str,
    container: str,
    coded_size: tuple[int, int],
    b_frames: bool = False,
    stale_pictures: bool = False,
) -> _Checks:
    """What every quirk must satisfy: container, codec, sizes, rate, start, every reliable code once at its time,
    and the audio as specified. With stale_pictures (damage), a frame shown at an unreliable code's time may
    carry any picture and is ignored."""
    check = _Checks(quirk.name)
    check.that(quirk.path.stat().st_size > 0, "a non-empty file")
    check.that(container in probe.format_name.split(","), f"container {container}", probe.format_name)
    check.that(probe.codec == codec, f"video codec {codec}", probe.codec)
    check.that(probe.pix_fmt == pix_fmt, f"pixel format {pix_fmt}", probe.pix_fmt)
    check.that(probe.coded_size == coded_size, f"coded size {coded_size}", probe.coded_size)
    check.that(
        abs(probe.start_s - quirk.start_offset_s) < 1e-3, f"start {quirk.start_offset_s:.3f} s", probe.start_s
    )
    check.that(
        abs(probe.rate - quirk.nominal_fps) <= 0.01 * quirk.nominal_fps,
        f"nominal rate {quirk.nominal_fps:g} fps",
        probe.rate,
    )
    sizes = {f.size for f in probe.frames}
    check.that(sizes == {quirk.display_size}, f"display size {quirk.display_size}", sizes)
    if b_frames:
        check.that(any(f.pict_type == _PICT_B for f in probe.frames), "B-frames")

    # every reliable code exactly once, at its time
    n = quirk.frame_count
    tick = float(probe.time_base)
    tolerance = max(1e-3, tick) + quirk.time_slack_frames / quirk.nominal_fps
    bad_times = [quirk.frame_times[k] for k in quirk.unreliable_codes] if stale_pictures else []
    seen: dict[int, int] = {}
    for frame in probe.frames:
        stamp = frame.dts if quirk.time_slack_frames else frame.pts
        t = probe.seconds(stamp) if stamp is not None else None
        near_bad = t is not None and any(abs(t - b) < 0.5 / quirk.nominal_fps for b in bad_times)
        if frame.code in quirk.unreliable_codes or near_bad:
            continue
        check.that(0 <= frame.code < n, f"codes below {n}", frame.code)
        seen[frame.code] = seen.get(frame.code, 0) + 1
        if t is not None:
            truth = quirk.frame_times[frame.code]
            if abs(t - truth) > tolerance:
                raise AssertionError(
                    f"{quirk.name}: code {frame.code} is at {t:.4f} s, the truth is {truth:.4f} s "
                    f"(tolerance {tolerance:.4f} s)"
                )
    reliable = set(range(n)) - quirk.unreliable_codes
    missing = sorted(reliable - set(seen))
    twice = sorted(k for k, count in seen.items() if count > 1)
    check.that(
        not missing and not twice, "every reliable code decoded once", f"missing {missing}, twice {twice}"
    )
    check.done.append(
        "each code at its time"
        + (f" within {quirk.time_slack_frames} frames (dts)" if quirk.time_slack_frames else "")
    )

    # audio
    if quirk.audio is None:
        check.that(probe.audio_streams == 0, "no audio stream", probe.audio_streams)
    else:
        spec, heard = quirk.audio, probe.audio
        check.that(heard is not None, "a decodable audio stream")
        assert heard is not None
        check.that(heard.codec == spec.codec, f"audio codec {spec.codec}", heard.codec)
        check.that(
            (heard.rate, heard.channels) == (spec.rate, spec.channels),
            f"{spec.rate} Hz x{spec.channels}",
            (heard.rate, heard.channels),
        )
        check.that(
            abs(heard.onset_s - spec.start_s) < _AUDIO_SLACK_S,
            f"audio from {spec.start_s:g} s",
            heard.onset_s,
        )
        check.that(
            abs(heard.end_s - spec.end_s) < _AUDIO_SLACK_S, f"audio until {spec.end_s:g} s", heard.end_s
        )
        check.that(abs(heard.frequency - TONE_HZ) < 0.03 * TONE_HZ, "a 440 Hz tone", heard.frequency)
        check.that(all(0.14 < p < 0.28 for p in heard.peaks), "amplitude 0.2 in every channel", heard.peaks)
    return check


def _finish(quirk: Quirk, check: _Checks) -> Quirk:
    return replace(quirk, checks=tuple(check.done))


# --- the quirks

_MAKERS: dict[str, Callable[[str, Path], Quirk]] = {}

_AAC = _Audio("aac", 48_000, "stereo", 0.0, 2.0)
_OPUS = _Audio("libopus", 48_000, "stereo", 0.0, 2.0)


def _quirk(*names: str) -> Callable[[Callable[[str, Path], Quirk]], Callable[[str, Path], Quirk]]:
    def register(maker: Callable[[str, Path], Quirk]) -> Callable[[str, Path], Quirk]:
        for name in names:
            _MAKERS[name] = maker
        return maker

    return register


#: FFmpeg's canonical name for what an encoder writes, where the two differ
_CODEC_OF_ENCODER = {
    "libx264": "h264",
    "libvpx": "vp8",
    "libvpx-vp9": "vp9",
    "libsvtav1": "av1",
    "flv": "flv1",
    "libmp3lame": "mp3",
    "libopus": "opus",
}
#: file extension of a container format, where it is not the format's name
_EXT_OF_FORMAT = {"matroska": "mkv", "mpegts": "ts"}


def _codec_of(encoder: str) -> str:
    return _CODEC_OF_ENCODER.get(encoder, encoder)


def _spec(audio: _Audio | None) -> AudioSpec | None:
    if audio is None:
        return None
    return AudioSpec(_codec_of(audio.encoder), audio.rate, audio.channels, audio.start_s, audio.end_s)


def _plain(
    name: str,
    folder: Path,
    video: _Video,
    audio: _Audio | None = None,
    *,
    fmt: str = "mp4",
    pix_fmt: str | None = None,
    container: str | None = None,
    b_frames: bool = False,
    container_options: Mapping[str, str] | None = None,
    packet_hook: Callable[[av.Packet[Any]], None] | None = None,
    slack: bool = False,
    unreliable: frozenset[int] = frozenset(),
    start_offset: Callable[[_Probe], float] | None = None,
    derived_rate: bool = False,
) -> tuple[Quirk, _Probe, _Checks, _Written]:
    """Encode, read back, verify the common claims; returns the quirk for quirk-specific checks.

    The file is name.ext with ext from fmt (MP4 unless told); the claims expect the codecs the encoders write
    (`_CODEC_OF_ENCODER`), the video's pixel format unless pix_fmt says otherwise, and container fmt unless
    container says otherwise."""
    path = folder / f"{name}.{_EXT_OF_FORMAT.get(fmt, fmt)}"
    written = _encode(path, fmt, video, audio, container_options=container_options, packet_hook=packet_hook)
    probe = _probe(path)
    quirk = Quirk(
        name=name,
        path=path,
        frame_times=list(video.times),
        nominal_fps=probe.rate if derived_rate else float(video.rate),
        display_size=video.display_size,
        audio=_spec(audio),
        time_slack_frames=written.reorder_delay if slack else 0,
        start_offset_s=start_offset(probe) if start_offset else 0.0,
        unreliable_codes=unreliable,
    )
    check = _verify(
        quirk,
        probe,
        codec=_codec_of(video.codec),
        pix_fmt=pix_fmt or video.pix_fmt,
        container=container or fmt,
        coded_size=video.size,
        b_frames=b_frames,
    )
    if b_frames:
        check.that(written.reordered, "packets in decode order differ from display order")
    return quirk, probe, check, written


def _simple(name: str, folder: Path, video: _Video, audio: _Audio | None = None, **options: Any) -> Quirk:
    """`_plain` for quirks that need no checks of their own: the common claims only."""
    quirk, _, check, _ = _plain(name, folder, video, audio, **options)
    return _finish(quirk, check)


def _h264(seconds: float = 2.0, rate: int | Fraction = 25, bf: int | None = 3, **kw: Any) -> _Video:
    options = {"preset": "veryfast"}
    if bf is not None:
        options["bf"] = str(bf)
    options.update(kw.pop("options", {}))
    times = kw.pop("times", None) or _regular(seconds, float(rate))
    return _Video("libx264", tuple(times), rate, options=options, **kw)


@_quirk("mp4_h264_bframes_aac")
def _baseline(name: str, folder: Path) -> Quirk:
    """The clean baseline: H.264 with B-frames (libx264, bf=3) and AAC, in MP4."""
    return _simple(name, folder, _h264(), _AAC, b_frames=True)


@_quirk("mp4_h264_pts_is_dts")
def _pts_is_dts(name: str, folder: Path) -> Quirk:
    """The baseline's packets muxed with every pts set to its dts: each frame carries a decode-order time.

    The first packets get negative times; MP4's edit list hides them, so their codes are unreliable (FFmpeg
    decodes them for reference but never shows them).
    """
    video = _h264()
    hidden: set[int] = set()

    def decode_order_stamps(packet: av.Packet[Any]) -> None:
        assert packet.pts is not None and packet.dts is not None
        if packet.dts < 0:
            hidden.add(round(packet.pts * video.time_base * video.rate))
        packet.pts = packet.dts

    path = folder / f"{name}.mp4"
    written = _encode(path, "mp4", video, _AAC, packet_hook=decode_order_stamps)
    probe = _probe(path)
    quirk = Quirk(
        name=name,
        path=path,
        frame_times=list(video.times),
        nominal_fps=float(video.rate),
        display_size=video.display_size,
        audio=_spec(_AAC),
        time_slack_frames=written.reorder_delay,
        unreliable_codes=frozenset(hidden),
    )
    check = _verify(
        quirk, probe, codec="h264", pix_fmt="yuv420p", container="mp4", coded_size=video.size, b_frames=True
    )
    check.that(written.reordered and written.reorder_delay > 0, "a reordering encoder")
    check.that(all(p.pts == p.dts for p in probe.packets), "every packet's pts equal to its dts")
    output = [f.pts for f in probe.frames if f.pts is not None]
    check.that(output != sorted(output), "decoded frames' pts out of order (decode-order stamps)")
    shown = {f.code for f in probe.frames}
    check.that(
        not (shown & hidden), f"codes {sorted(hidden)} (negative pts) hidden by the edit list", shown & hidden
    )
    return _finish(quirk, check)


@_quirk("avi_h264_bframes_mp3")
def _avi_h264(name: str, folder: Path) -> Quirk:
    """libx264 with B-frames muxed straight into AVI (which stores no pts: the stamps are decode order), MP3."""
    video = _h264(time_base=Fraction(1, 25))
    audio = _Audio("libmp3lame", 44_100, "stereo", 0.0, 2.0)
    quirk, probe, check, _ = _plain(name, folder, video, audio, fmt="avi", b_frames=True, slack=True)
    check.that(quirk.time_slack_frames >= 1, "a reorder delay", quirk.time_slack_frames)
    output = [f.pts for f in probe.frames if f.pts is not None]
    check.that(output != sorted(output), "decoded frames' pts out of order (decode-order stamps)")
    return _finish(quirk, check)


@_quirk("avi_mpeg4_bframes_ac3")
def _avi_mpeg4(name: str, folder: Path) -> Quirk:
    """MPEG-4 Part 2 with B-frames in AVI, AC-3 audio. The option is "bf" (AVCodecContext.max_b_frames); a
    "max_b_frames" option is not an option name and silently does nothing."""
    video = _Video("mpeg4", _regular(2.0, 25), 25, options={"bf": "2"}, time_base=Fraction(1, 25))
    audio = _Audio("ac3", 48_000, "stereo", 0.0, 2.0)
    quirk, _, check, _ = _plain(name, folder, video, audio, fmt="avi", b_frames=True, slack=True)
    check.that(quirk.time_slack_frames >= 1, "a reorder delay", quirk.time_slack_frames)
    return _finish(quirk, check)


@_quirk("avi_mjpeg_fullrange_pcm")
def _avi_mjpeg(name: str, folder: Path) -> Quirk:
    """Motion JPEG (yuvj420p: full range) in AVI with PCM s16le audio."""
    video = _Video("mjpeg", _regular(2.0, 25), 25, pix_fmt="yuvj420p", time_base=Fraction(1, 25))
    audio = _Audio("pcm_s16le", 48_000, "stereo", 0.0, 2.0)
    quirk, probe, check, _ = _plain(name, folder, video, audio, fmt="avi")
    check.that(all(f.color_range == RANGE_FULL for f in probe.frames), "frames tagged full range")
    check.that(probe.luma[0] <= 5 and probe.luma[1] >= 250, "full-range luma (0..255)", probe.luma)
    return _finish(quirk, check)


@_quirk("avi_cinepak_sparse_15fps")
def _avi_cinepak(name: str, folder: Path) -> Quirk:
    """Cinepak at 15 fps whose AVI index has empty ("no change") entries: only 17 of 38 frame slots hold a picture.

    The AVI muxer fills each gap with an empty chunk; the demuxer skips them, so the stream's pts jump. Frame k is
    on screen from frame_times[k] until frame_times[k + 1] (the last until 38/15 s).
    """
    slots = (0, 1, 2, 5, 6, 7, 11, 12, 20, 21, 22, 23, 24, 29, 30, 33, 37)
    video = _Video(
        "cinepak",
        tuple(s / 15 for s in slots),
        15,
        size=(176, 144),
        pix_fmt="rgb24",
        time_base=Fraction(1, 15),
    )
    quirk, probe, check, _ = _plain(name, folder, video, fmt="avi")
    check.that(
        probe.header_frames == slots[-1] + 1,
        f"{slots[-1] + 1} frame slots in the header",
        probe.header_frames,
    )
    check.that(len(probe.packets) == len(slots), f"{len(slots)} non-empty video chunks", len(probe.packets))
    stamps = [p.pts for p in probe.packets]
    check.that(stamps == list(slots), "pts that jump over the empty entries", stamps)
    return _finish(quirk, check)


@_quirk("mkv_h264_opus")
def _mkv_h264(name: str, folder: Path) -> Quirk:
    video = _h264(time_base=Fraction(1, 25))
    return _simple(name, folder, video, _OPUS, fmt="matroska", b_frames=True)


def _vpx(encoder: str) -> _Video:
    """libvpx (VP8) or libvpx-vp9, fast and single-threaded (see the module docstring), 2 s at 25 fps."""
    options = {"deadline": "realtime", "cpu-used": "8", "threads": "1"}
    return _Video(encoder, _regular(2.0, 25), 25, options=options, time_base=Fraction(1, 25))


@_quirk("webm_vp8_vorbis")
def _webm_vp8(name: str, folder: Path) -> Quirk:
    audio = _Audio("vorbis", 44_100, "stereo", 0.0, 2.0, options={"strict": "experimental"})
    return _simple(name, folder, _vpx("libvpx"), audio, fmt="webm", container="matroska")


@_quirk("webm_vp9_noaudio")
def _webm_vp9(name: str, folder: Path) -> Quirk:
    return _simple(name, folder, _vpx("libvpx-vp9"), fmt="webm", container="matroska")


@_quirk("mkv_av1_opus")
def _mkv_av1(name: str, folder: Path) -> Quirk:
    """AV1 (SVT-AV1 encode; FFmpeg decodes with libdav1d) in Matroska, Opus audio."""
    os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its banner to stderr unless told to be quiet
    video = _Video(
        "libsvtav1", _regular(2.0, 25), 25, options={"preset": "10", "crf": "30"}, time_base=Fraction(1, 25)
    )
    return _simple(name, folder, video, _OPUS, fmt="matroska")


@_quirk("ts_h264_aac_offset")
def _ts(name: str, folder: Path) -> Quirk:
    """MPEG-TS with the usual muxing delay: the streams start near 1.48 s, not 0 (start_offset_s)."""
    video = _h264()
    quirk, _, check, _ = _plain(
        name,
        folder,
        video,
        _AAC,
        fmt="mpegts",
        b_frames=True,
        container_options={"max_delay": "700000"},
        start_offset=lambda probe: probe.start_s,
    )
    check.that(1.0 < quirk.start_offset_s < 2.0, "a video start between 1 and 2 s", quirk.start_offset_s)
    return _finish(quirk, check)


@_quirk("flv_flv1_mp3", "flv_h264_mp3")
def _flv(name: str, folder: Path) -> Quirk:
    """Sorenson H.263 ("flv1"), the classic Flash video, or H.264 with B-frames (composition-time offsets); MP3.

    FLV cannot store negative times, so the muxer shifts every stream by the most negative one (the MP3 encoder's
    priming, or the B-frame delay): the video starts at 0.025 s or 0.08 s, which is start_offset_s.
    """
    h264 = name == "flv_h264_mp3"
    video = _h264(time_base=Fraction(1, 1000)) if h264 else _Video("flv", _regular(2.0, 25), 25)
    audio = _Audio("libmp3lame", 44_100, "stereo", 0.0, 2.0)
    quirk, _, check, _ = _plain(
        name, folder, video, audio, fmt="flv", b_frames=h264, start_offset=lambda probe: probe.start_s
    )
    check.that(
        0.0 < quirk.start_offset_s < 0.1, "a small positive start (the muxer's shift)", quirk.start_offset_s
    )
    return _finish(quirk, check)


def _aac(start_s: float = 0.0, end_s: float = 2.0) -> _Audio:
    return replace(_AAC, start_s=start_s, end_s=end_s)


@_quirk("mp4_5fps", "mp4_120fps")
def _rates(name: str, folder: Path) -> Quirk:
    video = (
        _h264(seconds=3.0, rate=5) if name == "mp4_5fps" else _h264(seconds=1.5, rate=120, size=(176, 144))
    )
    return _simple(name, folder, video, _aac(0.0, video.end_s))


#: irregular gaps (seconds), cycled to make the variable-rate timeline
_VFR_GAPS = (0.033, 0.067, 0.01, 0.09, 0.05, 0.15, 0.02, 0.04, 0.1, 0.025)


@_quirk("mp4_vfr")
def _vfr(name: str, folder: Path) -> Quirk:
    """Variable frame rate: frames at 0, 0.033, 0.1, 0.11, 0.2, ... (irregular gaps) over 3 s.

    MP4 declares no rate: nominal_fps is what FFmpeg derives for the stream (frames / duration).
    """
    times = [0.0]
    while True:
        step = _VFR_GAPS[(len(times) - 1) % len(_VFR_GAPS)]
        if times[-1] + step >= 3.0:
            break
        times.append(round(times[-1] + step, 3))
    video = _h264(rate=30, times=times)
    quirk, _, check, _ = _plain(name, folder, video, _aac(0.0, 3.0), derived_rate=True)
    gaps = {round(b - a, 3) for a, b in itertools.pairwise(times)}
    check.that(len(gaps) >= 5, "irregular frame gaps", gaps)
    return _finish(quirk, check)


@_quirk("mp4_tiny_176x144", "mp4_nonmod16_322x242", "mp4_odd_321x241_yuv444p", "mp4_1080p")
def _sizes(name: str, folder: Path) -> Quirk:
    """A tiny QCIF file; sizes that are no multiple of 16 (H.264 crops), odd ones (needs 4:4:4: 4:2:0 wants
    even sizes); one 1080p second."""
    video = {
        "mp4_tiny_176x144": _h264(size=(176, 144)),
        "mp4_nonmod16_322x242": _h264(size=(322, 242)),
        "mp4_odd_321x241_yuv444p": _h264(size=(321, 241), pix_fmt="yuv444p"),
        "mp4_1080p": _h264(seconds=1.0, size=(1920, 1080), bf=None, options={"preset": "ultrafast"}),
    }[name]
    return _simple(name, folder, video, _aac(0.0, video.end_s))


@_quirk("mp4_sar_4_3")
def _sar(name: str, folder: Path) -> Quirk:
    """Coded 480x360 with 4:3 pixels: shown 640x360. The picture is drawn at 640x360 and squeezed, so the codes
    read back only once the aspect ratio is applied."""
    video = _h264(size=(480, 360), sar=Fraction(4, 3))
    quirk, probe, check, _ = _plain(name, folder, video, _AAC)
    check.that(probe.sar == Fraction(4, 3), "sample aspect ratio 4:3", probe.sar)
    check.that(quirk.display_size == (640, 360), "display size 640x360", quirk.display_size)
    return _finish(quirk, check)


_PROFILES = {
    "mp4_h264_10bit": ("yuv420p10le", "High 10"),
    "mp4_h264_yuv422p": ("yuv422p", "High 4:2:2"),
    "mp4_h264_yuv444p": ("yuv444p", "High 4:4:4 Predictive"),
}


@_quirk(*_PROFILES)
def _pixel_formats(name: str, folder: Path) -> Quirk:
    pix_fmt, profile = _PROFILES[name]
    video = _h264(pix_fmt=pix_fmt)
    quirk, probe, check, _ = _plain(name, folder, video, b_frames=True)
    check.that(probe.profile == profile, f"H.264 profile {profile}", probe.profile)
    if "10" in pix_fmt:
        check.that(probe.luma[1] > 255, "10-bit luma samples (above 255)", probe.luma)
    return _finish(quirk, check)


@_quirk("mp4_h264_full_range", "mp4_h264_limited_range")
def _ranges(name: str, folder: Path) -> Quirk:
    """yuv420p with full-range samples flagged full (FFmpeg reads it as yuvj420p), versus limited range flagged
    limited (with BT.709 tags, without which x264 writes no range flag at all)."""
    full = name.endswith("full_range")
    video = _h264(color_range=RANGE_FULL if full else RANGE_LIMITED, tag_bt709=not full)
    quirk, probe, check, _ = _plain(name, folder, video, pix_fmt="yuvj420p" if full else "yuv420p")
    wanted = RANGE_FULL if full else RANGE_LIMITED
    ranges = {f.color_range for f in probe.frames}
    check.that(ranges == {wanted}, f"frames tagged color_range {wanted}", ranges)
    dark, bright = probe.luma
    if full:
        check.that(dark <= 5 and bright >= 250, "full-range luma (0..255)", probe.luma)
    else:
        check.that(dark >= 12 and bright <= 240, "limited-range luma (16..235)", probe.luma)
    return _finish(quirk, check)


@_quirk("mp4_h264_interlaced")
def _interlaced(name: str, folder: Path) -> Quirk:
    """Interlaced coding (x264 with +ilme+ildct): every frame is flagged interlaced. The picture itself is
    progressive (both fields from one instant)."""
    video = _h264(options={"flags": "+ilme+ildct"})
    quirk, probe, check, _ = _plain(name, folder, video, _AAC)
    check.that(all(f.interlaced for f in probe.frames), "every frame flagged interlaced")
    return _finish(quirk, check)


@_quirk("mp4_rotated_cw", "mp4_rotated_ccw")
def _rotated(name: str, folder: Path) -> Quirk:
    """Coded 320x240 with a display matrix: shown 240x320. "cw": a player turns the picture clockwise (PyAV's
    rotation -90, the legacy `rotate=90` tag of a phone held upright); "ccw": counter-clockwise (rotation 90).
    The picture is drawn upright at the display size, so codes read back only once the rotation is applied."""
    rotation = -90 if name.endswith("_cw") else 90
    video = _h264(rotation=rotation)
    quirk, probe, check, _ = _plain(name, folder, video, _AAC)
    rotations = {f.rotation for f in probe.frames}
    check.that(rotations == {rotation}, f"frames with rotation {rotation}", rotations)
    check.that(quirk.display_size == (240, 320), "display size 240x320", quirk.display_size)
    return _finish(quirk, check)


def _mp4_edits(path: Path) -> dict[str, tuple[int, list[tuple[int, int]]]]:
    """{handler ('vide', 'soun'): (media timescale, [(segment duration, media time), ...])} from an MP4's boxes."""

    def boxes(data: bytes, start: int, end: int) -> Iterator[tuple[bytes, int, int]]:
        while start + 8 <= end:
            size, kind = struct.unpack(">I4s", data[start : start + 8])
            header = 8
            if size == 1:
                size, header = struct.unpack(">Q", data[start + 8 : start + 16])[0], 16
            elif size == 0:
                size = end - start
            yield kind, start + header, start + size
            start += size

    data = path.read_bytes()
    found: dict[str, tuple[int, list[tuple[int, int]]]] = {}
    for kind, lo, hi in boxes(data, 0, len(data)):
        if kind != b"moov":
            continue
        for trak, tlo, thi in boxes(data, lo, hi):
            if trak != b"trak":
                continue
            handler, timescale, entries = "", 0, []
            for child, clo, chi in boxes(data, tlo, thi):
                if child == b"edts":
                    for elst, elo, _ in boxes(data, clo, chi):
                        if elst != b"elst":
                            continue
                        version = data[elo]
                        (count,) = struct.unpack(">I", data[elo + 4 : elo + 8])
                        layout, step = (">QqI", 20) if version == 1 else (">IiI", 12)
                        for i in range(count):
                            duration, media_time, _ = struct.unpack(
                                layout, data[elo + 8 + i * step : elo + 8 + (i + 1) * step]
                            )
                            entries.append((duration, media_time))
                if child == b"mdia":
                    for part, plo, _ in boxes(data, clo, chi):
                        if part == b"mdhd":
                            version = data[plo]
                            offset = plo + (20 if version == 1 else 12)
                            (timescale,) = struct.unpack(">I", data[offset : offset + 4])
                        if part == b"hdlr":
                            handler = data[plo + 8 : plo + 12].decode("latin-1")
            found[handler] = (timescale, entries)
    return found


@_quirk("mp4_editlist_cut_0_5s")
def _editlist(name: str, folder: Path) -> Quirk:
    """An MP4 whose edit list cuts the first 0.5 s of the encoded video (20 fps: codes 0-9, at negative times, are
    decoded for reference but never shown; code 10 is the first frame on screen, at 0)."""
    video = _h264(rate=20, times=[k / 20 - 0.5 for k in range(50)])
    hidden = frozenset(range(10))
    quirk, probe, check, _ = _plain(name, folder, video, _AAC, b_frames=True, unreliable=hidden)
    timescale, edits = _mp4_edits(quirk.path)["vide"]
    media_times = [media for _, media in edits if media >= 0]
    check.that(
        len(media_times) == 1 and media_times[0] / timescale >= 0.5,
        "a video edit list that starts the presentation 0.5 s (plus the B-frame delay) into the media",
        edits,
    )
    shown = {f.code for f in probe.frames}
    check.that(not (shown & hidden), "codes 0-9 (before the edit) not shown", sorted(shown & hidden))
    return _finish(quirk, check)


_AUDIO_VARIANTS: dict[str, tuple[str, _Audio, float]] = {
    # name: (container format, audio, video seconds)
    "mp4_aac_mono_8k": ("mp4", _Audio("aac", 8_000, "mono", 0.0, 2.0), 2.0),
    "mp4_ac3_5_1": ("mp4", _Audio("ac3", 48_000, "5.1", 0.0, 2.0), 2.0),
    "mkv_pcm_96k": ("matroska", _Audio("pcm_s16le", 96_000, "stereo", 0.0, 2.0), 2.0),
    "mp4_audio_starts_late": ("mp4", _Audio("aac", 48_000, "stereo", 1.0, 3.0), 3.0),
    "mp4_audio_ends_early": ("mp4", _Audio("aac", 48_000, "stereo", 0.0, 2.0), 3.0),
}


@_quirk(*_AUDIO_VARIANTS)
def _audio_variants(name: str, folder: Path) -> Quirk:
    """Audio that differs from the usual 48 kHz stereo AAC covering the video: mono 8 kHz, 5.1 AC-3, 96 kHz PCM,
    a track that starts 1 s after the video, one that ends 1 s before it."""
    fmt, audio, seconds = _AUDIO_VARIANTS[name]
    video = _h264(seconds=seconds, time_base=Fraction(1, 25) if fmt == "matroska" else Fraction(1, 90_000))
    return _simple(name, folder, video, audio, fmt=fmt)


@_quirk("mp4_no_audio")
def _no_audio(name: str, folder: Path) -> Quirk:
    return _simple(name, folder, _h264(), b_frames=True)


@_quirk("mp4_damaged")
def _damaged(name: str, folder: Path) -> Quirk:
    """The baseline (3 s, a keyframe every second) with garbage written over the video samples of a stretch in the
    middle of the file (the AAC samples interleaved there are left intact, so the audio stays as specified).

    Codes from the first damaged packet (decode order) up to the next keyframe are unreliable: FFmpeg reports
    errors for the damaged packets and conceals the rest with stale pictures. Everything before and from the next
    keyframe on decodes intact.
    """
    video = _h264(seconds=3.0, options={"g": "25", "keyint_min": "25"})
    audio = _aac(0.0, 3.0)
    path = folder / f"{name}.mp4"
    _encode(path, "mp4", video, audio)
    clean = _probe(path)
    rate = float(video.rate)
    # (code, packet) in decode order
    order = [(round(clean.seconds(p.pts) * rate), p) for p in clean.packets if p.pts is not None]
    first = next(i for i, (code, packet) in enumerate(order) if code >= 30 and not packet.key)
    damaged = order[first : first + 6]
    after = next(i for i, (_, packet) in enumerate(order) if i >= first + len(damaged) and packet.key)
    check_ok = all(not packet.key for _, packet in damaged)
    rng = np.random.default_rng(20240601)
    data = bytearray(path.read_bytes())
    for _, packet in damaged:
        data[packet.pos : packet.pos + packet.size] = rng.integers(
            0, 256, packet.size, dtype=np.uint8
        ).tobytes()
    path.write_bytes(bytes(data))
    # from the first damaged packet to the next keyframe, and anything shown before that keyframe but decoded after
    unreliable = frozenset(code for code, _ in order[first:after]) | frozenset(
        code for code, _ in order[after:] if code < order[after][0]
    )
    probe = _probe(path)
    quirk = Quirk(
        name=name,
        path=path,
        frame_times=list(video.times),
        nominal_fps=rate,
        display_size=video.display_size,
        audio=_spec(audio),
        time_slack_frames=0,
        unreliable_codes=unreliable,
    )
    check = _verify(
        quirk,
        probe,
        codec="h264",
        pix_fmt="yuv420p",
        container="mp4",
        coded_size=video.size,
        stale_pictures=True,
    )
    shown = {(round(probe.seconds(f.pts) * rate), f.code) for f in probe.frames if f.pts is not None}
    wrong = {t for t, code in shown if t != code}
    check.that(check_ok, "damage confined to non-key video packets")
    check.that(probe.errors > 0 or bool(wrong), "visible damage (decode errors or wrong pictures)")
    check.that(
        wrong <= unreliable, "wrong pictures only where the damage reaches", sorted(wrong - unreliable)
    )
    return _finish(quirk, check)


@_quirk("avi_truncated")
def _truncated(name: str, folder: Path) -> Quirk:
    """An AVI (MPEG-4 Part 2, PCM mono) cut at half its bytes: the header still promises 75 frames and the index
    at the end is gone. Codes whose data reach past the cut are unreliable; the audio ends where its last whole
    chunk does."""
    video = _Video("mpeg4", _regular(3.0, 25), 25, options={"g": "25"}, time_base=Fraction(1, 25))
    audio = _Audio("pcm_s16le", 22_050, "mono", 0.0, 3.0)
    path = folder / f"{name}.avi"
    _encode(path, "avi", video, audio)
    whole = _probe(path)
    cut = path.stat().st_size // 2
    with path.open("r+b") as handle:
        handle.truncate(cut)
    unreliable = frozenset(
        round(whole.seconds(p.pts) * 25)
        for p in whole.packets
        if p.pts is not None and p.pos + p.size + 8 > cut
    )
    audio_end = max(end for _, end, pos, size in whole.audio_packets if pos + size + 8 <= cut)
    probe = _probe(path)
    quirk = Quirk(
        name=name,
        path=path,
        frame_times=list(video.times),
        nominal_fps=25.0,
        display_size=video.display_size,
        audio=AudioSpec("pcm_s16le", audio.rate, 1, 0.0, round(audio_end, 6)),
        time_slack_frames=0,
        unreliable_codes=unreliable,
    )
    check = _verify(quirk, probe, codec="mpeg4", pix_fmt="yuv420p", container="avi", coded_size=video.size)
    check.that(probe.header_frames == 75, "a header that still promises 75 frames", probe.header_frames)
    check.that(20 <= len(unreliable) <= 55, "about half the codes lost to the cut", len(unreliable))
    shown = {f.code for f in probe.frames}
    check.that(max(shown) < 75 - len(unreliable) + 1, "nothing decoded past the cut", max(shown))
    return _finish(quirk, check)


QUIRKS: tuple[str, ...] = tuple(_MAKERS)


def build(name: str, folder: Path) -> Quirk:
    """Write quirk `name`'s file into folder, verify it has its quirk (AssertionError if not), return its truth."""
    try:
        maker = _MAKERS[name]
    except KeyError:
        raise KeyError(f"unknown quirk {name!r}; known: {', '.join(QUIRKS)}") from None
    folder.mkdir(parents=True, exist_ok=True)
    return maker(name, folder)
