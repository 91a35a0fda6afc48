"""Rendering a window into every aspect's clip: decode once, feed every encoder from the same frames.

Frames stay in yuv420p from the decoder to the encoders: cropping is slicing the three planes, so there is no
colour conversion per output (the source's pixels pass through untouched apart from the crop and any downscale).
The audio is the same in every clip, so it is read, made ready and encoded once (workers.media.audio), and its
packets are copied into each clip. Each clip's cover is picked from its own frames as they
are encoded (workers.media.cover).

Kept whole: one decoding pass feeds every output; the pass, each output's crop, scale and letterbox, the tick
timing and the shared audio are one loop over the same frames.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import math
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import av.error

from core.errors import DiskFull, ReelgenError, RenderError, UnreadableVideo
from workers.geometry import CropRect
from workers.media.audio import encoded_audio
from workers.media.containers import ColourTags, MediaLimits, Timing
from workers.media.cover import Candidate, CoverPicker, CoverShape
from workers.media.planes import Planes, frame_planes
from workers.media.sound import SoundOptions, SoundReport
from workers.media.video import VideoSource

log = logging.getLogger(__name__)

# Clips run at a constant frame rate: the source's nominal rate, brought within these bounds by a whole factor
# (a 5 fps source plays at 15 fps, each frame held three ticks; 120 fps plays at 60, every other frame shown),
# so the cadence stays even. Below 15 fps motion stutters in players that expect video; above 60 adds bytes no
# placement shows.
MIN_OUTPUT_FPS = 15
MAX_OUTPUT_FPS = 60
# Rates that cameras and editors mean when the container says nearly that (a phone's 29.97 averaged to 29.94).
_STANDARD_RATES = tuple(
    Fraction(r) for r in ("24000/1001", "24", "25", "30000/1001", "30", "48", "50", "60000/1001", "60")
)


@dataclass(frozen=True)
class EncodeOptions:
    crf: int = 21
    preset: str = "veryfast"
    threads: int = 1
    audio_bitrate: int = 128_000
    sound: SoundOptions = field(default_factory=SoundOptions)


@dataclass
class OutputSpec:
    """One clip to write: its aspect label, output size, and where the crop sits at each source time.

    When padded, crop_at gives the region shown (any aspect); it is letterboxed over a blurred fill, at
    picture_share of the size that fits the output (workers.framing.title_safe).
    """

    aspect: str
    width: int
    height: int
    crop_at: Callable[[float], CropRect]
    path: Path
    padded: bool = False
    picture_share: float = 1.0
    crops: list[tuple[float, CropRect]] = field(default_factory=list)
    frames: int = 0
    #: where to write the clip's cover (workers.media.cover), chosen among these moments; None: no cover
    cover_path: Path | None = None
    cover_candidates: Sequence[Candidate] = ()
    #: the source time of the cover's frame, and whether it shows the product whole, once written
    cover_t: float | None = None
    cover_whole: bool = False


def output_rate(source_fps: float) -> Fraction:
    """The clips' constant frame rate for a source whose nominal rate is source_fps (see MIN_OUTPUT_FPS)."""
    rate = Fraction(source_fps).limit_denominator(1001)
    nearest = min(_STANDARD_RATES, key=lambda r: abs(r - rate))
    if abs(nearest - rate) <= nearest / 100:
        return nearest
    if rate < MIN_OUTPUT_FPS:
        rate *= math.ceil(MIN_OUTPUT_FPS / rate)
    elif rate > MAX_OUTPUT_FPS:
        rate /= math.ceil(rate / MAX_OUTPUT_FPS)
    return rate.limit_denominator(1001)


def output_ticks(start: float, end: float, rate: Fraction) -> list[float]:
    """Source times of a clip's frames: one every 1/rate from start, as many as fill [start, end) to within
    one frame."""
    count = max(1, round((end - start) * rate))
    return [start + float(k / rate) for k in range(count)]


