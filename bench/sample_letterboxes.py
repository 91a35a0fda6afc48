"""Letterboxes on a synthetic sample catalog (`reelgen sample-catalog`, the one `make demo` runs) against its
ground truth: which letterboxed clips could have been cropped frame by frame.

For every clip of a finished run it counts the window's frames where the true product is larger than the
aspect's largest crop and those where no crop of the aspect (the largest or one of the planner's smaller ones,
anywhere) holds the product and keeps every caption whole or out (bench/quality.py's separability check); a
letterboxed clip where both stay within the planner's pad share is separable frame by frame: a crop, moving,
jumping or changing size, could have shown it. On the demo's own catalog, this is what a newcomer sees.

Usage: .venv/bin/python bench/sample_letterboxes.py CATALOG_DIR OUT_DIR   (e.g. demo/catalog demo/out)
The last line is one JSON object: clips, letterboxed, letterboxed_separable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.quality import PAD_SHARE, as_rect, frame_index, largest_crop, separable, too_big  # noqa: E402
from reelgen.sample_catalog import Truth, load_truth  # noqa: E402


def clip_frames(truth: Truth, crops: list[dict[str, float]], aspect: str) -> tuple[int, int, int]:
    """(window frames showing the product, those where it is too big for the crop, those where no crop
    separates it from the captions)."""
    crop = largest_crop(aspect, truth.width, truth.height)
    shown = big = unseparable = 0
    for entry in crops:
        frame = truth.frames[frame_index(float(entry["t"]), truth.fps, len(truth.frames))]
        box = frame.product_box
        if box is None:
            continue
        shown += 1
        if too_big(box, crop):
            big += 1
        else:
            unseparable += not separable(as_rect(box), frame.caption_boxes, truth.width, truth.height, crop)
    return shown, big, unseparable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("catalog_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    clips = letterboxed = separable_clips = 0
    for manifest_path in sorted(args.out_dir.glob("*/manifest.json")):
        manifest = json.loads(manifest_path.read_text())
        truth = load_truth(args.catalog_dir, manifest["item_id"])
        for output in manifest["outputs"]:
            clips += 1
            if not output["padded"]:
                continue
            letterboxed += 1
            shown, big, unseparable = clip_frames(truth, output["crops"], output["aspect"])
            fits = shown > 0 and big + unseparable <= PAD_SHARE * len(output["crops"])
            separable_clips += fits
            print(
                f"{manifest['item_id']} {output['aspect']:>5} {output['padded_reason']}: product in {shown} of "
                f"{len(output['crops'])} frames, too big in {big}, inseparable in {unseparable}"
                + ("  SEPARABLE" if fits else "")
            )
    print(json.dumps({"clips": clips, "letterboxed": letterboxed, "letterboxed_separable": separable_clips}))


if __name__ == "__main__":
    main()
