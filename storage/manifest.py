"""Item manifests: the output layout (docs/architecture.md, Contracts) and the manifest as each item's commit
marker."""

from __future__ import annotations

import json
from typing import Any

from storage.store import ObjectStore

MANIFEST_VERSION = 1
MANIFEST_NAME = "manifest.json"


def manifest_key(item_id: str) -> str:
    return f"{item_id}/{MANIFEST_NAME}"


def clip_key(item_id: str, aspect: tuple[int, int]) -> str:
    return f"{item_id}/{aspect[0]}x{aspect[1]}.mp4"


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


def write_manifest(store: ObjectStore, item_id: str, manifest: dict[str, Any]) -> str:
    body = dict(manifest, manifest_version=MANIFEST_VERSION)
    store.put_bytes(manifest_key(item_id), json.dumps(body, indent=1).encode(), "application/json")
    return store.uri(manifest_key(item_id))
