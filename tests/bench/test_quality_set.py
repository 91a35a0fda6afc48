"""The quality benchmark's evaluation set (bench/quality_set.py): its ground truth agrees with the videos it wrote.

A smoke test of the generator, not of reelgen: two small items from real footage and photographs.
"""

from __future__ import annotations

import json
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from bench.quality_set import (
    HALVES,
    PHOTOS,
    _cutout_mask,
    item_seeds,
    load_truth,
    missing_sources,
    plan_item,
    write_quality_set,
)
from devtools.real_media import opencv_rubberwhale, skimage_clock_motion
from workers.analysis.localisation.backdrop import unlike_backdrop


def test_halves_share_no_seed_photo_or_clip() -> None:
    tuning, heldout = HALVES["tuning"], HALVES["heldout"]
    assert not set(item_seeds("tuning", 1000)) & set(item_seeds("heldout", 1000))
    assert not set(tuning.photos) & set(heldout.photos)
    assert not set(tuning.clips) & set(heldout.clips)
    assert plan_item("heldout", 3, 900_003) == plan_item("heldout", 3, 900_003)


@pytest.mark.skipif(bool(missing_sources(["tuning"])), reason="python -m devtools.fetch_real_media")
def test_truth_matches_the_videos(tmp_path: Path) -> None:
    catalog = write_quality_set(tmp_path, "tuning", 2, cache_dir=tmp_path / "cutouts")
    lines = [json.loads(line) for line in catalog.read_text().splitlines()]
    truth = load_truth(catalog)["items"]
    assert [line["item_id"] for line in lines] == list(truth)
    for line in lines:
        item = truth[line["item_id"]]
        assert (catalog.parent / line["image"]).is_file()
        with av.open(str(catalog.parent / line["video"])) as container:
            stream = container.streams.video[0]
            assert (stream.width, stream.height) == (item["width"], item["height"])
            assert container.streams.audio
            decoded = sum(1 for _ in container.decode(stream))
        assert decoded == item["n_frames"] == len(item["frames"])
        assert item["has_product"]
        start, end = item["interval"]
        assert 0 <= start < end <= item["duration_s"]
        assert 4.0 <= end - start <= 8.0
        shown = []
        for k, frame in enumerate(item["frames"]):
            if frame["box"] is not None:
                x0, y0, x1, y1 = frame["box"]
                assert 0 <= x0 < x1 <= item["width"] and 0 <= y0 < y1 <= item["height"]
                shown.append(k / item["fps"])
            for x0, y0, x1, y1 in frame["captions"]:
                assert 0 <= x0 < x1 <= item["width"] and 0 <= y0 < y1 <= item["height"]
            assert 0.0 <= frame["occluded"] <= 1.0
        # on screen exactly within the interval, and for most of it
        assert shown and start <= min(shown) and max(shown) < end
        assert len(shown) >= 0.8 * (end - start) * item["fps"]


def _largest(mask: np.ndarray) -> np.ndarray:
    _, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8))
    return np.asarray(labels == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA])))


def test_the_sets_cut_outs_hold_the_product_and_little_of_its_surroundings() -> None:
    """The truth's product box is its cut-out's: wall or shelf cut out with the product makes every box that
    holds the product alone look too small, and the product look larger than a crop it fits. The clock is the
    photo's blurred disc (its pixels unlike the wall's fitted backdrop); the whale, its teal pixels."""
    clock_path, whale_path = skimage_clock_motion(), opencv_rubberwhale()
    if clock_path is None or whale_path is None:
        pytest.skip("python -m devtools.fetch_real_media")
    clock = np.asarray(cv2.imread(str(clock_path)), np.uint8)
    unlike_wall = unlike_backdrop(clock)
    disc = _largest(unlike_wall > 12)
    cut = _cutout_mask(clock, PHOTOS["skimage_clock_motion"]) > 127
    assert cut[disc].mean() >= 0.98
    assert (unlike_wall[cut] > 8).mean() >= 0.85

    whale = np.asarray(cv2.imread(str(whale_path)), np.uint8)
    hsv = cv2.cvtColor(whale, cv2.COLOR_BGR2HSV)
    teal = (hsv[..., 0] >= 70) & (hsv[..., 0] <= 100) & (hsv[..., 1] >= 60)
    cut = _cutout_mask(whale, PHOTOS["opencv_rubberwhale"]) > 127
    assert cut[_largest(teal)].mean() >= 0.98
    assert teal[cut].mean() >= 0.9
