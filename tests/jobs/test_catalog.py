from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.catalog_entry import CatalogEntry
from core.errors import BadCatalogLine, BadItemId, CatalogError
from core.settings import SourcePolicy
from jobs.intake.catalog import BadLine, check_item_id, read_catalog

LOCAL = SourcePolicy(allow_local=True)


@pytest.mark.parametrize("good", ["a", "sku-1", "A.b_c-9", "x" * 128])
def test_good_item_ids(good: str) -> None:
    assert check_item_id(good) == good


@pytest.mark.parametrize("bad", ["", "-a", ".hidden", "../x", "a/b", "a b", "x" * 129, "é", 5, None])
def test_bad_item_ids(bad: object) -> None:
    with pytest.raises(BadItemId):
        check_item_id(bad)


def test_jsonl_streams_entries_and_names_bad_lines(tmp_path: Path) -> None:
    catalog = tmp_path / "c.jsonl"
    lines = [
        json.dumps({"item_id": "a", "video": "v/a.mp4", "image": "i/a.png", "title": "A", "version": "3"}),
        "",
        "{broken",
        json.dumps(
            {"item_id": "b", "video": "s3://bucket/b.mp4", "image": "https://x.test/b.png", "title": "B"}
        ),
        json.dumps({"item_id": "c", "video": "v.mp4", "title": "C"}),
        json.dumps(["not", "an", "object"]),
    ]
    catalog.write_text("\n".join(lines) + "\n")
    records = list(read_catalog(catalog, LOCAL))
    assert [n for n, _ in records] == [1, 3, 4, 5, 6]
    first = records[0][1]
    assert isinstance(first, CatalogEntry)
    assert first.video == str(tmp_path / "v" / "a.mp4") and first.version == "3"
    bad_json = records[1][1]
    assert isinstance(bad_json, BadLine) and isinstance(bad_json.error, BadCatalogLine)
    assert bad_json.key == "line:3"
    remote = records[2][1]
    assert isinstance(remote, CatalogEntry) and remote.video == "s3://bucket/b.mp4"
    missing = records[3][1]
    assert isinstance(missing, BadLine) and missing.key == "c" and "image" in str(missing.error)
    assert isinstance(records[4][1], BadLine)


def test_csv_catalog(tmp_path: Path) -> None:
    catalog = tmp_path / "c.csv"
    catalog.write_text("item_id,video,image,title,description\nx1,a.mp4,a.png,Title,Some words\n")
    [(line_no, entry)] = list(read_catalog(catalog, LOCAL))
    assert line_no == 2 and isinstance(entry, CatalogEntry) and entry.description == "Some words"


def test_missing_catalog_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError):
        list(read_catalog(tmp_path / "nope.jsonl", LOCAL))


def test_relative_paths_become_real_paths_even_from_a_relative_catalog_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cat").mkdir()
    line = {"item_id": "a", "video": "videos/a.mp4", "image": "img/../a.png", "title": "t"}
    (tmp_path / "cat" / "catalog.jsonl").write_text(json.dumps(line) + "\n")
    [(_, entry)] = list(read_catalog(Path("cat/catalog.jsonl"), LOCAL))
    assert isinstance(entry, CatalogEntry)
    # absolute and resolved ('..' and links followed): the path the source policy checked
    assert entry.video == str(tmp_path.resolve() / "cat" / "videos" / "a.mp4")
    assert entry.image == str(tmp_path.resolve() / "cat" / "a.png")
