"""A static HTML page per run: for each item, its score curve with the chosen window, and contact sheets of
every aspect's crop with the text regions and the subject drawn.

Everything is a file next to the page (PNG images, relative links), so the folder can be copied, archived or
served as is. Images are drawn with OpenCV from the source video at a few times inside the window, decoded
once per item.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from reelgen.text import printable
from workers.video import VideoSource

THUMB_HEIGHT = 180
OVERVIEW_WIDTH = 640
TEXT_COLOUR = (0, 0, 255)  # BGR: red
SUBJECT_COLOUR = (0, 200, 0)  # green
# one colour per aspect on the overview (BGR)
CROP_COLOURS = ((255, 160, 0), (0, 215, 255), (255, 0, 255), (255, 255, 0), (0, 128, 255), (200, 200, 200))

Manifest = Mapping[str, Any]


def load_manifests(out_dir: Path) -> list[dict[str, Any]]:
    """Every item's manifest under a local output folder (<out>/<item_id>/manifest.json), by item id."""
    manifests = [json.loads(p.read_text()) for p in sorted(Path(out_dir).glob("*/manifest.json"))]
    return sorted(manifests, key=lambda m: str(m.get("item_id", "")))


def _local_source(uri: str) -> Path | None:
    path = Path(uri[len("file://") :] if uri.startswith("file://") else uri)
    return path if path.is_file() else None


def write_report(
    manifests: Sequence[Manifest],
    dest: Path,
    *,
    resolve_source: Callable[[str], Path | None] = _local_source,
    title: str = "reelgen run",
    thumbs: int = 4,
) -> Path:
    """Write dest/index.html and its images; returns the page's path.

    resolve_source maps a manifest's source URI to a local video file (None: draw no contact sheet for it);
    the default takes paths and file:// URIs as they are.
    """
    dest.mkdir(parents=True, exist_ok=True)
    sections = [_item_section(m, dest, resolve_source, thumbs) for m in manifests]
    page = (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_text(title)}</title>\n<style>{_CSS}</style></head>\n<body>\n"
        f"<h1>{_text(title)}</h1>\n<p>{len(manifests)} item(s). Red: text regions; green: the subject; "
        "crops outlined in the overview.</p>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
    index = dest / "index.html"
    index.write_text(page)
    return index


