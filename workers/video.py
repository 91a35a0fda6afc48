"""The one video-reading layer for sampling and rendering.

Both go through `VideoSource`, so they agree on time (presentation timestamps in seconds on the source's own
timeline, never frame counting) and on orientation (the display-matrix rotation is applied to every frame), and a
crop planned on sampled frames lands on the same pixels when rendered.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Literal

import av
import av.container
import av.error
import cv2
import numpy as np

from reelgen.errors import UnreadableVideo, VideoLimitExceeded

#: decoder output formats whose first plane is full-resolution 8-bit luma
PLANAR_YUV = frozenset({"yuv420p", "yuvj420p", "yuv422p", "yuvj422p", "yuv444p", "yuvj444p"})


@dataclass(frozen=True)
class VideoInfo:
    """Facts about a source video; width and height are as displayed (rotation applied)."""

    width: int
    height: int
    fps: float
    duration_s: float
    has_audio: bool
    rotation: int
    codec: str
    start_s: float

    def as_manifest(self, uri: str) -> dict[str, object]:
        return {
            "uri": uri,
            "width": self.width,
            "height": self.height,
            "fps": round(self.fps, 3),
            "duration_s": round(self.duration_s, 3),
            "has_audio": self.has_audio,
            "rotation": self.rotation,
            "codec": self.codec,
        }


@dataclass(frozen=True)
class Frame:
    """A decoded frame: RGB uint8, H×W×3, display orientation; t in source seconds."""

    t: float
    rgb: np.ndarray


def quarter_turns(rotation: float) -> int:
    """PyAV reports the display matrix's rotation counter-clockwise in degrees; np.rot90 turns the same way."""
    return round(rotation / 90.0) % 4


# Non-reference frames shown this long before a sampling pass's first target are not decoded (see _decoded);
# the frame on screen at that target lies within the margin unless frames are that far apart.
PREROLL_MARGIN_S = 1.0

SkipFrame = Literal["NONE", "DEFAULT", "NONREF", "BIDIR", "NONINTRA", "NONKEY", "ALL"]


def _nearest(sorted_times: Sequence[float], t: float) -> tuple[float, float]:
    """The element of sorted_times nearest to t, and its distance."""
    i = bisect.bisect_left(sorted_times, t)
    candidates = [sorted_times[j] for j in (i - 1, i) if 0 <= j < len(sorted_times)]
    best = min(candidates, key=lambda c: abs(c - t))
    return best, abs(best - t)


