"""Item manifests: the output layout (docs/architecture.md, Contracts) and the manifest as each item's commit
marker."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from storage.store import ObjectStore

MANIFEST_VERSION = 4
MANIFEST_NAME = "manifest.json"


def manifest_key(item_id: str) -> str:
    return f"{item_id}/{MANIFEST_NAME}"


def clip_key(item_id: str, stem: str) -> str:
    """An item's clip: stem is its aspect's (9x16) or its placement's name (reels)."""
    return f"{item_id}/{stem}.mp4"


def cover_key(item_id: str, stem: str) -> str:
    return f"{item_id}/{stem}.jpg"


def read_manifest(store: ObjectStore, item_id: str) -> dict[str, Any] | None:
    raw = store.get_bytes(manifest_key(item_id))
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def is_done(store: ObjectStore, item_id: str, config_hash: str, source_version: str) -> bool:
    """An item is done when its manifest exists for this config hash and source version."""
    manifest = read_manifest(store, item_id)
    return (
        manifest is not None
        and manifest.get("status") == "done"
        and manifest.get("config_hash") == config_hash
        and manifest.get("source_version", "") == source_version
    )


@dataclass(frozen=True)
class WindowRecord:
    """The chosen window, in source seconds, and its score."""

    start_s: float
    end_s: float
    score: float
    truncated: bool


@dataclass(frozen=True)
class ClipRecord:
    """One aspect's or placement's clip: where it is, its size and rate, whether and why it is letterboxed, and
    the crop of every frame (source pixels)."""

    aspect: str
    uri: str
    #: the clip's cover, a JPEG at the clip's size taken from its own frames (workers.media.cover)
    cover: str
    #: the source time of the cover's frame, and whether it shows the product whole
    cover_t: float
    cover_whole: bool
    width: int
    height: int
    #: the output's pixels per source pixel where the clip enlarges its picture most (its smallest crop)
    scale: float
    padded: bool
    padded_reason: str | None
    #: a letterboxed clip's picture as a share of the size that fits the clip: below 1 where it is shown smaller
    #: to keep its text inside the title-safe area; 1 when cropped
    picture_share: float
    #: cropped past detected regions that do not read as text (unread_text_boxes) instead of letterboxed
    past_unread_text: bool
    #: for a placement's clip: its name, size, safe zone and upscale limit, whether the limit made the clip
    #: smaller, and how it met the safe zone (workers.framing.targets.placement_record); None for an aspect's
    placement: dict[str, Any] | None
    fps: str
    frames: int
    crops: list[dict[str, float | int]]


@dataclass(frozen=True)
class ItemManifest:
    """A done item's manifest (docs/architecture.md, Contracts): its fields in the order they are written."""

    item_id: str
    status: str
    job_id: str
    created_at: float
    #: the source video's facts (size, rate, duration, codec, timing) and the timestamp repairs made reading it
    source: dict[str, Any]
    source_version: str
    title: str
    window: WindowRecord
    #: text regions on screen during the window (source pixels, merged)
    text_boxes: list[list[float]]
    #: those of text_boxes' regions that no sample reads as text, where they were read (a clip letterboxed for
    #: text otherwise): a face's eyes or teeth, stripes; a crop may pass through them only to avoid a letterbox
    unread_text_boxes: list[list[float]]
    #: the picture inside the source's black bars, which every crop stays in (source pixels x0, y0, x1, y1);
    #: None when the whole frame is picture
    picture: list[float] | None
    text_detection: str
    #: (t, frame value) for every sample: the score curve
    curve: list[tuple[float, float]]
    cuts: list[float]
    #: (t, x0, y0, x1, y1) of the located product in the window and at the sample either side of it
    subject_boxes: list[tuple[float, float, float, float, float]]
    outputs: list[ClipRecord]
    #: what was done to the window's sound, the same in every clip (the source's integrated loudness and true
    #: peak, the gain that brought it to the target, whether the true-peak ceiling stopped it short, the fade at
    #: each edge); None when the clips are silent
    audio: dict[str, Any] | None
    config_hash: str
    scorer: str
    versions: dict[str, str]
    #: the item whose clips this one's are copies of (its `item_id`, `job_id`): the same video, main image, title,
    #: description and output settings (workers/sharing.py); None for an item analysed and rendered itself
    reused_from: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), manifest_version=MANIFEST_VERSION)


def write_manifest(store: ObjectStore, manifest: ItemManifest) -> dict[str, Any]:
    """Write the item's manifest (last: it marks the item done); returns it as written."""
    body = manifest.to_json()
    store.put_bytes(manifest_key(manifest.item_id), json.dumps(body, indent=1).encode(), "application/json")
    return body