class _ClipWriter:
    """One output container with its video encoder and (optional) the window's encoded audio."""

    def __init__(
        self,
        spec: OutputSpec,
        rate: Fraction,
        options: EncodeOptions,
        audio: bytes | None,
        colour: ColourTags,
    ) -> None:
        self.spec = spec
        self.colour = colour
        spec.path.parent.mkdir(parents=True, exist_ok=True)
        self.container = av.open(str(spec.path), mode="w", format="mp4", options={"movflags": "+faststart"})
        video = self.container.add_stream("libx264", rate=rate)
        video.width, video.height = spec.width, spec.height
        video.pix_fmt = "yuv420p"
        # one unit a frame: every frame's time is exact, which a fixed clock (90 kHz) cannot give 23.976 fps
        self.frame_time_base = 1 / rate
        video.time_base = self.frame_time_base
        video.codec_context.time_base = self.frame_time_base
        video.codec_context.thread_count = options.threads
        video.options = {"crf": str(options.crf), "preset": options.preset}
        # the source's Y'CbCr pass through unconverted, so the clip carries the source's colour description;
        # untagged, a player would pick a matrix by the clip's size, not the source's
        context = video.codec_context
        context.colorspace, context.color_primaries, context.color_trc = colour
        context.color_range = 1  # limited: VideoSource.to_yuv420 converts full-range pictures
        self.video = video
        self.audio: av.container.InputContainer | None = None
        if audio is not None:
            self.audio = av.open(io.BytesIO(audio), mode="r", format="mp4")
            self.container.add_stream_from_template(self.audio.streams.audio[0])

    def write_video(self, planes: Planes, tick: int) -> None:
        frame = planes.to_frame()
        frame.pts = tick
        frame.time_base = self.frame_time_base
        self.container.mux(self.video.encode(frame))
        self.spec.frames += 1

    def close(self) -> None:
        """Flush the video encoder, copy the audio packets in and finish the file."""
        self.container.mux(self.video.encode(None))
        if self.audio is not None:
            stream = self.container.streams.audio[0]
            for packet in self.audio.demux(self.audio.streams.audio[0]):
                if packet.dts is not None:  # the demuxer's empty end-of-stream packet
                    packet.stream = stream
                    self.container.mux(packet)
        self.container.close()
        self.discard_audio()

    def discard_audio(self) -> None:
        if self.audio is not None:
            self.audio.close()
            self.audio = None


@dataclass(frozen=True)
class Rendered:
    """What a render did beyond the clips: their frame rate and the source's repairs (VideoSource.repairs)."""

    rate: Fraction
    repairs: dict[str, int]
    #: what was done to the window's sound; None when the clips are silent
    audio: SoundReport | None = None


# Frames a clip's encoder may fall behind the decoder by: bounds memory (decoded pictures are shared by all
# clips) while letting the encoders' speeds differ within a few frames.
FRAME_QUEUE = 8
_FINISH, _ABANDON = "finish", "abandon"


class _ClipThread(threading.Thread):
    """Crops, scales and encodes one clip's frames as the decoder hands them over.

    Each clip has its own thread, so one window's six encoders use every core that is free (PyAV encodes
    without the GIL): a worker whose render is the last work left on its node is not held to one core, and
    each encoder keeps the configured codec thread count. Pictures reach a clip in tick order through its
    queue, each with its output tick and that tick's source time.
    """

    def __init__(self, writer: _ClipWriter) -> None:
        super().__init__(name=f"clip-{writer.spec.aspect}", daemon=True)
        self.writer = writer
        self.frames: queue.Queue[tuple[Planes, int, float] | str] = queue.Queue(maxsize=FRAME_QUEUE)
        self.error: Exception | None = None

    def run(self) -> None:
        spec = self.writer.spec
        shape = CoverShape(spec.width, spec.height, spec.padded, spec.picture_share)
        cover = None if spec.cover_path is None else CoverPicker(spec.cover_candidates, shape)
        item: tuple[Planes, int, float] | str = ""
        try:
            while isinstance(item := self.frames.get(), tuple):
                planes, tick, t = item
                rect = spec.crop_at(t)
                spec.crops.append((t, rect))
                region = planes.crop(rect)
                picture = (
                    region.letterbox(spec.width, spec.height, spec.picture_share)
                    if spec.padded
                    else region.resize(spec.width, spec.height)
                )
                self.writer.write_video(picture, tick)
                if cover is not None:
                    cover.offer(picture, t, rect)
            if item == _FINISH:
                self.writer.close()
                if cover is not None and spec.cover_path is not None:
                    cover.finish()
                    cover.write(spec.cover_path, self.writer.colour)
                    spec.cover_t, spec.cover_whole = cover.chosen_t, cover.whole
                return
        except Exception as exc:
            self.error = exc
            # keep taking frames until told to stop, so the decoder never blocks on this clip's full queue
            while isinstance(item, tuple):
                item = self.frames.get()
        with contextlib.suppress(av.error.FFmpegError, OSError):
            self.writer.container.close()
        self.writer.discard_audio()


