"""Streaming catalog readers (JSONL or CSV) and the catalog-line contract (docs/architecture.md, Contracts).

A catalog comes from sellers. Whatever a line holds, it becomes an entry or fails alone, with its line number:
a line is read in chunks of at most MAX_LINE_BYTES (a gigabyte without a newline costs no more memory than one
long line), its fields are strings within FIELD_LIMITS, and what a parser raises on hostile input (nesting that
exhausts the recursion limit, an integer past Python's digit limit, bytes that are not UTF-8) fails that line.
"""

from __future__ import annotations

import codecs
import csv
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ClassVar
from urllib.parse import urlparse

from core.catalog_entry import CatalogEntry
from core.errors import BadCatalogLine, BadItemId, CatalogError, ReelgenError
from core.names import did_you_mean, nearest, shown
from core.settings import SourcePolicy
from core.text import printable
from storage.sources import SourceGuard

log = logging.getLogger(__name__)

ITEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
REQUIRED = ("item_id", "video", "image", "title")
MAX_LINE_BYTES = 64 * 2**10
#: the known fields and the most UTF-8 bytes each may hold; None: the item id, which its pattern bounds
FIELD_LIMITS: dict[str, int | None] = {
    "item_id": None,
    "video": 4 * 2**10,
    "image": 4 * 2**10,
    "title": 2**10,
    "description": 16 * 2**10,
    "version": 128,
    "updated_at": 128,
}
#: unknown field names warned about per catalog, at most: a hostile catalog may carry a new one on every line
MAX_FIELD_WARNINGS = 10
URI_FIELDS = ("video", "image")
VERSION_FIELDS = ("version", "updated_at")
Fields = dict[str, Any]


def check_item_id(item_id: object) -> str:
    if not isinstance(item_id, str) or not ITEM_ID.fullmatch(item_id):
        raise BadItemId(
            # a valid id is at most 128 characters: a longer one is shown cut, not copied into every message
            f"item id {repr(item_id)[:140]} must match ^[A-Za-z0-9][A-Za-z0-9._-]{{0,127}}$ (it becomes a storage path)"
        )
    return item_id


