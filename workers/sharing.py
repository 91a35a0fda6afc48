"""Work shared between a job's items: a marketplace shows one seller's video under every variant of a product
(colours, sizes, bundles), and the items that have the same video bytes, the same main image, title and
description and the same output settings get the same clips. The first of them to be prepared leads: it is
analysed and rendered as any item is; the others wait for it and then get copies of its clips (hard links in a
folder, server-side copies in S3) and manifests of their own that name whose work they reuse (`reused_from`).

The coordination is the ledger's (Ledger.lead_shared, shared_done, release_shared): a lead that fails is given
up, and one whose worker is lost lapses with the item's lease, so a waiting item never waits for work no one is
doing; it then leads and does the work itself. Items that share a video but not the rest share only its
download (the node's cache). Pure apart from the object store: no Redis here.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path, PurePosixPath
from typing import Any

from core.catalog_entry import CatalogEntry
from core.digests import file_digest
from core.errors import StorageError
from storage.manifest import MANIFEST_VERSION, manifest_key, read_manifest
from storage.store import ObjectStore

#: how long a done work stays known to the items of its job that come after it: a backfill's catalog lists a
#: product's variants close together, but a retry of a failed item may come days later
DONE_KEPT_S = 7 * 24 * 3600
#: a waiting item asks again after this many seconds, doubling up to WAIT_MAX_S: the lead's render takes
#: seconds to minutes, and each ask costs a prepare (the download comes from the node's cache)
WAIT_FIRST_S = 5
WAIT_MAX_S = 60


def work_key(video: Path, image: Path | None, entry: CatalogEntry, config_hash: str) -> str:
    """What makes two items' clips the same: the video's and the main image's bytes, the title and description
    the window is scored against, and the output settings (the config hash)."""
    digest = hashlib.sha256()
    parts = (file_digest(video), "" if image is None else file_digest(image), entry.title, entry.description)
    for part in (*parts, config_hash):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def wait_s(retries: int) -> int:
    """Seconds before a waiting item asks again, after `retries` asks."""
    return int(min(WAIT_MAX_S, WAIT_FIRST_S * 2 ** min(retries, 8)))


def waits(lease_s: int) -> int:
    """How many times an item asks before it stops waiting and does the work itself: for as long as a lead
    may last without being renewed (an item's lease), where a lead that never gives up would otherwise hold
    its followers for good."""
    total, count = 0, 0
    while total < lease_s:
        total += wait_s(count)
        count += 1
    return count


def _moved(uri: str, source_item: str, item_id: str) -> tuple[str, str]:
    """An output's key in the leading item's folder and in this item's (its name kept)."""
    name = PurePosixPath(uri).name
    return f"{source_item}/{name}", f"{item_id}/{name}"


def reuse(
    store: ObjectStore, source_item: str, entry: CatalogEntry, job_id: str, video_uri: str
) -> dict[str, Any]:
    """The item's clips and covers copied from source_item's, then its manifest written last (as any item's):
    the source's, for this item, its own source URI and version, with `reused_from`; returns it."""
    source = read_manifest(store, source_item)
    if source is None or source.get("status") != "done":
        # transient: the lead wrote its manifest before it said the work was done, so this is a store that
        # lost it or a result index out of step; the item is retried and then leads the work itself
        raise StorageError(f"{entry.item_id}: {source_item}'s manifest, whose clips it shares, is not there")
    store.delete(manifest_key(entry.item_id))
    outputs = []
    for output in source["outputs"]:
        record = dict(output)
        for field in ("uri", "cover"):
            key, own = _moved(str(output[field]), source_item, entry.item_id)
            store.copy(key, own)
            record[field] = store.uri(own)
        outputs.append(record)
    manifest = dict(
        source,
        item_id=entry.item_id,
        job_id=job_id,
        created_at=time.time(),
        source=dict(source["source"], uri=video_uri),
        source_version=entry.version,
        outputs=outputs,
        reused_from={"item_id": source_item, "job_id": str(source.get("job_id", ""))},
        manifest_version=MANIFEST_VERSION,
    )
    data = json.dumps(manifest, indent=1).encode()
    store.put_bytes(manifest_key(entry.item_id), data, "application/json")
    return manifest
