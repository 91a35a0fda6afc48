"""Rendering and encoding."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

import av
import numpy as np
import numpy.typing as npt

from reelgen.sample_catalog.overlay import (
    caption_origin,
    caption_patch,
    composite,
    object_patch,
    place,
    sprite_pyramid,
)
from reelgen.sample_catalog.plan import ItemPlan
from reelgen.sample_catalog.product import product_sprite
from reelgen.sample_catalog.scenes import Scene, shot_scene
from reelgen.sample_catalog.truth import CaptionTruth, FrameTruth
from reelgen.sample_catalog.vocabulary import AUDIO_FRAME, AUDIO_RATE, F32, U8, Box

T = TypeVar("T")


class Renderer:
    """Draws frame k of a plan and reports its truth; keeps only the current shot's scene in memory."""

    def __init__(self, plan: ItemPlan) -> None:
        self.plan = plan
        self.size = (plan.width, plan.height)
        sprite_h = max(512, math.ceil(0.75 * plan.height))
        self.sprites = [sprite_pyramid(product_sprite(d, sprite_h)) for d in plan.designs]
        self.caption_patches = [caption_patch(c, plan.width, plan.height) for c in plan.captions]
        self.caption_boxes = [
            _patch_box(p, caption_origin(c, p, self.size))
            for c, p in zip(plan.captions, self.caption_patches, strict=True)
        ]
        self._shot_index = -1
        self._scene: Scene | None = None

    def caption_truth(self) -> list[CaptionTruth]:
        fps = self.plan.fps
        return [
            CaptionTruth(c.text, sec(c.k0, fps), sec(c.k1, fps), box)
            for c, box in zip(self.plan.captions, self.caption_boxes, strict=True)
        ]

    def render(self, k: int) -> tuple[U8, FrameTruth]:
        t = k / self.plan.fps
        scene, shot_start = self._scene_for(k)
        frame = scene.frame(t - shot_start / self.plan.fps)
        product_box: Box | None = None
        decoys: list[Box] = []
        for appearance in self.plan.appearances:
            if not appearance.k0 <= k < appearance.k1:
                continue
            patch = object_patch(self.sprites[appearance.design], appearance, t, self.plan.height)
            box = composite(frame, patch, *place(patch, appearance, t, self.size))
            if box is None:
                continue
            if appearance.is_product:
                product_box = box if product_box is None else _union(product_box, box)
            else:
                decoys.append(box)
        captions = []
        for caption, label, box in zip(
            self.plan.captions, self.caption_patches, self.caption_boxes, strict=True
        ):
            if caption.k0 <= k < caption.k1:
                frame[box[1] : box[3], box[0] : box[2]] = label
                captions.append(box)
        return frame, FrameTruth(sec(k, self.plan.fps), product_box, captions, decoys)

    def _scene_for(self, k: int) -> tuple[Scene, int]:
        shots = self.plan.shots
        index = max(i for i, s in enumerate(shots) if s.k0 <= k)
        end = shots[index + 1].k0 if index + 1 < len(shots) else self.plan.n_frames
        if index != self._shot_index or self._scene is None:
            self._scene = shot_scene(shots[index], self.size, (end - shots[index].k0) / self.plan.fps)
            self._shot_index = index
        return self._scene, shots[index].k0


def _patch_box(patch: U8, origin: tuple[int, int]) -> Box:
    x, y = origin
    return x, y, x + patch.shape[1], y + patch.shape[0]


def _union(a: Box, b: Box) -> Box:
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def sec(k: int, fps: float) -> float:
    return round(k / fps, 6)


