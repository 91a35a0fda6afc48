"""Which sources a catalog may name: local files only inside the catalog's folder or an operator's root, local
files not at all for backfill and nightly jobs unless allowed, s3 buckets from a list, cache names without the
URI's extension. Real files, links and folders throughout; a real Redis where a job is fed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from core.catalog_entry import CatalogEntry
from core.errors import ConfigError, ForbiddenSource, SourceNotFound
from core.settings import Settings, SourcePolicy, load_settings
from jobs.broker.celery_app import app, configure
from jobs.dispatch.feed import JobFeed
from jobs.intake.catalog import BadLine, read_catalog
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.submit import SOURCES_FIELD, source_policy, submit_catalog_job
from jobs.ledger import JobKind, Ledger
from jobs.local.redis_server import EmbeddedRedis
from storage.cache import NodeCache
from storage.fetch import Fetcher
from storage.sources import SourceGuard
from storage.store import open_store

SECRET = b"TOP-SECRET-CONTENTS"
LOCAL = SourcePolicy(allow_local=True)


@pytest.fixture
def catalog_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "catalog"
    (folder / "videos").mkdir(parents=True)
    (folder / "videos" / "a.mp4").write_bytes(b"video")
    (folder / "main.png").write_bytes(b"image")
    return folder


@pytest.fixture
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the catalog's, holding a file nobody should read through a catalog."""
    folder = tmp_path_factory.mktemp("elsewhere")
    (folder / "secret.mp4").write_bytes(SECRET)
    return folder


def writer(data: bytes) -> Callable[[Path], None]:
    def fill(dest: Path) -> None:
        dest.write_bytes(data)

    return fill


def write_catalog(folder: Path, videos: dict[str, str], image: str = "main.png") -> Path:
    catalog = folder / "catalog.jsonl"
    lines = [
        json.dumps({"item_id": item_id, "video": video, "image": image, "title": item_id})
        for item_id, video in videos.items()
    ]
    catalog.write_text("\n".join(lines) + "\n")
    return catalog


def outcomes(
    catalog: Path, policy: SourcePolicy, source: str | None = None
) -> dict[str, CatalogEntry | BadLine]:
    return {
        record.item_id if isinstance(record, CatalogEntry) else record.key: record
        for _, record in read_catalog(catalog, policy, source=source)
    }


def refusal(record: CatalogEntry | BadLine) -> str:
    assert isinstance(record, BadLine), record
    assert isinstance(record.error, ForbiddenSource), record.error
    return str(record.error)


def test_local_sources_outside_the_catalogs_folder_are_refused_item_by_item(
    catalog_dir: Path, elsewhere: Path
) -> None:
    (catalog_dir / "videos" / "notes.txt").symlink_to(elsewhere / "secret.mp4")
    (catalog_dir / "outside").symlink_to(elsewhere, target_is_directory=True)
    (catalog_dir / "videos" / "inner.mp4").symlink_to(catalog_dir / "videos" / "a.mp4")
    secret = elsewhere / "secret.mp4"
    catalog = write_catalog(
        catalog_dir,
        {
            "inside": "videos/a.mp4",
            "inside-absolute": str(catalog_dir / "videos" / "a.mp4"),
            "inside-uri": (catalog_dir / "videos" / "a.mp4").as_uri(),
            "inside-link": "videos/inner.mp4",
            "dot-dot-inside": "videos/../videos/a.mp4",
            "link-file": "videos/notes.txt",
            "link-folder": "outside/secret.mp4",
            "dot-dot": f"../../{elsewhere.name}/secret.mp4",
            "absolute": str(secret),
            "file-uri": secret.as_uri(),
            "file-uri-dot-dot": (catalog_dir / "videos").as_uri() + f"/../../../{elsewhere.name}/secret.mp4",
            "etc": "/etc/passwd",
        },
    )
    records = outcomes(catalog, LOCAL)
    real = str((catalog_dir / "videos" / "a.mp4").resolve())
    for item_id in ("inside", "inside-absolute", "inside-uri", "inside-link", "dot-dot-inside"):
        entry = records[item_id]
        assert isinstance(entry, CatalogEntry), entry
        # the item keeps the real path that was checked: that is the file a worker opens
        assert entry.video == real and entry.image == str((catalog_dir / "main.png").resolve())
    for item_id in ("link-file", "link-folder", "dot-dot", "absolute", "file-uri", "file-uri-dot-dot", "etc"):
        message = refusal(records[item_id])
        assert "REELGEN_LOCAL_SOURCE_ROOTS" in message and "catalog's folder" in message
        assert SECRET.decode() not in message


