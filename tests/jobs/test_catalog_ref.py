"""A catalog reference is parsed once, where it enters, into one value: a local catalog's file is checked there,
and the pre-flight and registration that follow take the value without parsing the text again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import redis

from core.errors import CatalogError, ForbiddenSource
from core.settings import load_settings
from jobs.intake import catalog_ref, preflight
from jobs.intake.catalog_ref import CatalogRef
from jobs.ledger import JobKind, Ledger
from jobs.schedule import create_nightly
from storage.uri import Scheme, parse_uri


def _catalog(folder: Path) -> Path:
    path = folder / "catalog.jsonl"
    path.write_text(json.dumps({"item_id": "a", "video": "v.mp4", "image": "i.png", "title": "t"}) + "\n")
    return path


def test_a_local_catalog_is_its_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _catalog(tmp_path)
    monkeypatch.chdir(tmp_path)
    ref = CatalogRef.parse("catalog.jsonl")
    assert ref.path == tmp_path / "catalog.jsonl"
    # what a job record keeps: a path a dispatcher started elsewhere opens too
    assert str(ref) == str(tmp_path / "catalog.jsonl")
    assert CatalogRef.parse(f"file://{tmp_path}/catalog.jsonl").path == ref.path


def test_a_remote_catalog_keeps_its_uri_as_given() -> None:
    ref = CatalogRef.parse("s3://bucket/catalogs/products.jsonl")
    assert ref.path is None and ref.uri.scheme is Scheme.S3
    assert str(ref) == "s3://bucket/catalogs/products.jsonl"
    assert str(CatalogRef.parse("https://example.com/c.jsonl?sig=x")) == "https://example.com/c.jsonl?sig=x"


def test_a_missing_folder_or_unreadable_local_catalog_fails_when_parsed(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="does not exist or is not a file"):
        CatalogRef.parse(str(tmp_path / "absent.jsonl"))
    with pytest.raises(CatalogError, match="does not exist or is not a file"):
        CatalogRef.parse(str(tmp_path))
    locked = _catalog(tmp_path)
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as a user that reads any file")
        with pytest.raises(CatalogError, match="cannot be read"):
            CatalogRef.parse(str(locked))
    finally:
        locked.chmod(0o600)


def test_a_reference_of_another_scheme_is_refused() -> None:
    with pytest.raises(ForbiddenSource, match="not supported"):
        CatalogRef.parse("ftp://example.com/c.jsonl")
    with pytest.raises(ForbiddenSource, match="empty"):
        CatalogRef.parse(" ")


def test_the_pre_flight_takes_the_value_and_parses_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = str(_catalog(tmp_path))
    parsed: list[str] = []
    real = parse_uri

    def counting(value: str, *args: Any) -> Any:
        parsed.append(value)
        return real(value, *args)

    monkeypatch.setattr(catalog_ref, "parse_uri", counting)
    monkeypatch.setattr(preflight, "parse_uri", counting)
    monkeypatch.setenv("REELGEN_OUT", str(tmp_path / "out"))
    ref = CatalogRef.parse(text)
    preflight.check_job(load_settings(), ref, JobKind.BACKFILL.value)
    # the catalog's text once; the output folder's own reference is the store check's
    assert parsed.count(text) == 1
    assert parsed == [text, str(tmp_path / "out")]


def test_a_second_nightly_fire_returns_the_registered_job_though_its_catalog_is_gone(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    catalog = _catalog(tmp_path)
    settings = load_settings(out=str(tmp_path / "out"), nightly_catalog=str(catalog))
    ledger = Ledger(redis_client)
    job, created = create_nightly(ledger, settings, "2026-11-30")
    catalog.unlink()
    again, created_again = create_nightly(ledger, settings, "2026-11-30")
    assert (created, created_again) == (True, False) and again.id == job.id == "nightly-2026-11-30"
    with pytest.raises(CatalogError, match="does not exist"):
        create_nightly(ledger, settings, "2026-12-01")
