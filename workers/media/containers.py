"""What a source is before it is decoded: the containers reelgen opens (and only those), the limits a source
must keep, and the facts every stage reads about it (`VideoInfo`, its timing, colour tags, a decoded `Frame`).
Pure types and the one function that opens a file; the decoding itself is `workers.media.video.VideoSource`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

import av
import av.container
import av.error
import numpy as np

from core.errors import UnreadableVideo, VideoLimitExceeded

#: the demuxers a source may be opened with: the containers sellers' cameras and editors write. Anything else
#: FFmpeg can sniff is refused: playlists and scripts (hls, concat) open other files on the node, image2 reads
#: file patterns, tty renders a text file as a picture.
MEDIA_DEMUXERS = (
    "mov", "mp4", "m4a", "3gp", "3g2", "mj2", "matroska", "webm", "avi", "mpegts", "flv", "mpeg", "asf", "ogg",
)  # fmt: skip
_OPEN_OPTIONS = {
    "probesize": "5000000",
    "format_whitelist": ",".join(MEDIA_DEMUXERS),
    "protocol_whitelist": "file",
}


def open_media(path: Path) -> av.container.InputContainer:
    """A source file opened for reading with the media demuxers only; UnreadableVideo otherwise."""
    try:
        container = av.open(str(path), mode="r", options=dict(_OPEN_OPTIONS))
    except (av.error.FFmpegError, OSError, UnicodeDecodeError) as exc:
        raise UnreadableVideo(
            f"{path.name}: not a video file reelgen opens ({getattr(exc, 'strerror', None) or exc}); "
            "accepted containers: MP4/MOV, MKV/WebM, AVI, MPEG-TS/PS, FLV, ASF/WMV, Ogg"
        ) from exc
    if not set(container.format.name.split(",")) & set(MEDIA_DEMUXERS):
        container.close()
        raise UnreadableVideo(f"{path.name}: {container.format.name} is not a video container")
    return container


class Timing(enum.StrEnum):
    """Which timestamp of a decoded frame is its presentation time.

    Decoders hand frames over in presentation order. Most files carry presentation timestamps (PTS). Some
    writers store decode-order times as the pts (B-frames muxed into AVI, remuxers that copy dts into pts): their
    frames' pts then jump back and forth, and the packet's decode timestamp that the decoder passes along with
    each output frame (DTS) is the monotonic one, as FFmpeg's best-effort timestamp chooses.
    """

    PTS = "pts"
    DTS = "dts"


@dataclass(frozen=True)
class MediaLimits:
    """What a source may cost, checked from the container's headers before decoding and on every decoded frame
    (a file may switch resolution after its first frame): pixels and duration, and shapes no display shows
    (a side under min_side, or longer than max_aspect times the other), which otherwise cost the analysis a
    picture scaled to an absurd height."""

    max_pixels: int
    max_duration_s: float
    min_side: int = 16
    max_aspect: float = 8.0

    def check_size(self, name: str, width: int, height: int, where: str) -> None:
        if width * height > self.max_pixels:
            raise VideoLimitExceeded(
                f"{name}: {where} {width}x{height}, over the {self.max_pixels} pixel limit"
            )
        if min(width, height) < self.min_side or max(width, height) > self.max_aspect * min(width, height):
            raise VideoLimitExceeded(
                f"{name}: {where} {width}x{height}, not a video shape (sides of at least {self.min_side} px, "
                f"at most {self.max_aspect:g}:1)"
            )


@dataclass(frozen=True)
class VideoInfo:
    """Facts about a source video; width and height are as displayed (rotation and pixel aspect applied)."""

    width: int
    height: int
    fps: float
    duration_s: float
    has_audio: bool
    rotation: int
    codec: str
    start_s: float
    timing: Timing = Timing.PTS

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
            "timing": self.timing.value,
        }


# (colorspace, colour primaries, transfer) as FFmpeg numbers them (AVColorSpace, AVColorPrimaries, AVColorTransfer)
ColourTags = tuple[int, int, int]
BT709: ColourTags = (1, 1, 1)
BT601: ColourTags = (6, 6, 6)  # SMPTE 170M, what SD video without tags is by convention
UNSPECIFIED = 2


@dataclass(frozen=True)
class Frame:
    """A decoded frame: RGB uint8, H×W×3, display orientation; t in source seconds."""

    t: float
    rgb: np.ndarray


def quarter_turns(rotation: float) -> int:
    """PyAV reports the display matrix's rotation counter-clockwise in degrees; np.rot90 turns the same way."""
    return round(rotation / 90.0) % 4
