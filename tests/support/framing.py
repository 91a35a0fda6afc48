"""Support for the framing tests: run the text-safe framing chain on a generated video and measure the result.

Signals come from detection on sampled frames (text detector, main-image match, saliency); the generator's
ground truth is used only by the measurements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from gpu_service.priority import PriorityKey
from reelgen.sample_catalog import Truth
from workers.analysis.scoring import Inference, product_template, shot_signature
from workers.analysis.subject import find_subjects
from workers.analysis.windows import Window, best_window, detect_cuts
from workers.framing.planner import FramingPlan, plan_framing
from workers.geometry import Box, CropRect
from workers.media.render import EncodeOptions, OutputSpec, render_window
from workers.media.video import VideoSource
from workers.text.detection import detect_text, refine_text_times, text_sample_times

KEY = PriorityKey(0.0, 0.0)
SAMPLE_FPS = 2.0
WINDOW_S = 5.0
MATCH_WIDTH = 192
MATCH_SCALES = tuple(round(0.2 * 1.12**k, 3) for k in range(14))
# a match this strong means the product is on screen (the pipeline's SUBJECT_MATCH)
SUBJECT_MATCH = 0.45
REFINE = True


def match_box(rgb: np.ndarray, template: np.ndarray) -> tuple[float, Box]:
    """The main-image match the inference daemon computes (multi-scale normalised cross-correlation),
    done here with cv2 so these tests need neither the daemon nor torch."""
    scale = MATCH_WIDTH / rgb.shape[1]
    small = cv2.resize(rgb, (MATCH_WIDTH, round(rgb.shape[0] * scale)), interpolation=cv2.INTER_AREA)
    best: tuple[float, Box] = (-1.0, (0.0, 0.0, 0.0, 0.0))
    aspect = template.shape[1] / template.shape[0]
    for s in MATCH_SCALES:
        th = max(8, round(small.shape[0] * s))
        tw = max(8, round(th * aspect))
        if th >= small.shape[0] or tw >= small.shape[1]:
            continue
        result = cv2.matchTemplate(
            small, cv2.resize(template, (tw, th), interpolation=cv2.INTER_AREA), cv2.TM_CCOEFF_NORMED
        )
        _, peak, _, (x, y) = cv2.minMaxLoc(result)
        if peak > best[0]:
            best = (float(peak), (x / scale, y / scale, (x + tw) / scale, (y + th) / scale))
    return best


@dataclass
class Framed:
    window: Window
    cuts: list[float]
    plans: dict[str, FramingPlan]
    specs: list[OutputSpec]
    text: list[tuple[float, list[Box]]]
    subject: list[tuple[float, Box | None]]


def frame_item(
    video: Path, image: Path, out_dir: Path, infer: Inference, aspects: Sequence[tuple[int, int]]
) -> Framed:
    """Choose the window, take the signals, plan every aspect and render it: the pipeline's chain."""
    bgr = cv2.imread(str(image))
    assert bgr is not None, image
    main = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    template = product_template(main)
    with VideoSource(video) as source:
        info = source.info
        times = [info.start_s + k / SAMPLE_FPS for k in range(int(info.duration_s * SAMPLE_FPS))]
        frames = source.sample(times)
        matches = [match_box(f.rgb, template) for f in frames]
        rel = [f.t - info.start_s for f in frames]
        cuts = detect_cuts(rel, [shot_signature(f.rgb) for f in frames])
        window = best_window(rel, [max(0.0, m) for m, _ in matches], cuts, duration_s=info.duration_s,
                             window_s=WINDOW_S, step_s=1 / SAMPLE_FPS)  # fmt: skip
        start, end = window.start_s + info.start_s, window.end_s + info.start_s
        text_frames = source.sample(text_sample_times(start, end))
        span = (text_frames[0].t, text_frames[-1].t + 1e-3)
        quarter = (info.width // 4, info.height // 4)
        dense = [(f.t, cv2.cvtColor(cv2.resize(f.rgb, quarter, interpolation=cv2.INTER_AREA), cv2.COLOR_RGB2GRAY))
                 for f in source.frames(*span)]  # fmt: skip
    text_boxes = detect_text(infer, [f.rgb for f in text_frames], KEY)
    sparse = [(f.t, b) for f, b in zip(text_frames, text_boxes, strict=True)]
    text = refine_text_times(sparse, dense, (info.width, info.height)) if REFINE else sparse
    near = [i for i, f in enumerate(frames) if start - 1.0 <= f.t < end + 1.0]
    # as the pipeline does, captions are left out of the saliency map (the text sample nearest each frame)
    sample_times = np.array([t for t, _ in sparse])
    nearest_text = [sparse[int(np.argmin(np.abs(sample_times - frames[i].t)))][1] for i in near]
    fused = find_subjects(
        infer,
        [frames[i].rgb for i in near],
        KEY,
        matched=[matches[i][1] if matches[i][0] >= SUBJECT_MATCH else None for i in near],
        text_boxes=nearest_text,
        source_size=(info.width, info.height),
    )
    subject = [(frames[i].t, b) for i, b in zip(near, fused, strict=True)]
    source_cuts = [c + info.start_s for c in cuts]
    plans = plan_framing(start, end, info.width, info.height, aspects, subject, text, source_cuts)
    specs = [
        OutputSpec(
            p.label,
            p.size.out_w,
            p.size.out_h,
            p.crop_path(),
            out_dir / f"{p.size.file_stem}.mp4",
            padded=p.padded,
            picture_share=p.picture_share,
        )
        for p in plans.values()
    ]
    render_window(video, start, end, specs, EncodeOptions(preset="ultrafast"))
    return Framed(Window(start, end, window.score), source_cuts, plans, specs, text, subject)


def cuts_text(rect: CropRect, box: Sequence[int]) -> bool:
    """A text box is cut when the crop overlaps it without containing it."""
    x0, y0, x1, y1 = box
    overlaps = x0 < rect.x + rect.w and rect.x < x1 and y0 < rect.y + rect.h and rect.y < y1
    inside = rect.x <= x0 and x1 <= rect.x + rect.w and rect.y <= y0 and y1 <= rect.y + rect.h
    return overlaps and not inside


def subject_inside(rect: CropRect, box: Sequence[int], tolerance: int) -> bool:
    x0, y0, x1, y1 = box
    return (rect.x - tolerance <= x0 and x1 <= rect.x + rect.w + tolerance
            and rect.y - tolerance <= y0 and y1 <= rect.y + rect.h + tolerance)  # fmt: skip


def truth_frame(truth: Truth, t: float) -> int:
    return min(len(truth.frames) - 1, round(t * truth.fps))


def centre_acceleration(spec: OutputSpec, cuts: Sequence[float], span_s: float) -> np.ndarray:
    """|second difference| of the crop centre over ±span_s, per frame (px/s²), away from cuts."""
    times = np.array([t for t, _ in spec.crops])
    centres = np.array([[r.x + r.w / 2, r.y + r.h / 2] for _, r in spec.crops])
    fps = (len(times) - 1) / (times[-1] - times[0])
    k = max(1, round(span_s * fps))
    h = k / fps
    values = []
    for i in range(k, len(times) - k):
        if any(times[i] - h - 0.05 <= c <= times[i] + h + 0.05 for c in cuts):
            continue
        second = centres[i + k] - 2 * centres[i] + centres[i - k]
        values.append(float(np.max(np.abs(second))) / h**2)
    return np.array(values) if values else np.zeros(1)


def moving_length(spec: OutputSpec, width: int, height: int) -> int:
    rect = spec.crops[0][1]
    return width if width - rect.w >= height - rect.h else height


def decoded_frames(path: Path, times: Sequence[float]) -> list[np.ndarray]:
    with VideoSource(path) as clip:
        return [f.rgb for f in clip.sample(list(times))]


def touches_edge(box: Box, width: int, height: int, within: float = 1.0) -> bool:
    return box[0] <= within or box[1] <= within or box[2] >= width - within or box[3] >= height - within


def p95(values: np.ndarray) -> float:
    return float(np.percentile(values, 95)) if len(values) else 0.0


def isclose(a: float, b: float) -> bool:
    return math.isclose(a, b, abs_tol=1e-6)
