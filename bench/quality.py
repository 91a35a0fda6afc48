"""Quality on real footage: does reelgen find the product, follow it, crop instead of letterboxing, keep text whole?

The set (bench/quality_set.py) composites real photographs as products into real camera clips, with ground truth
per frame; it has a tuning half and a held-out half built from disjoint seeds, photographs and clips, and a
development half ("dev": five other products over the tuning half's clips, to see what a change tuned on the
tuning half's products does to products it was not tuned on, before the held-out half is run). Each half is
run through the real pipeline (`reelgen run CATALOG --out OUT --state-dir STATE` in a subprocess) and scored from
the manifests and the rendered clips:

- windows_hit_rate: product items whose window overlaps the product's on-screen interval by ≥ 50 % of the window;
- product_inside_min: over items and aspects where the product fits the aspect's largest crop, the lowest share
  of window frames (where it fits) whose product box lies ≥ 90 % inside the frame's crop rectangle;
- letterboxed_share: clips with `padded: true`, and the manifests' `padded_reason`s (null where none is given);
  letterbox_fill_median / _min: over letterboxed clips showing the product, each clip's median over its frames of
  the product's size in the clip over the size fitting the product alone to the clip would give;
  product_too_big_share: clips whose true product box is larger than the aspect's largest crop (95 % of it, at
  more than 5 % of the window's frames: the planner's own rule), the letterboxing the ground truth justifies;
  letterboxed_product_fits and cropped_product_too_big: the clips on which truth and reelgen disagree (the
  first may still be right: text and product that cannot be separated is the other reason);
  letterboxed_separable: letterboxed clips showing the product where the ground truth has a crop (the largest
  or a smaller one the planner tries, anywhere) that holds the product and keeps every caption whole or out at
  all but the planner's pad share of frames: letterboxes no reason justifies (text the set did not put there,
  such as signs in its real clips, is not in the ground truth: "every crop cuts text" may still be right);
- product_inside_below_95_unlocated: of the item-aspect pairs below 95 %, those whose window has no located
  product box (the crop followed a face or saliency instead);
- text_cut: text boxes touching an output frame's edge (within 2 px), found by the product's own PP-OCRv4 text
  detector run here on 3 frames of every clip; text_cut_crop_edges counts only edges the crop made (not the
  source frame's own edges, which cut background text before reelgen saw it), text_cut_captions only boxes on a
  caption of the ground truth (the detector also fires on eyes, teeth and textures, which text_cut counts);
  text_cut_read only boxes that the product's own PP-OCRv4 recogniser reads as text (a score of at least its
  READ_SCORE, OCR's own rule for keeping a detected line; a line cut by the edge may read less well, so this is
  a floor, not the count); text_cut_read_crop_edges those both read and on an edge the crop made: text that
  reelgen's own crop cut, without the source's edges and the detector's misfires;
- caption_cut_clips: clips where a caption of the ground truth is partly inside the crop in some frame;
- window_margin_min / window_margin_median: over product items, the best product window's mean score (a window
  of the clip's length overlapping the product's on-screen interval by ≥ 50 %) less the best background window's
  (one not overlapping it at all), from the manifests' score curves (positive: the product window wins);
- analysis_s_per_item: CPU seconds of prepare, sampling and select (the ledger's stage totals) plus the inference
  daemon's model time, per item.

The tuning and dev halves also get a line per item and these figures by product, where their failures lie.
Only aggregate figures are printed for the held-out half: look at the tuning and dev halves' items and pictures
(bench/.data/quality/report/, report-dev/) while tuning, never at the held-out half's.

Usage: .venv/bin/python bench/quality.py [--items 16] [--half tuning|heldout|both|dev] [--reuse] [--rev REV]
                                         [--rescore]
--reuse keeps a set already generated (the same seeds give the same set); --rev runs the product as committed at a
git revision (unpacked under bench/.data/quality/products/, run from there), e.g. to measure before and after
side by side; --rescore scores the last run's clips again without running the product.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.quality_set import (  # noqa: E402
    HALVES,
    Half,
    item_seeds,
    load_truth,
    missing_sources,
    set_dir,
    write_quality_set,
)
from bench.zone_scores import ZoneScore, score_frame  # noqa: E402
from monitoring.machine import machine_lines  # noqa: E402
from workers.framing.crop_paths import HELD_SHARE, FramingParams, held_span  # noqa: E402
from workers.framing.planner import crop_zooms  # noqa: E402
from workers.geometry import aspect_size, lowest_terms, spanning_size, zoomed_size  # noqa: E402
from workers.text.reading import READ_SCORE, strips_of  # noqa: E402
from workers.text.regions import text_clearance  # noqa: E402

DATA = ROOT / "bench" / ".data" / "quality"
REELGEN = Path(sys.executable).with_name("reelgen")
#: a product box at least this much inside the crop counts as held
INSIDE = 0.9
#: a caption this much or less (or this much or more of the rest) inside the crop is whole, not cut
CAPTION_SLACK = 0.03
#: output frames per clip looked at for text
OCR_FRAMES = 3
EDGE_PX = 2
#: the planner's own rule for "too big": its share of keys (the held share of the box longer than the crop)
PAD_SHARE = FramingParams().pad_share
ANALYSIS_STAGES = ("prepare", "sample_segment", "select")
U8 = npt.NDArray[np.uint8]
Rect = tuple[float, float, float, float]  # x0, y0, x1, y1


# ---------------------------------------------------------------------------------------------------------------
# Running the product
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    exit_code: int
    wall_s: float
    out: Path
    items: int
    #: {stage: {"cpu": s, "wall": s, "runs": n}} from the run's ledger
    stages: dict[str, dict[str, float]]
    daemon_busy_s: float | None
    log: str


def ensure_set(half: Half, items: int, reuse: bool) -> Path:
    folder = set_dir(DATA / "sets", half, items)
    catalog = folder / "catalog.jsonl"
    if reuse and (folder / "truth.json").is_file():
        return catalog
    return write_quality_set(DATA / "sets", half, items, cache_dir=DATA / "cutouts")


def _stage_totals(state: Path, job_id: str) -> dict[str, dict[str, float]]:
    import redis

    from jobs.ledger import Ledger
    from jobs.local.redis_server import EmbeddedRedis

    with EmbeddedRedis(state) as server:
        client = redis.Redis.from_url(server.url)
        try:
            return Ledger(client).stage_totals(job_id)
        finally:
            client.close()


def checkout(rev: str) -> tuple[Path, str]:
    """The product's code at a git revision, unpacked once under DATA (git archive: the repository is left
    alone), and the commit it is."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    folder = DATA / "products" / commit[:12]
    if not (folder / ".complete").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        (folder / ".complete").touch()
    return folder, commit[:12]


