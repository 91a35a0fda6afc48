"""What the product sees in one video, for `reelgen probe`: the container and its streams, the facts every stage
uses (display size, rotation, nominal and measured frame rate, the clips' frame rate), the timestamp repairs the
video reader makes, and whether the whole file decodes.

It reads the file the way the pipeline does (`VideoSource`, the same demuxer allowlist and timestamp rules), so a
user can tell why an item failed without reading code.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import av
import av.error

from core.errors import ReelgenError
from workers.media.containers import open_media
from workers.media.render import output_rate
from workers.media.video import VideoSource


@dataclass
class ProbeReport:
    """Everything `reelgen probe` prints; `decodes` False with `error` set when the video cannot be used."""

    file: str
    size_bytes: int
    container: str | None = None
    streams: list[dict[str, Any]] = field(default_factory=list)
    video: dict[str, Any] = field(default_factory=dict)
    repairs: dict[str, int] = field(default_factory=dict)
    decodes: bool = False
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        out = [f"file       {self.file} ({self.size_bytes} bytes)"]
        if self.container is not None:
            out.append(f"container  {self.container}")
        for stream in self.streams:
            facts = ", ".join(
                f"{k} {v}" for k, v in stream.items() if k not in ("index", "type") and v is not None
            )
            out.append(f"stream #{stream['index']} {stream['type']}: {facts}")
        if self.video:
            v = self.video
            out.append(
                f"reelgen sees {v['width']}x{v['height']} (rotation {v['rotation']}°), "
                f"{v['duration_s']:.3f} s from {v['start_s']:.3f} s, timestamps from {v['timing']}"
            )
            measured = v.get("measured_fps")
            out.append(
                f"frame rate nominal {v['nominal_fps']:.3f}, measured "
                + (
                    f"{measured:.3f} over {v['frames']} frames"
                    if measured
                    else f"- ({v.get('frames', 0)} frames)"
                )
                + f", largest gap {v.get('largest_gap_s', 0):.3f} s; clips at {v['output_fps']} fps"
            )
        if self.repairs:
            out.extend(f"repaired   {count} × {kind}" for kind, count in sorted(self.repairs.items()))
        else:
            out.append("repaired   nothing")
        out.append("decodes    yes" if self.decodes else f"decodes    NO: {self.error}")
        return out


def probe(path: Path) -> ProbeReport:
    """Open, read the streams of, and decode the whole of one video."""
    report = ProbeReport(file=str(path), size_bytes=path.stat().st_size)
    try:
        with open_media(path) as container:
            report.container = container.format.name
            report.streams = [_stream_facts(stream) for stream in container.streams]
        with VideoSource(path) as source:
            info = source.info
            report.video = {
                "width": info.width,
                "height": info.height,
                "rotation": info.rotation,
                "start_s": info.start_s,
                "duration_s": info.duration_s,
                "timing": info.timing.value,
                "nominal_fps": info.fps,
                "output_fps": str(output_rate(info.fps)),
            }
            times = [t for t, _ in source._decoded(info.start_s)]
            report.repairs = dict(source.repairs)
        report.video["frames"] = len(times)
        if len(times) > 1:
            report.video["measured_fps"] = (len(times) - 1) / (times[-1] - times[0])
            report.video["largest_gap_s"] = max(b - a for a, b in itertools.pairwise(times))
        report.decodes = bool(times)
        if not times:
            report.error = "no frame decodes"
    except (ReelgenError, av.error.FFmpegError) as exc:
        report.error = f"{type(exc).__name__}: {exc}"
    return report


def _stream_facts(stream: av.stream.Stream) -> dict[str, Any]:
    context = stream.codec_context
    facts: dict[str, Any] = {
        "index": stream.index,
        "type": stream.type,
        "codec": context.name if context is not None else None,
        "time_base": str(stream.time_base) if stream.time_base is not None else None,
        "start": float(stream.start_time * stream.time_base)
        if stream.start_time and stream.time_base
        else 0.0,
    }
    if isinstance(stream, av.video.stream.VideoStream):
        facts.update(
            size=f"{stream.codec_context.width}x{stream.codec_context.height}",
            pix_fmt=stream.codec_context.pix_fmt,
            sar=str(stream.sample_aspect_ratio) if stream.sample_aspect_ratio else None,
            avg_fps=str(stream.average_rate) if stream.average_rate else None,
            base_fps=str(stream.base_rate) if stream.base_rate else None,
        )
    elif isinstance(stream, av.audio.stream.AudioStream):
        facts.update(rate=stream.codec_context.sample_rate, channels=stream.codec_context.channels)
    return facts
