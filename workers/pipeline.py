"""The item pipeline's stages as plain functions: probe, analyse (sample, score, select, frame), render+publish.

Each stage takes and returns plain records, which workers/stage_state.py turns into the JSON a Celery task hands
to the next stage; the tasks in workers/tasks.py only wrap these with ledger bookkeeping.

Kept whole: the stages in the order an item meets them, so its path reads top to bottom; the records they pass
cross the broker through workers/stage_state.py, and each stage's own work lives in its module (video, scoring,
localise, text detection, framing, render).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import math
import shutil
import tempfile
import time
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from itertools import compress
from pathlib import Path
from typing import Any, Protocol

import av
import cv2
import numpy as np
import PIL.Image

from core import PIPELINE_VERSION, __version__
from core.catalog_entry import CatalogEntry
from core.errors import DiskFull, ImageError, RenderError
from core.settings import OutputConfig, Settings
from gpu_service.priority import PriorityKey
from storage.addresses import shown
from storage.manifest import (
    ClipRecord,
    ItemManifest,
    WindowRecord,
    clip_key,
    cover_key,
    manifest_key,
    write_manifest,
)
from storage.store import ObjectStore, left_by_dead_process, process_tag
from workers.analysis.localisation.calibration import probability
from workers.analysis.localisation.following import follow
from workers.analysis.localisation.locator import ProductLocator
from workers.analysis.localisation.parameters import LOCATE_SIDE
from workers.analysis.localisation.temporal import kept_boxes
from workers.analysis.localisation.whole import whole_boxes
from workers.analysis.scoring import (
    ANALYSIS_LONG_SIDE,
    ANALYSIS_WIDTH,
    Inference,
    frame_looks,
    frame_value,
    item_text,
    product_template,
    score_frames,
    shot_signature,
)
from workers.analysis.subject import find_subjects
from workers.analysis.tracking import edge_times, track_gaps
from workers.analysis.windows import Window, best_window, detect_cuts
from workers.framing.crop_paths import FramingParams
from workers.framing.picture_area import shots_picture_area
from workers.framing.planner import PAD_NO_TEXT_SAFE_CROP, PAD_TEXT_AND_SUBJECT, FramingPlan, plan_framing
from workers.framing.targets import output_size, placement_record, targets, zone_fit
from workers.geometry import Box, CropPath, CropRect
from workers.media.containers import Frame, MediaLimits, VideoInfo
from workers.media.cover import cover_candidates
from workers.media.render import EncodeOptions, OutputSpec, render_window
from workers.media.segments import Segment, plan_segments
from workers.media.video import VideoSource
from workers.text.detection import StreamedDetection, refine_text_times, text_sample_times
from workers.text.reading import read_regions
from workers.text.regions import merge_text_boxes

# A match this strong means the product is on screen; weaker best matches are background texture.
SUBJECT_MATCH = 0.45
#: samples of the product this far apart are joined: the box between them is interpolated
TRACK_GAP_S = 1.0
#: a frame where the features of a textured product find nothing keeps this share of the template match
UNLOCATED_WEIGHT = 0.3
TEXT_MAX_SIDE = 736


class SourceOpener(Protocol):
    """Gives a local file for a source URI for the duration of a with-block (the fetch layer)."""

    def local_path(self, uri: str) -> AbstractContextManager[Path]: ...


@dataclass(frozen=True)
class Analysis:
    window: Window
    #: (t, frame value) for every sample: the score curve shown in reports
    curve: list[tuple[float, float]]
    cuts: list[float]
    subject_boxes: list[tuple[float, float, float, float, float]]
    #: per aspect label: crop path key times and rectangles (x, y, w, h), planned once the window is known
    crop_keys: dict[str, list[tuple[float, int, int, int, int]]] = field(default_factory=dict)
    #: per aspect label: whether the clip is letterboxed instead of cropped
    padded: dict[str, bool] = field(default_factory=dict)
    #: per letterboxed aspect label: why (one of workers.framing.planner.PAD_REASONS)
    padded_reason: dict[str, str] = field(default_factory=dict)
    #: per letterboxed aspect label shown smaller than it fits, to keep its text title-safe: the share of the
    #: fitted size (workers.framing.title_safe)
    picture_share: dict[str, float] = field(default_factory=dict)
    #: text regions (source pixels) on screen during the window, merged
    text_boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    #: the picture inside the source's black bars (workers.framing.picture_area), None when there are none
    picture: tuple[float, float, float, float] | None = None
    #: detected regions that no sample reads as text (workers.text.reading), merged; read only where a clip
    #: would be letterboxed for text
    unread_text_boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    #: aspect labels whose crops were planned past the unread regions instead of letterboxing the clip
    past_unread_text: list[str] = field(default_factory=list)
    #: per placement: how its clip meets its safe zone (workers.framing.safe_zone.ZoneFit.as_manifest)
    safe_zone: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def located(self) -> list[tuple[float, Box]]:
        """The samples that located the product, as (time, box)."""
        return [(b[0], (b[1], b[2], b[3], b[4])) for b in self.subject_boxes]

    def crop_keys_of(self, name: str) -> list[tuple[float, CropRect]]:
        """The clip's planned keys as (time, rectangle)."""
        return [(k[0], CropRect(*k[1:])) for k in self.crop_keys[name]]

    def crop_path(self, name: str) -> CropPath:
        keys = self.crop_keys_of(name)
        return CropPath(tuple(t for t, _ in keys), tuple(r for _, r in keys))


