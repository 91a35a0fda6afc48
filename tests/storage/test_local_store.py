"""The local-folder store's copy: a hard link under a temporary name renamed into place, so a copy costs no
bytes, and either name written again leaves the other as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import StorageError
from storage.store import LocalStore


def test_a_copy_is_a_link_that_a_later_write_of_either_name_does_not_touch(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "out")
    store.put_bytes("a/9x16.mp4", b"clip of a", "video/mp4")
    store.copy("a/9x16.mp4", "b/9x16.mp4")
    first, second = tmp_path / "out/a/9x16.mp4", tmp_path / "out/b/9x16.mp4"
    assert second.read_bytes() == b"clip of a" and first.stat().st_ino == second.stat().st_ino
    store.put_bytes("a/9x16.mp4", b"a again", "video/mp4")
    assert second.read_bytes() == b"clip of a"
    # copying over an existing object replaces it whole; no temporary name is left behind
    store.copy("a/9x16.mp4", "b/9x16.mp4")
    assert second.read_bytes() == b"a again"
    assert sorted(store.list("")) == ["a/9x16.mp4", "b/9x16.mp4"]


def test_copying_a_missing_object_is_a_storage_error(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "out")
    with pytest.raises(StorageError, match=r"missing\.mp4"):
        store.copy("a/missing.mp4", "b/missing.mp4")
    assert not (tmp_path / "out/b/missing.mp4").exists()
