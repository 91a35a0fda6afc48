"""The synthetic sample catalog: real H.264/AAC files whose ground truth matches their pixels."""

from __future__ import annotations

import json
import re
from pathlib import Path

import av
import cv2
import numpy as np
import numpy.typing as npt
import pytest

from core.errors import ConfigError
from reelgen.sample_catalog import HARD_CASES, Box, Truth, load_truth, write_sample_catalog

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
BGR = npt.NDArray[np.uint8]


def write_small(out: Path, items: int, *, seed: int = 7, hard_cases: bool = False) -> Path:
    """Tiny videos: the whole module's catalogs encode in a few seconds."""
    return write_sample_catalog(
        out, items, seed=seed, size=(320, 180), duration_s=(4.0, 5.0), fps=10.0, hard_cases=hard_cases
    )


@pytest.fixture(scope="module")
def small_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("catalog")
    write_small(out, 2)
    return out


@pytest.fixture(scope="module")
def hard_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hard")
    write_small(out, 0, hard_cases=True)
    return out


def catalog_lines(catalog_dir: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in (catalog_dir / "catalog.jsonl").read_text().splitlines()]


def read_image(path: Path) -> BGR:
    image = cv2.imread(str(path))
    assert image is not None, path
    return np.asarray(image, np.uint8)


def decode_frames(path: Path) -> list[BGR]:
    with av.open(str(path)) as container:
        return [np.asarray(frame.to_ndarray(format="bgr24"), np.uint8) for frame in container.decode(video=0)]


