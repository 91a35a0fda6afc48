"""Turning a source URI from a catalog into a local file a decoder can open.

Local paths are used in place, by the real path the catalog's source policy checked (storage/sources.py);
s3:// and http(s):// sources are downloaded once per node into the NodeCache and pinned there for as long as
the caller's `with fetcher.local_path(uri) as path:` block runs (a context manager, not a plain path, because a
cached file could otherwise be evicted before a decoder opens it).

HTTP sources are untrusted input, so:
- byte limit (max_source_bytes) from Content-Length and again while streaming;
- SSRF: unless allow_private_http, every address a host resolves to must be public, checked again on every
  redirect hop (redirects are followed by hand, at most max_redirects), and the socket actually connected is
  vetted before a byte is sent, which closes the DNS-rebinding gap between our lookup and the client's own.
  Proxies from the environment are ignored (trust_env=False): through a proxy the connected peer says nothing
  about the final host. An IPv6 address that carries an IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64) is judged
  by that IPv4 address too, since that is where its packets are delivered;
- retries with exponential backoff on connection errors and 5xx, Retry-After honoured (bounded) on 429/503;
- time: a deadline for the whole download (download_deadline_s: attempts, backoff and slot waits included) and,
  after a grace period, a minimum average rate per attempt (http_min_rate_bytes_s), both breaches SourceTooSlow.
  Per-read timeouts alone do not bound a source that sends a byte every few seconds;
- at most `host_slots` concurrent downloads per host across all processes of the node (flock'ed slot files),
  waited for at most http_slot_wait_s (then HostBusy, transient).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from core.errors import (
    ForbiddenSource,
    SourceNotFound,
    SourceTooLarge,
)
from storage.addresses import AddressPolicy, IPNetwork
from storage.cache import NodeCache
from storage.http_download import HostSlots, HttpDownloader
from storage.s3 import download_object, make_client
from storage.uri import Scheme, Uri, parse_uri

log = logging.getLogger(__name__)


class FetchSettings(Protocol):
    """The settings a Fetcher reads, and nothing else of the application's (core.settings.Settings has them)."""

    @property
    def resolved_cache_dir(self) -> Path: ...
    @property
    def cache_max_bytes(self) -> int: ...
    @property
    def allow_private_http(self) -> bool: ...
    @property
    def allow_local_sources(self) -> bool | None: ...
    @property
    def http_timeout_s(self) -> float: ...
    @property
    def max_source_bytes(self) -> int: ...
    @property
    def download_deadline_s(self) -> float: ...
    @property
    def http_min_rate_bytes_s(self) -> int: ...
    @property
    def http_min_rate_grace_s(self) -> float: ...
    @property
    def http_slot_wait_s(self) -> float: ...


class Fetcher:
    """Local files for source URIs: `with fetcher.local_path(uri) as path: ...`."""

    def __init__(
        self,
        settings: FetchSettings,
        cache: NodeCache | None = None,
        *,
        s3_client: Any | None = None,
        exempt_networks: Sequence[IPNetwork] = (),
        host_slots: int = 4,
        max_attempts: int = 4,
        backoff_s: float = 0.5,
        max_retry_after_s: float = 30.0,
        max_redirects: int = 5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.cache = (
            cache if cache is not None else NodeCache(settings.resolved_cache_dir, settings.cache_max_bytes)
        )
        self._s3_client = s3_client
        self.http = HttpDownloader(
            AddressPolicy(settings.allow_private_http, exempt_networks),
            HostSlots(self.cache.root / "hosts", host_slots),
            timeout_s=settings.http_timeout_s,
            max_bytes=settings.max_source_bytes,
            deadline_s=settings.download_deadline_s,
            min_rate_bytes_s=settings.http_min_rate_bytes_s,
            rate_grace_s=settings.http_min_rate_grace_s,
            slot_wait_s=settings.http_slot_wait_s,
            max_attempts=max_attempts,
            backoff_s=backoff_s,
            max_retry_after_s=max_retry_after_s,
            max_redirects=max_redirects,
            sleep=sleep,
        )

    @contextlib.contextmanager
    def local_path(self, uri_text: str) -> Iterator[Path]:
        """A local file holding the source; cached downloads stay pinned until the block exits.

        A catalog's sources come here as its source policy left them (storage/sources.py): local ones by the
        real path that was checked against the catalog's folder.
        """
        uri = parse_uri(uri_text)
        if uri.scheme is Scheme.FILE:
            yield self._check_size(self._regular_file(self._checked_local(uri)), uri.raw)
            return
        with self.cache.open(uri.raw, self._filler(uri)) as path:
            # An entry cached under an older, larger limit must not slip past the current one.
            yield self._check_size(path, uri.raw)

    def _filler(self, uri: Uri) -> Callable[[Path], None]:
        if uri.scheme is Scheme.S3:
            return lambda dest: self._fetch_s3(uri, dest)
        return lambda dest: self._fetch_http(uri, dest)

    def _fetch_s3(self, uri: Uri, dest: Path) -> None:
        if not uri.path:
            raise SourceNotFound(f"{uri.raw}: an s3 source needs a key (s3://bucket/key)")
        download_object(
            self._s3(),
            uri.authority,
            uri.path,
            dest,
            max_bytes=self.settings.max_source_bytes,
            deadline_s=self.settings.download_deadline_s,
        )

    def _fetch_http(self, uri: Uri, dest: Path) -> None:
        self.http.download(uri.raw, dest)

    def _s3(self) -> Any:
        if self._s3_client is None:
            self._s3_client = make_client()
        return self._s3_client

    def _checked_local(self, uri: Uri) -> Path:
        if self.settings.allow_local_sources is False:
            raise ForbiddenSource(
                f"{uri.raw}: local sources are refused here (REELGEN_ALLOW_LOCAL_SOURCES=false)"
            )
        path = uri.local_path
        # A path that no longer is its own real path had a link put on its way after the policy checked it (or
        # never passed the policy): refused, not followed.
        if os.path.realpath(path) != str(path):
            raise ForbiddenSource(
                f"{uri.raw}: a local source is opened only by its real path, with no symbolic link or '..' on the way"
            )
        return path

    @staticmethod
    def _regular_file(path: Path) -> Path:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError as exc:
            raise SourceNotFound(f"{path} does not exist") from exc
        except OSError as exc:
            raise SourceNotFound(f"{path} cannot be read: {exc}") from exc
        if not stat.S_ISREG(mode):
            raise SourceNotFound(f"{path} is not a regular file")
        return path

    def _check_size(self, path: Path, where: str) -> Path:
        size = path.stat().st_size
        if size > self.settings.max_source_bytes:
            limit = self.settings.max_source_bytes
            raise SourceTooLarge(f"{where} is {size} bytes, over the limit of {limit} (max_source_bytes)")
        return path