def run_product(
    half: Half,
    catalog: Path,
    items: int,
    product: Path | None,
    version: str,
    run_dir: Path | None = None,
    placements: str | None = None,
) -> RunResult:
    """reelgen run on the catalog, into run_dir (default: the half's own under DATA/runs)."""
    run_dir = run_dir or DATA / "runs" / half
    out, state = run_dir / "out", run_dir / "state"
    # a fresh output and ledger: reelgen skips items whose manifest exists, and a rerun must redo them all
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    env = dict(os.environ)
    if product is not None:
        # ahead of the editable install's finder, for the run and the workers and daemon it starts; those start
        # with `python -m`, which puts the current folder first on sys.path, so the run starts in product too
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(product), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    done = subprocess.run(
        [str(REELGEN), "run", str(catalog), "--out", str(out), "--state-dir", str(state)]
        # the placements' clips beside the six aspects' (given alone, they would replace them)
        + (["--placements", placements, "--aspects", ",".join(ASPECT_COLOURS)] if placements else []),
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
        cwd=product or ROOT,
    )
    wall = time.perf_counter() - started
    log = done.stdout + done.stderr
    (run_dir / "run.log").write_text(log)
    job = re.search(r"^job (\S+): ", done.stdout, re.MULTILINE)
    stages = _stage_totals(state, job.group(1)) if job else {}
    busy = re.search(r"busy (\d+)% of ([\d.]+) s", done.stdout)
    daemon_busy = float(busy.group(1)) / 100 * float(busy.group(2)) if busy else None
    result = RunResult(done.returncode, wall, out, items, stages, daemon_busy, log)
    facts = {"exit_code": done.returncode, "wall_s": wall, "items": items, "stages": stages}
    (run_dir / "run.json").write_text(json.dumps({**facts, "daemon_busy_s": daemon_busy, "product": version}))
    return result