def product_mismatch(frame: BGR, box: Box, main_image: BGR, covered: list[Box]) -> float:
    """Median colour distance between frame[box] and the main image's product scaled to the box.

    Only pixels well inside the product's silhouette count, and none under a caption drawn over it.
    """
    foreground = np.abs(main_image.astype(np.int16) - 245).max(axis=2) > 12
    ys, xs = np.nonzero(foreground)
    product = main_image[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    silhouette = foreground[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1].astype(np.uint8)
    x0, y0, x1, y1 = box
    reference = cv2.resize(product, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA).astype(np.float32)
    scaled = cv2.resize(silhouette, (x1 - x0, y1 - y0), interpolation=cv2.INTER_NEAREST)
    inside = cv2.erode(scaled, np.ones((5, 5), np.uint8)).astype(bool)
    for cx0, cy0, cx1, cy1 in covered:
        inside[max(0, cy0 - y0) : max(0, cy1 - y0), max(0, cx0 - x0) : max(0, cx1 - x0)] = False
    distance = np.abs(frame[y0:y1, x0:x1].astype(np.float32) - reference).mean(axis=2)
    return float(np.median(distance[inside]))


def assert_inside(box: Box, truth: Truth) -> None:
    x0, y0, x1, y1 = box
    assert 0 <= x0 < x1 <= truth.width and 0 <= y0 < y1 <= truth.height, box


def test_catalog_lines_follow_the_contract(small_catalog: Path) -> None:
    lines = catalog_lines(small_catalog)
    assert [line["item_id"] for line in lines] == ["sku-0001", "sku-0002"]
    for line in lines:
        assert set(line) == {"item_id", "video", "image", "title", "description"}
        assert ID_PATTERN.match(line["item_id"])
        assert line["video"] == f"videos/{line['item_id']}.mp4"
        assert line["image"] == f"images/{line['item_id']}.png"
        assert (small_catalog / line["video"]).is_file()
        assert line["title"] and line["description"]
        image = read_image(small_catalog / line["image"])
        assert image.shape == (512, 512, 3)
        # a plain light background around the product, as marketplaces require of main images
        assert image[:8, :8].min() > 230 and image[-8:, -8:].min() > 230


def test_videos_are_h264_aac_with_exact_timestamps(small_catalog: Path) -> None:
    for line in catalog_lines(small_catalog):
        truth = load_truth(small_catalog, line["item_id"])
        with av.open(str(small_catalog / line["video"])) as container:
            video, audio = container.streams.video[0], container.streams.audio[0]
            assert video.codec_context.name == "h264"
            assert video.codec_context.pix_fmt == "yuv420p"
            assert (video.codec_context.width, video.codec_context.height) == (truth.width, truth.height)
            assert audio.codec_context.name == "aac"
            assert audio.codec_context.channels == 2
            times = [float(f.time) for f in container.decode(video=0) if f.time is not None]
        assert len(times) == len(truth.frames)
        assert times == pytest.approx([f.t for f in truth.frames], abs=1e-3)
        with av.open(str(small_catalog / line["video"])) as container:
            assert container.duration is not None
            assert abs(container.duration / 1e6 - truth.duration_s) <= 1 / truth.fps


def test_truth_is_consistent(small_catalog: Path) -> None:
    for line in catalog_lines(small_catalog):
        truth = load_truth(small_catalog, line["item_id"])
        start, end = truth.product_interval
        assert 0 < start < end < truth.duration_s
        assert truth.duration_s == pytest.approx(len(truth.frames) / truth.fps)
        assert truth.cuts == sorted(truth.cuts) and start in truth.cuts
        assert truth.case is None
        for frame in truth.frames:
            # a regular item shows its product exactly during the interval
            assert (frame.product_box is not None) == (start <= frame.t < end), frame
            for box in [*frame.caption_boxes, *frame.decoy_boxes]:
                assert_inside(box, truth)
            if frame.product_box is not None:
                assert_inside(frame.product_box, truth)
        assert any(f.caption_boxes for f in truth.frames if start <= f.t < end)
        assert any(f.caption_boxes for f in truth.frames if not start <= f.t < end)
        assert any(f.decoy_boxes for f in truth.frames)


def test_product_pixels_are_inside_the_product_box(small_catalog: Path) -> None:
    for line in catalog_lines(small_catalog):
        truth = load_truth(small_catalog, line["item_id"])
        frames = decode_frames(small_catalog / line["video"])
        main_image = read_image(small_catalog / line["image"])
        shown = [k for k, f in enumerate(truth.frames) if f.product_box is not None]
        absent = [k for k, f in enumerate(truth.frames) if f.product_box is None]
        for k in shown[len(shown) // 4 :: max(1, len(shown) // 4)]:
            box = truth.frames[k].product_box
            assert box is not None
            there = product_mismatch(frames[k], box, main_image, truth.frames[k].caption_boxes)
            elsewhere = min(product_mismatch(frames[j], box, main_image, []) for j in absent[::3])
            assert there < 25, (line["item_id"], k, there)
            assert elsewhere > 2 * there, (line["item_id"], k, there, elsewhere)


def test_caption_boxes_are_filled_boxes_in_the_video(small_catalog: Path) -> None:
    truth = load_truth(small_catalog, "sku-0001")
    frames = decode_frames(small_catalog / "videos/sku-0001.mp4")
    checked = 0
    for caption in truth.captions:
        k = round((caption.start_s + caption.end_s) / 2 * truth.fps)
        assert caption.box in truth.frames[k].caption_boxes
        x0, y0, x1, _ = caption.box
        # the box's padding row just inside its top edge is one flat colour
        ring = frames[k][y0 + 1, x0 + 2 : x1 - 2].astype(np.float32)
        assert float(ring.std(axis=0).max()) < 25, caption
        checked += 1
    assert checked >= 2


def test_same_seed_gives_same_catalog_and_truth(small_catalog: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    write_small(again, 2)
    assert (again / "catalog.jsonl").read_text() == (small_catalog / "catalog.jsonl").read_text()
    for name in ("sku-0001", "sku-0002"):
        assert (again / "truth" / f"{name}.json").read_bytes() == (
            small_catalog / "truth" / f"{name}.json"
        ).read_bytes()
        assert (again / "images" / f"{name}.png").read_bytes() == (
            small_catalog / "images" / f"{name}.png"
        ).read_bytes()


def test_item_does_not_depend_on_catalog_size(small_catalog: Path, tmp_path: Path) -> None:
    write_small(tmp_path, 1)
    assert load_truth(tmp_path, "sku-0001") == load_truth(small_catalog, "sku-0001")


def test_other_seed_gives_other_items(small_catalog: Path, tmp_path: Path) -> None:
    write_small(tmp_path, 1, seed=8)
    assert load_truth(tmp_path, "sku-0001") != load_truth(small_catalog, "sku-0001")


def test_hard_cases_are_recorded_and_shaped(hard_catalog: Path) -> None:
    lines = catalog_lines(hard_catalog)
    truths = {t.case: t for t in (load_truth(hard_catalog, line["item_id"]) for line in lines)}
    assert set(truths) == set(HARD_CASES)
    for truth in truths.values():
        for frame in truth.frames:
            for box in [*frame.caption_boxes, *frame.decoy_boxes]:
                assert_inside(box, truth)
            if frame.product_box is not None:
                assert_inside(frame.product_box, truth)
    start, end = truths["shown_twice"].product_interval
    teaser = [f for f in truths["shown_twice"].frames if f.product_box is not None and f.t < start]
    assert teaser, "the product must appear before its interval"
    assert max(_height(f.product_box) for f in teaser if f.product_box) < min(
        _height(f.product_box) for f in truths["shown_twice"].frames if f.product_box and start <= f.t < end
    )
    lookalikes = truths["small_lookalikes"]
    during = [f for f in lookalikes.frames if f.product_box is not None]
    assert all(len(f.decoy_boxes) >= 3 for f in during)
    assert all(_height(f.product_box) < 0.25 * lookalikes.height for f in during if f.product_box)


def _height(box: Box | None) -> int:
    assert box is not None
    return box[3] - box[1]


@pytest.mark.parametrize(
    ("items", "size", "duration_s", "fps"),
    [
        (1, (321, 180), (4.0, 5.0), 10.0),
        (1, (32, 32), (4.0, 5.0), 10.0),
        (1, (320, 180), (5.0, 4.0), 10.0),
        (1, (320, 180), (4.0, 5.0), 0.0),
        (-1, (320, 180), (4.0, 5.0), 10.0),
    ],
)
def test_bad_arguments_are_config_errors(
    tmp_path: Path, items: int, size: tuple[int, int], duration_s: tuple[float, float], fps: float
) -> None:
    with pytest.raises(ConfigError):
        write_sample_catalog(tmp_path, items, size=size, duration_s=duration_s, fps=fps)
    assert not (tmp_path / "catalog.jsonl").exists()


@pytest.mark.slow
def test_default_720p_item(tmp_path: Path) -> None:
    write_sample_catalog(tmp_path, 1, duration_s=(15.0, 15.0))
    truth = load_truth(tmp_path, "sku-0001")
    assert (truth.width, truth.height, truth.fps, len(truth.frames)) == (1280, 720, 25.0, 375)
    start, end = truth.product_interval
    assert end - start >= 7.0 and start >= 2.0 and end <= truth.duration_s - 2.0
    heights = [_height(f.product_box) / truth.height for f in truth.frames if f.product_box]
    assert 0.28 <= min(heights) < max(heights) <= 0.72
    with av.open(str(tmp_path / "videos/sku-0001.mp4")) as container:
        video = container.streams.video[0]
        assert video.average_rate == 25
        assert sum(1 for _ in container.decode(video=0)) == 375


@pytest.mark.slow
def test_hard_cases_keep_seven_second_intervals(tmp_path: Path) -> None:
    write_sample_catalog(tmp_path, 0, hard_cases=True, size=(640, 360), duration_s=(16.0, 16.0))
    for line in catalog_lines(tmp_path):
        truth = load_truth(tmp_path, line["item_id"])
        start, end = truth.product_interval
        assert end - start >= 7.0 and start >= 2.0, (truth.case, truth.product_interval)
