"""Ground truth: the public, typed view of truth/<item_id>.json."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reelgen.sample_catalog.vocabulary import TRUTH_VERSION, Box


@dataclass(frozen=True)
class FrameTruth:
    """Frame k of the video, shown at t = k / fps. Boxes are [x0, y0, x1, y1) in source pixels.

    product_box bounds the pixels the product's (antialiased) mask covers, even where a caption is drawn
    over them; it is None when the product is not visible. caption_boxes are the filled caption boxes (text
    included). decoy_boxes bound the other product-like objects on screen.
    """

    t: float
    product_box: Box | None
    caption_boxes: list[Box]
    decoy_boxes: list[Box] = field(default_factory=list)


@dataclass(frozen=True)
class CaptionTruth:
    text: str
    start_s: float
    end_s: float
    box: Box


@dataclass(frozen=True)
class Truth:
    """What an item's video shows.

    product_interval is [start, end) in seconds: the span the product is shown as the subject. Outside it the
    product is absent, except in the "shown_twice" hard case where it first appears small (frames say where).
    cuts are the times of the first frame of each new shot.
    """

    item_id: str
    fps: float
    width: int
    height: int
    duration_s: float
    product_interval: tuple[float, float]
    frames: list[FrameTruth]
    cuts: list[float]
    case: str | None = None
    captions: list[CaptionTruth] = field(default_factory=list)


def load_truth(catalog_dir: Path, item_id: str) -> Truth:
    """The ground truth written for item_id by write_sample_catalog into catalog_dir."""
    raw = json.loads((Path(catalog_dir) / "truth" / f"{item_id}.json").read_text())
    return Truth(
        item_id=raw["item_id"],
        fps=float(raw["fps"]),
        width=int(raw["width"]),
        height=int(raw["height"]),
        duration_s=float(raw["duration_s"]),
        product_interval=(float(raw["product_interval"][0]), float(raw["product_interval"][1])),
        frames=[_frame_from_json(f) for f in raw["frames"]],
        cuts=[float(c) for c in raw["cuts"]],
        case=raw.get("case"),
        captions=[
            CaptionTruth(c["text"], float(c["start_s"]), float(c["end_s"]), _box(c["box"]))
            for c in raw.get("captions", [])
        ],
    )


def _box(values: Sequence[Any]) -> Box:
    x0, y0, x1, y1 = (int(v) for v in values)
    return (x0, y0, x1, y1)


def _frame_from_json(raw: dict[str, Any]) -> FrameTruth:
    product = raw["product_box"]
    return FrameTruth(
        t=float(raw["t"]),
        product_box=None if product is None else _box(product),
        caption_boxes=[_box(b) for b in raw["caption_boxes"]],
        decoy_boxes=[_box(b) for b in raw.get("decoy_boxes", [])],
    )


def truth_json(truth: Truth) -> str:
    """One frame per line: the file stays diffable and greppable at 25 fps × 30 s."""
    head = {
        "version": TRUTH_VERSION,
        "item_id": truth.item_id,
        "case": truth.case,
        "fps": truth.fps,
        "width": truth.width,
        "height": truth.height,
        "n_frames": len(truth.frames),
        "duration_s": truth.duration_s,
        "product_interval": list(truth.product_interval),
        "cuts": truth.cuts,
        "captions": [
            {"text": c.text, "start_s": c.start_s, "end_s": c.end_s, "box": list(c.box)}
            for c in truth.captions
        ],
    }
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    frames = [
        "  "
        + json.dumps(
            {
                "t": f.t,
                "product_box": None if f.product_box is None else list(f.product_box),
                "caption_boxes": [list(b) for b in f.caption_boxes],
                "decoy_boxes": [list(b) for b in f.decoy_boxes],
            }
        )
        for f in truth.frames
    ]
    return "{\n" + "\n".join(lines) + '\n "frames": [\n' + ",\n".join(frames) + "\n ]\n}\n"
