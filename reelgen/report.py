"""A static HTML page per run: what the run made and how it went.

On top, the run's summary: counts, failures by error class and the time each stage took (from the summary a
local run keeps in `<out>/_reelgen/runs/`, and the results index in `<out>/_reelgen/index/`). Then per item: a
poster of every rendered clip and the clip itself, playable in the page; why a clip was letterboxed; the score
curve with the chosen window; the product box on a few frames of the window and every aspect's crop on one.

The page and its images live in `<out>/_reelgen/report/` by default, where no item can be (item ids never start
with '_'), and link the clips by relative paths: the output folder can be copied, archived or served as is.

Kept whole: one page; its sections share the output folder's layout and one escaping of catalog text, and
read top to bottom as the page does.
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import cv2
import numpy as np

from core.errors import ReelgenError
from core.text import printable
from workers.media.video import VideoSource

REPORT_FOLDER = "_reelgen/report"
RUNS_FOLDER = "_reelgen/runs"
INDEX_FOLDER = "_reelgen/index"
THUMB_HEIGHT = 180
POSTER_HEIGHT = 240
OVERVIEW_WIDTH = 640
#: failed items listed by name in the summary, at most
LISTED_FAILURES = 50
TEXT_COLOUR = (0, 0, 255)  # BGR: red
SUBJECT_COLOUR = (0, 200, 0)  # green
#: a placement's safe zone outlined on its poster (BGR)
SAFE_ZONE_COLOUR = (255, 255, 0)
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


@dataclass
class RunSummary:
    """The latest job that wrote into an output folder, as far as the folder tells."""

    job_id: str
    counts: dict[str, int]
    errors: Counter[str]
    #: (item, error class, message) of the job's failed items
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    elapsed_s: float | None = None
    state: str = ""
    #: {stage: {"cpu": s, "wall": s, "runs": n}}
    stages: dict[str, dict[str, float]] = field(default_factory=dict)


def read_summary(out: Path) -> RunSummary | None:
    """The newest run summary in <out>/_reelgen/runs/ with its job's failures from the results index; without
    one (a backfill's output), the newest job in the index."""
    runs = sorted((out / RUNS_FOLDER).glob("*.json"), key=lambda p: p.stat().st_mtime)
    index = sorted((p for p in (out / INDEX_FOLDER).glob("*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    if runs:
        kept = json.loads(runs[-1].read_text())
        summary = RunSummary(
            job_id=str(kept["job_id"]),
            counts={k: int(kept.get(k) or 0) for k in ("done", "failed", "skipped")},
            errors=Counter({str(k): int(v) for k, v in (kept.get("errors") or {}).items()}),
            elapsed_s=kept.get("elapsed_s"),
            state=str(kept.get("state", "")),
            stages=kept.get("stages") or {},
        )
    elif index:
        summary = RunSummary(job_id=index[-1].name, counts=Counter(), errors=Counter())
    else:
        return None
    from_index: Counter[str] = Counter()
    for part in sorted((out / INDEX_FOLDER / summary.job_id).glob("*.jsonl")):
        for line in part.read_text().splitlines():
            result = json.loads(line)
            from_index[result.get("status", "")] += 1
            if result.get("status") in ("failed", "dead"):
                error = str(result.get("error", "?"))
                summary.failures.append((str(result.get("item_id")), error, str(result.get("message", ""))))
                if not runs:
                    summary.errors[error] += 1
    if not runs:
        summary.counts = {"done": from_index["done"], "failed": from_index["failed"] + from_index["dead"]}
    summary.failures.sort()
    return summary


def write_report(
    manifests: Sequence[Manifest],
    dest: Path,
    *,
    out: Path | None = None,
    resolve_source: Callable[[str], Path | None] = _local_source,
    title: str = "reelgen run",
    thumbs: int = 4,
) -> Path:
    """Write dest/index.html and its images; returns the page's path.

    out: the run's output folder, where the clips (<out>/<item>/<A>x<B>.mp4) and the run's summary are found;
    without it, clips are taken from the manifests' output URIs when those are local files.
    resolve_source maps a manifest's source URI to a local video file (None: no source frames for it); the
    default takes paths and file:// URIs as they are.
    """
    dest.mkdir(parents=True, exist_ok=True)
    summary = read_summary(out) if out is not None else None
    sections = [_item_section(m, dest, out, resolve_source, thumbs) for m in manifests]
    page = (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_text(title)}</title>\n<style>{_CSS}</style></head>\n<body>\n"
        f"<h1>{_text(title)}</h1>\n{_summary_html(summary, len(manifests))}\n"
        "<p class='legend'>Each clip is shown by its cover (the manifest's <code>outputs[].cover</code>: the "
        "clip's own frame where the product is whole, still and sharpest) and plays in the page. Below the "
        "clips: the score over the source video with the chosen window shaded, the window's frames with the "
        "product box (green) and text regions (red), and one frame with every aspect's crop outlined.</p>\n"
        + "\n".join(sections)
        + "\n</body></html>\n"
    )
    index = dest / "index.html"
    index.write_text(page)
    return index


_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
section { border-top: 1px solid #ccc; padding: 0.5em 0 1em; }
.row { display: flex; gap: 1em; align-items: flex-end; flex-wrap: wrap; }
figure { margin: 0.3em 0; }
figcaption { font-size: 0.85em; color: #555; max-width: 28em; }
video { background: #000; display: block; }
.padded { color: #a60; font-weight: bold; }
.summary table { border-collapse: collapse; margin: 0.5em 0; }
.summary td, .summary th { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: right; }
.summary td:first-child, .summary th:first-child { text-align: left; }
.legend { color: #555; font-size: 0.9em; }
svg { background: #fafafa; border: 1px solid #ddd; }
"""


def _summary_html(summary: RunSummary | None, items: int) -> str:
    if summary is None:
        return f"<section class='summary'><p>{items} item(s) with outputs; no run summary in this folder.</p></section>"
    counts = ", ".join(f"{n} {name}" for name, n in summary.counts.items())
    took = f" in {summary.elapsed_s:.1f} s" if summary.elapsed_s is not None else ""
    state = f" (job {_text(summary.state)})" if summary.state else ""
    parts = [
        "<section class='summary'>",
        f"<h2>Job {_text(summary.job_id)}</h2>",
        f"<p>{counts}{took}{state}; {items} item(s) with outputs below.</p>",
    ]
    if summary.errors:
        rows = "".join(
            f"<tr><td>{_text(error)}</td><td>{count}</td></tr>"
            for error, count in summary.errors.most_common()
        )
        parts.append(f"<table><tr><th>failures by error</th><th>items</th></tr>{rows}</table>")
    if summary.failures:
        listed = "".join(
            f"<li><b>{_text(item)}</b> {_text(error)}: {_text(message)}</li>"
            for item, error, message in summary.failures[:LISTED_FAILURES]
        )
        more = len(summary.failures) - LISTED_FAILURES
        tail = f"<li>… and {more} more (reelgen status)</li>" if more > 0 else ""
        parts.append(f"<details><summary>failed items</summary><ul>{listed}{tail}</ul></details>")
    if summary.stages:
        rows = "".join(
            f"<tr><td>{_text(stage)}</td><td>{int(t.get('runs', 0))}</td><td>{t.get('wall', 0.0):.1f}</td>"
            f"<td>{t.get('cpu', 0.0):.1f}</td><td>{t.get('wall', 0.0) / max(1.0, t.get('runs', 0.0)):.2f}</td></tr>"
            for stage, t in summary.stages.items()
        )
        parts.append(
            "<table><tr><th>stage</th><th>runs</th><th>wall s</th><th>CPU s</th><th>wall s per run</th></tr>"
            f"{rows}</table>"
        )
    parts.append("</section>")
    return "\n".join(parts)


def _clip_path(out: Path | None, item_id: str, output: Mapping[str, Any]) -> Path | None:
    if out is not None:
        path = out / item_id / (_output_names(output)[1] + ".mp4")
        if path.is_file():
            return path
    uri = str(output.get("uri", ""))
    return _local_source(uri) if uri and "://" not in uri.removeprefix("file://") else None


def _output_names(output: Mapping[str, Any]) -> tuple[str, str]:
    """An output's label on the page and its files' stem: a placement's name, else its aspect (9:16, 9x16)."""
    placement = output.get("placement")
    if isinstance(placement, dict) and placement.get("name"):
        name = str(placement["name"])
        return f"{name} ({output.get('aspect', '?')})", name
    aspect = str(output.get("aspect", "?"))
    return aspect, aspect.replace(":", "x")


def _placement_html(output: Mapping[str, Any]) -> str:
    """A placement's clip: its scale, whether the upscale limit made it smaller, and how it met the safe zone."""
    placement = output.get("placement")
    if not isinstance(placement, dict):
        return ""
    scale = float(output.get("scale") or 0.0)
    limited = f", smaller than {placement.get('size')} at the {placement.get('max_upscale')}× upscale limit"
    product = placement.get("product_in_safe_zone")
    inside = "no product box" if product is None else f"product inside in {float(product):.0%} of its keys"
    text = (
        "every text line shown inside"
        if placement.get("text_in_safe_zone")
        else "a text line shown outside it"
    )
    planned = "" if placement.get("planned_in_safe_zone") else " (planned without it: it would letterbox)"
    return (
        f" <span class='placement'>{scale:.2f}×{limited if placement.get('limited_by_upscale') else ''}; "
        f"safe zone (cyan on the poster){planned}: {inside}, {_text(text)}</span>"
    )


def _poster(clip: Path, dest: Path, zone: Mapping[str, Any] | None = None) -> bool:
    """The clip's cover (the JPEG beside it) scaled for the page, or, for a clip written before covers, its
    middle frame, with a placement's safe zone outlined; False when neither can be read."""
    cover = clip.with_suffix(".jpg")
    bgr = cv2.imread(str(cover)) if cover.is_file() else None
    if bgr is None:
        try:
            with VideoSource(clip) as video:
                middle = video.info.start_s + video.info.duration_s / 2
                frames = video.sample([middle])
        except ReelgenError:
            return False
        if not frames:
            return False
        bgr = cv2.cvtColor(frames[0].rgb, cv2.COLOR_RGB2BGR)
    scale = POSTER_HEIGHT / bgr.shape[0]
    poster = cv2.resize(
        bgr, (max(2, round(bgr.shape[1] * scale)), POSTER_HEIGHT), interpolation=cv2.INTER_AREA
    )
    if zone is not None:
        w, h = poster.shape[1], poster.shape[0]
        corner = (round(float(zone["left"]) * w), round(float(zone["top"]) * h))
        far = (round((1 - float(zone["right"])) * w) - 1, round((1 - float(zone["bottom"])) * h) - 1)
        cv2.rectangle(poster, corner, far, SAFE_ZONE_COLOUR, 1)
    return bool(cv2.imwrite(str(dest), poster, [cv2.IMWRITE_JPEG_QUALITY, 85]))


def _link(target: Path, dest: Path) -> str:
    """A relative URL from the report's folder to target."""
    return quote(Path(os.path.relpath(target.resolve(), dest.resolve())).as_posix())


def _clips_html(item_id: str, outputs: Sequence[Mapping[str, Any]], dest: Path, out: Path | None) -> str:
    folder = dest / _safe(item_id)
    figures = []
    for output in outputs:
        label, name = _output_names(output)
        clip = _clip_path(out, item_id, output)
        width, height = int(output.get("width") or 0), int(output.get("height") or 0)
        reason = _text(output.get("padded_reason") or "reason not recorded")
        share = float(output.get("picture_share") or 1.0)
        # a picture shown smaller than it fits says so: the user sees it smaller and should know why
        safe = f"; shown at {share:.0%} to keep its text title-safe" if share < 1 else ""
        padded = f" <span class='padded'>letterboxed: {reason}{safe}</span>" if output.get("padded") else ""
        if output.get("past_unread_text"):
            padded = " <span class='padded'>cropped past detected text that does not read</span>"
        cover = ""
        if output.get("cover_t") is not None:
            whole = "" if output.get("cover_whole") else ", product not whole in any candidate"
            cover = f" <span class='cover'>cover at {float(output['cover_t']):.2f} s{whole}</span>"
        caption = f"<figcaption>{_text(label)} {width}×{height}{_placement_html(output)}{padded}{cover}</figcaption>"
        if clip is None:
            figures.append(f"<figure><p>clip not available locally</p>{caption}</figure>")
            continue
        folder.mkdir(parents=True, exist_ok=True)
        zone = (output.get("placement") or {}).get("safe_zone")
        has_poster = _poster(clip, folder / f"{name}.jpg", zone if isinstance(zone, dict) else None)
        shown_width = round(POSTER_HEIGHT * width / height) if width and height else POSTER_HEIGHT
        poster = f" poster='{_safe(item_id)}/{name}.jpg'" if has_poster else ""
        figures.append(
            f"<figure><video controls preload='none' width='{shown_width}' height='{POSTER_HEIGHT}'{poster}>"
            f"<source src='{_link(clip, dest)}' type='video/mp4'></video>{caption}</figure>"
        )
    return "<div class='row clips'>" + "".join(figures) + "</div>"


def _item_section(
    manifest: Manifest,
    dest: Path,
    out: Path | None,
    resolve_source: Callable[[str], Path | None],
    thumbs: int,
) -> str:
    item_id = str(manifest.get("item_id", "?"))
    window = manifest.get("window") or {}
    start, end = float(window.get("start_s", 0.0)), float(window.get("end_s", 0.0))
    parts = [f"<section id='{_text(item_id)}'><h2>{_text(item_id)}</h2>"]
    if manifest.get("title"):
        parts.append(f"<p class='title'>{_text(manifest['title'])}</p>")
    parts.append(
        f"<p>status {_text(manifest.get('status'))}; window {start:.2f}–{end:.2f} s, "
        f"score {_text(window.get('score', '?'))}; {_sound(manifest.get('audio'))}</p>"
    )
    reused = manifest.get("reused_from")
    if isinstance(reused, dict):
        whose = _text(reused.get("item_id", "?"))
        parts.append(
            f"<p class='reused'>clips copied from <a href='#{whose}'>{whose}</a>: the same video, main image, "
            "title, description and settings</p>"
        )
    outputs = list(manifest.get("outputs") or [])
    if outputs:
        parts.append(_clips_html(item_id, outputs, dest, out))
    curve = manifest.get("curve")
    if curve:
        parts.append(
            _curve_svg([(float(t), float(v)) for t, v in curve], start, end, manifest.get("cuts") or [])
        )
    else:
        parts.append("<p>no score curve in this manifest</p>")
    source = manifest.get("source") or {}
    path = resolve_source(str(source.get("uri", ""))) if source.get("uri") else None
    if path is None or not outputs or end <= start:
        parts.append("<p>source video not available: no source frames</p></section>")
        return "\n".join(parts)
    times = [start + (k + 0.5) * (end - start) / thumbs for k in range(thumbs)]
    with VideoSource(path) as video:
        frames = [(f.t, cv2.cvtColor(f.rgb, cv2.COLOR_RGB2BGR)) for f in video.sample(times)]
    folder = dest / _safe(item_id)
    folder.mkdir(parents=True, exist_ok=True)
    text_boxes = [tuple(float(v) for v in b) for b in manifest.get("text_boxes") or []]
    subjects = [tuple(float(v) for v in s) for s in manifest.get("subject_boxes") or []]
    cv2.imwrite(str(folder / "product.png"), _product_strip(frames, text_boxes, subjects))
    cv2.imwrite(
        str(folder / "overview.png"), _overview(frames[len(frames) // 2], outputs, text_boxes, subjects)
    )
    found = sum(1 for t, _ in frames if _subject_at(subjects, t) is not None)
    parts.append(
        f"<figure><img src='{_safe(item_id)}/product.png' alt='{_text(item_id)} product box'>"
        f"<figcaption>the window's frames: the product box (green) where it was found ({found} of "
        f"{len(frames)}), text regions (red)</figcaption></figure>"
        f"<figure><img src='{_safe(item_id)}/overview.png' alt='{_text(item_id)} crops'>"
        "<figcaption>mid-window frame with every aspect's crop</figcaption></figure></section>"
    )
    return "\n".join(parts)


def _sound(audio: object) -> str:
    """What was done to the clips' sound, in a few words."""
    if not isinstance(audio, dict):
        return "no sound"
    source = audio.get("source_lufs")
    if source is None:
        return "sound silent in the window"
    gain = float(audio.get("gain_db") or 0.0)
    limited = " (held back by the true-peak ceiling)" if audio.get("peak_limited") else ""
    return _text(f"sound {float(source):.1f} LUFS in the source, {gain:+.1f} dB{limited}")


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
        label = _output_names(output)[0]
        cv2.putText(image, label, (round(x * scale) + 4, round(y * scale) + 14 + 14 * (k % 3)),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.45, colour, 1, cv2.LINE_AA)  # fmt: skip
    return image


def _product_strip(
    frames: Sequence[tuple[float, np.ndarray]],
    text_boxes: Sequence[Sequence[float]],
    subjects: Sequence[tuple[float, ...]],
) -> np.ndarray:
    """The window's frames side by side, each with the product box found near its time and the text regions."""
    tiles = []
    for t, bgr in frames:
        scale = THUMB_HEIGHT / bgr.shape[0]
        tile = cv2.resize(
            bgr, (max(2, round(bgr.shape[1] * scale)), THUMB_HEIGHT), interpolation=cv2.INTER_AREA
        )
        for box in text_boxes:
            _draw(tile, box, (0, 0), scale, TEXT_COLOUR)
        subject = _subject_at(subjects, t)
        if subject is not None:
            _draw(tile, subject, (0, 0), scale, SUBJECT_COLOUR)
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