def media_limits(settings: Settings) -> MediaLimits:
    return MediaLimits(max_pixels=settings.max_pixels, max_duration_s=settings.max_duration_s)


@dataclass(frozen=True)
class Decoding:
    """How a stage opens the item's media: decoder threads and the limits every decoded picture is held to."""

    threads: int
    limits: MediaLimits
    max_image_pixels: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Decoding:
        return cls(settings.threads_per_worker, media_limits(settings), settings.max_image_pixels)

    def open(self, path: Path, info: VideoInfo) -> VideoSource:
        """The source of a probed item for analysis: its timing verdict reused, the limits checked on every
        frame, decoded without deblocking (video.ANALYSIS_DECODER_OPTIONS)."""
        return VideoSource(path, threads=self.threads, timing=info.timing, limits=self.limits, deblock=False)


def plan_sampling(
    entry: CatalogEntry, opener: SourceOpener, settings: Settings, sample_fps: float
) -> tuple[VideoInfo, list[Segment]]:
    """Probe the video (refusing one past the limits) and cut its sampling into segments at keyframes; the
    main image's header is checked here too, so a bad image fails the item before any sampling."""
    with opener.local_path(entry.video) as path, VideoSource(path, limits=media_limits(settings)) as source:
        info, keyframes = source.info, source.keyframe_times()
    with opener.local_path(entry.image) as image_path:
        check_image_header(image_path, settings.max_image_pixels)
    return info, plan_segments(info.start_s, info.duration_s, sample_fps, settings.segment_s, keyframes)


def check_image_header(path: Path, max_pixels: int) -> tuple[int, int]:
    """The main image's (width, height) from its header, refusing one over max_pixels before it is decoded
    (a 1 MB PNG can hold 20000×20000 pixels: 1.2 GB decoded)."""
    try:
        with PIL.Image.open(path) as header:
            width, height = header.size
    except PIL.Image.DecompressionBombError as exc:
        raise ImageError(f"{path.name}: the main image is over the {max_pixels} pixel limit ({exc})") from exc
    except (OSError, ValueError) as exc:
        raise ImageError(f"{path.name}: the main image is not a decodable picture ({exc})") from exc
    if width * height > max_pixels:
        raise ImageError(
            f"{path.name}: the main image is {width}x{height}, over the {max_pixels} pixel limit"
        )
    return width, height


