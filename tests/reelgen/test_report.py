"""The static run report: run summary, clip posters and players, score curve, product box, crops; rendered by
headless Chromium when present, its screenshot checked for the posters."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import pytest

from jobs.intake.results_index import list_item_ids
from reelgen.report import REPORT_FOLDER, load_manifests, write_report
from storage.store import LocalStore
from tests.support.media import make_code_video

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
REELGEN = str(Path(sys.executable).with_name("reelgen"))
MAGENTA = (255, 0, 255)  # RGB: the clips' colour, which nothing else on the page has in large areas


def solid_clip(path: Path, size: tuple[int, int], rgb: tuple[int, int, int] = MAGENTA) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        stream.time_base = Fraction(1, 25)
        picture = np.full((size[1], size[0], 3), rgb, np.uint8)
        for k in range(25):
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts = k
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def manifest(video: Path, item_id: str) -> dict[str, Any]:
    crops = [{"t": round(1.0 + k / 25, 4), "x": 100 + 2 * k, "y": 0, "w": 198, "h": 352} for k in range(75)]
    return {
        "item_id": item_id,
        "status": "done",
        "title": f"product {item_id}",
        "source": {"uri": str(video), "width": 640, "height": 360},
        "window": {"start_s": 1.0, "end_s": 4.0, "score": 0.8},
        "curve": [[k / 2, 0.3 + 0.1 * (k % 5)] for k in range(10)],
        "cuts": [2.5],
        "text_boxes": [[20, 14, 180, 40]],
        "subject_boxes": [[1.3, 200, 100, 280, 260], [3.6, 230, 100, 310, 260]],
        "audio": {
            "source_lufs": -23.04,
            "source_true_peak_dbtp": -3.5,
            "gain_db": 2.5,
            "peak_limited": True,
            "fade_s": 0.1,
        },
        "outputs": [
            {
                "aspect": "9:16",
                "width": 198,
                "height": 352,
                "padded": False,
                "past_unread_text": True,
                "cover_t": 1.25,
                "cover_whole": True,
                "crops": crops,
            },
            {
                "aspect": "16:9",
                "width": 640,
                "height": 360,
                "padded": True,
                "padded_reason": "the subject is wider than the 16:9 crop",
                "picture_share": 0.934,
                "crops": [{"t": 1.0, "x": 0, "y": 0, "w": 640, "h": 360}],
            },
        ],
    }


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An output folder as a local run leaves it: items with clips and manifests, the run's summary and index."""
    video = tmp_path / "src.mp4"
    make_code_video(video, seconds=4.0, size=(640, 360), audio=False)
    out = tmp_path / "out"
    for item in ("sku-b", "sku-a"):
        (out / item).mkdir(parents=True)
        (out / item / "manifest.json").write_text(json.dumps(manifest(video, item)))
        solid_clip(out / item / "9x16.mp4", (198, 352))
        solid_clip(out / item / "16x9.mp4", (640, 360))
    # sku-a's 9:16 clip has its cover beside it (green); the others are clips written before covers
    cv2.imwrite(str(out / "sku-a" / "9x16.jpg"), np.full((352, 198, 3), (0, 255, 0), np.uint8))
    gone = manifest(video, "sku-c") | {"source": {"uri": str(tmp_path / "missing.mp4")}, "audio": None}
    (out / "sku-c").mkdir()
    (out / "sku-c" / "manifest.json").write_text(json.dumps(gone))
    runs = out / "_reelgen" / "runs"
    runs.mkdir(parents=True)
    stages = {
        "prepare": {"cpu": 0.1, "wall": 0.2, "runs": 4},
        "render": {"cpu": 30.0, "wall": 18.0, "runs": 3},
    }
    summary = {"job_id": "20261125-120000-abcdef", "state": "completed", "done": 3, "failed": 2, "skipped": 0}
    summary |= {"elapsed_s": 41.5, "errors": {"UnreadableVideo": 1, "BadItemId": 1}, "stages": stages}
    (runs / "20261125-120000-abcdef.json").write_text(json.dumps(summary))
    index = out / "_reelgen" / "index" / "20261125-120000-abcdef"
    index.mkdir(parents=True)
    results = [
        {"item_id": "sku-a", "status": "done"},
        {
            "item_id": "broken",
            "status": "failed",
            "error": "UnreadableVideo",
            "message": "damaged at t≈1.2 s",
        },
        {
            "item_id": "line:4",
            "status": "failed",
            "error": "BadItemId",
            "message": "item id '<b>' must match",
        },
    ]
    (index / "000001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    return out


@pytest.fixture
def report(out: Path) -> Path:
    manifests = load_manifests(out)
    assert [m["item_id"] for m in manifests] == ["sku-a", "sku-b", "sku-c"]
    return write_report(manifests, out / REPORT_FOLDER, title="run <42>", out=out)


def test_the_page_shows_the_run_then_each_clip_playable_with_its_poster(report: Path, out: Path) -> None:
    page = report.read_text()
    assert "<title>run &lt;42&gt;</title>" in page and page.count("<section id=") == 3
    summary = page[: page.index("<section id=")]
    assert "3 done, 2 failed, 0 skipped in 41.5 s (job completed)" in summary
    assert "<td>UnreadableVideo</td><td>1</td>" in summary and "<td>BadItemId</td><td>1</td>" in summary
    assert "<b>broken</b> UnreadableVideo: damaged at t≈1.2 s" in summary
    assert "item id &#x27;&lt;b&gt;&#x27; must match" in summary  # catalog text escaped
    assert "<td>render</td><td>3</td><td>18.0</td><td>30.0</td><td>6.00</td>" in summary

    sources = re.findall(r"<source src='([^']+)' type='video/mp4'>", page)
    assert sources == [
        "../../sku-a/9x16.mp4",
        "../../sku-a/16x9.mp4",
        "../../sku-b/9x16.mp4",
        "../../sku-b/16x9.mp4",
    ]
    assert all((report.parent / src).resolve().is_file() for src in sources)
    posters = re.findall(r"poster='([^']+)'", page)
    assert len(posters) == 4
    for poster in posters:
        image = cv2.imread(str(report.parent / poster))
        assert image is not None and image.shape[0] == 240
        # the clip's cover where it has one (green), else its own middle frame (magenta), never the source's
        colour = (0, 255, 0) if poster == "sku-a/9x16.jpg" else (255, 0, 255)
        assert np.abs(image.reshape(-1, 3).mean(axis=0) - colour).max() < 12, poster
    assert page.count("cover at 1.25 s</span>") == 3  # sku-c's too, though its clips are not here
    assert (
        "letterboxed: the subject is wider than the 16:9 crop; shown at 93% to keep its text title-safe"
        in page
    )
    assert page.count("letterboxed:") == 3  # sku-a, sku-b and sku-c's 16:9
    # and their 9:16 clips, cropped past a face the text detector took for text
    assert page.count("cropped past detected text that does not read") == 3
    assert "clip not available locally" in page  # sku-c has manifests but no clips

    assert "<polyline" in page and "source video not available" in page  # sku-c's source is gone
    strip = cv2.imread(str(report.parent / "sku-a" / "product.png"))
    assert strip is not None and strip.shape[0] == 180 and strip.shape[1] > 4 * 300
    green = (strip[:, :, 1] > 180) & (strip[:, :, 0] < 60) & (strip[:, :, 2] < 60)
    red = (strip[:, :, 2] > 200) & (strip[:, :, 1] < 60) & (strip[:, :, 0] < 60)
    tiles = np.array_split(np.arange(strip.shape[1]), 4)
    # the product box is drawn on the frames near a recorded one (1.3 s, 3.6 s): the first and last of four
    assert [bool(green[:, t].any()) for t in tiles] == [True, False, False, True]
    assert red.any()
    assert "found (2 of 4)" in page
    assert page.count("sound -23.0 LUFS in the source, +2.5 dB (held back by the true-peak ceiling)") == 2
    assert page.count("; no sound</p>") == 1  # sku-c: a source without a sound track


def test_an_item_whose_clips_are_another_items_says_whose(out: Path) -> None:
    manifests = load_manifests(out)
    for m in manifests:
        if m["item_id"] == "sku-b":
            m["reused_from"] = {"item_id": "sku-a", "job_id": "20261125-120000-abcdef"}
    page = write_report(manifests, out / REPORT_FOLDER, out=out).read_text()
    assert page.count("clips copied from <a href='#sku-a'>sku-a</a>") == 1


def test_the_report_lies_where_no_item_can(report: Path, out: Path) -> None:
    assert report == out / "_reelgen" / "report" / "index.html"
    assert sorted(list_item_ids(LocalStore(out))) == ["sku-a", "sku-b", "sku-c"]


def test_reelgen_report_writes_it_to_the_default_place(out: Path) -> None:
    result = subprocess.run([REELGEN, "report", str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()) == out / "_reelgen" / "report" / "index.html"


def test_without_a_run_summary_the_index_gives_the_counts(out: Path) -> None:
    shutil.rmtree(out / "_reelgen" / "runs")
    page = write_report(load_manifests(out), out / REPORT_FOLDER, out=out).read_text()
    assert "1 done, 2 failed; 3 item(s) with outputs below" in page
    assert "<td>UnreadableVideo</td><td>1</td>" in page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_chromium_shows_a_poster_for_every_clip(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    assert CHROMIUM is not None
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--hide-scrollbars", "--window-size=1400,2600", "--virtual-time-budget=5000", f"--screenshot={shot}",
         report.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    image = cv2.imread(str(shot))
    assert image is not None
    magenta = (image[:, :, 2] > 200) & (image[:, :, 1] < 70) & (image[:, :, 0] > 200)
    green = (image[:, :, 1] > 200) & (image[:, :, 2] < 70) & (image[:, :, 0] < 70)
    # both items' clips in the viewport: sku-a's 9:16 shows its cover (green), the other three their middle frames
    # (magenta); a 9:16 poster is 0.56 as wide as high, a 16:9 one 1.78
    assert _poster_shapes(green) == [0.6]
    assert _poster_shapes(magenta) == [0.6, 1.8, 1.8]


def _poster_shapes(mask: np.ndarray) -> list[float]:
    """The width over 240 px of each solid block of the mask: a poster is 240 px high, less the player's controls
    over its foot (the crop outlines on the overview are thin lines)."""
    count, _labels, stats, _centres = cv2.connectedComponentsWithStats(mask.astype(np.uint8))
    posters = [stats[k] for k in range(1, count) if stats[k][cv2.CC_STAT_AREA] > 20_000]
    assert all(p[cv2.CC_STAT_HEIGHT] > 120 for p in posters), [list(p) for p in posters]
    return sorted(round(p[cv2.CC_STAT_WIDTH] / 240, 1) for p in posters)
