"""The object-store interface every output goes through, and its local-folder backend.

Keys are '/'-separated paths relative to the store's root (e.g. 'item-1/9x16.mp4'). Writes are atomic: a
reader never sees half an object. The S3 backend lives in storage/s3.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from core.errors import StorageError
from storage.keys import check_key
from storage.uri import Scheme, Uri, parse_uri


class ObjectStore(Protocol):
    """A flat key space under one root URI."""

    root: str

    def uri(self, key: str) -> str: ...

    def put_file(self, key: str, path: Path, content_type: str) -> None: ...

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None: ...

    def get_bytes(self, key: str) -> bytes | None:
        """The object's bytes, or None when it does not exist."""
        ...

    def delete(self, key: str) -> None:
        """Remove an object; removing a missing one is not an error."""
        ...

    def list(self, prefix: str) -> Iterator[str]:
        """Keys that start with prefix."""
        ...

    def copy(self, source: str, key: str) -> None:
        """Copy the object at source to key inside the store, without the bytes passing through this process
        where the backend allows (a hard link, an S3 server-side copy)."""
        ...


def process_tag() -> str:
    """This process on this host, as temporary names carry it: <host hash>.<pid>."""
    host = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
    return f"{host}.{os.getpid()}"


def left_by_dead_process(tag: str) -> bool:
    """Whether a temporary name's tag (see process_tag) names a process of this host that no longer exists."""
    host, _, pid = tag.partition(".")
    if host != process_tag().split(".", 1)[0] or not pid.isdigit():
        return False  # another host's, or not ours at all: never touched
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def sweep_dead(folder: Path, prefix: str) -> None:
    """Remove what dead processes of this host left in folder under names `<prefix><tag>-<random>`."""
    for stale in folder.glob(f"{prefix}*-*"):
        tag = stale.name[len(prefix) :].split("-", 1)[0]
        if left_by_dead_process(tag):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            else:
                stale.unlink(missing_ok=True)


class LocalStore:
    """A folder on the local file system."""

    def __init__(self, root: Path) -> None:
        self.root_path = root.resolve()
        self.root = str(self.root_path)
        try:
            self.root_path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create output folder {self.root}: {exc}") from exc

    def _path(self, key: str) -> Path:
        return self.root_path / check_key(key)

    def uri(self, key: str) -> str:
        return str(self._path(key))

    def _atomic_write(self, key: str, write: Callable[[BinaryIO], object]) -> None:
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # a writer killed mid-copy leaves its temporary file; the next write into the folder removes it
            sweep_dead(target.parent, ".tmp-")
            fd, tmp = tempfile.mkstemp(prefix=f".tmp-{process_tag()}-", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    write(handle)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.chmod(tmp, 0o644)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StorageError(f"cannot write {target}: {exc}") from exc

    def put_file(self, key: str, path: Path, content_type: str) -> None:
        def copy(handle: BinaryIO) -> None:
            with open(path, "rb") as src:
                shutil.copyfileobj(src, handle, 1 << 20)

        self._atomic_write(key, copy)

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        self._atomic_write(key, lambda handle: handle.write(data))

    def get_bytes(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read {self._path(key)}: {exc}") from exc

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot delete {self._path(key)}: {exc}") from exc

    def copy(self, source: str, key: str) -> None:
        src, target = self._path(source), self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.parent / f".tmp-{process_tag()}-{os.urandom(4).hex()}"
            try:
                # a hard link under a temporary name, then renamed over the target: atomic, and the two names
                # stay apart when either is written again (a write replaces its file, never edits it)
                os.link(src, tmp)
                os.replace(tmp, target)
                return
            except OSError:
                tmp.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot copy {src} to {target}: {exc}") from exc
        # another file system, or one without hard links: the bytes are copied
        self.put_file(key, src, "application/octet-stream")

    def list(self, prefix: str) -> Iterator[str]:
        base = self.root_path
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                if name.startswith(".tmp-"):
                    continue
                key = Path(dirpath, name).relative_to(base).as_posix()
                if key.startswith(prefix):
                    yield key


def open_store(root: str | Uri) -> ObjectStore:
    """The store for an output URI: a local folder by default, s3://bucket/prefix for S3."""
    uri = root if isinstance(root, Uri) else parse_uri(root)
    if uri.scheme is Scheme.FILE:
        return LocalStore(uri.local_path)
    if uri.scheme is Scheme.S3:
        from storage.s3 import S3Store

        return S3Store(uri.authority, uri.path)
    raise StorageError(
        f"{uri.raw}: outputs go to a local folder or s3://bucket/prefix, not {uri.scheme.value}"
    )
