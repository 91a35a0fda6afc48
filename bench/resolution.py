"""Does reelgen do as well on 1080p footage as on the same footage at the size the quality set makes it?

Marketplace videos are mostly 1080p (1920×1080 and 1080×1920); the real-footage quality set
(bench/quality_set.py) is 540p-720p, as its real clips are. This takes the first --items items of a half whose
long side is under --side, scales their videos up so that it is --side (bicubic, re-encoded as H.264 at CRF 20,
audio kept) and their ground truth alike, runs reelgen on the items at their own size (encoded the same way) and
on the scaled copy, and prints bench/quality.py's figures and each stage's CPU seconds per item for both side by
side, with the ratio of the scaled run's to the original's, then the items whose window, crops or letterboxing
changed. A pixel constant that should have been a share of the frame shows as a difference; upscaled footage is
softer than a 1080p camera's, so this checks the product's handling of size, not its quality on sharper footage.

Usage: .venv/bin/python bench/resolution.py [--half dev|tuning] [--items 32] [--side 1920]
The held-out half is not offered: its items are not to be looked at one by one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.quality import (  # noqa: E402
    DATA,
    ItemScore,
    RunResult,
    ensure_set,
    figures,
    product_version,
    run_product,
    score_half,
)
from bench.quality_set import Half, load_truth  # noqa: E402
from monitoring.machine import machine_lines  # noqa: E402

#: the quality set's halves are made this large (bench/quality.py's runs of record)
SET_ITEMS = 128
#: a truth frame's fields in source pixels (bench/quality_set.py's truth.json)
SCALED_TRUTH = ("box", "quad", "captions")
#: the ledger's stages whose CPU seconds per item are shown, with the daemon's busy seconds
STAGES = ("prepare", "sample_segment", "select", "render")
#: figures compared side by side
SHOWN = (
    "windows_hit_rate", "product_inside_mean", "product_inside_below_95", "letterboxed_share",
    "letterbox_reasons", "text_cut_read_crop_edges", "caption_cut_clips", "analysis_s_per_item",
    *(f"{stage}_cpu_s_per_item" for stage in STAGES), "daemon_busy_s_per_item", "run_wall_s", "failed_items",
)  # fmt: skip


def _scaled(value: Any, k: float) -> Any:
    """Coordinates (numbers, nested in lists) times k; None stays None."""
    if value is None:
        return None
    if isinstance(value, list):
        return [_scaled(v, k) for v in value]
    return value * k


def reencode(source: Path, target: Path, width: int, height: int) -> None:
    """The video at width×height (bicubic; its own size: re-encoded only), as H.264 at CRF 20, audio kept."""
    with av.open(str(source)) as reader, av.open(str(target), "w") as writer:
        video = reader.streams.video[0]
        out_video = writer.add_stream("libx264", rate=video.average_rate)
        out_video.width, out_video.height, out_video.pix_fmt = width, height, "yuv420p"
        out_video.options = {"crf": "20", "preset": "veryfast"}
        audio = reader.streams.audio[0] if reader.streams.audio else None
        out_audio = writer.add_stream("aac", rate=audio.rate) if audio is not None else None
        for packet in reader.demux(*[s for s in (video, audio) if s is not None]):
            for frame in packet.decode():
                if isinstance(frame, av.VideoFrame):
                    pixels = cv2.resize(
                        frame.to_ndarray(format="rgb24"), (width, height), interpolation=cv2.INTER_CUBIC
                    )
                    scaled = av.VideoFrame.from_ndarray(np.asarray(pixels, np.uint8), format="rgb24")
                    scaled.pts, scaled.time_base = frame.pts, frame.time_base
                    writer.mux(out_video.encode(scaled))
                elif isinstance(frame, av.AudioFrame) and out_audio is not None:
                    frame.pts = None  # the encoder numbers its own samples
                    writer.mux(out_audio.encode(frame))
        writer.mux(out_video.encode(None))
        if out_audio is not None:
            writer.mux(out_audio.encode(None))


def stage_figures(run: RunResult) -> dict[str, float | None]:
    """CPU seconds per item of each of the ledger's STAGES, and the daemon's busy seconds per item (timed by the
    wall clock, so they grow with whatever shares its CPUs)."""
    seconds = {f"{stage}_cpu_s_per_item": run.stages.get(stage, {}).get("cpu") for stage in STAGES}
    seconds["daemon_busy_s_per_item"] = run.daemon_busy_s
    return {key: None if s is None else round(s / run.items, 3) for key, s in seconds.items()}


def _link(source: Path, target: Path) -> None:
    """A hard link where the file system allows one (a symbolic link would lead out of the catalog's folder,
    which reelgen refuses), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def make_pair(half: Half, count: int, side: int) -> tuple[Path, Path]:
    """(catalog of the chosen items as they are, catalog of their scaled copy), each in its own folder beside
    the half's set, made once."""
    catalog = ensure_set(half, SET_ITEMS, reuse=True)
    truth = load_truth(catalog)
    entries = [json.loads(line) for line in catalog.read_text().splitlines()]
    sizes = {iid: (item["width"], item["height"]) for iid, item in truth["items"].items()}
    chosen = [e for e in entries if max(sizes[e["item_id"]]) < side][:count]
    folders = (DATA / "resolution" / f"{half}-{count}-as-is", DATA / "resolution" / f"{half}-{count}-{side}")
    if all((folder / "truth.json").is_file() for folder in folders):
        return folders[0] / "catalog.jsonl", folders[1] / "catalog.jsonl"
    for folder, scaled in zip(folders, (False, True), strict=True):
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "videos").mkdir(parents=True)
        (folder / "images").mkdir()
        items: dict[str, Any] = {}
        for entry in chosen:
            item = truth["items"][entry["item_id"]]
            _link(catalog.parent / entry["image"], folder / entry["image"])
            # both copies are encoded alike (the set's own files are not), so that their size is all that differs:
            # frames that a decoder may skip, and so the sample times, follow the encoder's choices
            k = side / max(item["width"], item["height"]) if scaled else 1.0
            width, height = round(item["width"] * k / 2) * 2, round(item["height"] * k / 2) * 2
            reencode(catalog.parent / entry["video"], folder / entry["video"], width, height)
            frames = [dict(f, **{key: _scaled(f[key], k) for key in SCALED_TRUTH}) for f in item["frames"]]
            items[entry["item_id"]] = dict(item, width=width, height=height, frames=frames)
        (folder / "catalog.jsonl").write_text("".join(json.dumps(e) + "\n" for e in chosen))
        # written last: its presence says the folder is complete
        (folder / "truth.json").write_text(json.dumps(dict(truth, items=items)))
    return folders[0] / "catalog.jsonl", folders[1] / "catalog.jsonl"


