"""Streaming catalog readers (JSONL or CSV) and the catalog-line contract of DESIGN.md §5."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from reelgen.errors import BadCatalogLine, BadItemId, CatalogError, ReelgenError
from reelgen.settings import SourcePolicy
from storage.sources import SourceGuard

ITEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
REQUIRED = ("item_id", "video", "image", "title")


def check_item_id(item_id: object) -> str:
    if not isinstance(item_id, str) or not ITEM_ID.fullmatch(item_id):
        raise BadItemId(
            f"item id {item_id!r} must match ^[A-Za-z0-9][A-Za-z0-9._-]{{0,127}}$ (it becomes a storage path)"
        )
    return item_id


@dataclass(frozen=True)
class CatalogEntry:
    item_id: str
    video: str
    image: str
    title: str
    description: str = ""
    version: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CatalogEntry:
        return cls(**data)


@dataclass(frozen=True)
class BadLine:
    """A catalog line that cannot become an item; key names it in the ledger."""

    line_no: int
    key: str
    error: ReelgenError


def parse_line(fields: dict[str, Any], sources: SourceGuard) -> CatalogEntry:
    """A validated entry whose sources passed the job's source policy (relative paths resolve against the
    catalog's folder)."""
    missing = [name for name in REQUIRED if not isinstance(fields.get(name), str) or not fields[name].strip()]
    item_id = check_item_id(fields.get("item_id")) if "item_id" not in missing else None
    if missing:
        raise BadCatalogLine(f"missing or empty field(s): {', '.join(missing)}")
    assert item_id is not None
    version = fields.get("version") or fields.get("updated_at") or ""
    return CatalogEntry(
        item_id=item_id,
        video=sources.vet(fields["video"]),
        image=sources.vet(fields["image"]),
        title=fields["title"],
        description=str(fields.get("description") or ""),
        version=str(version),
    )


def line_key(line_no: int) -> str:
    """The ledger key of a catalog line that has no usable item id (':' never occurs in item ids)."""
    return f"line:{line_no}"


def _line_key(line_no: int, fields: dict[str, Any] | None) -> str:
    candidate = fields.get("item_id") if fields else None
    if isinstance(candidate, str) and ITEM_ID.fullmatch(candidate):
        return candidate
    return line_key(line_no)


def _records(handle: io.TextIOBase, is_csv: bool) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, fields or None, parse error or None) per non-empty record."""
    if is_csv:
        for line_no, row in enumerate(csv.DictReader(handle), start=2):
            yield line_no, dict(row), None
        return
    for line_no, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield line_no, None, f"invalid JSON: {exc.msg} at column {exc.colno}"
            continue
        if not isinstance(value, dict):
            yield line_no, None, "a catalog line must be a JSON object"
            continue
        yield line_no, value, None


def read_catalog(
    path: Path, policy: SourcePolicy, *, source: str | None = None
) -> Iterator[tuple[int, CatalogEntry | BadLine]]:
    """Stream (line number, entry or bad line) from a local JSONL or CSV catalog, never loading it whole.

    `source` is the URI of a catalog that was downloaded to `path`: its name tells CSV from JSONL (the copy's
    does not), and it has no folder on this node, so its local sources must lie in the policy's roots.
    """
    if not path.is_file():
        raise CatalogError(f"catalog {path} does not exist or is not a file")
    guard = SourceGuard(policy, path.parent.resolve() if source is None else None)
    is_csv = (path.name if source is None else urlparse(source).path).lower().endswith(".csv")
    with open(path, encoding="utf-8", errors="replace", newline="" if is_csv else None) as handle:
        for line_no, fields, problem in _records(handle, is_csv):
            key = _line_key(line_no, fields)
            if problem is not None or fields is None:
                yield line_no, BadLine(line_no, key, BadCatalogLine(f"line {line_no}: {problem}"))
                continue
            try:
                yield line_no, parse_line(fields, guard)
            except ReelgenError as exc:
                yield line_no, BadLine(line_no, key, type(exc)(f"line {line_no}: {exc}"))