def test_tilde_is_a_name_in_the_catalogs_folder_never_a_home(
    catalog_dir: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(elsewhere))
    records = outcomes(write_catalog(catalog_dir, {"home": "~/secret.mp4"}), LOCAL)
    entry = records["home"]
    assert isinstance(entry, CatalogEntry)
    assert entry.video == str(catalog_dir.resolve() / "~" / "secret.mp4")
    # and there is no such file there: the home folder's one is never read
    with (
        pytest.raises(SourceNotFound),
        Fetcher(Settings(state_dir=catalog_dir.parent / "state")).local_path(entry.video),
    ):
        pass


def test_an_operators_roots_hold_local_sources_too(
    catalog_dir: Path, elsewhere: Path, tmp_path: Path
) -> None:
    (tmp_path / "via-link").symlink_to(elsewhere, target_is_directory=True)
    catalog = write_catalog(
        catalog_dir, {"shared": str(elsewhere / "secret.mp4"), "relative": "videos/a.mp4"}
    )
    for root in (elsewhere, tmp_path / "via-link"):
        records = outcomes(catalog, SourcePolicy(allow_local=True, local_roots=(root,)))
        shared = records["shared"]
        assert isinstance(shared, CatalogEntry) and shared.video == str((elsewhere / "secret.mp4").resolve())
        assert isinstance(records["relative"], CatalogEntry)  # the catalog's own folder still counts


def test_a_policy_without_local_sources_refuses_even_the_catalogs_own_files(catalog_dir: Path) -> None:
    image = "https://cdn.example/a.png"
    catalog = write_catalog(catalog_dir, {"inside": "videos/a.mp4", "remote": "s3://media/a.mp4"}, image)
    records = outcomes(catalog, SourcePolicy(allow_local=False, local_roots=(catalog_dir,)))
    assert "REELGEN_ALLOW_LOCAL_SOURCES" in refusal(records["inside"])
    remote = records["remote"]
    assert isinstance(remote, CatalogEntry) and (remote.video, remote.image) == ("s3://media/a.mp4", image)


def test_s3_sources_come_from_the_listed_buckets_only(catalog_dir: Path) -> None:
    catalog = write_catalog(catalog_dir, {"listed": "s3://media/a.mp4", "other": "s3://private-bucket/a.mp4"})
    records = outcomes(catalog, SourcePolicy(allow_local=True, buckets=("media",)))
    assert isinstance(records["listed"], CatalogEntry)
    message = refusal(records["other"])
    assert "private-bucket" in message and "REELGEN_SOURCE_BUCKETS" in message
    assert all(isinstance(r, CatalogEntry) for r in outcomes(catalog, LOCAL).values())  # no list: any bucket


def test_a_downloaded_catalog_has_no_folder_and_keeps_its_format(tmp_path: Path, elsewhere: Path) -> None:
    # a catalog fetched into the node cache sits beside other downloads: nothing there is its folder
    cache = NodeCache(tmp_path / "cache", max_bytes=10**6)
    lines = "item_id,video,image,title\nsibling,other-download,main.png,t\nshared,{},{},t\n".format(
        elsewhere / "secret.mp4", elsewhere / "secret.mp4"
    )
    copy = cache.get_or_fetch("s3://catalogs/feed.csv", writer(lines.encode()))
    assert copy.suffix == ""
    policy = SourcePolicy(allow_local=True, local_roots=(elsewhere,))
    records = outcomes(copy, policy, source="s3://catalogs/feed.csv")
    assert "catalog's folder" in refusal(records["sibling"])
    assert isinstance(records["shared"], CatalogEntry)  # read as CSV, from the URI's name


def test_settings_choose_the_policy_by_job_kind_unless_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    default = Settings()
    assert default.source_policy("run").allow_local
    assert (
        not default.source_policy("backfill").allow_local and not default.source_policy("nightly").allow_local
    )
    for value, allowed in (("true", True), ("false", False)):
        monkeypatch.setenv("REELGEN_ALLOW_LOCAL_SOURCES", value)
        settings = load_settings()
        assert [settings.source_policy(k).allow_local for k in ("run", "backfill", "nightly")] == [
            allowed
        ] * 3
    monkeypatch.setenv("REELGEN_LOCAL_SOURCE_ROOTS", f"{tmp_path}/a, {tmp_path}/b")
    monkeypatch.setenv("REELGEN_SOURCE_BUCKETS", "media,more-media")
    policy = load_settings().source_policy("backfill")
    assert policy.local_roots == (tmp_path / "a", tmp_path / "b") and policy.buckets == (
        "media",
        "more-media",
    )
    for name, value in (
        ("REELGEN_LOCAL_SOURCE_ROOTS", "~/media"),
        ("REELGEN_LOCAL_SOURCE_ROOTS", "media"),
        ("REELGEN_SOURCE_BUCKETS", "s3://media"),
    ):
        monkeypatch.setenv(name, value)
        with pytest.raises(ConfigError, match=name.removeprefix("REELGEN_").lower()):
            load_settings()
        monkeypatch.delenv(name)


