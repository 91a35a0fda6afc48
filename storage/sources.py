"""Which sources a catalog may name: the check every line's video and image pass before its item is admitted.

A catalog comes from sellers, so its URIs are hostile input. A local source (a path or a file:// URI) is resolved
with realpath, symbolic links and '..' followed, and must then lie inside the catalog's own folder or a folder of
the policy's local_roots; the item keeps that real path, so a worker opens the file that was checked (and
storage/fetch.py refuses a path that resolves elsewhere by then). '~' is never expanded: it is a file name like
any other. An s3:// source must name a bucket of the policy's list when there is one. http(s) sources are checked
when they are fetched (storage/fetch.py: AddressPolicy), on every redirect.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import ForbiddenSource
from core.settings import SourcePolicy
from storage.uri import Scheme, parse_uri


class SourceGuard:
    """A SourcePolicy applied to the lines of one catalog."""

    def __init__(self, policy: SourcePolicy, catalog_dir: Path | None) -> None:
        """catalog_dir: the folder of the catalog file, or None for a catalog downloaded from elsewhere (the node
        cache it sits in is nobody's folder of sources)."""
        self.policy = policy
        self.catalog_dir = catalog_dir
        folders = [*policy.local_roots, *([catalog_dir] if catalog_dir is not None else [])]
        # resolved once per catalog: a folder reached through a link (/data -> /mnt/data) holds what it points at
        self._folders = tuple(Path(os.path.realpath(folder)) for folder in folders)

    def vet(self, text: str) -> str:
        """The URI an item keeps for a source named in the catalog; ForbiddenSource if the policy refuses it."""
        uri = parse_uri(text, self.catalog_dir)
        if uri.scheme is Scheme.FILE:
            return self._local(text, uri.path)
        if uri.scheme is Scheme.S3 and self.policy.buckets and uri.authority not in self.policy.buckets:
            raise ForbiddenSource(
                f"{text!r}: bucket {uri.authority!r} is not one of the source buckets (REELGEN_SOURCE_BUCKETS)"
            )
        return uri.raw

    def _local(self, text: str, path: str) -> str:
        if not self.policy.allow_local:
            raise ForbiddenSource(
                f"{text!r}: this job reads no local sources; name it by an s3:// or https:// URI "
                "(REELGEN_ALLOW_LOCAL_SOURCES=true lets catalogs name local files; unset, only `reelgen run` may)"
            )
        # strict=False: a missing file is still placed, and then fails as SourceNotFound when it is fetched
        real = Path(os.path.realpath(path))
        if not any(real.is_relative_to(folder) for folder in self._folders):
            raise ForbiddenSource(
                f"{text!r}: a local source must lie inside the catalog's folder or a folder of "
                "REELGEN_LOCAL_SOURCE_ROOTS, with symbolic links and '..' followed"
            )
        return str(real)
