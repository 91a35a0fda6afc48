"""The reference to a catalog, parsed once where it enters: a command's argument, the nightly catalog setting, or
a job record read back by a dispatcher. Every later step takes this value, never the string again, so a
reference is parsed and a local catalog's file checked in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import CatalogError
from core.text import printable
from storage.uri import Scheme, Uri, parse_uri


@dataclass(frozen=True)
class CatalogRef:
    """A parsed catalog reference: a local file (checked to be one and readable when parsed) or a remote URI
    (s3://, http(s)://, checked by the pre-flight that reads it)."""

    uri: Uri

    @classmethod
    def parse(cls, text: str) -> CatalogRef:
        """The reference `text` names; ForbiddenSource for a malformed or unsupported one, CatalogError for a
        local catalog that is not a readable file."""
        ref = cls(parse_uri(text))
        path = ref.path
        if path is not None:
            if not path.is_file():
                raise CatalogError(f"catalog {printable(str(path))} does not exist or is not a file")
            try:
                with open(path, "rb") as handle:
                    handle.read(1)
            except OSError as exc:
                raise CatalogError(f"catalog {printable(str(path))} cannot be read: {exc.strerror}") from None
        return ref

    @property
    def path(self) -> Path | None:
        """The local catalog's file; None for a remote catalog."""
        return self.uri.local_path if self.uri.scheme is Scheme.FILE else None

    def __str__(self) -> str:
        """What a job record keeps, which a dispatcher anywhere can open again: a local catalog's absolute path,
        any other reference as given."""
        return self.uri.path if self.uri.scheme is Scheme.FILE else self.uri.raw
