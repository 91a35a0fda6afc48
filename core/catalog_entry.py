"""One catalog item as every stage sees it, once its line has been read and checked (jobs/intake/catalog.py reads the
lines; the catalog contract is in docs/architecture.md). It travels in task messages as `as_dict()`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
