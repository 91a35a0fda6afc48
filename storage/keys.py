"""The rule every store's keys follow, whichever backend holds them (storage/store.py, storage/s3.py)."""

from __future__ import annotations

from core.errors import StorageError


def check_key(key: str) -> str:
    """A key that cannot escape the store's root: relative, no empty, '.' or '..' segments."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise StorageError(f"object key {key!r} is not a clean relative path")
    return key
