"""The README's picture, from a real run's output: one item's source frame in the middle of its chosen window, with
every aspect's crop outlined, beside the frame each clip shows at that moment.

    .venv/bin/python docs/make_picture.py demo/out docs/images/demo.png [--item sku-0003]

(`make picture` runs it on `make demo`'s output.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import cv2
import numpy as np

from workers.media.video import VideoSource

HEIGHT = 300
GAP = 12
LABEL = 34
# one colour per aspect (BGR), the crop's outline on the source and the clip's label alike
COLOURS = ((255, 160, 0), (0, 215, 255), (255, 0, 255), (255, 255, 0), (0, 128, 255), (60, 200, 60))


def frame_at(video: Path, t: float) -> np.ndarray:
    with VideoSource(video) as source:
        [frame] = source.sample([t])
    bgr: np.ndarray = cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR)
    return bgr


def scaled(image: np.ndarray, height: int) -> np.ndarray:
    width = max(2, round(image.shape[1] * height / image.shape[0]))
    resized: np.ndarray = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    return resized


def labelled(image: np.ndarray, text: str, colour: tuple[int, int, int]) -> np.ndarray:
    canvas = np.full((image.shape[0] + LABEL, image.shape[1], 3), 255, np.uint8)
    canvas[: image.shape[0]] = image
    cv2.putText(canvas, text, (4, image.shape[0] + 24), cv2.FONT_HERSHEY_SIMPLEX, 0.6, colour, 2, cv2.LINE_AA)
    return canvas


def picture(out: Path, item: str) -> np.ndarray:
    manifest = json.loads((out / item / "manifest.json").read_text())
    window = manifest["window"]
    middle = (window["start_s"] + window["end_s"]) / 2
    source = frame_at(Path(manifest["source"]["uri"]), middle)
    scale = HEIGHT / source.shape[0]
    shown = scaled(source, HEIGHT)
    tiles = []
    for k, output in enumerate(manifest["outputs"]):
        colour = COLOURS[k % len(COLOURS)]
        crop = min(output["crops"], key=lambda c: abs(c["t"] - middle))
        x0, y0 = round(crop["x"] * scale), round(crop["y"] * scale)
        x1, y1 = round((crop["x"] + crop["w"]) * scale), round((crop["y"] + crop["h"]) * scale)
        cv2.rectangle(shown, (x0, y0), (x1 - 1, y1 - 1), colour, 2)
        clip = out / item / (output["aspect"].replace(":", "x") + ".mp4")
        tile = scaled(frame_at(clip, middle - window["start_s"]), HEIGHT)
        note = " letterboxed" if output["padded"] else ""
        tiles.append(labelled(tile, output["aspect"] + note, colour))
    parts = [labelled(shown, f"source {item}, t={middle:.1f} s", (40, 40, 40))]
    for tile in tiles:
        parts += [np.full((HEIGHT + LABEL, GAP, 3), 255, np.uint8), tile]
    return np.concatenate(parts, axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="a run's output folder (its --out)")
    parser.add_argument("png", type=Path, help="the picture to write")
    parser.add_argument("--item", default="sku-0003", help="the item to show (default: sku-0003)")
    args = parser.parse_args()
    args.png.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(args.png), picture(args.out, args.item), [cv2.IMWRITE_PNG_COMPRESSION, 9])
    print(args.png)


if __name__ == "__main__":
    main()