@dataclass(frozen=True)
class BadLine:
    """A catalog line that cannot become an item; key names it in the ledger."""

    line_no: int
    key: str
    error: ReelgenError


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _text(fields: dict[str, Any], name: str) -> str:
    """A field's text ("" when absent or null); BadCatalogLine for anything else than a string within its
    limit (a version may also be a whole number: feeds often give a Unix time)."""
    value = fields.get(name)
    if value is None:
        return ""
    if name in VERSION_FIELDS and type(value) is int:
        value = str(value)
    if not isinstance(value, str):
        raise BadCatalogLine(f"field {name} must be a string, not {_kind(value)}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadCatalogLine(f"field {name} is not valid Unicode (it holds a lone surrogate)") from None
    limit = FIELD_LIMITS[name]
    if limit is not None and size > limit:
        raise BadCatalogLine(f"field {name} is {size} bytes long, over its limit of {limit}")
    if "\x00" in value:
        raise BadCatalogLine(f"field {name} holds a NUL character")
    if name in URI_FIELDS and not value.isprintable():
        # a URI never needs them, and one that holds them ends up in error messages and logs
        raise BadCatalogLine(f"field {name} holds control characters")
    return value


def parse_line(fields: dict[str, Any], sources: SourceGuard) -> CatalogEntry:
    """A validated entry whose sources passed the job's source policy (relative paths resolve against the
    catalog's folder). Fields other than the known ones are accepted and dropped."""
    text = {name: _text(fields, name) for name in FIELD_LIMITS}
    missing = [name for name in REQUIRED if not text[name].strip()]
    if "item_id" not in missing:
        check_item_id(text["item_id"])
    if missing:
        raise BadCatalogLine(f"missing or empty field(s): {', '.join(missing)}")
    return CatalogEntry(
        item_id=text["item_id"],
        video=sources.vet(text["video"]),
        image=sources.vet(text["image"]),
        title=text["title"],
        description=text["description"],
        version=text["version"] or text["updated_at"],
    )


def line_key(line_no: int) -> str:
    """The ledger key of a catalog line that has no usable item id (':' never occurs in item ids)."""
    return f"line:{line_no}"


def _line_key(line_no: int, fields: dict[str, Any] | None) -> str:
    candidate = fields.get("item_id") if fields else None
    if isinstance(candidate, str) and ITEM_ID.fullmatch(candidate):
        return candidate
    return line_key(line_no)


def physical_lines(handle: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(line number, the line without its end) for each line of a file opened in binary mode; None for a line
    over MAX_LINE_BYTES, which is read past in chunks of that size, never held whole."""
    line_no = 0
    while chunk := handle.readline(MAX_LINE_BYTES + 2):
        line_no += 1
        ended = chunk.endswith(b"\n")
        # a chunk that is neither ended nor short is the start of a longer line (the file goes on)
        whole = ended or len(chunk) < MAX_LINE_BYTES + 2
        line = (chunk[:-1] if ended else chunk).removesuffix(b"\r")
        if not whole:
            while (rest := handle.readline(MAX_LINE_BYTES + 2)) and not rest.endswith(b"\n"):
                pass
        yield line_no, line if whole and len(line) <= MAX_LINE_BYTES else None


def _decode(line: bytes | None) -> str:
    if line is None:
        raise BadCatalogLine(f"longer than {MAX_LINE_BYTES} bytes")
    if b"\x00" in line:
        raise BadCatalogLine("holds a NUL byte")
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadCatalogLine(f"not UTF-8 (byte {exc.start + 1} of the line)") from None


def _json_records(lines: Iterator[tuple[int, bytes | None]]) -> Iterator[tuple[int, Fields | BadCatalogLine]]:
    for line_no, line in lines:
        if line_no == 1 and line is not None:
            line = line.removeprefix(codecs.BOM_UTF8)
        if line is not None and not line.strip():
            continue
        try:
            value = json.loads(_decode(line))
        except BadCatalogLine as exc:
            yield line_no, exc
            continue
        except json.JSONDecodeError as exc:
            yield line_no, BadCatalogLine(f"invalid JSON: {exc.msg} at column {exc.colno}")
            continue
        except RecursionError:
            yield line_no, BadCatalogLine("invalid JSON: nested too deeply")
            continue
        except ValueError:
            # json reads an integer past sys.get_int_max_str_digits() into this, not a JSONDecodeError
            yield line_no, BadCatalogLine("invalid JSON: a number with too many digits")
            continue
        if not isinstance(value, dict):
            yield line_no, BadCatalogLine("a catalog line must be a JSON object")
            continue
        yield line_no, value


class _CsvLines:
    """What the csv module reads: decoded lines, each record (which quoting may spread over several lines) at most
    MAX_LINE_BYTES; a line that cannot be read raises BadCatalogLine through the csv reader, after the rest of
    its record has been read past."""

    def __init__(self, lines: Iterator[tuple[int, bytes | None]]) -> None:
        self._lines = lines
        self.line_no = 0
        self.record_bytes = 0
        self.quotes = 0

    def start_record(self) -> int:
        """The line the next record starts on."""
        self.record_bytes = self.quotes = 0
        return self.line_no + 1

    def __iter__(self) -> _CsvLines:
        return self

    def __next__(self) -> str:
        self.line_no, line = next(self._lines)
        if line is not None:
            self.quotes += line.count(b'"')
            self.record_bytes += len(line) + 1
        try:
            text = _decode(line)
            if self.record_bytes > MAX_LINE_BYTES:
                raise BadCatalogLine(f"a record longer than {MAX_LINE_BYTES} bytes")
        except BadCatalogLine:
            self._skip_record()
            raise
        return (text.removeprefix("\ufeff") if self.line_no == 1 else text) + "\n"

    def _skip_record(self) -> None:
        # While an odd number of quotes is open, the line ends inside a quoted field and the record goes on: the
        # next record starts where the csv module would start it, not in the middle of this one. (A line too long
        # to count ends the skip.)
        while self.quotes % 2:
            self.line_no, line = next(self._lines, (self.line_no, None))
            if line is None:
                return
            self.quotes += line.count(b'"')


def _csv_records(lines: Iterator[tuple[int, bytes | None]]) -> Iterator[tuple[int, Fields | BadCatalogLine]]:
    source = _CsvLines(lines)
    header: list[str] | None = None
    while True:
        start = source.start_record()
        try:
            # a fresh reader per record: one that raised mid-record would carry the broken record's state over
            row = next(csv.reader(source), None)
        except (BadCatalogLine, csv.Error) as exc:
            problem = exc if isinstance(exc, BadCatalogLine) else BadCatalogLine(f"invalid CSV: {exc}")
            if header is None:
                raise CatalogError(f"the catalog's header (line {start}) cannot be read: {problem}") from None
            yield start, problem
            continue
        if row is None:
            return
        if not row:
            continue  # a blank line
        if header is None:
            header = row
            continue
        # a short row lacks its last fields; cells past the header's are dropped with the other unknown fields
        yield start, dict(zip(header, row, strict=False))


class UnknownFields:
    """Warns once per process about each field of a catalog that the reader does not know (and drops), about
    MAX_FIELD_WARNINGS of them per catalog at most."""

    _warned: ClassVar[dict[str, set[str]]] = {}

    def __init__(self, catalog: str) -> None:
        self.catalog = catalog
        self.names = self._warned.setdefault(catalog, set())

    def check(self, fields: Fields) -> None:
        if len(self.names) >= MAX_FIELD_WARNINGS:
            return
        for name in fields:
            if name in FIELD_LIMITS or name in self.names:
                continue
            self.names.add(name)
            suggestion = nearest(name, FIELD_LIMITS)
            log.warning(
                "catalog %s: field %r is not a catalog field and is ignored%s",
                printable(self.catalog),
                shown(name),
                did_you_mean(repr(suggestion) if suggestion else None),
            )
            if len(self.names) >= MAX_FIELD_WARNINGS:
                log.warning("catalog %s: further unknown fields are not listed", printable(self.catalog))
                return


def read_catalog(
    path: Path, policy: SourcePolicy, *, source: str | None = None
) -> Iterator[tuple[int, CatalogEntry | BadLine]]:
    """Stream (line number, entry or bad line) from a local JSONL or CSV catalog, never loading it whole nor
    any line past MAX_LINE_BYTES; whatever a line holds, it fails alone (CatalogError only for a CSV catalog
    whose header cannot be read).

    `source` is the URI of a catalog that was downloaded to `path`: its name tells CSV from JSONL (the copy's
    does not), and it has no folder on this node, so its local sources must lie in the policy's roots.
    """
    if not path.is_file():
        raise CatalogError(f"catalog {path} does not exist or is not a file")
    guard = SourceGuard(policy, path.parent.resolve() if source is None else None)
    is_csv = (path.name if source is None else urlparse(source).path).lower().endswith(".csv")
    unknown = UnknownFields(source or str(path))
    with open(path, "rb") as handle:
        lines = physical_lines(handle)
        for line_no, fields in _csv_records(lines) if is_csv else _json_records(lines):
            if isinstance(fields, BadCatalogLine):
                yield (
                    line_no,
                    BadLine(line_no, line_key(line_no), BadCatalogLine(f"line {line_no}: {fields}")),
                )
                continue
            unknown.check(fields)
            record: CatalogEntry | BadLine
            try:
                record = parse_line(fields, guard)
            except ReelgenError as exc:
                record = BadLine(line_no, _line_key(line_no, fields), type(exc)(f"line {line_no}: {exc}"))
            except ValueError as exc:
                # what a parser of URIs or paths raises on a malformed one (urlparse: "Invalid IPv6 URL")
                error = BadCatalogLine(f"line {line_no}: a malformed URI ({exc})")
                record = BadLine(line_no, _line_key(line_no, fields), error)
            yield line_no, record