def last_run(half: Half, items: int) -> RunResult:
    """The half's previous run, to score it again without running the product."""
    run_dir = DATA / "runs" / half
    facts = json.loads((run_dir / "run.json").read_text())
    if facts["items"] != items:
        raise SystemExit(f"the last {half} run had {facts['items']} items, not {items}")
    return RunResult(
        int(facts["exit_code"]), float(facts["wall_s"]), run_dir / "out", items, facts["stages"],
        facts["daemon_busy_s"], (run_dir / "run.log").read_text(),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------------------------


def _aspect(label: str) -> tuple[int, int]:
    a, b = (int(x) for x in label.split(":"))
    return lowest_terms((a, b))


def largest_crop(label: str, width: int, height: int) -> tuple[int, int]:
    """The largest crop of the aspect inside the source, as reelgen can take it: even sides, the exact aspect's
    or, where larger, the frame-spanning one within the aspect's slack (workers.geometry.spanning_size), which
    the planner tries wherever the exact one will not do."""
    size = aspect_size(_aspect(label), width, height)
    return spanning_size(size, width, height) or (size.crop_w, size.crop_h)


def area(r: Rect) -> float:
    return max(0.0, r[2] - r[0]) * max(0.0, r[3] - r[1])


def share_inside(box: Rect, crop: Rect) -> float:
    """The share of box inside crop."""
    meet = (max(box[0], crop[0]), max(box[1], crop[1]), min(box[2], crop[2]), min(box[3], crop[3]))
    return area(meet) / max(area(box), 1e-9)


def as_rect(values: Sequence[float]) -> Rect:
    return (float(values[0]), float(values[1]), float(values[2]), float(values[3]))


#: crop positions tried per axis by the separability check (a grid over the room the crop has)
SEPARABLE_GRID = 81


def separable(
    box: Rect, captions: Sequence[Sequence[float]], width: int, height: int, crop: tuple[int, int]
) -> bool:
    """Whether some crop of the aspect, the largest or one of the planner's smaller ones (workers.framing.planner's
    crop_zooms: the fixed zooms and those sized to pass these captions), anywhere in the frame (a grid, and
    every place just past a caption), holds the product's central HELD_SHARE and keeps every caption of the
    ground truth wholly inside or wholly outside, clear of its edges by the planner's clearance
    (workers.text.regions). The ground truth's own answer to "text and product cannot be separated": motion
    bounds aside, which only make the planner's task harder, a frame where this is False justifies a
    letterbox."""
    params = FramingParams()
    margin = params.text_margin * min(width, height)
    (hx0, hx1), (hy0, hy1) = held_span(box[0], box[2]), held_span(box[1], box[3])
    held = (hx0, hy0, hx1, hy1)
    rects = [as_rect(c) for c in captions]
    grown = []
    for c in rects:
        clearance = text_clearance(c, margin)
        grown.append(
            (
                max(0.0, c[0] - clearance),
                max(0.0, c[1] - clearance),
                min(width, c[2] + clearance),
                min(height, c[3] + clearance),
            )
        )
    size = aspect_size(crop, width, height)
    zooms = crop_zooms(size, width, height, params.zooms, rects, margin, [held])
    for w, h in [crop, *(zoomed_size(size, z) for z in zooms)]:
        past_x = [v for g in grown for v in (g[2], g[0] - w)]
        past_y = [v for g in grown for v in (g[3], g[1] - h)]
        xs, ys = np.meshgrid(
            np.clip(np.r_[np.linspace(0, width - w, SEPARABLE_GRID), past_x], 0, width - w),
            np.clip(np.r_[np.linspace(0, height - h, SEPARABLE_GRID), past_y], 0, height - h),
        )
        ok = (xs <= held[0]) & (xs + w >= held[2]) & (ys <= held[1]) & (ys + h >= held[3])
        for g in grown:
            inside = (xs <= g[0]) & (xs + w >= g[2]) & (ys <= g[1]) & (ys + h >= g[3])
            outside = (xs >= g[2]) | (xs + w <= g[0]) | (ys >= g[3]) | (ys + h <= g[1])
            ok &= inside | outside
        if ok.any():
            return True
    return False


def _crop_rect(entry: dict[str, Any]) -> Rect:
    x, y = float(entry["x"]), float(entry["y"])
    return (x, y, x + float(entry["w"]), y + float(entry["h"]))


def frame_index(t: float, fps: float, n_frames: int) -> int:
    """The ground truth's frame shown at t."""
    return min(n_frames - 1, max(0, math.floor(t * fps + 1e-3)))


def too_big(box: Sequence[float], crop: tuple[int, int]) -> bool:
    """Whether the planner's held share of the product's box is longer than the aspect's largest crop on
    either side: the ground truth's own reason to letterbox."""
    return HELD_SHARE * max((box[2] - box[0]) / crop[0], (box[3] - box[1]) / crop[1]) > 1


@dataclass
class ClipScore:
    aspect: str
    padded: bool
    padded_reason: str | None
    #: window frames where the product is on screen and fits this aspect's largest crop; of them, held
    fit_frames: int = 0
    held_frames: int = 0
    #: window frames where the product is on screen and 95 % of its box is longer than the aspect's largest crop
    too_big_frames: int = 0
    #: of a letterboxed clip, window frames where the product fits but no crop separates it from the captions
    #: (separable): with too_big_frames, what justifies the letterbox by the ground truth
    unseparable_frames: int = 0
    window_frames: int = 0
    caption_cut_frames: int = 0
    text_cut: int = 0
    text_cut_crop_edges: int = 0
    text_cut_captions: int = 0
    text_cut_read: int = 0
    text_cut_read_crop_edges: int = 0
    #: of a letterboxed clip, per window frame showing the product: its size in the clip over the size that
    #: fitting the product alone to the clip would give
    fills: list[float] = field(default_factory=list)
    #: a placement's clip: where the product and captions lay against its safe zone (bench/zone_scores.py), and
    #: where they lay in the same aspect's clip held to that zone
    zone: ZoneScore | None = None
    baseline: ZoneScore | None = None
    #: the clip's file, as its manifest names it
    file: str = ""

    @property
    def fill(self) -> float | None:
        """A letterboxed clip's median fill (None for a cropped clip, or one never showing the product)."""
        return float(np.median(self.fills)) if self.fills else None

    @property
    def inside_share(self) -> float | None:
        return self.held_frames / self.fit_frames if self.fit_frames else None

    @property
    def product_too_big(self) -> bool:
        """The product truly larger than the crop (its held share, at more than the planner's pad share of
        frames): the one reason to letterbox the ground truth can check."""
        return self.too_big_frames > PAD_SHARE * self.window_frames


@dataclass
class ItemScore:
    item_id: str
    has_product: bool
    status: str
    window: tuple[float, float] | None
    interval: tuple[float, float] | None
    conditions: list[str]
    shape: str
    #: the catalog's product (its photograph's name in bench/quality_set.py)
    photo: str
    hit: bool | None = None
    #: whether reelgen located the product in some frame of its window (manifest subject boxes)
    located: bool = False
    #: best product window's mean score less the best background window's (None: no background window)
    margin: float | None = None
    #: the aspects' clips; the placements' apart (scored only against their safe zones)
    clips: list[ClipScore] = field(default_factory=list)
    placements: list[ClipScore] = field(default_factory=list)

    def min_inside(self) -> float | None:
        shares = [c.inside_share for c in self.clips if c.inside_share is not None]
        return min(shares) if shares else None

    def badness(self) -> float:
        """How badly the product did on this item, for picking the ones to look at first."""
        worst = self.min_inside()
        return (
            (3.0 if self.status != "done" else 0.0)
            + (2.0 if self.hit is False else 0.0)
            + (1.0 - worst if worst is not None else 0.0)
            + sum(c.padded for c in self.clips) / 6
            + sum(c.caption_cut_frames > 0 for c in self.clips) / 6
        )


def window_hit(window: tuple[float, float], interval: tuple[float, float]) -> bool:
    start, end = window
    overlap = max(0.0, min(end, interval[1]) - max(start, interval[0]))
    inside = start >= interval[0] - 1e-6 and end <= interval[1] + 1e-6
    return inside or overlap >= 0.5 * (end - start) - 1e-6


def window_margin(
    curve: Sequence[Sequence[float]], interval: tuple[float, float], length: float, step: float = 0.5
) -> float | None:
    """The best product window's mean score less the best background window's, windows of `length` starting
    every `step` over the curve's span (window_hit decides which are product windows; background ones do not
    touch the interval); None when either kind has no window with a sample."""
    times = np.array([float(p[0]) for p in curve])
    values = np.array([float(p[1]) for p in curve])
    if len(times) == 0:
        return None
    best: dict[bool, float] = {}
    for start in np.arange(0.0, max(0.0, float(times[-1]) - length) + 1e-9, step):
        end = start + length
        inside = (times >= start) & (times < end)
        if not inside.any():
            continue
        kind = window_hit((start, end), interval)
        if not kind and min(end, interval[1]) > max(start, interval[0]):
            continue  # touches the product without showing it enough: neither kind
        best[kind] = max(best.get(kind, -math.inf), float(values[inside].mean()))
    return best[True] - best[False] if True in best and False in best else None


def letterbox_fill(box: list[float], crop: Rect, output: dict[str, Any]) -> float:
    """The product's size in a letterboxed clip (the region shown fitted to the clip at its picture share) over
    the size fitting the product alone to the clip would give."""
    out_w, out_h = float(output["width"]), float(output["height"])
    shown = min(out_w / (crop[2] - crop[0]), out_h / (crop[3] - crop[1])) * float(
        output.get("picture_share", 1.0)
    )
    fitted = min(out_w / max(1.0, box[2] - box[0]), out_h / max(1.0, box[3] - box[1]))
    return shown / fitted


def score_item(manifest: dict[str, Any] | None, truth: dict[str, Any]) -> ItemScore:
    interval = tuple(truth["interval"]) if truth["interval"] else None
    score = ItemScore(
        item_id=truth["item_id"],
        has_product=bool(truth["has_product"]),
        status=str(manifest.get("status", "?")) if manifest else "failed",
        window=None,
        interval=(interval[0], interval[1]) if interval else None,
        conditions=list(truth["conditions"]),
        shape=str(truth["shape"]),
        photo=str(truth["photo"]),
    )
    if manifest is None:
        score.hit = False if score.has_product else None
        return score
    window = manifest["window"]
    score.window = (float(window["start_s"]), float(window["end_s"]))
    score.located = any(score.window[0] <= b[0] <= score.window[1] for b in manifest.get("subject_boxes", []))
    if score.interval is not None:
        score.hit = window_hit(score.window, score.interval)
        score.margin = window_margin(manifest["curve"], score.interval, score.window[1] - score.window[0])
    frames, fps, n = truth["frames"], float(truth["fps"]), int(truth["n_frames"])
    width, height = int(truth["width"]), int(truth["height"])
    for output in manifest["outputs"]:
        clip = ClipScore(str(output["aspect"]), bool(output.get("padded")), output.get("padded_reason"))
        clip.file = Path(str(output["uri"])).name
        placement = output.get("placement")
        twin = next(
            (o for o in manifest["outputs"] if not o.get("placement") and o["aspect"] == clip.aspect), None
        )
        if placement:
            name, zone = str(placement["name"]), placement["safe_zone"]
            clip.zone = ZoneScore(name, zone, limited=bool(placement["limited_by_upscale"]))
            clip.baseline = ZoneScore(name, zone) if twin is not None else None
        crop_w, crop_h = largest_crop(clip.aspect, width, height)
        for entry in output["crops"]:
            frame = frames[frame_index(float(entry["t"]), fps, n)]
            crop = _crop_rect(entry)
            box = frame["box"]
            clip.window_frames += 1
            if box is not None and clip.padded:
                clip.fills.append(letterbox_fill(box, crop, output))
            if box is not None and too_big(box, (crop_w, crop_h)):
                clip.too_big_frames += 1
            if box is not None and box[2] - box[0] <= crop_w and box[3] - box[1] <= crop_h:
                clip.fit_frames += 1
                clip.held_frames += share_inside(as_rect(box), crop) >= INSIDE
                if clip.padded:
                    clip.unseparable_frames += not separable(
                        as_rect(box), frame["captions"], width, height, (crop_w, crop_h)
                    )
            cut = any(
                CAPTION_SLACK < share_inside(as_rect(c), crop) < 1 - CAPTION_SLACK for c in frame["captions"]
            )
            clip.caption_cut_frames += cut
            if clip.zone is not None:
                score_frame(clip.zone, output, crop, box, frame["captions"], (width, height))
        if clip.baseline is not None and twin is not None:
            for entry in twin["crops"]:
                frame = frames[frame_index(float(entry["t"]), fps, n)]
                score_frame(
                    clip.baseline, twin, _crop_rect(entry), frame["box"], frame["captions"], (width, height)
                )
        (score.clips if clip.zone is None else score.placements).append(clip)
    return score


def _clip_frames(path: Path, count: int) -> list[tuple[int, U8]]:
    """count frames spread over the clip (index, RGB)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        total = stream.frames or 0
        if total <= 0:
            total = sum(1 for _ in container.decode(stream))
            container.seek(0)
        wanted = sorted({min(total - 1, round(total * (2 * j + 1) / (2 * count))) for j in range(count)})
        got: list[tuple[int, U8]] = []
        for index, frame in enumerate(container.decode(stream)):
            if index in wanted:
                got.append((index, np.asarray(frame.to_ndarray(format="rgb24"), np.uint8)))
            if index >= wanted[-1]:
                break
    return got


_DETECTOR: Any = None
_READER: Any = None


def _ocr_init() -> None:
    global _DETECTOR, _READER
    from gpu_service.models.text_detect import TextDetector
    from gpu_service.models.text_read import TextReader

    _DETECTOR = TextDetector(threads=1)
    _READER = TextReader(threads=1)


def _reads(rgb: U8, box: Rect) -> bool:
    """Whether the recogniser reads the pixels in box (an output frame's) as text, as the product decides."""
    x0, y0, x1, y1 = (max(0, round(v)) for v in box)
    line = rgb[y0:y1, x0:x1]
    if min(line.shape[:2]) < 2:
        return False
    scores, chars = _READER(np.stack(strips_of(line)))
    return bool(((chars >= 1) & (scores >= READ_SCORE)).any())


@dataclass(frozen=True)
class OcrJob:
    clip: str
    crops: list[dict[str, Any]]
    #: the ground truth's caption boxes (source pixels) on screen at each output frame
    captions: list[list[list[int]]]
    src_w: int
    src_h: int
    out_w: int
    out_h: int
    padded: bool
    #: a letterboxed picture's share of the size that fits the clip (manifests before it: 1)
    picture_share: float = 1.0


@dataclass(frozen=True)
class TextCuts:
    #: text boxes the detector finds touching an output frame's edge
    any: int
    #: those on an edge the crop made (not the source frame's own edge); letterboxed clips not counted
    crop_edges: int
    #: those lying on a caption of the ground truth: text for certain, not a face or a texture the detector took
    captions: int
    #: those the recogniser reads as text
    read: int
    #: those read as text on an edge the crop made: text that reelgen's crop cut
    read_crop_edges: int


def _to_source(box: Rect, crop: dict[str, Any], job: OcrJob) -> Rect:
    """An output frame's box in source pixels (a letterboxed clip shows its region fitted inside the frame)."""
    fit = min(job.out_w / crop["w"], job.out_h / crop["h"]) * job.picture_share
    scale = fit if job.padded else job.out_w / crop["w"]
    ox = (job.out_w - crop["w"] * scale) / 2 if job.padded else 0.0
    oy = (job.out_h - crop["h"] * scale) / 2 if job.padded else 0.0
    return (
        crop["x"] + (box[0] - ox) / scale,
        crop["y"] + (box[1] - oy) / scale,
        crop["x"] + (box[2] - ox) / scale,
        crop["y"] + (box[3] - oy) / scale,
    )


def ocr_clip(job: OcrJob) -> TextCuts:
    """Text boxes touching an output frame's edge, found by the product's own text detector."""
    cut = by_crop = on_captions = read = read_by_crop = 0
    for index, rgb in _clip_frames(Path(job.clip), OCR_FRAMES):
        height, width = rgb.shape[:2]
        row = min(index, len(job.crops) - 1)
        crop = job.crops[row]
        for box in _DETECTOR(rgb[None])[0]:
            x0, y0, x1, y1 = box
            edges = {
                "left": x0 <= EDGE_PX,
                "top": y0 <= EDGE_PX,
                "right": x1 >= width - EDGE_PX,
                "bottom": y1 >= height - EDGE_PX,
            }
            if not any(edges.values()):
                continue
            cut += 1
            is_read = _reads(rgb, box)
            read += is_read
            source = _to_source(box, crop, job)
            on_captions += any(share_inside(source, as_rect(c)) >= 0.3 for c in job.captions[row])
            if job.padded:
                continue
            made = {
                "left": crop["x"] > EDGE_PX,
                "top": crop["y"] > EDGE_PX,
                "right": crop["x"] + crop["w"] < job.src_w - EDGE_PX,
                "bottom": crop["y"] + crop["h"] < job.src_h - EDGE_PX,
            }
            crop_made = any(edges[side] and made[side] for side in edges)
            by_crop += crop_made
            read_by_crop += crop_made and is_read
    return TextCuts(cut, by_crop, on_captions, read, read_by_crop)


def score_half(catalog: Path, run: RunResult) -> list[ItemScore]:
    truth = load_truth(catalog)
    scores: list[ItemScore] = []
    manifests: dict[str, dict[str, Any]] = {}
    for item_id, item_truth in truth["items"].items():
        path = run.out / item_id / "manifest.json"
        manifest = json.loads(path.read_text()) if path.is_file() else None
        if manifest is not None:
            manifests[item_id] = manifest
        scores.append(score_item(manifest, item_truth))
    jobs: list[OcrJob] = []
    owners: list[ClipScore] = []
    for score in scores:
        manifest = manifests.get(score.item_id)
        if manifest is None:
            continue
        item = truth["items"][score.item_id]
        fps, n = float(item["fps"]), int(item["n_frames"])
        aspects = [output for output in manifest["outputs"] if not output.get("placement")]
        for clip, output in zip(score.clips, aspects, strict=True):
            path = run.out / score.item_id / clip.file
            if not path.is_file() or not output["crops"]:
                continue
            captions = [
                item["frames"][frame_index(float(e["t"]), fps, n)]["captions"] for e in output["crops"]
            ]
            jobs.append(
                OcrJob(
                    str(path), output["crops"], captions, int(item["width"]), int(item["height"]),
                    int(output["width"]), int(output["height"]), clip.padded,
                    float(output.get("picture_share", 1.0)),
                )
            )  # fmt: skip
            owners.append(clip)
    with multiprocessing.get_context("spawn").Pool(2, initializer=_ocr_init) as pool:
        for clip, cuts in zip(owners, pool.map(ocr_clip, jobs, chunksize=4), strict=True):
            clip.text_cut, clip.text_cut_crop_edges = cuts.any, cuts.crop_edges
            clip.text_cut_captions, clip.text_cut_read = cuts.captions, cuts.read
            clip.text_cut_read_crop_edges = cuts.read_crop_edges
    return scores


def below_95(scores: Sequence[ItemScore]) -> list[tuple[ItemScore, ClipScore]]:
    """The item-aspect pairs where the product fits and the crop holds it in under 95 % of the frames."""
    return [(s, c) for s in scores for c in s.clips if c.inside_share is not None and c.inside_share < 0.95]


def zone_figures(zones: Sequence[ZoneScore], prefix: str = "") -> dict[str, Any]:
    """The placements' clips (or, prefixed, the same aspects' clips) against the placements' safe zones
    (bench/zone_scores.py); nothing without placements."""
    if not zones:
        return {}
    shares = [share for z in zones if (share := z.in_zone_share) is not None]
    frames = sum(z.product_frames for z in zones)
    figures = {
        "placement_clips": len(zones),
        "placement_limited_by_upscale": sum(z.limited for z in zones),
        "placement_product_in_zone_mean": round(sum(shares) / len(shares), 3) if shares else None,
        "placement_product_in_zone_min": round(min(shares), 3) if shares else None,
        "placement_along_miss_frames": f"{sum(z.along_misses for z in zones)} of {frames}",
        "placement_along_miss_clips": sum(z.along_misses > PAD_SHARE * z.product_frames for z in zones),
        "placement_text_outside_clips": sum(z.text_outside > 0 for z in zones),
    }
    return {f"{prefix}{key}": value for key, value in figures.items() if not (prefix and "limited" in key)}


def figures(scores: list[ItemScore], run: RunResult) -> dict[str, Any]:
    product = [s for s in scores if s.has_product]
    clips = [c for s in scores for c in s.clips]
    shares = [c.inside_share for s in product for c in s.clips if c.inside_share is not None]
    margins = [s.margin for s in product if s.margin is not None]
    padded = [c for c in clips if c.padded]
    fills = [fill for c in padded if (fill := c.fill) is not None]
    too_big = {id(c) for c in clips if c.product_too_big}
    below = below_95(product)
    reasons = [c.padded_reason for c in padded if c.padded_reason is not None]
    analysis_cpu = sum(run.stages.get(stage, {}).get("cpu", 0.0) for stage in ANALYSIS_STAGES)
    measured = bool(run.stages) and run.daemon_busy_s is not None
    per_item = (analysis_cpu + (run.daemon_busy_s or 0.0)) / run.items if measured else run.wall_s / run.items
    return {
        "items": len(scores),
        "product_items": len(product),
        "failed_items": sum(s.status != "done" for s in scores),
        "windows_hit_rate": round(sum(bool(s.hit) for s in product) / len(product), 3) if product else None,
        "window_margin_min": round(min(margins), 3) if margins else None,
        "window_margin_median": round(float(np.median(margins)), 3) if margins else None,
        "product_inside_min": round(min(shares), 3) if shares else None,
        "product_inside_mean": round(sum(shares) / len(shares), 3) if shares else None,
        "product_inside_below_95": sum(share < 0.95 for share in shares),
        "product_inside_pairs": len(shares),
        "product_inside_below_95_unlocated": sum(not s.located for s, _ in below),
        "letterboxed_share": round(len(padded) / len(clips), 3) if clips else None,
        "letterbox_fill_median": round(float(np.median(fills)), 3) if fills else None,
        "letterbox_fill_min": round(min(fills), 3) if fills else None,
        "product_too_big_share": round(len(too_big) / len(clips), 3) if clips else None,
        "letterboxed_product_fits": sum(c.padded and id(c) not in too_big for c in clips),
        "letterboxed_separable": sum(
            c.padded
            and c.fit_frames > 0
            and c.too_big_frames + c.unseparable_frames <= PAD_SHARE * c.window_frames
            for c in clips
        ),
        "cropped_product_too_big": sum(not c.padded and id(c) in too_big for c in clips),
        "letterbox_reasons": dict(Counter(reasons)) if reasons else None,
        "text_cut": sum(c.text_cut for c in clips),
        "text_cut_crop_edges": sum(c.text_cut_crop_edges for c in clips),
        "text_cut_captions": sum(c.text_cut_captions for c in clips),
        "text_cut_read": sum(c.text_cut_read for c in clips),
        "text_cut_read_crop_edges": sum(c.text_cut_read_crop_edges for c in clips),
        "caption_cut_clips": sum(c.caption_cut_frames > 0 for c in clips),
        **zone_figures([c.zone for s in scores for c in s.placements if c.zone is not None]),
        **zone_figures(
            [c.baseline for s in scores for c in s.placements if c.baseline is not None], "aspect_"
        ),
        "analysis_s_per_item": round(per_item, 3),
        "analysis_s_kind": "cpu" if measured else "wall of the run",
        "render_cpu_s_per_item": round(run.stages.get("render", {}).get("cpu", 0.0) / run.items, 3),
        "run_wall_s": round(run.wall_s, 1),
        "run_exit": run.exit_code,
    }


# ---------------------------------------------------------------------------------------------------------------
# What a person looks at: the tuning half's items and the worst of them drawn
# ---------------------------------------------------------------------------------------------------------------

ASPECT_COLOURS = {  # BGR
    "1:1": (255, 160, 0),
    "2:3": (0, 215, 255),
    "3:4": (255, 0, 255),
    "4:5": (255, 255, 0),
    "9:16": (0, 128, 255),
    "16:9": (200, 200, 200),
}


def product_lines(scores: Sequence[ItemScore]) -> list[str]:
    """A half's figures by product (the items showing each; those showing none on a line of their own): where
    its failures lie. Pairs: item-aspect pairs where the product fits, below 95 % inside, and of those, ones
    whose window has no located box; letterboxed clips, of them ones the product fits; clips cropped where
    the product is larger than the crop."""
    lines = []
    groups: dict[str, list[ItemScore]] = {}
    for score in scores:
        groups.setdefault(score.photo if score.has_product else "(no product on screen)", []).append(score)
    for name, group in sorted(groups.items()):
        clips = [c for s in group for c in s.clips]
        below = below_95(group)
        pairs = sum(c.inside_share is not None for c in clips)
        padded = [c for c in clips if c.padded]
        head = f"  {name:<24} items {len(group):>3}: "
        if not group[0].has_product:
            lines.append(f"{head}letterboxed {len(padded)}/{len(clips)}")
            continue
        lines.append(
            f"{head}windows hit {sum(bool(s.hit) for s in group)}/{len(group)}, pairs below 95 % "
            f"{len(below)}/{pairs} ({sum(not s.located for s, _ in below)} unlocated), letterboxed "
            f"{len(padded)}/{len(clips)} ({sum(not c.product_too_big for c in padded)} where the product fits), "
            f"cropped though larger than the crop {sum(c.product_too_big and not c.padded for c in clips)}"
        )
    return lines


def item_line(score: ItemScore) -> str:
    window = f"{score.window[0]:5.1f}-{score.window[1]:5.1f}" if score.window else "     -     "
    interval = f"{score.interval[0]:5.1f}-{score.interval[1]:5.1f}" if score.interval else "     -     "
    hit = {True: "hit ", False: "MISS", None: "  - "}[score.hit]
    hit += f" margin {score.margin:+.2f}" if score.margin is not None else ""
    inside = " ".join(
        f"{c.aspect}={c.inside_share:.2f}" if c.inside_share is not None else f"{c.aspect}=-"
        for c in score.clips
    )
    padded = ",".join(c.aspect for c in score.clips if c.padded) or "-"
    cut = ",".join(c.aspect for c in score.clips if c.caption_cut_frames) or "-"
    text_cut = ",".join(c.aspect for c in score.clips if c.text_cut_crop_edges) or "-"
    return (
        f"  {score.item_id:<10} {score.shape:<5} {'product' if score.has_product else 'none   '} "
        f"{score.status:<6} window {window} interval {interval} {hit}  inside {inside or '-'}  "
        f"letterboxed {padded}  caption cut {cut}  text at crop edge {text_cut}  [{' '.join(score.conditions)}]"
    )


def _source_frames(path: Path, indices: list[int]) -> dict[int, U8]:
    wanted, got = set(indices), {}
    with av.open(str(path)) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if index in wanted:
                got[index] = np.asarray(frame.to_ndarray(format="bgr24"), np.uint8)
            if index >= max(wanted):
                break
    return got


def contact_sheet(
    score: ItemScore, manifest: dict[str, Any], truth: dict[str, Any], video: Path, dest: Path
) -> None:
    """Three source frames of the window with the product's true box (green), the captions (red) and every
    aspect's crop (one colour each), and what went wrong written above them."""
    fps, n = float(truth["fps"]), int(truth["n_frames"])
    start, end = float(manifest["window"]["start_s"]), float(manifest["window"]["end_s"])
    times = [start + (end - start) * f for f in (0.1, 0.5, 0.9)]
    # the frame where the most aspects let the product go, if there is one, in the middle
    failures: Counter[int] = Counter()
    for output in manifest["outputs"]:
        for entry in output["crops"]:
            k = frame_index(float(entry["t"]), fps, n)
            box = truth["frames"][k]["box"]
            if box is not None and share_inside(as_rect(box), _crop_rect(entry)) < INSIDE:
                failures[k] += 1
    indices = [frame_index(t, fps, n) for t in times]
    if failures:
        indices[1] = failures.most_common(1)[0][0]
    outside = -1
    if score.hit is False and score.interval is not None:
        # a window that missed: show where the product was instead of the window's last frame
        outside = frame_index(sum(score.interval) / 2, fps, n)
        indices[2] = outside
    images = _source_frames(video, indices)
    tiles = []
    for k in indices:
        image = images[k].copy()
        frame = truth["frames"][k]
        t = k / fps
        for output in manifest["outputs"] if k != outside else []:
            crops = output["crops"]
            entry = min(crops, key=lambda e: abs(float(e["t"]) - t))
            x0, y0, x1, y1 = (round(v) for v in _crop_rect(entry))
            colour = ASPECT_COLOURS.get(output["aspect"], (255, 255, 255))
            cv2.rectangle(image, (x0, y0), (x1 - 1, y1 - 1), colour, 2)
            row = list(ASPECT_COLOURS).index(output["aspect"]) if output["aspect"] in ASPECT_COLOURS else 0
            label = output["aspect"] + (" letterboxed" if output.get("padded") else "")
            cv2.putText(image, label, (x0 + 4, y0 + 20 + 20 * row), cv2.FONT_HERSHEY_SIMPLEX, 0.55, colour, 2)
        for c in frame["captions"]:
            cv2.rectangle(image, (c[0], c[1]), (c[2], c[3]), (0, 0, 255), 2)
        if frame["quad"] is not None:
            cv2.polylines(image, [np.array(frame["quad"], np.int32)], True, (0, 255, 0), 1)
        if frame["box"] is not None:
            b = frame["box"]
            cv2.rectangle(image, (b[0], b[1]), (b[2], b[3]), (0, 255, 0), 3)
        label = f"t={t:.2f}s" + ("" if frame["box"] is not None else " (no product on screen)")
        label += " (outside the window)" if k == outside else ""
        cv2.putText(image, label, (8, image.shape[0] - 12), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (0, 255, 255), 2)
        scale = 360 / image.shape[0]
        tiles.append(cv2.resize(image, (round(image.shape[1] * scale), 360), interpolation=cv2.INTER_AREA))
    sheet = np.hstack(tiles)
    lines: list[str] = []
    for word in item_line(score).split():
        if lines and len(lines[-1]) + len(word) < sheet.shape[1] // 9:
            lines[-1] += " " + word
        else:
            lines.append(word)
    banner = np.zeros((12 + 24 * len(lines), sheet.shape[1], 3), np.uint8)
    for j, text in enumerate(lines):
        cv2.putText(banner, text, (6, 20 + 24 * j), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1)
    cv2.imwrite(str(dest), np.vstack([banner, sheet]))


def write_report(scores: list[ItemScore], catalog: Path, run: RunResult, half: Half, worst: int = 3) -> Path:
    folder = DATA / ("report" if half == "tuning" else f"report-{half}")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    truth = load_truth(catalog)
    ranked = sorted((s for s in scores if s.status == "done"), key=lambda s: -s.badness())[:worst]
    rows = []
    for score in ranked:
        manifest = json.loads((run.out / score.item_id / "manifest.json").read_text())
        image = folder / f"{score.item_id}.png"
        video = catalog.parent / "videos" / f"{score.item_id}.mp4"
        contact_sheet(score, manifest, truth["items"][score.item_id], video, image)
        rows.append(
            f"<h2>{html.escape(score.item_id)}</h2><pre>{html.escape(item_line(score))}</pre>"
            f"<img src='{image.name}' style='max-width:100%'>"
        )
    legend = ", ".join(f"{a}" for a in ASPECT_COLOURS)
    page = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>quality: worst {half} items</title>"
        f"</head><body><h1>Worst {half} items</h1><p>Green: the product's true box (thin: its outline); red: "
        f"captions; one colour per aspect's crop ({legend}).</p>" + "".join(rows) + "</body></html>"
    )
    (folder / "index.html").write_text(page)
    return folder / "index.html"


# ---------------------------------------------------------------------------------------------------------------


def product_version() -> str:
    try:
        described = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
        )
        return described.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=16, help="items per half (default 16)")
    parser.add_argument(
        "--half",
        choices=("tuning", "heldout", "both", "dev"),
        default="both",
        help="both: tuning and heldout; dev: other products over the tuning half's footage",
    )
    parser.add_argument("--reuse", action="store_true", help="reuse a generated set if one is cached")
    parser.add_argument(
        "--placements",
        help="also write these placements' clips (e.g. vertical,feed-4x5,landscape) and score them against their "
        "safe zones",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="score the last run's outputs again instead of running the product",
    )
    parser.add_argument(
        "--rev",
        help="run the product as committed at this git revision (e.g. HEAD: without uncommitted changes in the "
        "working tree); default: the working tree as it is",
    )
    args = parser.parse_args()
    if args.items < 1:
        parser.error("--items must be at least 1")
    halves: list[Half] = ["tuning", "heldout"] if args.half == "both" else [args.half]
    missing = missing_sources(halves)
    if missing:
        print(
            f"missing real media {missing}: run .venv/bin/python -m devtools.fetch_real_media",
            file=sys.stderr,
        )
        return 2
    started = time.perf_counter()
    product, version = checkout(args.rev) if args.rev else (None, f"working tree at {product_version()}")
    if args.rescore:
        args.reuse = True
        version = "; ".join(
            f"{half} {json.loads((DATA / 'runs' / half / 'run.json').read_text())['product']} (rescored)"
            for half in halves
        )
    results: dict[Half, dict[str, Any]] = {}
    set_lines: list[str] = []
    tables: list[str] = []
    for half in halves:
        t0 = time.perf_counter()
        catalog = ensure_set(half, args.items, args.reuse)
        made = time.perf_counter() - t0
        truth = load_truth(catalog)
        seeds = item_seeds(half, args.items)
        counts = Counter(str(item["shape"]) for item in truth["items"].values())
        with_product = sum(bool(item["has_product"]) for item in truth["items"].values())
        spec = HALVES[half]
        set_lines.append(
            f"set {half}: {args.items} items ({with_product} with a product, {args.items - with_product} without), "
            f"seeds {seeds[0]}-{seeds[-1]}, shapes {dict(sorted(counts.items()))}, ready in {made:.1f} s; "
            f"photos {', '.join(spec.photos)}; clips {', '.join(spec.clips)}"
        )
        run = (
            last_run(half, args.items)
            if args.rescore
            else run_product(half, catalog, args.items, product, version, placements=args.placements)
        )
        scores = score_half(catalog, run)
        results[half] = figures(scores, run)
        if half != "heldout":
            page = write_report(scores, catalog, run, half)
            tables += [
                f"{half} items: window vs the product's interval, share of frames holding the product per aspect",
                *(item_line(s) for s in scores),
                f"  worst {min(3, len(scores))} {half} items drawn: {page}",
                f"{half} by product:",
                *product_lines(scores),
            ]
    for line in machine_lines():
        print(line)
    print(f"product: {version}; reelgen run with its defaults (one worker per CPU, daemon on the CPU)")
    for line in set_lines:
        print(line)
    for line in tables:
        print(line)
    for half, figs in results.items():
        print(f"{half}: " + ", ".join(f"{k} {v}" for k, v in figs.items()))
    wall = time.perf_counter() - started
    print(f"benchmark wall time {wall:.1f} s")
    summary: dict[str, Any] = {}
    if "heldout" in results:
        summary.update(results["heldout"])
    for half in ("tuning", "dev"):
        if half in results:
            summary.update({f"{half}_{k}": v for k, v in results[half].items()})
    summary["wall_s"] = round(wall, 1)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