class VideoSource:
    """An open video file. Use as a context manager; not shared between processes."""

    def __init__(self, path: Path, *, threads: int = 1) -> None:
        self.path = path
        try:
            self._container = av.open(str(path), mode="r", options={"probesize": "5000000"})
        except (av.error.FFmpegError, OSError, UnicodeDecodeError) as exc:
            raise UnreadableVideo(f"{path.name}: not a readable media file ({exc})") from exc
        if not self._container.streams.video:
            self._container.close()
            raise UnreadableVideo(f"{path.name}: has no video stream")
        if self._container.format.name == "image2" or self._container.format.name.endswith("_pipe"):
            # FFmpeg opens a picture as a one-frame "video" that cannot be seeked or sampled
            self._container.close()
            raise UnreadableVideo(
                f"{path.name}: is a still image ({self._container.format.name}), not a video"
            )
        self._stream = self._container.streams.video[0]
        self._stream.thread_type = "AUTO"
        self._stream.codec_context.thread_count = threads
        self._keyframes: list[float] | None = None
        self.info = self._probe()

    def __enter__(self) -> VideoSource:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._container.close()

    def _probe(self) -> VideoInfo:
        stream = self._stream
        first = self._first_frame()
        rotation = round(first.rotation or 0)
        coded_w, coded_h = first.width, first.height
        width, height = (coded_h, coded_w) if quarter_turns(rotation) % 2 else (coded_w, coded_h)
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        fps = float(rate) if rate else 0.0
        time_base = stream.time_base
        start_s = float(stream.start_time * time_base) if stream.start_time is not None and time_base else 0.0
        if stream.duration is not None and time_base is not None:
            duration = float(stream.duration * time_base)
        elif self._container.duration is not None:
            duration = self._container.duration / av.time_base
        else:
            duration = 0.0
        if not (fps > 0 and math.isfinite(fps)) or duration <= 0:
            raise UnreadableVideo(f"{self.path.name}: no usable frame rate or duration in the container")
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
        )

    def _first_frame(self) -> av.VideoFrame:
        try:
            for frame in self._container.decode(self._stream):
                return frame
        except (av.error.FFmpegError, ValueError) as exc:
            raise UnreadableVideo(f"{self.path.name}: the video stream does not decode ({exc})") from exc
        raise UnreadableVideo(f"{self.path.name}: the video stream has no frames")

    def check_limits(self, *, max_duration_s: float, max_pixels: int) -> None:
        info = self.info
        if info.duration_s > max_duration_s:
            raise VideoLimitExceeded(
                f"{self.path.name}: {info.duration_s:.1f} s is longer than the {max_duration_s:.0f} s limit"
            )
        if info.width * info.height > max_pixels:
            raise VideoLimitExceeded(
                f"{self.path.name}: {info.width}x{info.height} exceeds the {max_pixels} pixel limit"
            )

    def _seek(self, t: float) -> None:
        """Position the demuxer at the last keyframe at or before t (source seconds)."""
        tb = self._stream.time_base
        assert tb is not None
        self._container.seek(max(0, int(t / tb)), stream=self._stream, backward=True, any_frame=False)

    def _decoded(self, start: float, skip_nonref_before: float | None = None) -> Iterator[av.VideoFrame]:
        """Decoded frames, in presentation order, from the keyframe at or before `start` on.

        With `skip_nonref_before`, non-reference frames shown before that time are not decoded: no other frame
        refers to them, so every frame after decodes to the same pixels. The pre-roll between the keyframe and
        a window's start is up to a whole GOP (10 s with libx264's defaults), and its B-frames are a third or
        more of it. A skip mode the caller set (keyframes only, no non-reference frames) stays in force.
        """
        self._seek(start)
        context = self._stream.codec_context
        limit = skip_nonref_before if context.skip_frame == "DEFAULT" else None
        tb = self.time_base
        try:
            for packet in self._container.demux(self._stream):
                if limit is not None:
                    early = packet.pts is not None and float(packet.pts * tb) < limit
                    context.skip_frame = "NONREF" if early else "DEFAULT"
                for frame in packet.decode():
                    if frame.pts is not None:
                        yield frame
        except av.error.FFmpegError as exc:
            raise UnreadableVideo(f"{self.path.name}: decoding failed near {start:.2f} s ({exc})") from exc
        finally:
            if limit is not None:
                context.skip_frame = "DEFAULT"

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
            return self._upright(frame.to_ndarray(format=pixel_format))
        coded_w, coded_h = self._coded_size(width)
        return self._upright(frame.reformat(width=coded_w, height=coded_h, format=pixel_format).to_ndarray())

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
        `period`. A sample's `t` is the time of the frame actually taken.
        """
        if not times:
            return []
        targets = sorted(times)
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
            for frame in self._decoded(wanted[0]):
                t = float(frame.time)
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

    def raw_frames(self, start: float, end: float) -> Iterator[av.VideoFrame]:
        """Every decoded frame whose presentation time lies in [start, end), not yet converted or rotated."""
        for frame in self._decoded(start, skip_nonref_before=start):
            t = float(frame.time)
            if t >= end:
                return
            if t >= start:
                yield frame

    def frames(self, start: float, end: float, width: int | None = None) -> Iterator[Frame]:
        """Every frame whose presentation time lies in [start, end), as RGB in display orientation."""
        for frame in self.raw_frames(start, end):
            yield Frame(float(frame.time), self._to_rgb(frame, width))

    def sample(self, times: Sequence[float], width: int | None = None) -> list[Frame]:
        """For each target time (ascending), the frame on screen at that time.

        A frame is on screen from its timestamp until the next frame's, so targets map to the last frame at or
        before them; this holds for variable frame rates too. Colour conversion runs only for chosen frames.
        """
        return self.sample_with_gray(times, width)[0]

    def sample_with_gray(
        self, times: Sequence[float], width: int | None = None, gray_width: int | None = None
    ) -> tuple[list[Frame], list[tuple[float, np.ndarray]]]:
        """`sample`, and from the same decoding pass, with `gray_width`, every frame from the first sample's to
        the last sample's as grey at that width: (time, grey) in presentation order."""
        if not times:
            return [], []
        targets = sorted(times)
        margin_start = targets[0] - PREROLL_MARGIN_S
        # nothing to skip when the caller's own skip mode is in force or nothing is shown that early
        skippable = self._stream.codec_context.skip_frame == "DEFAULT" and margin_start > self.info.start_s
        skip_before = margin_start if skippable else None
        chosen, grays = self._sample_with_gray(targets, width, gray_width, skip_before)
        if skip_before is not None and not skip_before <= chosen[0].t <= targets[0]:
            # the frame on screen at the first target is older than the margin, so it may be a skipped one
            chosen, grays = self._sample_with_gray(targets, width, gray_width, None)
        return chosen, grays

    def _sample_with_gray(
        self,
        targets: list[float],
        width: int | None,
        gray_width: int | None,
        skip_nonref_before: float | None,
    ) -> tuple[list[Frame], list[tuple[float, np.ndarray]]]:
        chosen: list[Frame] = []
        grays: list[tuple[float, np.ndarray]] = []
        previous: av.VideoFrame | None = None
        index = 0
        for frame in self._decoded(targets[0], skip_nonref_before):
            t = float(frame.time)
            while index < len(targets) and t > targets[index] + 1e-6:
                # a target before the first decodable frame takes that first frame
                on_screen = previous if previous is not None else frame
                chosen.append(Frame(float(on_screen.time), self._to_rgb(on_screen, width)))
                if gray_width is not None and not grays:
                    grays.append((float(on_screen.time), self._to_gray(on_screen, gray_width)))
                index += 1
            if index == len(targets):
                break
            if gray_width is not None and grays and t > grays[-1][0]:
                grays.append((t, self._to_gray(frame, gray_width)))
            previous = frame
        if gray_width is not None and not grays and previous is not None:
            grays.append((float(previous.time), self._to_gray(previous, gray_width)))
        while index < len(targets) and previous is not None:
            chosen.append(Frame(float(previous.time), self._to_rgb(previous, width)))
            index += 1
        if len(chosen) < len(targets):
            raise UnreadableVideo(f"{self.path.name}: no frame decodes at or after {targets[0]:.2f} s")
        return chosen, grays

    @property
    def time_base(self) -> Fraction:
        tb = self._stream.time_base
        assert tb is not None
        return tb

    @property
    def container(self) -> av.container.InputContainer:
        return self._container
