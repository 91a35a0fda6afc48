"""Items sharing a video, end to end (`reelgen run`: real Celery workers, Redis, videos): a product's variants
with the same video, main image, title and description are analysed and rendered once, and the others get
copies of its clips and manifests of their own that say whose work they reuse; an item that differs in any of
those is done on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reelgen.sample_catalog import write_sample_catalog
from storage.manifest import MANIFEST_VERSION

REELGEN = str(Path(sys.executable).with_name("reelgen"))


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two products; the first has a red and a blue variant with its video and photo under other names (the
    same bytes), and a bundle with the same video but its own title."""
    folder = tmp_path_factory.mktemp("catalog")
    path = write_sample_catalog(folder, 2, seed=7, size=(640, 360), duration_s=(6.0, 7.0), fps=25)
    first = json.loads(path.read_text().splitlines()[0])
    for suffix in ("red", "blue"):
        for field in ("video", "image"):
            original = folder / first[field]
            (original.parent / f"{suffix}-{original.name}").write_bytes(original.read_bytes())
    variants = [
        first | {"item_id": f"{first['item_id']}-{suffix}", "video": f"videos/{suffix}-{Path(first['video']).name}",
                 "image": f"{Path(first['image']).parent}/{suffix}-{Path(first['image']).name}"}
        for suffix in ("red", "blue")
    ]  # fmt: skip
    bundle = first | {"item_id": "bundle", "title": f"{first['title']}, two-pack"}
    with open(path, "a") as handle:
        for entry in (*variants, bundle):
            handle.write(json.dumps(entry) + "\n")
    return path


def _run(catalog: Path, out: Path, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    return subprocess.run(
        [REELGEN, "run", str(catalog), "--out", str(out), "--state-dir", str(state), "--aspects", "1:1,9:16",
         "--workers", "2", *extra],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _manifests(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/manifest.json")}


def test_variants_with_the_same_video_and_photo_are_rendered_once(catalog: Path, tmp_path: Path) -> None:
    out, state = tmp_path / "out", tmp_path / "state"
    result = _run(catalog, out, state)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 done, 0 failed" in result.stdout
    manifests = _manifests(out)
    first = json.loads(catalog.read_text().splitlines()[0])["item_id"]
    family = [first, f"{first}-red", f"{first}-blue"]
    reused = {item: m["reused_from"] for item, m in manifests.items() if m["reused_from"]}
    # one of the three did the work; the other two name it; the bundle and the second product did their own
    [leader] = [item for item in family if item not in reused]
    assert set(reused) == set(family) - {leader}
    assert all(r["item_id"] == leader and r["job_id"] == manifests[leader]["job_id"] for r in reused.values())
    entries = {json.loads(line)["item_id"]: json.loads(line) for line in catalog.read_text().splitlines()}
    for item in reused:
        manifest, source = manifests[item], manifests[leader]
        assert manifest["manifest_version"] == MANIFEST_VERSION
        assert manifest["item_id"] == item and manifest["window"] == source["window"]
        assert manifest["source"]["uri"].endswith(entries[item]["video"])
        for own, theirs in zip(manifest["outputs"], source["outputs"], strict=True):
            for field in ("uri", "cover"):
                path, original = Path(own[field]), Path(theirs[field])
                # its own folder, the same file: a hard link (a render writes a new file), so the item was
                # neither rendered nor were its bytes copied
                assert path.parent == out / item and path.name == original.name
                assert path.stat().st_ino == original.stat().st_ino
            assert own["crops"] == theirs["crops"]
    assert manifests["bundle"]["reused_from"] is None


def test_with_sharing_off_every_item_is_rendered(catalog: Path, tmp_path: Path) -> None:
    out, state = tmp_path / "out", tmp_path / "state"
    env_off = {"REELGEN_SHARE_WORK": "false"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")} | env_off
    result = subprocess.run(
        [REELGEN, "run", str(catalog), "--out", str(out), "--state-dir", str(state), "--aspects", "1:1",
         "--workers", "2"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(m["reused_from"] is None for m in _manifests(out).values())


def test_an_item_waiting_for_work_that_fails_does_it_itself_and_nothing_is_stuck(
    catalog: Path, tmp_path: Path
) -> None:
    # two variants sharing a video and a main image cut short after its header (which prepare checks): the one
    # that leads fails at sampling, where the image is decoded, and gives up the lead; the one waiting leads and
    # fails the same way, named (without the lead given up it would wait for the item's lease, an hour)
    first = json.loads(catalog.read_text().splitlines()[0])
    bad = tmp_path / "cut-short.png"
    bad.write_bytes((catalog.parent / first["image"]).read_bytes()[:300])
    broken = tmp_path / "broken.jsonl"
    (tmp_path / "video.mp4").write_bytes((catalog.parent / first["video"]).read_bytes())
    lines = [first | {"item_id": f"v{k}", "video": "video.mp4", "image": bad.name} for k in range(2)]
    broken.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = _run(broken, tmp_path / "out", tmp_path / "state")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 done, 2 failed" in result.stdout
    assert result.stdout.count(": ImageError") == 2, result.stdout
