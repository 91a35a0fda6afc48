"""The one video-reading layer for sampling, rendering, the report and `reelgen probe`.

Everything goes through `open_media` (workers.media.containers) and `VideoSource`, so every stage agrees on:
- what may be opened: real media containers only, through the `file` protocol (FFmpeg would otherwise sniff any
  format, and some of them read other files named inside the source or render a text file as a picture);
- time: presentation timestamps in seconds on the source's own timeline, in presentation order, repaired where
  the file is wrong (decode-order, missing, repeated or backward timestamps; see `Timing`);
- geometry: the display-matrix rotation and the sample aspect ratio are applied to every frame,
so a crop planned on sampled frames lands on the same pixels when rendered.

Kept whole: one open container's state (the timing verdict, the repairs counted, the keyframe index, the
frame-size check) is what sampling, seeking, the on-screen ticks and the audio all read; split by subject, that
state would be handed between modules on every frame.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import av
import av.container
import av.error
import cv2
import numpy as np
from av.video.reformatter import VideoReformatter

from core.errors import UnreadableVideo, VideoLimitExceeded
from workers.media.containers import (
    BT601,
    BT709,
    UNSPECIFIED,
    ColourTags,
    Frame,
    MediaLimits,
    Timing,
    VideoInfo,
    open_media,
    quarter_turns,
)

log = logging.getLogger(__name__)

#: decoder output formats whose first plane is full-resolution 8-bit luma
PLANAR_YUV = frozenset({"yuv420p", "yuvj420p", "yuv422p", "yuvj422p", "yuv444p", "yuvj444p"})

# Non-reference frames shown this long before a sampling pass's first target are not decoded (see _decoded);
# the frame on screen at that target lies within the margin unless frames are that far apart.
PREROLL_MARGIN_S = 1.0

# Packets in a row that fail to decode before the file counts as damaged beyond use: a few bad packets are
# concealed or skipped (their frames are held over), a long run means nothing after it decodes.
MAX_BAD_PACKETS = 24

# libavcodec's AV_CODEC_PROP_REORDER: the codec may output frames in another order than it takes packets
_CODEC_PROP_REORDER = 1 << 3

# Packets decoded at open to tell the timing of a codec that reorders frames: a few GOPs' worth of B-frames.
TIMING_PACKETS = 24

# Frames that stop this long before the container's stated end mean the file was cut short.
TRUNCATED_SLACK_S = 1.0

# Decoding for analysis skips the in-loop deblocking filter (H.264, HEVC, VP9 honour it), which is about a
# fifth of H.264's decode (measured in docs/performance.md). Its smoothing of block edges is not seen once
# analysis shrinks the picture (the locator's 768 px, text at 736, the timing greys at a quarter); the render
# decodes with it.
ANALYSIS_DECODER_OPTIONS = {"skip_loop_filter": "all"}

SkipFrame = Literal["NONE", "DEFAULT", "NONREF", "BIDIR", "NONINTRA", "NONKEY", "ALL"]

# Timestamp repairs, as counted in VideoSource.repairs and printed by `reelgen probe`.
REPAIR_MISSING = "missing timestamp: previous + one frame"
REPAIR_BACKWARD = "repeated or backward timestamp: moved after the previous frame"
REPAIR_DAMAGED = "damaged packet skipped"


def _nearest(sorted_times: Sequence[float], t: float) -> tuple[float, float]:
    """The element of sorted_times nearest to t, and its distance."""
    i = bisect.bisect_left(sorted_times, t)
    candidates = [sorted_times[j] for j in (i - 1, i) if 0 <= j < len(sorted_times)]
    best = min(candidates, key=lambda c: abs(c - t))
    return best, abs(best - t)


def _display_size(frame: av.VideoFrame, sar: Fraction | None) -> tuple[int, int]:
    """The (width, height) a frame shows at before rotation: its width stretched by the sample aspect ratio."""
    if not sar or sar == 1:
        return frame.width, frame.height
    return max(2, round(frame.width * sar / 2) * 2), frame.height


def _sample_aspect(stream: av.video.stream.VideoStream) -> Fraction | None:
    sar = stream.sample_aspect_ratio or stream.codec_context.sample_aspect_ratio
    if not sar or sar <= 0 or not Fraction(1, 16) <= sar <= 16:
        return None  # unset, or too odd to be meant
    return Fraction(sar)


def _range_options(frame: av.VideoFrame) -> dict[str, Any]:
    """swscale takes a frame's colour range as unspecified (limited) unless told: full-range pictures that are
    not in a yuvj format (H.264 with the full-range flag, most phone videos) would come out washed out."""
    if frame.color_range == 2 and not frame.format.name.startswith("yuvj"):
        return {"src_color_range": "JPEG"}
    return {}


class VideoSource:
    """An open video file. Use as a context manager; not shared between processes."""

    def __init__(
        self,
        path: Path,
        *,
        threads: int = 1,
        timing: Timing | None = None,
        limits: MediaLimits | None = None,
        deblock: bool = True,
    ) -> None:
        """timing: the verdict of an earlier VideoInfo of this file, so that it is not worked out again;
        limits: checked from the headers before anything is decoded, then on every frame; deblock=False: the
        decoder skips its in-loop deblocking filter (see ANALYSIS_DECODER_OPTIONS)."""
        self.path = path
        self._limits = limits
        self._deblock = deblock
        self._container = open_media(path)
        try:
            if not self._container.streams.video:
                raise UnreadableVideo(f"{path.name}: has no video stream")
            self._stream = self._container.streams.video[0]
            self._configure(threads)
            self._keyframes: list[float] | None = None
            self._checked_size = (0, 0)
            # one swscale context for every conversion of this source: a frame's own reformat() builds a new
            # one per call, as costly as the scaling itself (a 720p frame to 768 px wide: 4.1 ms a frame
            # against 2.2 ms with the context kept)
            self._reformatter = VideoReformatter()
            #: timestamp repairs and skipped packets met so far, by kind (see REPAIR_*)
            self.repairs: Counter[str] = Counter()
            self.info = self._probe(timing)
        except BaseException:
            self._container.close()
            raise

    def __enter__(self) -> VideoSource:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._container.close()

    def _probe(self, timing: Timing | None) -> VideoInfo:
        stream = self._stream
        self._sar = _sample_aspect(stream)
        self._check_headers()
        self._timing = timing if timing is not None else self._timing_of_stream()
        first = self._first_frame()
        if self._limits is not None:
            self._check_frame(first, 0.0)
        rotation = round(first.rotation or 0)
        shown_w, shown_h = _display_size(first, self._sar)
        self._shown_size = (shown_w, shown_h)
        width, height = (shown_h, shown_w) if quarter_turns(rotation) % 2 else (shown_w, shown_h)
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        fps = float(rate) if rate else 0.0
        time_base = stream.time_base
        start_s = float(stream.start_time * time_base) if stream.start_time is not None and time_base else 0.0
        if stream.duration is not None and time_base is not None:
            duration = float(stream.duration * time_base)
        elif self._container.duration is not None:
            duration = self._container.duration / av.time_base - max(0.0, start_s)
        else:
            duration = 0.0
        if not (fps > 0 and math.isfinite(fps)) or duration <= 0:
            raise UnreadableVideo(f"{self.path.name}: no usable frame rate or duration in the container")
        if self._limits is not None and duration > self._limits.max_duration_s:
            raise VideoLimitExceeded(
                f"{self.path.name}: {duration:.1f} s is longer than the {self._limits.max_duration_s:.0f} s limit"
            )
        self._step = 1.0 / fps
        self._seek(start_s)
        return VideoInfo(
            width=width,
            height=height,
            fps=fps,
            duration_s=duration,
            has_audio=bool(self._container.streams.audio),
            rotation=rotation,
            codec=stream.codec_context.name,
            start_s=start_s,
            timing=self._timing,
        )

    def _check_headers(self) -> None:
        if self._limits is None:
            return
        context = self._stream.codec_context
        if context.width and context.height:
            shown = round(context.width * (self._sar or 1))
            self._limits.check_size(self.path.name, shown, context.height, "the stream's header says")
        declared = self._container.duration
        if declared is not None and declared / av.time_base > self._limits.max_duration_s:
            raise VideoLimitExceeded(
                f"{self.path.name}: {declared / av.time_base:.1f} s is longer than the "
                f"{self._limits.max_duration_s:.0f} s limit"
            )

    def _timing_of_stream(self) -> Timing:
        """PTS unless this file's pts are in decode order (see Timing), judged as FFmpeg's best-effort
        timestamp does: over the first frames, do the pts or the dts go backwards more often?

        Only codecs that reorder frames can have the fault, so only their first frames are decoded here (some
        tens of milliseconds for HD H.264); the stages after the first take the verdict from VideoInfo instead.
        """
        if not self._stream.codec_context.codec.properties & _CODEC_PROP_REORDER:
            return Timing.PTS
        faulty_pts = faulty_dts = 0
        last_pts = last_dts = None
        try:
            for count, packet in enumerate(self._container.demux(self._stream)):
                if count == TIMING_PACKETS:
                    break
                for frame in packet.decode():
                    if self._limits is not None:
                        self._check_frame(frame, 0.0)
                    if frame.pts is not None and last_pts is not None and frame.pts <= last_pts:
                        faulty_pts += 1
                    if frame.dts is not None and last_dts is not None and frame.dts <= last_dts:
                        faulty_dts += 1
                    last_pts = frame.pts if frame.pts is not None else last_pts
                    last_dts = frame.dts if frame.dts is not None else last_dts
        except av.error.FFmpegError as exc:
            raise UnreadableVideo(f"{self.path.name}: the video stream does not decode ({exc})") from exc
        finally:
            self._seek_start()
        return Timing.DTS if faulty_pts > faulty_dts else Timing.PTS

    def _seek_start(self) -> None:
        self._container.seek(0, stream=self._stream, backward=True, any_frame=False)

    def _first_frame(self) -> av.VideoFrame:
        try:
            for frame in self._container.decode(self._stream):
                return frame
        except (av.error.FFmpegError, ValueError) as exc:
            raise UnreadableVideo(f"{self.path.name}: the video stream does not decode ({exc})") from exc
        raise UnreadableVideo(f"{self.path.name}: the video stream has no frames")

    def _seek(self, t: float) -> None:
        """Position the demuxer at a keyframe at or before t (source seconds).

        Demuxers without an index (MPEG-TS and -PS, some FLV and AVI files) search by timestamp and can land
        after t or on a frame that needs earlier ones, which then decodes to nothing: the landing packet is
        checked, and the seek goes further back (doubling) until it lands on a keyframe or at the start.
        """
        tb = self.time_base
        back = 0.0
        while True:
            position = max(0, int((t - back) / tb))
            try:
                self._container.seek(position, stream=self._stream, backward=True, any_frame=False)
            except av.error.FFmpegError:
                self._reopen()  # a demuxer that cannot seek at all is read from the start
                return
            if position == 0:
                return
            landed = next(iter(self._container.demux(self._stream)), None)
            if landed is None or landed.is_keyframe:
                self._container.seek(position, stream=self._stream, backward=True, any_frame=False)
                return
            back = max(1.0, 2 * back)

    def _reopen(self) -> None:
        """The file opened afresh, positioned at its start, with the same decoder settings."""
        threads = self._stream.codec_context.thread_count
        self._container.close()
        self._container = open_media(self.path)
        self._stream = self._container.streams.video[0]
        self._configure(threads)

    def _configure(self, threads: int) -> None:
        """Decoder settings, before the decoder is opened (its options are read only then)."""
        self._stream.thread_type = "AUTO"
        self._stream.codec_context.thread_count = threads
        if not self._deblock:
            self._stream.codec_context.options = dict(ANALYSIS_DECODER_OPTIONS)

    def colour_tags(self) -> ColourTags:
        """The colour description of the source's Y'CbCr: its own tags, or the convention for its size (BT.709
        from 720 lines up, BT.601 below) for each one it leaves unspecified."""
        context = self._stream.codec_context
        default = BT709 if min(self.info.width, self.info.height) >= 720 else BT601
        tags = (context.colorspace, context.color_primaries, context.color_trc)
        return tuple(  # type: ignore[return-value]
            own if own not in (0, UNSPECIFIED) and own is not None else fallback
            for own, fallback in zip(tags, default, strict=True)
        )

    @property
    def can_skip(self) -> bool:
        """Whether decoding may skip frames: with DTS timing a frame's time comes from the packets fed around
        it, so leaving frames out would move the others' times."""
        return self._timing is Timing.PTS

    def _decoded(
        self, start: float, skip_nonref_before: float | None = None
    ) -> Iterator[tuple[float, av.VideoFrame]]:
        """(time, frame) in presentation order, from the keyframe at or before `start` on; times strictly rise.

        With `skip_nonref_before`, non-reference frames shown before that time are not decoded: no other frame
        refers to them, so every frame after decodes to the same pixels. The pre-roll between the keyframe and
        a window's start is up to a whole GOP (10 s with libx264's defaults), and its B-frames are a third or
        more of it. A skip mode the caller set (keyframes only, no non-reference frames) stays in force.
        A packet that does not decode is skipped (its frame is held over by whoever shows frames); a long run
        of them, or a container that stops demuxing, is UnreadableVideo naming the time.
        """
        self._seek(start)
        context = self._stream.codec_context
        limit = skip_nonref_before if context.skip_frame == "DEFAULT" and self.can_skip else None
        tb = self.time_base
        use_dts = self._timing is Timing.DTS
        previous: float | None = None
        bad = 0
        try:
            for packet in self._container.demux(self._stream):
                if limit is not None:
                    early = packet.pts is not None and float(packet.pts * tb) < limit
                    context.skip_frame = "NONREF" if early else "DEFAULT"
                try:
                    frames = packet.decode()
                except av.error.InvalidDataError:
                    bad += 1
                    self.repairs[REPAIR_DAMAGED] += 1
                    where = previous if previous is not None else start
                    if bad > MAX_BAD_PACKETS:
                        raise UnreadableVideo(
                            f"{self.path.name}: damaged at t≈{where:.2f} s ({bad} packets in a row do not decode)"
                        ) from None
                    if bad == 1:  # once per damaged stretch; the count is in self.repairs
                        log.warning("%s: damaged packets near %.2f s skipped", self.path.name, where)
                    continue
                bad = 0
                for frame in frames:
                    if self._limits is not None and (frame.width, frame.height) != self._checked_size:
                        self._check_frame(frame, previous if previous is not None else start)
                    stamp = frame.dts if use_dts else frame.pts
                    if stamp is None:
                        if previous is None:
                            continue  # nothing to count from yet
                        self.repairs[REPAIR_MISSING] += 1
                        t = previous + self._step
                    else:
                        t = float(stamp * tb)
                        if previous is not None and t <= previous:
                            self.repairs[REPAIR_BACKWARD] += 1
                            t = previous + self._step
                    previous = t
                    yield t, frame
        except av.error.FFmpegError as exc:
            where = previous if previous is not None else start
            raise UnreadableVideo(
                f"{self.path.name}: damaged at t≈{where:.2f} s, decoding stopped ({exc})"
            ) from exc
        finally:
            if limit is not None:
                context.skip_frame = "DEFAULT"

    def _check_frame(self, frame: av.VideoFrame, near: float) -> None:
        assert self._limits is not None
        shown_w, shown_h = _display_size(frame, self._sar)
        self._limits.check_size(self.path.name, shown_w, shown_h, f"the frame near {near:.2f} s is")
        self._checked_size = (frame.width, frame.height)

    def _on_screen(
        self, targets: Sequence[float], skip_nonref_before: float | None
    ) -> Iterator[tuple[float, av.VideoFrame, int]]:
        """(time, frame, n): each decoded frame from the one on screen at the first target on, with how many of
        the ascending targets it is the frame on screen for (0 for frames shown only between targets).

        A frame is on screen from its time until the next frame's, so a target takes the last frame at or before
        it (a target before the first decodable frame takes that frame): this holds frames over gaps and
        "no change" entries and drops frames between targets, for variable frame rates too.
        """
        index = 0
        held: tuple[float, av.VideoFrame] | None = None
        for t, frame in self._decoded(targets[0], skip_nonref_before):
            if held is not None:
                # the held frame is on screen for every target before this frame's time
                count = 0
                while index < len(targets) and t > targets[index] + 1e-6:
                    count += 1
                    index += 1
                if index > 0:  # pre-roll frames before the first target's are not wanted
                    yield held[0], held[1], count
                if index == len(targets):
                    return
            held = (t, frame)
        if held is None or (index == 0 and held[0] < targets[0] and self._ends_early(held[0])):
            raise UnreadableVideo(f"{self.path.name}: no frame decodes at or after {targets[0]:.2f} s")
        yield held[0], held[1], len(targets) - index

    def _ends_early(self, last: float) -> bool:
        """Whether a stream whose frames stop at `last` ends well before the container says (a truncated or
        damaged file), rather than showing its last frame to the end."""
        end = self.info.start_s + self.info.duration_s
        return last < end - max(TRUNCATED_SLACK_S, 4 * self._step)

    def _to_rgb(self, frame: av.VideoFrame, width: int | None = None) -> np.ndarray:
        """RGB in display orientation; with `width`, scaled (in the same conversion) to that display width."""
        return self._convert(frame, "rgb24", width)

    def _to_gray(self, frame: av.VideoFrame, width: int) -> np.ndarray:
        if frame.format.name not in PLANAR_YUV or width >= self.info.width:
            return self._convert(frame, "gray", width)
        # the luma plane is the grey picture: an area resize of it skips swscale's full conversion
        plane = frame.planes[0]
        luma = np.frombuffer(memoryview(plane), np.uint8).reshape(frame.height, plane.line_size)[
            :, : frame.width
        ]
        return self._upright(cv2.resize(luma, self._coded_size(width), interpolation=cv2.INTER_AREA))

    def _convert(self, frame: av.VideoFrame, pixel_format: str, width: int | None) -> np.ndarray:
        if width is None or width >= self.info.width:
            shown_w, shown_h = _display_size(frame, self._sar)
            ranged = _range_options(frame)
            if (shown_w, shown_h) == (frame.width, frame.height) and not ranged:
                return self._upright(frame.to_ndarray(format=pixel_format))
            converted = self._reformatter.reformat(
                frame, width=shown_w, height=shown_h, format=pixel_format, **ranged
            )
            return self._upright(converted.to_ndarray())
        coded_w, coded_h = self._coded_size(width)
        converted = self._reformatter.reformat(
            frame, width=coded_w, height=coded_h, format=pixel_format, **_range_options(frame)
        )
        return self._upright(converted.to_ndarray())

    def to_yuv420(self, frame: av.VideoFrame) -> av.VideoFrame:
        """The frame as limited-range yuv420p at its shown size (pixel aspect applied, even sides), not rotated:
        what the render crops from."""
        shown_w, shown_h = _display_size(frame, self._sar)
        width, height = shown_w - shown_w % 2, shown_h - shown_h % 2
        ranged = _range_options(frame)
        if frame.format.name == "yuv420p" and (width, height) == (frame.width, frame.height) and not ranged:
            return frame
        return self._reformatter.reformat(
            frame, width=width, height=height, format="yuv420p", dst_color_range="MPEG", **ranged
        )

    def _coded_size(self, display_width: int) -> tuple[int, int]:
        """The coded (width, height) that shows as `display_width` wide once rotated upright."""
        height = max(2, round(self.info.height * display_width / self.info.width))
        return (height, display_width) if quarter_turns(self.info.rotation) % 2 else (display_width, height)

    def _upright(self, pixels: np.ndarray) -> np.ndarray:
        turns = quarter_turns(self.info.rotation)
        return np.ascontiguousarray(np.rot90(pixels, turns)) if turns else pixels

    def keyframe_times(self) -> list[float]:
        """Presentation times of the video's keyframes, read from packets without decoding."""
        if self._keyframes is None:
            times = []
            try:
                self._container.seek(0, stream=self._stream, backward=True)
                for packet in self._container.demux(self._stream):
                    if packet.is_keyframe and packet.pts is not None and packet.time_base is not None:
                        times.append(float(packet.pts * packet.time_base))
            except (av.error.FFmpegError, ValueError) as exc:
                raise UnreadableVideo(f"{self.path.name}: the container does not demux ({exc})") from exc
            self._keyframes = sorted(times)
        return self._keyframes

    def sample_fast(self, times: Sequence[float], period: float, width: int | None = None) -> list[Frame]:
        """Like `sample`, decoding as little as lets every sample land within `period` of its target.

        Keyframes only when every target has a keyframe that close (short keyframe intervals); otherwise
        decoding skips non-reference frames, falling back to every frame if that leaves a gap wider than
        `period`. A sample's `t` is the time of the frame actually taken. Files whose times need every frame
        (see can_skip) are decoded whole.
        """
        if not times:
            return []
        targets = sorted(times)
        if not self.can_skip:
            return self.sample(targets, width)
        keys = self.keyframe_times()
        if keys and all(_nearest(keys, t)[1] <= period + 1e-6 for t in targets):
            return self._sample_keyframes(targets, width)
        frames = self._sample_skipping("NONREF", targets, width)
        if all(abs(f.t - t) <= period + 1e-6 for f, t in zip(frames, targets, strict=True)):
            return frames
        return self.sample(targets, width)

    def _sample_keyframes(self, targets: list[float], width: int | None) -> list[Frame]:
        keys = self.keyframe_times()
        wanted = sorted({_nearest(keys, t)[0] for t in targets})
        decoded: dict[float, np.ndarray] = {}
        self._stream.codec_context.skip_frame = "NONKEY"
        try:
            for t, frame in self._decoded(wanted[0]):
                if t > wanted[-1] + 1e-6:
                    break
                if any(abs(t - k) < 1e-6 for k in wanted):
                    decoded[t] = self._to_rgb(frame, width)
        finally:
            self._stream.codec_context.skip_frame = "DEFAULT"
        if not decoded:
            return self.sample(targets, width)
        chosen = sorted(decoded)
        return [Frame(t, decoded[t]) for t in (_nearest(chosen, target)[0] for target in targets)]

    def _sample_skipping(self, skip: SkipFrame, targets: list[float], width: int | None) -> list[Frame]:
        self._stream.codec_context.skip_frame = skip
        try:
            return self.sample(targets, width)
        finally:
            self._stream.codec_context.skip_frame = "DEFAULT"

    def frames(self, start: float, end: float, width: int | None = None) -> Iterator[Frame]:
        """Every frame whose presentation time lies in [start, end), as RGB in display orientation."""
        for t, frame in self._decoded(start, skip_nonref_before=start):
            if t >= end:
                return
            if t >= start:
                yield Frame(t, self._to_rgb(frame, width))

    def held_frames(self, ticks: Sequence[float]) -> Iterator[tuple[float, av.VideoFrame, int]]:
        """For ascending output ticks, every source frame on screen at one or more of them: (time, frame, n),
        n the number of consecutive ticks it fills (0 for frames that fall between ticks and are dropped).

        Non-reference frames of the pre-roll are skipped as in sampling; should the frame on screen at the
        first tick be older than that margin (so possibly skipped), decoding starts again without skipping.
        """
        if not ticks:
            return
        yield from self._walk(ticks, latest=math.inf)

    def _walk(self, targets: Sequence[float], latest: float) -> Iterator[tuple[float, av.VideoFrame, int]]:
        """_on_screen over the targets, the pre-roll's non-reference frames skipped where that is safe: decoded
        again without skipping when the frame on screen at the first target is older than the margin (so
        possibly a skipped one) or later than `latest`."""
        skip_before = self._skip_before(targets[0])
        walk = self._on_screen(targets, skip_before)
        first = next(walk)
        if skip_before is not None and not skip_before <= first[0] <= latest:
            walk = self._on_screen(targets, None)
            first = next(walk)
        return itertools.chain([first], walk)

    def _skip_before(self, first_target: float) -> float | None:
        """Where skipping non-reference frames may end for a pass whose first target is first_target: none
        when the caller's own skip mode is in force, the timing forbids it, or nothing is shown that early."""
        margin_start = first_target - PREROLL_MARGIN_S
        default = self._stream.codec_context.skip_frame == "DEFAULT"
        return margin_start if default and self.can_skip and margin_start > self.info.start_s else None

    def sample(self, times: Sequence[float], width: int | None = None) -> list[Frame]:
        """For each target time (ascending), the frame on screen at that time.

        A frame is on screen from its timestamp until the next frame's, so targets map to the last frame at or
        before them; this holds for variable frame rates too. Colour conversion runs only for chosen frames.
        """
        return self.sample_with_gray(times, width)[0]

    def sample_with_gray(
        self,
        times: Sequence[float],
        width: int | None = None,
        gray_width: int | None = None,
        on_sample: Callable[[Frame, int], None] | None = None,
    ) -> tuple[list[Frame], list[tuple[float, np.ndarray]]]:
        """`sample`, and from the same decoding pass, with `gray_width`, every frame from the first sample's to
        the last sample's as grey at that width: (time, grey) in presentation order. `on_sample` is handed each
        sampled frame as soon as it is decoded, with the number of targets it is on screen for, so that work on
        it (the daemon's) can run while the rest decodes."""
        if not times:
            return [], []
        targets = sorted(times)
        return self._gathered(self._walk(targets, latest=targets[0]), width, gray_width, on_sample)

    def _gathered(
        self,
        walk: Iterator[tuple[float, av.VideoFrame, int]],
        width: int | None,
        gray_width: int | None,
        on_sample: Callable[[Frame, int], None] | None,
    ) -> tuple[list[Frame], list[tuple[float, np.ndarray]]]:
        chosen: list[Frame] = []
        grays: list[tuple[float, np.ndarray]] = []
        for t, frame, count in walk:
            if gray_width is not None:
                grays.append((t, self._to_gray(frame, gray_width)))
            if count:
                picture = Frame(t, self._to_rgb(frame, width))
                if on_sample is not None:
                    on_sample(picture, count)
                chosen.extend([picture] * count)
        return chosen, grays

    @property
    def time_base(self) -> Fraction:
        tb = self._stream.time_base
        assert tb is not None
        return tb

    @property
    def container(self) -> av.container.InputContainer:
        return self._container