_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
section { border-top: 1px solid #ccc; padding: 0.5em 0 1em; }
.row { display: flex; gap: 1em; align-items: flex-start; flex-wrap: wrap; }
figure { margin: 0.3em 0; }
figcaption { font-size: 0.85em; color: #555; }
.padded { color: #a60; font-weight: bold; }
svg { background: #fafafa; border: 1px solid #ddd; }
"""


def _item_section(
    manifest: Manifest, dest: Path, resolve_source: Callable[[str], Path | None], thumbs: int
) -> str:
    item_id = str(manifest.get("item_id", "?"))
    window = manifest.get("window") or {}
    start, end = float(window.get("start_s", 0.0)), float(window.get("end_s", 0.0))
    parts = [f"<section id='{_text(item_id)}'><h2>{_text(item_id)}</h2>"]
    if manifest.get("title"):
        parts.append(f"<p class='title'>{_text(manifest['title'])}</p>")
    parts.append(
        f"<p>status {_text(manifest.get('status'))}; window {start:.2f}–{end:.2f} s, "
        f"score {window.get('score', '?')}</p>"
    )
    curve = manifest.get("curve")
    if curve:
        parts.append(
            _curve_svg([(float(t), float(v)) for t, v in curve], start, end, manifest.get("cuts") or [])
        )
    else:
        parts.append("<p>no score curve in this manifest</p>")
    source = manifest.get("source") or {}
    path = resolve_source(str(source.get("uri", ""))) if source.get("uri") else None
    outputs = list(manifest.get("outputs") or [])
    if path is None or not outputs or end <= start:
        parts.append("<p>source video not available: no contact sheets</p></section>")
        return "\n".join(parts)
    times = [start + (k + 0.5) * (end - start) / thumbs for k in range(thumbs)]
    with VideoSource(path) as video:
        frames = [(f.t, cv2.cvtColor(f.rgb, cv2.COLOR_RGB2BGR)) for f in video.sample(times)]
    folder = dest / _safe(item_id)
    folder.mkdir(parents=True, exist_ok=True)
    text_boxes = [tuple(float(v) for v in b) for b in manifest.get("text_boxes") or []]
    subjects = [tuple(float(v) for v in s) for s in manifest.get("subject_boxes") or []]
    overview = _overview(frames[len(frames) // 2], outputs, text_boxes, subjects)
    cv2.imwrite(str(folder / "overview.png"), overview)
    parts.append(
        f"<figure><img src='{_safe(item_id)}/overview.png' alt='{_text(item_id)} overview'>"
        "<figcaption>mid-window frame with every aspect's crop</figcaption></figure><div class='row'>"
    )
    for output in outputs:
        aspect = str(output.get("aspect", "?"))
        name = aspect.replace(":", "x") + ".png"
        cv2.imwrite(str(folder / name), _sheet(frames, output, text_boxes, subjects))
        reason = html.escape(str(output.get("padded_reason") or "reason not recorded"))
        padded = f" <span class='padded'>letterboxed: {reason}</span>" if output.get("padded") else ""
        parts.append(
            f"<figure><img src='{_safe(item_id)}/{name}' alt='{_text(item_id)} {_text(aspect)}'>"
            f"<figcaption>{_text(aspect)} {output.get('width')}×{output.get('height')}{padded}"
            "</figcaption></figure>"
        )
    parts.append("</div></section>")
    return "\n".join(parts)


def _text(value: object) -> str:
    """Text from a manifest (a seller's title and id among it) for the page: non-printable characters escaped,
    so that the page's source read in a terminal shows them as text, then escaped for HTML."""
    return html.escape(printable(str(value)))


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def _curve_svg(curve: list[tuple[float, float]], start: float, end: float, cuts: Sequence[float]) -> str:
    width, height, pad = 640, 160, 24
    t0, t1 = min(t for t, _ in curve), max(t for t, _ in curve)
    t0, t1 = min(t0, start), max(t1, end, t0 + 1e-6)
    lo, hi = min(0.0, *(v for _, v in curve)), max(1e-6, *(v for _, v in curve))

    def x(t: float) -> float:
        return pad + (t - t0) / (t1 - t0) * (width - 2 * pad)

    def y(v: float) -> float:
        return height - pad - (v - lo) / (hi - lo) * (height - 2 * pad)

    points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in curve)
    cut_lines = "".join(
        f"<line x1='{x(c):.1f}' x2='{x(c):.1f}' y1='{pad}' y2='{height - pad}' stroke='#999' "
        "stroke-dasharray='3,3'/>"
        for c in cuts
    )
    return (
        f"<svg width='{width}' height='{height}' role='img' aria-label='score curve'>"
        f"<rect x='{x(start):.1f}' y='{pad}' width='{x(end) - x(start):.1f}' height='{height - 2 * pad}' "
        "fill='#cde' /><text x='4' y='14' font-size='11'>score over time (window shaded)</text>"
        f"{cut_lines}<polyline points='{points}' fill='none' stroke='#036' stroke-width='1.5'/>"
        f"<text x='{pad}' y='{height - 6}' font-size='10'>{t0:.1f} s</text>"
        f"<text x='{width - pad - 30}' y='{height - 6}' font-size='10'>{t1:.1f} s</text></svg>"
    )


def _crop_at(output: Mapping[str, Any], t: float) -> tuple[int, int, int, int]:
    crops = output.get("crops") or []
    if not crops:
        return (0, 0, 0, 0)
    nearest = min(crops, key=lambda c: abs(float(c["t"]) - t))
    return int(nearest["x"]), int(nearest["y"]), int(nearest["w"]), int(nearest["h"])


def _subject_at(subjects: Sequence[tuple[float, ...]], t: float) -> tuple[float, ...] | None:
    near = [s for s in subjects if len(s) == 5 and abs(s[0] - t) <= 0.5]
    return min(near, key=lambda s: abs(s[0] - t))[1:] if near else None


def _draw(
    image: np.ndarray,
    box: Sequence[float],
    origin: tuple[int, int],
    scale: float,
    colour: tuple[int, int, int],
) -> None:
    x0, y0 = round((box[0] - origin[0]) * scale), round((box[1] - origin[1]) * scale)
    x1, y1 = round((box[2] - origin[0]) * scale), round((box[3] - origin[1]) * scale)
    cv2.rectangle(image, (x0, y0), (x1 - 1, y1 - 1), colour, 2)


def _overview(
    frame: tuple[float, np.ndarray],
    outputs: Sequence[Mapping[str, Any]],
    text_boxes: Sequence[Sequence[float]],
    subjects: Sequence[tuple[float, ...]],
) -> np.ndarray:
    t, bgr = frame
    scale = OVERVIEW_WIDTH / bgr.shape[1]
    image = cv2.resize(
        bgr, (OVERVIEW_WIDTH, max(2, round(bgr.shape[0] * scale))), interpolation=cv2.INTER_AREA
    )
    for box in text_boxes:
        _draw(image, box, (0, 0), scale, TEXT_COLOUR)
    subject = _subject_at(subjects, t)
    if subject is not None:
        _draw(image, subject, (0, 0), scale, SUBJECT_COLOUR)
    for k, output in enumerate(outputs):
        x, y, w, h = _crop_at(output, t)
        colour = CROP_COLOURS[k % len(CROP_COLOURS)]
        _draw(image, (x, y, x + w, y + h), (0, 0), scale, colour)
        label = str(output.get("aspect", "?"))
        cv2.putText(image, label, (round(x * scale) + 4, round(y * scale) + 14 + 14 * (k % 3)),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.45, colour, 1, cv2.LINE_AA)  # fmt: skip
    return image


def _sheet(
    frames: Sequence[tuple[float, np.ndarray]],
    output: Mapping[str, Any],
    text_boxes: Sequence[Sequence[float]],
    subjects: Sequence[tuple[float, ...]],
) -> np.ndarray:
    """The crop's region at each time, side by side, with text and subject boxes in crop coordinates."""
    tiles = []
    for t, bgr in frames:
        x, y, w, h = _crop_at(output, t)
        if w <= 0 or h <= 0:
            x, y, w, h = 0, 0, bgr.shape[1], bgr.shape[0]
        scale = THUMB_HEIGHT / h
        tile = cv2.resize(
            bgr[y : y + h, x : x + w], (max(2, round(w * scale)), THUMB_HEIGHT), interpolation=cv2.INTER_AREA
        )
        for box in text_boxes:
            _draw(tile, box, (x, y), scale, TEXT_COLOUR)
        subject = _subject_at(subjects, t)
        if subject is not None:
            _draw(tile, subject, (x, y), scale, SUBJECT_COLOUR)
        cv2.putText(
            tile,
            f"{t:.2f}s",
            (4, THUMB_HEIGHT - 6),
            cv2.FONT_HERSHEY_SIMPLEX,
            0.45,
            (255, 255, 255),
            1,
            cv2.LINE_AA,
        )
        tiles.append(tile)
    gap = np.full((THUMB_HEIGHT, 4, 3), 255, np.uint8)
    row: list[np.ndarray] = []
    for tile in tiles:
        row += [tile, gap]
    return np.concatenate(row[:-1], axis=1)
