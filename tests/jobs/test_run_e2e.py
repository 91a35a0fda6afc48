"""`reelgen run` end to end: real Celery worker processes, a real (embedded) Redis, real videos."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import av
import pytest

from reelgen.sample_catalog import load_truth, write_sample_catalog

REELGEN = str(Path(sys.executable).with_name("reelgen"))
ASPECTS = {"1:1": (1, 1), "2:3": (2, 3), "3:4": (3, 4), "4:5": (4, 5), "9:16": (9, 16), "16:9": (16, 9)}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("catalog")
    path = write_sample_catalog(folder, 2, seed=3, size=(640, 360), duration_s=(9.0, 10.0), fps=25)
    (folder / "videos" / "broken.mp4").write_bytes((folder / "videos" / "sku-0001.mp4").read_bytes()[:4000])
    lines = path.read_text().splitlines()
    broken = json.loads(lines[0]) | {"item_id": "broken", "video": "videos/broken.mp4"}
    path.write_text("\n".join([*lines, json.dumps(broken), '{"item_id": "../up", "video": "x"}']) + "\n")
    return path


def _run(catalog: Path, out: Path, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    return subprocess.run(
        [REELGEN, "run", str(catalog), "--out", str(out), "--state-dir", str(state), "--workers", "2", *extra],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_run_produces_clips_and_manifests_and_fails_only_bad_items(catalog: Path, tmp_path: Path) -> None:
    out, state = tmp_path / "out", tmp_path / "state"
    result = _run(catalog, out, state)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 done, 2 failed" in result.stdout
    assert "FAILED broken: UnreadableVideo" in result.stdout
    assert "FAILED line:4: BadItemId" in result.stdout
    # what the daemon served: both good items' samples and windows, in batches, part of the time
    served = re.search(
        r"inference on cpu: (\d+) batches of ([\d.]+) frames on average, busy (\d+)% of ([\d.]+) s",
        result.stdout,
    )
    assert served is not None, result.stdout
    batches, mean_batch, busy, serving = int(served[1]), float(served[2]), int(served[3]), float(served[4])
    assert batches >= 4 and mean_batch >= 1.0 and 0 < busy < 100 and serving > 0

    for item_id in ("sku-0001", "sku-0002"):
        manifest = json.loads((out / item_id / "manifest.json").read_text())
        truth = load_truth(catalog.parent, item_id)
        assert manifest["item_id"] == item_id and manifest["status"] == "done"
        assert manifest["source"]["width"] == 640 and manifest["source"]["height"] == 360
        assert manifest["source"]["has_audio"] is True
        window = manifest["window"]
        assert abs(window["end_s"] - window["start_s"] - 5.0) < 1e-6
        assert window["start_s"] >= 0 and window["end_s"] <= truth.duration_s + 1e-6
        assert {o["aspect"] for o in manifest["outputs"]} == set(ASPECTS)
        assert manifest["config_hash"] and manifest["versions"]["reelgen"]
        for output in manifest["outputs"]:
            a, b = ASPECTS[output["aspect"]]
            clip = out / item_id / f"{a}x{b}.mp4"
            assert output["uri"] == str(clip)
            with av.open(str(clip)) as container:
                video = container.streams.video[0]
                audio = container.streams.audio[0]
                assert video.codec_context.name == "h264" and video.codec_context.pix_fmt == "yuv420p"
                assert (video.width, video.height) == (output["width"], output["height"])
                assert video.width * b == video.height * a and video.width % 2 == 0 and video.height % 2 == 0
                assert audio.codec_context.name == "aac"
                assert container.duration is not None and abs(container.duration / 1e6 - 5.0) <= 0.04 + 1e-6
                frames = sum(1 for _ in container.decode(video=0))
            assert frames == len(output["crops"]) == 125
            for crop in output["crops"]:
                assert window["start_s"] <= crop["t"] < window["end_s"]
                assert crop["x"] >= 0 and crop["x"] + crop["w"] <= 640 and crop["y"] + crop["h"] <= 360
    assert not (out / "broken").exists()
    assert not list(out.rglob(".tmp-*"))

    # the run's report, beside the items: the run's summary, then per item every clip (poster and player),
    # the product box on the window's frames and the crops
    report = subprocess.run([REELGEN, "report", str(out)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    page = Path(report.stdout.strip())
    assert page == out / "_reelgen" / "report" / "index.html"
    html = page.read_text()
    assert "sku-0001" in html and "sku-0002" in html
    assert "2 done, 2 failed, 0 skipped in" in html and "<td>UnreadableVideo</td><td>1</td>" in html
    assert re.search(r"<td>render</td><td>2</td>", html)  # time per stage
    clips = re.findall(r"<source src='([^']+)' type='video/mp4'>", html)
    posters = re.findall(r"poster='([^']+)'", html)
    assert len(clips) == len(posters) == 2 * 6
    assert all((page.parent / src).resolve().is_file() for src in clips + posters)
    linked = re.findall(r"<img src=['\"]([^'\"]+)['\"]", html)
    assert len(linked) == 2 * 2  # per item: the product box on the window's frames, the crops on one
    assert all((page.parent / src).is_file() for src in linked)

    # a second run finds every good item done for this config and redoes nothing
    again = _run(catalog, out, state)
    assert again.returncode == 1
    assert "0 done, 2 failed, 2 skipped" in again.stdout


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    missing = _run(tmp_path / "nope.jsonl", tmp_path / "out", tmp_path / "state")
    assert missing.returncode == 2 and "CatalogError" in missing.stderr
    catalog = tmp_path / "c.jsonl"
    catalog.write_text("")
    bad_aspect = _run(catalog, tmp_path / "out", tmp_path / "state", "--aspects", "9x16")
    assert bad_aspect.returncode == 2 and "argument --aspects: aspect '9x16' is not" in bad_aspect.stderr
