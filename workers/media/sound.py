"""A clip's sound made ready to publish: its loudness brought to one target and its edges faded.

Sellers record at any level, and a feed plays clips one after another: a clip far louder than its neighbours is
turned down by the platform (or skipped by the viewer), a quiet one is lost. So the window's sound is measured
as ITU-R BS.1770 / EBU R128 integrated loudness and true peak, by FFmpeg's own meter (the `ebur128` filter, read
through PyAV), and one gain brings it to the target, never so far that the true peak would pass the ceiling:
a gain, not a limiter, so the seller's dynamics are kept and a peaky recording ends up quieter than the target
rather than squashed. The default target, -14 LUFS with a -1 dBTP ceiling (core.settings), is what the large feeds
normalise playback to (so they leave the clip as it is) and the ceiling their encoders need to stay clean.

The window cuts the sound wherever the picture asked, mid-word or mid-beat; a short fade at each edge turns the
click of that cut into a clean start and end. Silence (nothing above the meter's absolute gate) stays silence.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import av
import numpy as np
import numpy.typing as npt

from core.settings import AUDIO_FADE_S, AUDIO_LOUDNESS_LUFS, AUDIO_TRUE_PEAK_DBTP, OutputConfig

F32 = npt.NDArray[np.float32]

# samples a frame: the AAC encoder's frame size; the meter gives the same figures at any size
_CHUNK = 1024
# below this (the BS.1770 absolute gate) there is no programme loudness to speak of: the sound is left as it is
_SILENT_LUFS = -70.0


@dataclass(frozen=True)
class SoundOptions:
    #: integrated loudness a clip is brought to; None leaves the level as recorded (fades still apply)
    loudness_lufs: float | None = AUDIO_LOUDNESS_LUFS
    #: the highest true peak the gain may reach
    true_peak_dbtp: float = AUDIO_TRUE_PEAK_DBTP
    #: length of the fade at each edge
    fade_s: float = AUDIO_FADE_S


def sound_options(config: OutputConfig) -> SoundOptions:
    return SoundOptions(config.audio_loudness_lufs, config.audio_true_peak_dbtp, config.audio_fade_s)


@dataclass(frozen=True)
class Loudness:
    """What the meter read: integrated loudness (LUFS; -inf for silence) and true peak (dBTP; -inf for zeros)."""

    integrated_lufs: float
    true_peak_dbtp: float


@dataclass(frozen=True)
class SoundReport:
    """What was done to a window's sound, for the manifest."""

    source_lufs: float | None
    source_true_peak_dbtp: float | None
    gain_db: float
    #: the gain stopped short of the target to keep the true peak under the ceiling
    peak_limited: bool
    fade_s: float

    def as_manifest(self) -> dict[str, float | bool | None]:
        return {
            "source_lufs": self.source_lufs,
            "source_true_peak_dbtp": self.source_true_peak_dbtp,
            "gain_db": round(self.gain_db, 2),
            "peak_limited": self.peak_limited,
            "fade_s": self.fade_s,
        }


def _db(linear: float) -> float:
    return 20 * math.log10(linear) if linear > 0 else -math.inf


def pcm_frames(pcm: F32, rate: int) -> Iterator[av.AudioFrame]:
    """Planar stereo float samples (2 × N) as timed frames of _CHUNK samples, for a filter or an encoder."""
    for first in range(0, pcm.shape[1], _CHUNK):
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(pcm[:, first : first + _CHUNK]), format="fltp", layout="stereo"
        )
        frame.sample_rate = rate
        frame.pts = first
        frame.time_base = Fraction(1, rate)
        yield frame


def measure(pcm: F32, rate: int) -> Loudness:
    """BS.1770 integrated loudness and true peak of planar stereo float samples (2 × N), by FFmpeg's ebur128."""
    graph = av.filter.Graph()
    source = graph.add_abuffer(format="fltp", sample_rate=rate, layout="stereo", time_base=Fraction(1, rate))
    meter = graph.add("ebur128", "metadata=1:peak=true")
    sink = graph.add("abuffersink")
    source.link_to(meter)
    meter.link_to(sink)
    graph.configure()
    last: dict[str, str] = {}
    for frame in [*pcm_frames(pcm, rate), None]:  # None: the end, which flushes what the filter holds
        graph.push(frame)
        while True:
            try:
                last = dict(graph.pull().metadata) or last
            except (av.BlockingIOError, av.EOFError):
                break
    integrated = float(last.get("lavfi.r128.I", "-inf"))
    peak = float(last.get("lavfi.r128.true_peak", "0"))
    return Loudness(integrated, _db(peak))


def _fades(samples: int, rate: int, fade_s: float) -> F32:
    """A gain curve over the samples: a raised-cosine rise and fall of fade_s at each end (shorter for a clip
    too short for both)."""
    curve = np.ones(samples, np.float32)
    n = min(round(fade_s * rate), samples // 2)
    if n > 0:
        rise = (0.5 - 0.5 * np.cos(np.linspace(0, math.pi, n, dtype=np.float64))).astype(np.float32)
        curve[:n] = rise
        curve[samples - n :] = rise[::-1]
    return curve


def finish(pcm: F32, rate: int, options: SoundOptions) -> tuple[F32, SoundReport]:
    """The window's sound at its target loudness with faded edges, and what was done."""
    read = measure(pcm, rate)
    audible = math.isfinite(read.integrated_lufs) and read.integrated_lufs > _SILENT_LUFS
    gain_db, limited = 0.0, False
    if options.loudness_lufs is not None and audible:
        gain_db = options.loudness_lufs - read.integrated_lufs
        headroom = options.true_peak_dbtp - read.true_peak_dbtp
        if gain_db > headroom:
            gain_db, limited = headroom, True
    out = pcm * np.float32(10 ** (gain_db / 20)) * _fades(pcm.shape[1], rate, options.fade_s)
    report = SoundReport(
        source_lufs=round(read.integrated_lufs, 2) if audible else None,
        source_true_peak_dbtp=round(read.true_peak_dbtp, 2) if math.isfinite(read.true_peak_dbtp) else None,
        gain_db=gain_db,
        peak_limited=limited,
        fade_s=options.fade_s,
    )
    return np.asarray(out, np.float32), report
