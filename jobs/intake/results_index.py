"""The results index: per job, JSONL parts in the output store saying what became of each item.

`<out>/_reelgen/index/<job id>/<part>.jsonl`, one line per settled item:
`{"item_id", "status": "done"|"failed"|"dead", "config_hash", "version", "manifest" | "error" + "message"}`.
Workers settle items into a Redis stream (jobs/ledger.py); the dispatcher moves that stream into parts every
few seconds, so Redis holds only the last few seconds of results whatever the catalog size.

"Is this item already done?" is answered from earlier jobs' indexes and one listing of the output root's item
folders, not with a request per item: an item in an index as done for this config hash and source version is
done; an item with no folder at all is not; only the rare rest (outputs without an index entry, e.g. written
before indexes existed) are checked against their manifest, which stays the source of truth.
Names under `_reelgen/` cannot collide with items: item ids start with a letter or digit.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from core.catalog_entry import CatalogEntry
from jobs.intake.fingerprints import FingerprintSet, fingerprint
from jobs.ledger import Ledger, Reprocess
from storage.manifest import is_done, manifest_key
from storage.store import LocalStore, ObjectStore

log = logging.getLogger(__name__)

INDEX_PREFIX = "_reelgen/index/"
GONE_PREFIX = "_reelgen/gone/"
_CHECK_THREADS = 16
# Results a part holds at most, and results read per command: Redis builds a whole reply in its own memory, so a
# small read bounds what a flush adds to Redis's peak while a part still collects many reads.
PART_RESULTS = 5000
READ_RESULTS = 500


def list_keys(store: ObjectStore, prefix: str) -> Iterator[str]:
    """Keys under prefix; a local store walks only that folder (LocalStore.list walks the whole root)."""
    if isinstance(store, LocalStore):
        base = store.root_path / prefix
        if not base.is_dir():
            return
        for dirpath, _dirs, files in os.walk(base):
            for name in sorted(files):
                if not name.startswith(".tmp-"):
                    yield os.path.relpath(os.path.join(dirpath, name), store.root_path).replace(os.sep, "/")
        return
    yield from store.list(prefix)


def list_item_ids(store: ObjectStore) -> Iterator[str]:
    """Item folders at the root of an output store: one listing, a thousand names per S3 request."""
    if isinstance(store, LocalStore):
        with os.scandir(store.root_path) as entries:
            for entry in entries:
                if entry.is_dir() and not entry.name.startswith(("_", ".")):
                    yield entry.name
        return
    client: Any = getattr(store, "_client", None)
    bucket, prefix = getattr(store, "bucket", None), getattr(store, "prefix", None)
    if client is not None and bucket is not None and prefix is not None:
        base = f"{prefix}/" if prefix else ""
        for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=base, Delimiter="/"
        ):
            for common in page.get("CommonPrefixes", []):
                name = str(common["Prefix"])[len(base) :].rstrip("/")
                if name and not name.startswith("_"):
                    yield name
        return
    seen: set[str] = set()
    for key in store.list(""):
        name = key.split("/", 1)[0]
        if name not in seen and not name.startswith("_"):
            seen.add(name)
            yield name


def read_index(store: ObjectStore, job_id: str | None = None) -> Iterator[dict[str, Any]]:
    """Index lines of one job, or of every job (oldest job first: job ids sort by submission time)."""
    prefix = INDEX_PREFIX + (f"{job_id}/" if job_id else "")
    for key in sorted(list_keys(store, prefix)):
        raw = store.get_bytes(key)
        for line in (raw or b"").splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


class IndexWriter:
    """Moves a job's results stream into index parts (idempotent: a part is named by its first stream id)."""

    def __init__(self, ledger: Ledger, store: ObjectStore, job_id: str, config_hash: str) -> None:
        self.ledger = ledger
        self.store = store
        self.job_id = job_id
        self.config_hash = config_hash
        self.written = 0

    def flush(self) -> int:
        total = 0
        while True:
            batch = self._read(PART_RESULTS)
            if not batch:
                return total
            lines = []
            for _stream_id, fields in batch:
                item_id = fields.get("i", "")
                if ":" in item_id:  # a catalog line without a usable id: nothing to index under
                    continue
                line: dict[str, Any] = {
                    "item_id": item_id,
                    "status": fields.get("s", ""),
                    "config_hash": self.config_hash,
                    "version": fields.get("v", ""),
                }
                if line["status"] == "done":
                    line["manifest"] = self.store.uri(manifest_key(item_id))
                else:
                    line["error"], line["message"] = fields.get("e", ""), fields.get("m", "")
                lines.append(json.dumps(line))
            if lines:
                part = f"{INDEX_PREFIX}{self.job_id}/{batch[0][0].replace('-', '_')}.jsonl"
                self.store.put_bytes(part, ("\n".join(lines) + "\n").encode(), "application/x-ndjson")
            # only after the part is stored: a crash in between rewrites the same part, losing nothing
            self.ledger.trim_results(self.job_id, batch[-1][0])
            self.written += len(lines)
            total += len(lines)

    def _read(self, limit: int) -> list[tuple[str, dict[str, str]]]:
        """Up to `limit` of the oldest results, READ_RESULTS per command."""
        batch: list[tuple[str, dict[str, str]]] = []
        while len(batch) < limit:
            count = min(READ_RESULTS, limit - len(batch))
            chunk = self.ledger.read_results(self.job_id, count, after=batch[-1][0] if batch else None)
            batch.extend(chunk)
            if len(chunk) < count:
                break
        return batch


