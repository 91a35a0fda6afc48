"""Reading detected text (the daemon's text_read model, workers.text.reading) on real footage: the detector takes
a face's eyes and teeth for text, the recogniser does not read them, and a clip letterboxed only for them is
cropped past them, while a caption in the same place still letterboxes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.catalog_entry import CatalogEntry
from core.settings import load_settings
from gpu_service.local import LocalInference
from gpu_service.models.text_strip import STRIP_HEIGHT
from gpu_service.priority import PriorityKey
from tests.support.media import LocalOpener, write_rgb_video
from tests.support.portrait import CAPTION, SIDE, portrait
from workers.analysis.windows import Window
from workers.framing.planner import PAD_TEXT_AND_SUBJECT
from workers.geometry import iou
from workers.media.video import VideoSource
from workers.pipeline import Analysis, Decoding, frame_window
from workers.text.detection import detect_text
from workers.text.reading import STRIP_WIDTH, read_regions, strip

KEY = PriorityKey(0.0, 0.0)


@pytest.fixture(scope="module")
def model() -> LocalInference:
    return LocalInference()


def test_a_faces_eyes_and_teeth_taken_for_text_do_not_read_and_a_caption_does(model: LocalInference) -> None:
    times = (10.0, 11.0, 12.0, 13.0, 14.0)
    face = [portrait(t, t + 0.05)[0] for t in times]
    captioned = [portrait(t, t + 0.05, caption=True)[0] for t in times]
    face_boxes, caption_boxes = detect_text(model, face, KEY), detect_text(model, captioned, KEY)
    on_face = [b for boxes in face_boxes for b in boxes]
    captions = [b for boxes in caption_boxes for b in boxes if iou(b, CAPTION) > 0.5]
    # the detector does fire on her face (the reason for reading), and finds the caption at every sample
    assert len(on_face) >= 5 and len(captions) == len(times)
    assert not any(read_regions(model, face, face_boxes, KEY, (SIDE, SIDE)).is_text(b) for b in on_face)
    assert all(read_regions(model, captioned, caption_boxes, KEY, (SIDE, SIDE)).is_text(b) for b in captions)


def test_a_strip_is_the_recognisers_size_and_a_long_line_is_read_from_its_start() -> None:
    shaped = strip(np.full((40, 200, 3), 255, np.uint8))
    # scaled to 48 × 240, on zeros up to the recogniser's own width
    assert (
        shaped.shape == (STRIP_HEIGHT, 320, 3) and shaped[:, :240].min() == 255 and shaped[:, 240:].max() == 0
    )
    # a line longer than the widest strip is read from its start at the same scale (100 px by 20 to 240 by 48)
    line = np.zeros((20, 900, 3), np.uint8)
    line[:, :100] = 255  # 240 × 48 as a strip, of 2160 × 48
    long = strip(line)
    assert long.shape[1] == STRIP_WIDTH and long[:, :236].min() == 255 and long[:, 244:].max() == 0


#: a product beside her face, too tall for a 16:9 crop to hold it whole and pass her eye or the caption
PRODUCT = (350.0, 230.0, 660.0, 600.0)


def _framed(model: LocalInference, video: Path) -> Analysis:
    settings = load_settings()
    config = settings.output_config()
    with VideoSource(video) as source:
        info = source.info
    entry = CatalogEntry(item_id="portrait", video=str(video), image="", title="", description="")
    located = Analysis(Window(0.6, 5.6, 1.0), [], [], [(0.1 + k / 2, *PRODUCT) for k in range(12)])
    return frame_window(
        entry, info, located, LocalOpener(), model, KEY, config, Decoding.from_settings(settings)
    )


def test_a_clip_letterboxed_only_for_a_face_taken_for_text_is_cropped_past_it(
    model: LocalInference, tmp_path: Path
) -> None:
    framed = _framed(model, write_rgb_video(tmp_path / "face.mp4", portrait(9.0, 15.0), 24))
    # her eye and teeth are text regions of the window, not read as text; the 16:9 crop passes them
    assert framed.unread_text_boxes and all(
        any(iou(u, b) > 0.5 for b in framed.text_boxes) for u in framed.unread_text_boxes
    )
    assert framed.past_unread_text == ["16:9"]
    assert not framed.padded["16:9"] and "16:9" not in framed.padded_reason

    # a caption on the wall beside her reads as text: with it the 16:9 clip stays letterboxed
    captioned = _framed(
        model, write_rgb_video(tmp_path / "caption.mp4", portrait(9.0, 15.0, caption=True), 24)
    )
    assert captioned.padded["16:9"] and captioned.padded_reason["16:9"].startswith(PAD_TEXT_AND_SUBJECT)
    assert "16:9" not in captioned.past_unread_text
