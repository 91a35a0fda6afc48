"""PP-OCRv4 text detection (the daemon's text_detect model; its weights file, and the text_read model's), and the
dense refinement of when text is on screen."""

from __future__ import annotations

import itertools
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from core.digests import file_digest
from core.errors import ConfigError, InferenceRejected
from gpu_service import registry
from gpu_service.local import LocalInference
from gpu_service.models import text_read
from gpu_service.models.text_detect import builtin_model_path
from gpu_service.priority import PriorityKey
from tests.support.inference import Recording
from workers.geometry import Box
from workers.media.containers import Frame
from workers.text.detection import (
    TEXT_FPS,
    TEXT_MODEL,
    StreamedDetection,
    detect_text,
    plausible_text,
    refine_text_times,
    text_sample_times,
)

KEY = PriorityKey(0.0, 0.0)


@pytest.fixture(scope="module")
def model() -> LocalInference:
    return LocalInference()


def detect(model: LocalInference, frames: list[np.ndarray], **kwargs: tuple[int, int]) -> list[list[Box]]:
    return detect_text(model, frames, KEY, **kwargs)


def caption_frame(width: int, height: int, text: str, origin: tuple[int, int], scale: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    frame = cv2.GaussianBlur(rng.integers(40, 200, (height, width, 3), dtype=np.uint8), (0, 0), 6)
    cv2.putText(frame, text, origin, cv2.FONT_HERSHEY_DUPLEX, scale, (255, 255, 255), 2, cv2.LINE_AA)
    return frame


def ink_box(frame: np.ndarray, reference: np.ndarray) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(np.abs(frame.astype(int) - reference.astype(int)).max(axis=2) > 30)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def test_finds_a_caption_where_it_is_drawn(model: LocalInference) -> None:
    frame = caption_frame(1280, 720, "SALE 50% OFF", (420, 200), 1.6)
    ink = ink_box(frame, caption_frame(1280, 720, "", (0, 0), 1.0))
    (boxes,) = detect(model, [frame])
    assert len(boxes) >= 1
    x0, y0, x1, y1 = (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
    # the detector's box hugs the ink: within a few pixels at this size (it was run at 736 px wide)
    assert abs(x0 - ink[0]) < 12 and abs(x1 - ink[2]) < 12 and abs(y0 - ink[1]) < 12 and abs(y1 - ink[3]) < 12
    plain = caption_frame(1280, 720, "", (0, 0), 1.0)
    assert detect(model, [plain]) == [[]]


def test_a_batch_finds_what_single_frames_do_and_boxes_scale_back_to_source(model: LocalInference) -> None:
    big = caption_frame(1280, 720, "NEW ARRIVAL", (100, 600), 1.5)
    small = cv2.resize(big, (640, 360), interpolation=cv2.INTER_AREA)
    plain = caption_frame(640, 360, "", (0, 0), 1.0)
    batched = detect(model, [small, plain, small])
    singles = [detect(model, [f])[0] for f in (small, plain, small)]
    assert batched == singles and batched[1] == [] and len(batched[0]) >= 1
    tall = caption_frame(480, 640, "TOP", (150, 300), 1.2)
    assert len(detect(model, [tall])[0]) >= 1
    scaled = detect(model, [small], source_size=(1280, 720))[0]
    direct = detect(model, [big])[0]
    assert len(scaled) == len(direct) >= 1
    for s, d in zip(sorted(scaled), sorted(direct), strict=True):
        assert max(abs(a - b) for a, b in zip(s, d, strict=True)) < 10


def test_streamed_detection_finds_what_one_call_does_while_frames_are_still_coming(
    model: LocalInference,
) -> None:
    captioned = caption_frame(1280, 720, "SALE 50% OFF", (420, 200), 1.6)
    frames = [
        cv2.resize(f, (736, 414), interpolation=cv2.INTER_AREA)
        for f in (captioned, caption_frame(1280, 720, "", (0, 0), 1.0))
    ]
    recording = Recording()
    with StreamedDetection(recording, KEY, source_size=(1280, 720)) as detection:
        detection.add(Frame(0.0, frames[0]), copies=2)
        # the first frame is detected before the next is handed in: the daemon works beside the caller
        deadline = time.monotonic() + 60
        while not recording.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [r.frames for r in recording.requests] == [1]
        detection.add(Frame(1.0, frames[1]))
        detection.add(Frame(2.0, frames[0]))
        found = detection.results()
    assert found == detect(model, [frames[0], frames[0], frames[1], frames[0]], source_size=(1280, 720))
    assert len(found[0]) >= 1 and found[2] == []
    assert recording.frames() == {TEXT_MODEL: 3}  # each frame detected once, its copies given its regions


class Refusing(LocalInference):
    """The in-process models behind a daemon that refuses every request (as one with too small slots does)."""

    def infer(self, *_: Any, **__: Any) -> dict[str, npt.NDArray[np.float32]]:
        raise InferenceRejected("one frame needs more bytes than the daemon's slots")


def test_streamed_detection_raises_the_daemons_error_and_stops_when_left_early(model: LocalInference) -> None:
    frame = caption_frame(640, 360, "", (0, 0), 1.0)
    with StreamedDetection(Refusing(), KEY, source_size=(640, 360)) as detection:
        detection.add(Frame(0.0, frame))
        detection.add(Frame(1.0, frame))
        with pytest.raises(InferenceRejected, match="slots"):
            detection.results()
    assert not detection._thread.is_alive()
    with (
        pytest.raises(RuntimeError, match="decode failed"),
        StreamedDetection(model, KEY, source_size=(640, 360)) as left,
    ):
        left.add(Frame(0.0, frame))
        raise RuntimeError("decode failed")
    assert not left._thread.is_alive()


@pytest.mark.parametrize(
    ("name", "builtin"), [("text_detect", builtin_model_path), ("text_read", text_read.builtin_model_path)]
)
def test_weights_are_an_onnx_file_from_a_configured_path(
    tmp_path: Path, name: str, builtin: Callable[[], Path]
) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(builtin(), copy)
    loaded = registry.create(name, LocalInference().device, f"file://{copy}")
    assert loaded.digest == file_digest(copy)
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="does not load"):
        registry.create(name, LocalInference().device, str(tmp_path / "bad.onnx"))
    with pytest.raises(ConfigError, match="ONNX"):
        registry.create(name, LocalInference().device, str(tmp_path))


def test_sample_times_cover_the_window_edges() -> None:
    assert text_sample_times(2.0, 4.0, fps=2.0) == [2.0, 2.5, 3.0, 3.5, 4.0]
    times = text_sample_times(2.0, 4.2)
    assert (
        times[0] == 2.0
        and times[-1] >= 4.2
        and all(b - a <= 1.0 / TEXT_FPS + 1e-9 for a, b in itertools.pairwise(times))
    )


def test_refinement_finds_when_a_caption_appears_and_leaves() -> None:
    """Samples every 0.5 s see a caption at 1.0 and 1.5 only; the dense frames show it from 0.84 to 1.68 s."""
    box = (40.0, 20.0, 200.0, 60.0)
    rng = np.random.default_rng(1)
    background = rng.integers(0, 255, (90, 160), dtype=np.uint8)
    dense = []
    for k in range(51):
        t = k / 25
        gray = np.roll(background, k, axis=1).copy()  # moving background: the comparison must not care
        if 0.84 <= t < 1.68:
            gray[5:15, 10:50] = 255
        dense.append((t, gray))
    sparse = [(0.5, []), (1.0, [box]), (1.5, [box]), (2.0, [])]
    refined = dict(refine_text_times(sparse, dense, (640, 360)))
    shown = [t for t, boxes in refined.items() if boxes]
    assert min(shown) <= 0.84 and max(shown) >= 1.64  # never less than the truth
    assert min(shown) >= 0.84 - 0.041 and max(shown) <= 1.68 + 0.041  # and at most one frame more each side


def test_a_caption_is_found_from_the_frame_it_appears_though_something_bright_passed_behind_it() -> None:
    """When the later sample was taken, a bright object stood behind a third of the caption's box; the frames
    between are nearer the earlier sample over the whole patch, while the glyphs match the later one."""
    box = (40.0, 20.0, 200.0, 60.0)  # (10, 5)-(50, 15) in the quarter-size frames
    rng = np.random.default_rng(3)
    scene = cv2.GaussianBlur(rng.integers(60, 180, (90, 400), dtype=np.uint8), (0, 0), 1.0)
    dense = []
    for k in range(13, 26):
        t = k / 25
        gray = scene[:, k : k + 160].copy()  # a slow pan
        if t >= 0.96:
            gray[5:15, 36:50] = 250  # the bright object, as the later sample sees it
        if t >= 0.72:
            gray[7:13, 10:50:4] = 255  # thin strokes: a seventh of the box
        dense.append((t, gray))
    refined = refine_text_times([(0.52, []), (1.0, [box])], dense, (640, 360))
    shown = [t for t, boxes in refined if boxes]
    assert 0.68 - 1e-9 <= min(shown) <= 0.72 + 1e-9, shown


def test_a_caption_missed_at_the_sample_after_it_appeared_is_found_from_where_it_appeared() -> None:
    """The caption appears at 0.72 s; the detector misses it at 1.0 s and finds it at 1.5 s. Its pixels at 1.0
    are those at 1.5, so it was on screen at 1.0 too, and it is found from 0.72, not from 1.0 or 1.5."""
    box = (40.0, 20.0, 200.0, 60.0)  # (10, 5)-(50, 15) in the quarter-size frames
    rng = np.random.default_rng(4)
    background = rng.integers(0, 255, (90, 160), dtype=np.uint8)
    dense = []
    for k in range(0, 38):
        t = k / 25
        gray = np.roll(background, 2 * k, axis=1).copy()
        if t >= 0.72:
            gray[5:15, 10:40] = 255
        dense.append((t, gray))
    refined = refine_text_times([(0.0, []), (0.52, []), (1.0, []), (1.48, [box])], dense, (640, 360))
    shown = [t for t, boxes in refined if boxes]
    assert 0.68 - 1e-9 <= min(shown) <= 0.72 + 1e-9, shown


def test_a_caption_the_detector_missed_at_one_sample_is_kept_between_the_samples() -> None:
    """The caption is on screen throughout over a moving background; the detector saw it at 1.0 s, not at
    0.52 s. Its pixels are the same at both samples, so it was there all along: every frame keeps it."""
    box = (40.0, 20.0, 200.0, 60.0)  # (10, 5)-(50, 15) in the quarter-size frames
    rng = np.random.default_rng(2)
    background = rng.integers(0, 255, (90, 160), dtype=np.uint8)
    dense = []
    for k in range(13, 26):
        gray = np.roll(background, 3 * k, axis=1).copy()
        gray[5:15, 10:36] = 255  # the glyphs: two thirds of the region; the background shows through the rest
        dense.append((k / 25, gray))
    refined = refine_text_times([(0.52, []), (1.0, [box])], dense, (640, 360))
    assert all(boxes for _, boxes in refined), [t for t, boxes in refined if not boxes]


def test_a_caption_kept_on_screen_over_a_shot_cut_is_followed_to_where_it_leaves() -> None:
    """A thin caption over a panning shot stays on screen when the video cuts to a still shot at 0.6 s and
    leaves at 1.12 s; the samples at 0.52 s (shot A, caption) and 1.48 s (shot B, none) bracket both. After the
    cut the caption's region is shot B's background plus a few glyph pixels: nearer the sample without it, so
    the comparison with the first sample alone read the caption as gone from the cut on."""
    box = (40.0, 20.0, 200.0, 60.0)  # (10, 5)-(50, 15) in the quarter-size frames
    rng = np.random.default_rng(5)
    # a dark street, then a bright sky
    shots = [
        cv2.GaussianBlur(rng.integers(low, high, (90, 400), dtype=np.uint8), (0, 0), 1.5)
        for low, high in ((20, 120), (150, 210))
    ]
    dense = []
    for k in range(13, 38):
        t = k / 25
        gray = (shots[1][:, :160] if t >= 0.6 else shots[0][:, k : k + 160]).copy()
        if t < 1.12:
            gray[7:13, 10:50:4] = 255  # thin strokes: a seventh of the box
        dense.append((t, gray))
    refined = refine_text_times([(0.52, [box]), (1.48, [])], dense, (640, 360))
    shown = [t for t, boxes in refined if boxes]
    assert min(shown) == 0.52 and 1.08 - 1e-9 <= max(shown) <= 1.16 + 1e-9, shown


def test_face_shaped_regions_are_not_text_but_lines_words_and_vertical_text_are() -> None:
    width, height = 1280, 720
    face = (500.0, 200.0, 700.0, 480.0)  # 200×280: squarish and taller than any caption line
    caption = (100.0, 600.0, 700.0, 660.0)  # a line of text: ten times as wide as tall
    price = (1000.0, 40.0, 1090.0, 100.0)  # "$9": squarish but caption-sized
    vertical = (1200.0, 100.0, 1240.0, 500.0)  # a column of glyphs: far narrower than tall
    assert not plausible_text(face, width, height)
    assert all(plausible_text(box, width, height) for box in (caption, price, vertical))


def test_a_region_whose_glyphs_would_stand_a_third_of_the_frame_tall_is_not_text() -> None:
    """The blurred lights of a street at night read as one wide region 69 % of the frame tall; as a caption it
    letterboxed every aspect. Two caption lines set close and boxed as one stay text."""
    width, height = 960, 720
    lights = (0.0, 0.0, 933.0, 498.0)
    two_lines = (60.0, 500.0, 900.0, 700.0)  # 200 px: glyphs of 90 px on each line
    assert not plausible_text(lights, width, height)
    assert plausible_text(two_lines, width, height)