def test_a_worker_opens_a_local_source_only_by_its_real_path(catalog_dir: Path, tmp_path: Path) -> None:
    fetcher = Fetcher(Settings(state_dir=tmp_path / "state"))
    real = catalog_dir.resolve() / "videos" / "a.mp4"
    with fetcher.local_path(str(real)) as path:
        assert path.read_bytes() == b"video"
    # a folder on the checked path swapped for a link after the check: refused, not followed
    (tmp_path / "swapped").symlink_to(catalog_dir / "videos", target_is_directory=True)
    for text in (
        str(tmp_path / "swapped" / "a.mp4"),
        str(catalog_dir / "videos" / ".." / "videos" / "a.mp4"),
    ):
        with pytest.raises(ForbiddenSource, match="real path"), fetcher.local_path(text):
            pass
    refusing = Fetcher(Settings(state_dir=tmp_path / "state", allow_local_sources=False))
    with pytest.raises(ForbiddenSource, match="REELGEN_ALLOW_LOCAL_SOURCES"), refusing.local_path(str(real)):
        pass


def test_cache_entries_are_named_by_hash_alone(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "cache", max_bytes=10**6)
    for key in ("https://cdn.example/live.m3u8", "https://cdn.example/clip.mp4?sig=1", "s3://media/a.concat"):
        path = cache.get_or_fetch(key, writer(b"bytes"))
        assert path.suffix == "" and len(path.name) == 64 and set(path.name) <= set("0123456789abcdef")
    assert all("." not in p.name for p in (tmp_path / "cache" / "data").iterdir())


# --- through a job: the policy is chosen when the job is submitted and applied where its catalog is read


@pytest.fixture
def ledger(redis_client: redis.Redis) -> Iterator[Ledger]:
    yield Ledger(redis_client)


def test_backfill_and_nightly_jobs_refuse_local_sources_a_run_reads_them(
    tmp_path: Path, catalog_dir: Path, redis_server: EmbeddedRedis, ledger: Ledger
) -> None:
    settings = load_settings(
        redis_url=redis_server.url, state_dir=str(tmp_path / "state"), out=str(tmp_path / "out")
    )
    configure(app, settings)
    catalog = write_catalog(catalog_dir, {"a": "videos/a.mp4"})
    fed = {}
    for kind in (JobKind.RUN, JobKind.BACKFILL, JobKind.NIGHTLY):
        job = submit_catalog_job(ledger, settings, kind, CatalogRef.parse(str(catalog)))
        assert source_policy(job, settings).allow_local is (kind is JobKind.RUN)
        feed = JobFeed(ledger, app, settings, job, open_store(job.out))
        feed.step(capacity=10)
        feed.close()
        fed[kind] = ledger.job(job.id)
    assert (fed[JobKind.RUN].dispatched, fed[JobKind.RUN].failed) == (1, 0)
    for kind in (JobKind.BACKFILL, JobKind.NIGHTLY):
        [failure] = ledger.failures(fed[kind].id)
        assert (failure.item_id, failure.error) == ("a", "ForbiddenSource")
        assert "REELGEN_ALLOW_LOCAL_SOURCES" in failure.message


def test_a_job_keeps_the_policy_it_was_submitted_with(
    tmp_path: Path, catalog_dir: Path, redis_server: EmbeddedRedis, ledger: Ledger
) -> None:
    submitter = load_settings(
        redis_url=redis_server.url,
        out=str(tmp_path / "out"),
        allow_local_sources=True,
        source_buckets="media",
    )
    catalog = write_catalog(catalog_dir, {"a": "videos/a.mp4"})
    job = submit_catalog_job(ledger, submitter, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    dispatcher = load_settings(redis_url=redis_server.url, out=str(tmp_path / "out"))
    assert source_policy(job, dispatcher) == SourcePolicy(allow_local=True, buckets=("media",))
    # a job registered before jobs kept a policy gets its kind's policy under the settings at hand
    ledger.redis.hdel(ledger.job_key(job.id), SOURCES_FIELD)
    assert source_policy(ledger.job(job.id), dispatcher) == dispatcher.source_policy("backfill")


def test_a_catalog_folder_reached_through_a_link_holds_what_the_link_points_at(
    catalog_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "linked").symlink_to(catalog_dir, target_is_directory=True)
    guard = SourceGuard(LOCAL, tmp_path / "linked")
    assert guard.vet("videos/a.mp4") == str(catalog_dir.resolve() / "videos" / "a.mp4")
