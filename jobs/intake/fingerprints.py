"""A compact set of 64-bit fingerprints: what a dispatcher remembers about millions of items in 8 bytes each.

Item ids seen in a catalog and items known done are kept out of Redis (which must stay small whatever the
catalog size) and out of Python sets of strings (about 100 bytes per member). New members gather in a small set
and are merged into a sorted numpy array once it grows; membership is a set lookup plus a binary search.
At a million members the chance of any false collision is about 3e-8.
"""

from __future__ import annotations

import hashlib

import numpy as np

_MERGE_AT = 1 << 16


def fingerprint(*parts: str) -> int:
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class FingerprintSet:
    def __init__(self) -> None:
        self._sorted = np.empty(0, dtype=np.uint64)
        self._recent: set[int] = set()

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    def add(self, value: int) -> None:
        if value in self:
            return
        self._recent.add(value)
        if len(self._recent) >= _MERGE_AT:
            self._merge()

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        if value in self._recent:
            return True
        if not len(self._sorted):
            return False
        key = np.uint64(value)
        at = int(np.searchsorted(self._sorted, key))
        return at < len(self._sorted) and self._sorted[at] == key

    def _merge(self) -> None:
        fresh = np.fromiter(self._recent, dtype=np.uint64, count=len(self._recent))
        self._sorted = np.union1d(self._sorted, fresh)
        self._recent.clear()

    @property
    def nbytes(self) -> int:
        return int(self._sorted.nbytes) + 8 * len(self._recent)
