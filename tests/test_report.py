"""The static run report: page, score curve, contact sheets; rendered by headless Chromium when present."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import cv2
import pytest

from monitoring.report import load_manifests, write_report
from tests.media import make_code_video

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def manifest(video: Path, item_id: str) -> dict[str, Any]:
    crops = [{"t": round(1.0 + k / 25, 4), "x": 100 + 2 * k, "y": 0, "w": 198, "h": 352} for k in range(75)]
    return {
        "item_id": item_id,
        "status": "done",
        "source": {"uri": str(video), "width": 640, "height": 360},
        "window": {"start_s": 1.0, "end_s": 4.0, "score": 0.8},
        "curve": [[k / 2, 0.3 + 0.1 * (k % 5)] for k in range(10)],
        "cuts": [2.5],
        "text_boxes": [[20, 14, 180, 40]],
        "subject_boxes": [[1.5, 200, 100, 280, 260], [3.0, 230, 100, 310, 260]],
        "outputs": [
            {"aspect": "9:16", "width": 198, "height": 352, "padded": False, "crops": crops},
            {
                "aspect": "16:9",
                "width": 640,
                "height": 360,
                "padded": True,
                "crops": [{"t": 1.0, "x": 0, "y": 0, "w": 640, "h": 360}],
            },
        ],
    }


@pytest.fixture
def report(tmp_path: Path) -> Path:
    video = tmp_path / "src.mp4"
    make_code_video(video, seconds=4.0, size=(640, 360), audio=False)
    out = tmp_path / "out"
    for item in ("sku-b", "sku-a"):
        (out / item).mkdir(parents=True)
        (out / item / "manifest.json").write_text(json.dumps(manifest(video, item)))
    gone = manifest(video, "sku-c") | {"source": {"uri": str(tmp_path / "missing.mp4")}}
    (out / "sku-c").mkdir()
    (out / "sku-c" / "manifest.json").write_text(json.dumps(gone))
    manifests = load_manifests(out)
    assert [m["item_id"] for m in manifests] == ["sku-a", "sku-b", "sku-c"]
    return write_report(manifests, tmp_path / "report", title="run <42>")


def test_page_links_images_that_exist(report: Path) -> None:
    page = report.read_text()
    assert "<title>run &lt;42&gt;</title>" in page and page.count("<section") == 3
    assert "<polyline" in page and page.count("score curve") >= 2
    assert "source video not available" in page  # sku-c
    links = re.findall(r"<img src='([^']+)'", page)
    assert len(links) == 2 * 3  # overview + two aspects, for the two items with a source
    for link in links:
        assert not link.startswith("/") and (report.parent / link).is_file()
    sheet = cv2.imread(str(report.parent / "sku-a" / "9x16.png"))
    assert sheet is not None and sheet.shape[0] == 180 and sheet.shape[1] > 4 * 90
    # the text box (red) is drawn on the crop that holds it
    red = (sheet[:, :, 2] > 200) & (sheet[:, :, 1] < 60) & (sheet[:, :, 0] < 60)
    assert red.any()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_chromium_renders_the_page_and_every_image_loads(report: Path, tmp_path: Path) -> None:
    probe = report.with_name("probe.html")
    script = (
        "<script>window.addEventListener('load', () => { const imgs = [...document.images];"
        " document.body.setAttribute('data-images', imgs.length + ':' +"
        " imgs.filter(i => i.complete && i.naturalWidth > 0).length); });</script>"
    )
    probe.write_text(report.read_text().replace("</body>", script + "</body>"))
    assert CHROMIUM is not None
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    match = re.search(r'data-images="(\d+):(\d+)"', result.stdout)
    assert match, result.stdout[:2000]
    total, loaded = int(match.group(1)), int(match.group(2))
    assert total == 6 and loaded == total