def _clip_states(score: ItemScore) -> list[str]:
    return [
        f"{c.aspect} "
        + ("padded" if c.padded else "-" if c.inside_share is None else f"{c.inside_share:.2f}")
        for c in score.clips
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--half", choices=("dev", "tuning"), default="dev")
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--side", type=int, default=1920, help="the scaled copy's long side (default 1920)")
    args = parser.parse_args()
    if args.items < 1 or args.side < 2:
        parser.error("--items must be at least 1 and --side at least 2")
    started = time.perf_counter()
    half: Half = args.half
    as_is, scaled = make_pair(half, args.items, args.side)
    version = f"working tree at {product_version()}"
    results: list[tuple[dict[str, Any], list[ItemScore]]] = []
    for catalog in (as_is, scaled):
        run = run_product(half, catalog, args.items, None, version, run_dir=catalog.parent / "run")
        scores = score_half(catalog, run)
        results.append(({**figures(scores, run), **stage_figures(run)}, scores))
    for line in machine_lines():
        print(line)
    print(
        f"product: {version}; {half} half, {args.items} items as they are and scaled to a long side of {args.side}"
    )
    (before, before_scores), (after, after_scores) = results
    print(f"{'figure':<28} {'as is':>12} {args.side:>12} {'ratio':>7}")
    for key in SHOWN:
        a, b = before.get(key), after.get(key)
        ratio = f"{b / a:.2f}" if isinstance(a, int | float) and isinstance(b, int | float) and a else ""
        if isinstance(a, dict) or isinstance(b, dict):
            print(f"{key:<28} {json.dumps(a)} | {json.dumps(b)}")
        else:
            print(f"{key:<28} {a!s:>12} {b!s:>12} {ratio:>7}")
    for one, other in zip(before_scores, after_scores, strict=True):
        if one.hit != other.hit or one.window != other.window or _clip_states(one) != _clip_states(other):
            print(f"changed {one.item_id}: window {one.window} → {other.window}, hit {one.hit} → {other.hit}")
            print(f"  as is  {', '.join(_clip_states(one))}")
            print(f"  scaled {', '.join(_clip_states(other))}")
    wall = time.perf_counter() - started
    print(json.dumps({
        "half": half, "items": args.items, "side": args.side,
        **{f"as_is_{k}": before.get(k) for k in SHOWN}, **{f"scaled_{k}": after.get(k) for k in SHOWN},
        "wall_s": round(wall, 1),
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