@dataclass
class PriorResults:
    """What earlier jobs recorded for this output root and config hash, as fingerprints of (item, version)."""

    done: FingerprintSet
    failed: FingerprintSet
    entries: int = 0

    @classmethod
    def load(cls, store: ObjectStore, config_hash: str, exclude_job: str | None = None) -> PriorResults:
        done, failed = FingerprintSet(), FingerprintSet()
        entries = 0
        for line in read_index(store):
            if line.get("config_hash") != config_hash:
                continue
            key = fingerprint(str(line.get("item_id")), str(line.get("version", "")))
            entries += 1
            (done if line.get("status") == "done" else failed).add(key)
        return cls(done, failed, entries)


class DoneCheck:
    """Decides, a page of catalog entries at a time, which ones a job skips."""

    def __init__(self, store: ObjectStore, config_hash: str, mode: Reprocess) -> None:
        self.store = store
        self.config_hash = config_hash
        self.mode = mode
        self.prior = PriorResults.load(store, config_hash) if mode is not Reprocess.ALL else None
        self.present = FingerprintSet()
        if mode is not Reprocess.ALL:
            for item_id in list_item_ids(store):
                self.present.add(fingerprint(item_id))
        self.manifest_reads = 0

    def skip(self, entries: list[CatalogEntry]) -> list[bool]:
        """For each entry: True when this job should not process it."""
        if self.mode is Reprocess.ALL or self.prior is None:
            return [False] * len(entries)
        answers: list[bool | None] = []
        uncertain: list[int] = []
        for at, entry in enumerate(entries):
            key = fingerprint(entry.item_id, entry.version)
            if key in self.prior.done:
                answers.append(True)
            elif self.mode is Reprocess.CHANGED and key in self.prior.failed:
                answers.append(True)  # processed since: failed, left to `reelgen retry`
            elif self.mode is Reprocess.FAILED:
                answers.append(key not in self.prior.failed)
            elif fingerprint(entry.item_id) not in self.present:
                answers.append(False)  # no folder at all: certainly not done
            else:
                answers.append(None)
                uncertain.append(at)
        if uncertain:
            self.manifest_reads += len(uncertain)
            with ThreadPoolExecutor(min(_CHECK_THREADS, len(uncertain))) as pool:
                found = pool.map(
                    lambda at: is_done(
                        self.store, entries[at].item_id, self.config_hash, entries[at].version
                    ),
                    uncertain,
                )
                for at, done in zip(uncertain, found, strict=True):
                    answers[at] = done
        return [bool(a) for a in answers]


def report_gone(store: ObjectStore, job_id: str, catalog_ids: FingerprintSet) -> int:
    """Write `_reelgen/gone/<job>.jsonl` naming items with outputs that the catalog no longer lists."""
    gone = [item_id for item_id in list_item_ids(store) if fingerprint(item_id) not in catalog_ids]
    if gone:
        body = "".join(json.dumps({"item_id": item_id, "uri": store.uri(item_id)}) + "\n" for item_id in gone)
        store.put_bytes(f"{GONE_PREFIX}{job_id}.jsonl", body.encode(), "application/x-ndjson")
        log.warning("job %s: %d item(s) with outputs are gone from the catalog (kept)", job_id, len(gone))
    return len(gone)


def iter_gone(store: ObjectStore, job_id: str) -> Iterable[str]:
    raw = store.get_bytes(f"{GONE_PREFIX}{job_id}.jsonl") or b""
    return [json.loads(line)["item_id"] for line in raw.splitlines() if line.strip()]