def _audio_track(plan: ItemPlan) -> F32:
    """Stereo samples: a chord per shot, an arpeggio under the product, a chirp as each caption appears."""
    n = math.ceil(plan.n_frames / plan.fps * AUDIO_RATE)
    t = np.arange(n, dtype=np.float64) / AUDIO_RATE
    left, right = np.zeros(n), np.zeros(n)
    notes = (196.0, 220.0, 261.6, 293.7, 329.6, 392.0)
    bounds = [s.k0 for s in plan.shots] + [plan.n_frames]
    for i, shot in enumerate(plan.shots):
        a, b = (round(k / plan.fps * AUDIO_RATE) for k in (bounds[i], bounds[i + 1]))
        base = notes[shot.seed % len(notes)]
        seg = t[a:b]
        tremolo = 0.75 + 0.25 * np.sin(2 * np.pi * 0.5 * seg)
        left[a:b] += 0.08 * tremolo * np.sin(2 * np.pi * base * seg)
        right[a:b] += 0.08 * tremolo * np.sin(2 * np.pi * base * 1.5 * seg)
    a, b = (round(k / plan.fps * AUDIO_RATE) for k in plan.interval)
    seg = t[a:b] - t[a] if b > a else t[a:b]
    step = np.floor(seg / 0.25).astype(np.int64) % 4
    freq = np.array([523.3, 659.3, 784.0, 1046.5])[step]
    beep = 0.1 * np.sin(2 * np.pi * freq * seg) * np.exp(-8 * (seg % 0.25))
    left[a:b] += beep
    right[a:b] += beep
    for caption in plan.captions:
        _add_chirp(left, right, round(caption.k0 / plan.fps * AUDIO_RATE))
    return np.clip(np.stack([left, right]), -1, 1).astype(np.float32)


def _add_chirp(left: npt.NDArray[np.float64], right: npt.NDArray[np.float64], start: int) -> None:
    length = min(round(0.15 * AUDIO_RATE), left.size - start)
    if length <= 0:
        return
    s = np.arange(length) / AUDIO_RATE
    chirp = 0.12 * np.sin(2 * np.pi * (600 * s + 0.5 * 5000 * s * s)) * np.hanning(length)
    left[start : start + length] += chirp
    right[start : start + length] += 0.6 * chirp


def _audio_frames(samples: F32) -> Iterator[av.AudioFrame]:
    for start in range(0, samples.shape[1], AUDIO_FRAME):
        chunk = np.ascontiguousarray(samples[:, start : start + AUDIO_FRAME])
        frame = av.AudioFrame.from_ndarray(chunk, format="fltp", layout="stereo")
        frame.sample_rate = AUDIO_RATE
        frame.pts = start
        frame.time_base = Fraction(1, AUDIO_RATE)
        yield frame


def write_mp4(
    path: Path,
    size: tuple[int, int],
    rate: Fraction,
    n_frames: int,
    render: Callable[[int], tuple[npt.NDArray[np.uint8], T]],
    samples: F32,
    *,
    options: dict[str, str] | None = None,
    one_thread: bool = False,
) -> list[T]:
    """An H.264/AAC MP4 of n_frames BGR frames from render(k) and stereo samples at AUDIO_RATE; returns what
    render said of each frame. one_thread: x264 on one thread (items encoded side by side); else x264's own
    threading (PyAV would ask FFmpeg for slice threads)."""
    said: list[T] = []
    with av.open(str(path), "w", format="mp4") as container:
        # x264's macroblock tree reads heap memory it never wrote (the same pictures gave different bytes from one
        # process to the next); without it a plan always gives the same file
        video = container.add_stream(
            "libx264", rate=rate, options={"x264-params": "mbtree=0", **(options or {})}
        )
        video.width, video.height, video.pix_fmt = size[0], size[1], "yuv420p"
        if one_thread:
            video.codec_context.thread_count = 1
        else:
            video.codec_context.thread_type = "NONE"
        audio = container.add_stream("aac", rate=AUDIO_RATE)
        audio.layout = "stereo"
        audio_frames = _audio_frames(samples)
        next_sample = 0
        for k in range(n_frames):
            image, about = render(k)
            said.append(about)
            frame = av.VideoFrame.from_ndarray(image, format="bgr24")
            frame.pts = k
            frame.time_base = 1 / rate
            container.mux(video.encode(frame))
            # keep audio level with video so the muxer's interleaving queue stays short
            while next_sample < (k + 1) / rate * AUDIO_RATE and next_sample < samples.shape[1]:
                container.mux(audio.encode(next(audio_frames)))
                next_sample += AUDIO_FRAME
        container.mux(video.encode(None))
        for rest in audio_frames:
            container.mux(audio.encode(rest))
        container.mux(audio.encode(None))
    return said


def encode_item(path: Path, plan: ItemPlan, renderer: Renderer) -> list[FrameTruth]:
    """Write the H.264/AAC MP4 with libx264's defaults (preset medium, its own threading); returns truth."""
    rate = Fraction(plan.fps).limit_denominator(1001)
    return write_mp4(
        path, (plan.width, plan.height), rate, plan.n_frames, renderer.render, _audio_track(plan)
    )