def load_image(path: Path, max_pixels: int) -> np.ndarray:
    """The main image as RGB uint8, its size checked from the header first."""
    check_image_header(path, max_pixels)
    data = np.fromfile(path, dtype=np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if image is None:
        raise ImageError(f"{path.name}: the main image is not a decodable picture")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


@functools.lru_cache(maxsize=4)
def _template(path: Path, size: int, mtime_ns: int, max_pixels: int) -> np.ndarray:
    return product_template(load_image(path, max_pixels))


def cached_template(path: Path, max_pixels: int) -> np.ndarray:
    """The main image's template, decoded once per worker process for all of an item's segments that land
    there (keyed by the file's identity, so a changed image is decoded again)."""
    stat = path.stat()
    return _template(path, stat.st_size, stat.st_mtime_ns, max_pixels)


def locate_width(info: VideoInfo) -> int:
    """The width at which frames are sampled for the product locator: its long side at LOCATE_SIDE, never
    more than the source's own width."""
    return min(info.width, round(LOCATE_SIDE * info.width / max(info.width, info.height)))


def analysis_width(info: VideoInfo) -> int:
    """ANALYSIS_WIDTH, narrower for videos taller than 9:16 so the analysed picture's long side stays bounded."""
    return max(16, min(ANALYSIS_WIDTH, round(ANALYSIS_LONG_SIDE * info.width / info.height)))


@dataclass(frozen=True)
class SampleScore:
    """One sampled frame's analysis: its scores and its shot signature (for cut detection)."""

    t: float
    match: float
    quality: float
    box: tuple[float, float, float, float] | None
    signature: list[float]
    #: where the product's features found it: the part of the main image seen again, and the homography
    #: into the source (workers.analysis.localisation.whole completes the box over every segment's samples)
    seen: tuple[float, float, float, float] | None = None
    homography: tuple[float, ...] = ()
    #: the product's own pixels' bounds in the main image, where known (workers.analysis.localisation.common.Located.whole)
    whole: tuple[float, float, float, float] | None = None
    #: what placed box (a source's name, "template"; "none") and its raw confidence: localisation.calibration
    method: str = "none"
    confidence: float = 0.0

    @property
    def value(self) -> float:
        return frame_value(self.match, self.quality)


def sample_times(info: VideoInfo, fps: float) -> list[float]:
    count = max(1, int(info.duration_s * fps))
    return [info.start_s + k / fps for k in range(count)]


def score_samples(
    infer: Inference,
    frames: list[Frame],
    template: np.ndarray,
    key: PriorityKey,
    info: VideoInfo,
    *,
    scorer: str = "template",
    text: str = "",
) -> list[SampleScore]:
    """Score sampled frames (any size): where the product is (workers.analysis.localisation, in this process), how well the
    frame shows it and how it looks (the inference daemon), and each frame's shot signature.

    Where the locator places the product is the evidence of presence; frames where it does not keep a fraction
    of the template scorer's match (UNLOCATED_WEIGHT), so background scores below a frame where the product is
    surely placed. A textured product's frame scores by its features' confidence (a few inliers, which chance
    also gives, score low). A plain product's frame, and a textured one's that its colours or outline place (a
    scene's part, features lost for a moment), scores by the better of its confidence and the template match, and
    never below any frame where it is not placed: colours and outline place it less often than features and
    more surely (their look and contrast checks), and its template match kept alone let a street outscore the
    samples that showed it (bench/quality.py's development half: an apple located in all its samples, its
    window elsewhere; a toy on a shelf, the shelf's photo its main image, placed by its colours and valued
    0.28-0.30 a sample against a street's 0.23-0.24 by the blob's confidence alone, its window elsewhere in 2 of
    103 items). The box is the located one (followed from a neighbouring sample where the
    features lose it: workers.analysis.localisation.following, over these frames, which are one segment's samples in time
    order); the template scorer's own box is used only for a plain, colourful product it matches strongly (a
    grey one's match lands on grey walls and roads as readily: only its outline places it), narrowed to the
    blob of the product's colours there where its own pixels are known and the blob looks like them
    (ProductLocator.colour_near).
    """
    size = (info.width, info.height)
    small = [(f.t, _at_width(f.rgb, analysis_width(info))) for f in frames]
    locator = cached_locator(template)
    pictures = [f.rgb for f in frames]
    located = follow(pictures, locator.locate_all(pictures, size), size, [f.t for f in frames])
    # where a textured product's features place it their confidence is the match, so the template scorer's
    # correlation (most of its cost) is asked for only where they do not; the rest are scored for their look
    by_features = scorer == "template" and locator.textured
    matched = [not (by_features and found.box is not None) for found in located]
    scored = iter(
        score_frames(infer, list(compress(small, matched)), template, key, size, scorer=scorer, text=text)
    )
    looks = iter(frame_looks(infer, list(compress(small, [not m for m in matched])), key))
    scores = [next(scored) if m else next(looks) for m in matched]
    out = []
    for score, found, (_, picture), frame in zip(scores, located, small, frames, strict=True):
        match, box = score.match, found.box
        if box is None and not locator.textured and locator.colourful and score.match >= SUBJECT_MATCH:
            box = score.box and (locator.colour_near(frame.rgb, size, score.box) or score.box)
        if scorer == "template":
            if found.box is None:
                match = UNLOCATED_WEIGHT * match
            elif locator.textured and found.method in ("features", "followed"):
                match = found.confidence
            else:
                match = max(found.confidence, UNLOCATED_WEIGHT, match)
        signature = [round(float(v), 5) for v in shot_signature(picture)]
        seen = (found.seen, found.homography, found.whole) if box is found.box else (None, (), None)
        # a box the template scorer placed (narrowed to the product's colours there) is its own evidence
        evidence = (found.method, found.confidence) if box is found.box else ("template", score.match)
        out.append(SampleScore(score.t, match, score.quality, box, signature, *seen, *evidence))
    return out


def _at_width(rgb: np.ndarray, width: int) -> np.ndarray:
    if rgb.shape[1] <= width:
        return rgb
    height = max(2, round(rgb.shape[0] * width / rgb.shape[1]))
    return cv2.resize(rgb, (width, height), interpolation=cv2.INTER_AREA)


@functools.lru_cache(maxsize=4)
def _locator(digest: bytes, template_bytes: bytes, shape: tuple[int, ...]) -> ProductLocator:
    return ProductLocator(np.frombuffer(template_bytes, np.uint8).reshape(shape))


def cached_locator(template: np.ndarray) -> ProductLocator:
    """The product's locator, built once per main image in a worker process (its keypoints cost ~20 ms)."""
    data = np.ascontiguousarray(template).tobytes()
    return _locator(hashlib.blake2b(data, digest_size=16).digest(), data, template.shape)


def sample_segment(
    entry: CatalogEntry,
    info: VideoInfo,
    segment: Segment,
    opener: SourceOpener,
    infer: Inference,
    key: PriorityKey,
    config: OutputConfig,
    decoding: Decoding,
) -> list[SampleScore]:
    """Seek to one segment, sample it at the configured rate with the cheapest correct decode, score it."""
    with opener.local_path(entry.image) as image_path:
        template = cached_template(image_path, decoding.max_image_pixels)
    with opener.local_path(entry.video) as path, decoding.open(path, info) as source:
        # sampled at the locator's size; the daemon's scorers get them at the analysis size
        frames = source.sample_fast(segment.times, 1.0 / config.sample_fps, width=locate_width(info))
    text = item_text(entry.title, entry.description)
    return score_samples(infer, frames, template, key, info, scorer=config.scorer, text=text)


def choose(info: VideoInfo, samples: list[SampleScore], config: OutputConfig) -> Analysis:
    """Merge every segment's samples and choose the window, with the product's boxes round it (whole where part
    of it was hidden, chosen over the samples jointly: workers.analysis.localisation.temporal); frame_window then
    plans every aspect's crop path."""
    samples = sorted(samples, key=lambda s: s.t)
    times = [s.t - info.start_s for s in samples]
    cuts = detect_cuts(times, [np.asarray(s.signature, dtype=np.float32) for s in samples])
    window = best_window(
        times,
        [s.value for s in samples],
        cuts,
        duration_s=info.duration_s,
        window_s=config.window_s,
        step_s=1.0 / config.sample_fps,
    )
    window = Window(
        window.start_s + info.start_s, window.end_s + info.start_s, round(window.score, 4), window.truncated
    )
    p = [probability(s.method, s.confidence) for s in samples]
    boxes = kept_boxes(times, whole_boxes(samples, (info.width, info.height)), p, cuts)
    subject = [(s.t, *b) for s, b in _around(samples, boxes, window, cuts, info.start_s) if b is not None]
    return Analysis(
        window=window,
        curve=[(round(s.t, 3), round(s.value, 4)) for s in samples],
        cuts=[round(c + info.start_s, 3) for c in cuts],
        subject_boxes=[tuple(round(v, 1) for v in b) for b in subject],  # type: ignore[misc]
    )


def _around(
    samples: list[SampleScore],
    boxes: list[Box | None],
    window: Window,
    cuts: list[float],
    start_s: float,
) -> list[tuple[SampleScore, Box | None]]:
    """The samples in the window with their boxes, and the sample either side of it unless a cut parts them:
    the frames between a window's edge and its first or last sample then follow the product towards where it
    was next seen, instead of standing on the nearest sample's box (a product entering or moving on at the
    window's edge left the crop behind)."""
    inside = [k for k, s in enumerate(samples) if window.start_s <= s.t < window.end_s]
    if not inside:
        return []
    first, last = inside[0], inside[-1]

    def joined(a: int, b: int) -> bool:
        return not any(samples[a].t - start_s < c <= samples[b].t - start_s for c in cuts)

    if first > 0 and joined(first - 1, first):
        first -= 1
    if last + 1 < len(samples) and joined(last, last + 1):
        last += 1
    return list(zip(samples[first : last + 1], boxes[first : last + 1], strict=True))


def _subject_near(
    analysis: Analysis, t: float, within_s: float = TRACK_GAP_S
) -> tuple[float, float, float, float] | None:
    """The located product at t: between two samples that found it at most within_s apart, the box
    interpolated (the product moves little in between); else the nearest sample's box within a quarter of
    that; None otherwise."""
    boxes = sorted(analysis.subject_boxes)
    before = next((b for b in reversed(boxes) if b[0] <= t), None)
    after = next((b for b in boxes if b[0] > t), None)
    if before is not None and after is not None and after[0] - before[0] <= within_s:
        w = (t - before[0]) / (after[0] - before[0])
        return tuple(a + w * (b - a) for a, b in zip(before[1:], after[1:], strict=True))  # type: ignore[return-value]
    near = [b for b in (before, after) if b is not None and abs(b[0] - t) <= within_s / 4]
    best = min(near, key=lambda b: abs(b[0] - t), default=None)
    return None if best is None else (best[1], best[2], best[3], best[4])


def product_samples(analysis: Analysis, times: Sequence[float]) -> list[tuple[float, Box | None]]:
    """What the crop follows when the product is in the window (located near one of the window's sample
    times): the product alone, held between the samples that located it, rather than a face or a salient blob
    wherever a sample missed it. Every such sample counts, at the scoring's rate (twice the text samples'): a
    product moving between two text samples is followed along the way it took, not along the straight line
    between where it was a second apart. Empty when the window does not show the product."""
    if all(_subject_near(analysis, t) is None for t in times):
        return []
    return list(analysis.located)


def frame_window(
    entry: CatalogEntry,
    info: VideoInfo,
    analysis: Analysis,
    opener: SourceOpener,
    infer: Inference,
    key: PriorityKey,
    config: OutputConfig,
    decoding: Decoding,
) -> Analysis:
    """Plan text-safe, subject-following crops for every aspect over the chosen window.

    The daemon detects text (at text_detection.TEXT_FPS on frames with the long side at most TEXT_MAX_SIDE),
    faces and saliency on the same samples; text appearance times are refined on a dense grey decode (dense_width).
    The subject is the located product wherever the window shows it, tracked through the dense frames to the
    samples that lost it (workers.analysis.tracking); in a window without it, the faces, else the most salient blob
    (workers.analysis.subject). Crops stay inside the picture when the source has black bars
    (workers.framing.picture_area). Where text would letterbox a clip, the daemon reads the detected regions, and the
    clip is cropped past those that do not read as text when that is enough (workers.text.reading).
    """
    window = analysis.window
    size = (info.width, info.height)
    width = min(info.width, round(info.width * TEXT_MAX_SIDE / max(size)))
    with (
        opener.local_path(entry.video) as path,
        decoding.open(path, info) as source,
        StreamedDetection(infer, key, source_size=size) as detection,
    ):
        frames, dense = source.sample_with_gray(
            text_sample_times(window.start_s, window.end_s), width, gray_width=dense_width(info),
            on_sample=detection.add,
        )  # fmt: skip
        # the product is tracked while the daemon detects text in the last frames
        analysis = tracked_through(analysis, dense, size, 1.0 / config.sample_fps)
        boxes = detection.results()
    text = refine_text_times([(f.t, b) for f, b in zip(frames, boxes, strict=True)], dense, size)
    picture = shots_picture_area(
        [f.rgb for f in frames], [f.t for f in frames], analysis.cuts, size,
        merge_text_boxes([b for _, regions in text for b in regions]),
    )  # fmt: skip
    subject = product_samples(analysis, [f.t for f in frames])
    stand_ins: list[float] = []
    if not subject:
        found = find_subjects(
            infer, [f.rgb for f in frames], key, matched=[None] * len(frames), text_boxes=boxes,
            source_size=size, picture=picture,
        )  # fmt: skip
        subject, stand_ins = list(zip([f.t for f in frames], found, strict=True)), [f.t for f in frames]

    wanted = targets(config)

    def planned(
        names: Collection[str], text: Sequence[tuple[float, Sequence[Box]]]
    ) -> dict[str, FramingPlan]:
        return plan_framing(
            window.start_s, window.end_s, info.width, info.height,
            [t.aspect for t in wanted if t.placement is None and t.name in names], subject, text, analysis.cuts,
            max_side=config.max_output_side, stand_ins=stand_ins, picture=picture,
            placements=[t.placement for t in wanted if t.placement is not None and t.name in names],
        )  # fmt: skip

    plans = planned({t.name for t in wanted}, text)
    # every plan carries the same merged text regions of the window
    text_boxes = [tuple(round(v, 1) for v in b) for b in next(iter(plans.values())).text_boxes]
    # a clip letterboxed for text is planned again without the regions that do not read as text (a face's eyes
    # and teeth the detector took for text): cropped past them when that is all that stood in the way
    for_text = {name for name, plan in plans.items() if plan.padded_reason in TEXT_REASONS}
    unread: list[Box] = []
    past: list[str] = []
    if for_text:
        reading = read_regions(infer, [f.rgb for f in frames], boxes, key, size)
        unread = merge_text_boxes(list(reading.unread))
        if unread:
            for label, again in planned(for_text, reading.text_only(text)).items():
                if not again.padded:
                    plans[label] = again
                    past.append(label)
    located = [(t, b) for t, b in subject if b is not None]
    fits = {t.name: zone_fit(plans[t.name], t.placement, located) for t in wanted if t.placement}
    return replace(
        analysis,
        crop_keys={label: plan.key_tuples() for label, plan in plans.items()},
        padded={label: plan.padded for label, plan in plans.items()},
        padded_reason={label: plan.reason_text for label, plan in plans.items() if plan.reason_text},
        picture_share={label: plan.picture_share for label, plan in plans.items() if plan.picture_share < 1},
        text_boxes=text_boxes,  # type: ignore[arg-type]
        picture=picture,
        unread_text_boxes=[tuple(round(v, 1) for v in b) for b in unread],  # type: ignore[misc]
        past_unread_text=past,
        safe_zone=fits,
    )


def tracked_through(
    analysis: Analysis, dense: Sequence[tuple[float, np.ndarray]], source_size: tuple[int, int], step_s: float
) -> Analysis:
    """The analysis with boxes for the window's samples that lost the product (step_s apart), carried there
    through its dense grey frames from the samples that located it (workers.analysis.tracking): a window whose
    samples found the product once, near its end, shows it throughout as much as one found more often. Between
    a sample with a box and a neighbour left without one, boxes are tracked at the crop planner's key step
    too: the frames where the product slides into view before the first sample that saw it."""
    window = analysis.window
    located = analysis.located
    wanted = [t for t, _ in analysis.curve if window.start_s - step_s < t < window.end_s + step_s]
    tracked = track_gaps(located, wanted, dense, source_size, analysis.cuts) if located else []
    # then, between a sample with a box and one still without (a product entering or leaving the frame), at
    # the planner's key step, from the nearer box
    boxed = [*located, *tracked]
    between = edge_times([t for t, _ in boxed], wanted, FramingParams().key_step_s)
    tracked += track_gaps(boxed, between, dense, source_size, analysis.cuts) if between else []
    if not tracked:
        return analysis
    # kept to a tenth, as choose keeps the located ones
    kept = [tuple(round(v, 1) for v in (t, *b)) for t, b in tracked]
    return replace(analysis, subject_boxes=sorted([*analysis.subject_boxes, *kept]))  # type: ignore[list-item]


#: letterbox reasons that text gives: a region that does not read as text cannot justify them
TEXT_REASONS = (PAD_TEXT_AND_SUBJECT, PAD_NO_TEXT_SAFE_CROP)


#: the window's dense grey frames have at least this many pixels (or are half the source's width, where that is
#: less): text timing needs a quarter of the source, following the product through them more (on
#: bench/quality.py's development half, tracks of up to 1.5 s through a quarter of each source gave 31 boxes, 22
#: of them on the product; through half, 36 and 28); a count of pixels, not a width, keeps a portrait source's
#: frames as small as a landscape one's (a window of 60 frames a second holds 300 of them)
DENSE_MIN_PIXELS = 640 * 360


def dense_width(info: VideoInfo) -> int:
    """The width of the window's dense grey frames: a quarter of the source's, but with no fewer than
    DENSE_MIN_PIXELS, or half the source's where that is less."""
    enough = round(math.sqrt(DENSE_MIN_PIXELS * info.width / info.height))
    return max(16, min(info.width // 2, max(info.width // 4, enough)))


def manifest_uri(uri: str) -> str:
    """A source URI as manifests record it: an http(s) URL without user info and query (credentials or
    signatures); paths and s3:// URIs as given."""
    return shown(uri) if uri.lower().startswith(("http://", "https://")) else uri


def scratch_dir(work_dir: Path, item_id: str) -> Path:
    """A fresh scratch folder <item>-<host>.<pid>-<random> in work_dir, after removing the ones that dead
    processes of this host left there (a worker killed mid-render cannot clean up after itself)."""
    for stale in work_dir.glob("*-*.*-*"):
        if left_by_dead_process(stale.name.rsplit("-", 2)[-2]):
            shutil.rmtree(stale, ignore_errors=True)
    try:
        return Path(tempfile.mkdtemp(prefix=f"{item_id}-{process_tag()}-", dir=work_dir))
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFull(f"no space left in the work folder {work_dir} ({exc})") from exc
        raise


def versions() -> dict[str, str]:
    return {"reelgen": __version__, "pipeline": PIPELINE_VERSION, "pyav": av.__version__}


def render_and_publish(
    entry: CatalogEntry,
    info: VideoInfo,
    analysis: Analysis,
    opener: SourceOpener,
    store: ObjectStore,
    config: OutputConfig,
    options: EncodeOptions,
    *,
    decoding: Decoding,
    work_dir: Path,
    job_id: str,
) -> dict[str, Any]:
    """Render every aspect, upload the clips, then write the manifest last; returns the manifest.

    An earlier manifest is deleted first so that it can never point at clips this attempt is replacing.
    """
    store.delete(manifest_key(entry.item_id))
    scratch = scratch_dir(work_dir, entry.item_id)
    try:
        window = analysis.window
        located = analysis.located
        candidates = cover_candidates(located, window.start_s, window.end_s)
        specs, sizes = [], []
        wanted = targets(config)
        for target in wanted:
            name = target.name
            padded, share = analysis.padded.get(name, False), analysis.picture_share.get(name, 1.0)
            source = (info.width, info.height)
            keys = analysis.crop_keys_of(name)
            sizes.append(output_size(target, source, config.max_output_side, keys, padded, share))
            specs.append(
                OutputSpec(
                    aspect=name,
                    width=sizes[-1].width,
                    height=sizes[-1].height,
                    crop_at=analysis.crop_path(name),
                    path=scratch / f"{target.stem}.mp4",
                    padded=padded,
                    picture_share=share,
                    cover_path=scratch / f"{target.stem}.jpg",
                    cover_candidates=candidates,
                )
            )
        with opener.local_path(entry.video) as source_path:
            rendered = render_window(
                source_path, window.start_s, window.end_s, specs, options, timing=info.timing,
                limits=decoding.limits,
            )  # fmt: skip
        outputs = []
        for target, spec, out_size in zip(wanted, specs, sizes, strict=True):
            key = clip_key(entry.item_id, target.stem)
            store.put_file(key, spec.path, "video/mp4")
            cover = cover_key(entry.item_id, target.stem)
            if spec.cover_path is None or spec.cover_t is None:
                raise RenderError(f"{entry.item_id}: the {spec.aspect} clip was written without its cover")
            store.put_file(cover, spec.cover_path, "image/jpeg")
            outputs.append(
                ClipRecord(
                    aspect=f"{target.aspect[0]}:{target.aspect[1]}",
                    uri=store.uri(key),
                    cover=store.uri(cover),
                    cover_t=round(spec.cover_t, 3),
                    cover_whole=spec.cover_whole,
                    width=spec.width,
                    height=spec.height,
                    padded=spec.padded,
                    padded_reason=analysis.padded_reason.get(spec.aspect),
                    picture_share=spec.picture_share,
                    past_unread_text=spec.aspect in analysis.past_unread_text,
                    fps=str(rendered.rate),
                    frames=spec.frames,
                    crops=[rect.as_dict(t) for t, rect in spec.crops],
                    scale=round(out_size.scale, 3),
                    placement=None
                    if target.placement is None
                    else placement_record(target.placement, out_size, analysis.safe_zone[target.name]),
                )
            )
        manifest = ItemManifest(
            item_id=entry.item_id,
            status="done",
            job_id=job_id,
            created_at=time.time(),
            source={**info.as_manifest(manifest_uri(entry.video)), "repairs": rendered.repairs},
            source_version=entry.version,
            title=entry.title,
            window=WindowRecord(window.start_s, window.end_s, window.score, window.truncated),
            text_boxes=[list(b) for b in analysis.text_boxes],
            picture=None if analysis.picture is None else list(analysis.picture),
            unread_text_boxes=[list(b) for b in analysis.unread_text_boxes],
            text_detection="rapidocr PP-OCRv4 det; rec where text would letterbox a clip",
            curve=analysis.curve,
            cuts=analysis.cuts,
            subject_boxes=analysis.subject_boxes,
            audio=None if rendered.audio is None else rendered.audio.as_manifest(),
            outputs=outputs,
            config_hash=config.config_hash,
            scorer=config.scorer,
            versions=versions(),
        )
        return write_manifest(store, manifest)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