def render_window(
    source_path: Path,
    start: float,
    end: float,
    specs: Sequence[OutputSpec],
    options: EncodeOptions,
    *,
    timing: Timing | None = None,
    limits: MediaLimits | None = None,
) -> Rendered:
    """Decode [start, end) of the source once and write every spec's clip; the specs come back with the crops
    used and frames written.

    Each clip has a constant frame rate (output_rate) and as many frames as fill the window; every output tick
    shows the source frame on screen at that instant. The audio covers the same span.
    """
    error: Exception | None = None
    decoded = False
    with VideoSource(source_path, threads=options.threads, timing=timing, limits=limits) as source:
        rate = output_rate(source.info.fps)
        ticks = output_ticks(start, end, rate)
        seconds = float(len(ticks) / rate)
        try:
            encoded = encoded_audio(source_path, start, seconds, options.audio_bitrate, options.sound)
        except (av.error.FFmpegError, ReelgenError) as exc:
            log.warning("audio of %s unusable, clips will be silent: %s", source_path.name, exc)
            encoded = None
        audio, sound = encoded if encoded is not None else (None, None)
        clips: list[_ClipThread] = []
        try:
            for spec in specs:
                clip = _ClipThread(_ClipWriter(spec, rate, options, audio, source.colour_tags()))
                clip.start()
                clips.append(clip)
        except (av.error.FFmpegError, ValueError, OSError) as exc:
            error = _encode_error(exc, source_path, specs)
        try:
            tick = 0
            for _, raw, count in source.held_frames(ticks) if error is None else ():
                if any(clip.error for clip in clips):
                    break
                if not count:
                    continue
                planes = frame_planes(source.to_yuv420(raw), source.info.rotation)
                for _ in range(count):
                    for clip in clips:
                        clip.frames.put((planes, tick, ticks[tick]))
                    tick += 1
            decoded = error is None
        except (av.error.FFmpegError, ValueError) as exc:
            error = _decode_error(exc, source_path, specs, start)
        finally:
            # anything but a complete decode (an error, a time limit) abandons the clips instead of finishing them
            ending = _FINISH if decoded and not any(clip.error for clip in clips) else _ABANDON
            for clip in clips:
                clip.frames.put(ending)
            for clip in clips:
                clip.join()
        if source.repairs:
            log.warning("%s: repaired while rendering: %s", source_path.name, dict(source.repairs))
    if error is not None:
        raise error
    failed = next((clip.error for clip in clips if clip.error), None)
    if isinstance(failed, (av.error.FFmpegError, ValueError)):
        raise _encode_error(failed, source_path, specs) from failed
    if failed is not None:
        raise failed  # not an encoder's: a bug keeps its own type
    for spec in specs:
        if spec.frames == 0:
            raise RenderError(f"{source_path.name}: no frames in [{start:.2f}, {end:.2f}) s")
    return Rendered(rate=rate, repairs=dict(source.repairs), audio=sound)


def _disk_full(exc: Exception, source_path: Path, specs: Sequence[OutputSpec]) -> DiskFull | None:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        folder = specs[0].path.parent if specs else source_path.parent
        return DiskFull(f"no space left in the work folder {folder} for the clips ({exc})")
    return None


def _decode_error(
    exc: Exception, source_path: Path, specs: Sequence[OutputSpec], start: float
) -> ReelgenError:
    """The named error for a failure on the decoding side (reading, converting the source's pictures)."""
    full = _disk_full(exc, source_path, specs)
    if full is not None:
        return full
    return UnreadableVideo(f"{source_path.name}: decoding the window from {start:.2f} s failed ({exc})")


def _encode_error(exc: Exception, source_path: Path, specs: Sequence[OutputSpec]) -> ReelgenError:
    """The named error for an encoder's or the clip file's failure."""
    return _disk_full(exc, source_path, specs) or RenderError(f"{source_path.name}: encoding failed ({exc})")
