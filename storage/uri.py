"""Parsing the URIs a catalog or a flag may carry: plain paths, file://, s3://bucket/key, http(s)://."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from urllib.parse import unquote, urlparse

from core.errors import ForbiddenSource


class Scheme(StrEnum):
    FILE = "file"
    S3 = "s3"
    HTTP = "http"
    HTTPS = "https"


@dataclass(frozen=True)
class Uri:
    scheme: Scheme
    #: bucket for s3, host[:port] for http(s), empty for files
    authority: str
    #: key for s3 (no leading slash), absolute path for files, path+query for http(s)
    path: str
    raw: str

    @property
    def local_path(self) -> Path:
        if self.scheme is not Scheme.FILE:
            raise ValueError(f"{self.raw} is not a local path")
        return Path(self.path)

    def join(self, *parts: str) -> str:
        """A child URI of this one, as a string."""
        tail = "/".join(p.strip("/") for p in parts if p)
        if self.scheme is Scheme.FILE:
            return str(Path(self.path, tail))
        base = self.raw.rstrip("/")
        return f"{base}/{tail}" if tail else base


def parse_uri(text: str, base_dir: Path | None = None) -> Uri:
    """Parse a URI; relative paths resolve against base_dir (the catalog's folder) or the working directory."""
    if not text or not text.strip():
        raise ForbiddenSource("empty URI")
    parsed = urlparse(text)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and text[1:3] in (":\\", ":/")):
        raw_path = unquote(parsed.path) if scheme == "file" else text
        # no '~' expansion: a catalog's "~/x" names a file in the catalog's folder, not someone's home
        local = Path(raw_path)
        if not local.is_absolute():
            local = (base_dir or Path.cwd()) / local
        # absolute but not resolved: a catalog's local sources are resolved where the source policy checks them
        # (storage/sources.py; a realpath is an lstat per path component), the operator's own paths are not
        return Uri(Scheme.FILE, "", str(local), text)
    if scheme == "s3":
        if not parsed.netloc:
            raise ForbiddenSource(f"{text!r}: an s3 URI needs a bucket (s3://bucket/key)")
        return Uri(Scheme.S3, parsed.netloc, parsed.path.lstrip("/"), text)
    if scheme in ("http", "https"):
        if not parsed.hostname:
            raise ForbiddenSource(f"{text!r}: no host")
        path = parsed.path or "/"
        if parsed.query:
            path += "?" + parsed.query
        return Uri(Scheme(scheme), parsed.netloc, path, text)
    raise ForbiddenSource(
        f"{text!r}: scheme {scheme!r} is not supported (use a path, file://, s3:// or https://)"
    )
