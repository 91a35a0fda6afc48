"""Folders and files only their owner may open, whatever the umask reelgen was started with.

reelgen's state (the embedded Redis's data, the node cache of downloaded sources, lock files, the daemon's socket)
holds catalog entries and sellers' media, and its sockets take commands: other users of a shared host must not
read or drive any of it. Modes are given when a thing is created, never by a chmod afterwards, which leaves a
window in which another user can open it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

#: files 0600 and folders 0700: what a umask of 0o077 leaves of Python's and most programs' defaults
OWNER_ONLY = 0o077


def private_dir(path: Path) -> Path:
    """path as a folder, each missing part of it created 0700.

    A folder that already exists keeps its mode: it may be one the operator shares on purpose (or /tmp).
    """
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):
        # the umask can only take bits away from 0o700, never add group or other access
        folder.mkdir(mode=0o700, exist_ok=True)
    return path


@contextlib.contextmanager
def owner_only_umask(mask: int = OWNER_ONLY) -> Iterator[None]:
    """Files, folders and sockets created inside (by this process, or by a child it starts, for the child's whole
    life) get at most the modes mask leaves.

    The umask is process-wide, so whatever another thread creates meanwhile gets the mask too: only for short
    start-up steps during which no other thread creates files.
    """
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)
