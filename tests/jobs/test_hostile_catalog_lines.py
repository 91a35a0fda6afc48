"""Hostile catalog lines, against a real Redis and real processes.

Every line either becomes an entry or fails alone as BadCatalogLine with its line number (the reader holds no
more than a bounded chunk of any line); a job whose serving raises is tried again and then failed with its
cause while the dispatcher goes on with the other jobs; `reelgen run` reports such lines instead of dying; and
a stage message names its item instead of carrying the entry, so its bytes in Redis do not grow with it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from PIL import Image

from bench.backfill import decode, queue_keys
from core.catalog_entry import CatalogEntry
from core.errors import BadCatalogLine, CatalogError
from core.settings import SourcePolicy, load_settings
from jobs.broker.celery_app import app, configure
from jobs.dispatch.dispatcher import Dispatcher
from jobs.intake.catalog import FIELD_LIMITS, MAX_LINE_BYTES, BadLine, read_catalog
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.submit import submit_catalog_job
from jobs.ledger import JobKind, JobState, Ledger
from jobs.local.redis_server import EmbeddedRedis
from tests.support.dispatch import Consumer, drive, make_settings, write_catalog
from tests.support.media import make_code_video
from workers import tasks

REELGEN = str(Path(sys.executable).with_name("reelgen"))
POLICY = SourcePolicy(allow_local=True)
SOURCES = {"video": "s3://media/v.mp4", "image": "s3://media/i.png", "title": "a product"}


def line(item_id: object, **fields: Any) -> bytes:
    return json.dumps({"item_id": item_id, **SOURCES, **fields}).encode()


# (what, the line, a phrase its error must hold)
HOSTILE: list[tuple[str, bytes, str]] = [
    ("50,000 nested brackets", b"[" * 50_000, "nested too deeply"),
    ("a 5,000-digit integer", b'{"item_id": "n", "price": ' + b"9" * 5000 + b"}", "too many digits"),
    ("bytes that are not UTF-8", line("u")[:-1] + b', "title": "\xff\xfe"}', "not UTF-8"),
    ("a NUL byte", b'{"item_id": "z\x00", "video": "v"}', "NUL"),
    ("an escaped NUL in the title", line("e", title="a\u0000b"), "title holds a NUL"),
    ("a number for the title", line("num", title=5), "title must be a string, not a number"),
    ("a list for the video", line("lst", video=["s3://a/b.mp4"]), "video must be a string, not a list"),
    ("an object for the description", line("obj", description={"a": 1}), "not an object"),
    ("a number for the item id", line(7), "item_id must be a string, not a number"),
    ("true for the version", line("tv", version=True), "version must be a string, not true/false"),
    ("a URI over 4 KiB", line("lu", video="s3://media/" + "v" * 4096), "over its limit of 4096"),
    ("a title over 1 KiB", line("lt", title="t" * 1025), "over its limit of 1024"),
    ("a description over 16 KiB", line("ld", description="d" * (16 * 1024 + 1)), "limit of 16384"),
    ("a lone surrogate", line("ls", title="\ud800"), "lone surrogate"),
    ("an ANSI sequence in a URI", line("cc", image="s3://media/\x1b[2K\rFAKE.png"), "control characters"),
    ("a malformed URL", line("mu", video="http://[oops/v.mp4"), "malformed URI"),
    ("a line over 64 KiB", line("big", pad="p" * MAX_LINE_BYTES), f"longer than {MAX_LINE_BYTES} bytes"),
]


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize(("what", "hostile", "phrase"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_line_fails_alone_with_its_line_number(
    tmp_path: Path, what: str, hostile: bytes, phrase: str
) -> None:
    catalog = write_lines(tmp_path / "c.jsonl", [line("before"), hostile, line("after")])
    records = list(read_catalog(catalog, POLICY))
    assert [n for n, _ in records] == [1, 2, 3]
    bad = records[1][1]
    assert isinstance(bad, BadLine) and type(bad.error) is BadCatalogLine, (what, bad)
    assert str(bad.error).startswith("line 2: ") and phrase in str(bad.error), (what, str(bad.error)[:300])
    assert [r.item_id for _, r in records if isinstance(r, CatalogEntry)] == ["before", "after"]


def test_limits_are_bytes_and_a_value_at_its_limit_passes(tmp_path: Path) -> None:
    at_limit = line("fits", video="s3://m/" + "v" * (4096 - 7), title="é" * 512, description="d" * 16384)
    padded = json.loads(line("long-line"))
    padded["pad"] = ""
    padded["pad"] = "p" * (MAX_LINE_BYTES - len(json.dumps(padded).encode()))
    exact = json.dumps(padded).encode()
    assert len(exact) == MAX_LINE_BYTES
    over = line("over", title="é" * 513)  # 513 characters, 1026 bytes
    catalog = write_lines(tmp_path / "c.jsonl", [at_limit, exact, over])
    records = dict(read_catalog(catalog, POLICY))
    assert isinstance(records[1], CatalogEntry) and len(records[1].title.encode()) == FIELD_LIMITS["title"]
    assert isinstance(records[2], CatalogEntry) and records[2].item_id == "long-line"
    assert isinstance(records[3], BadLine) and "1026 bytes" in str(records[3].error)


def test_unknown_fields_are_accepted_and_carried_nowhere(tmp_path: Path) -> None:
    extra = {"color": "red", "specs": {"nested": [1, 2, {"deep": "x" * 1000}]}, "price": 12.5}
    catalog = write_lines(tmp_path / "c.jsonl", [line("known", updated_at=1700000000, **extra)])
    [(_, entry)] = list(read_catalog(catalog, POLICY))
    assert isinstance(entry, CatalogEntry)
    # a Unix time is a common version; it is kept as text like any other
    assert entry.version == "1700000000"
    assert set(entry.as_dict()) == {"item_id", "video", "image", "title", "description", "version"}


def test_a_line_without_an_end_is_read_in_bounded_chunks(tmp_path: Path) -> None:
    catalog = tmp_path / "c.jsonl"
    with open(catalog, "wb") as handle:
        handle.write(b'{"item_id": "huge", "title": "')
        for _ in range(64):
            handle.write(b"x" * 2**20)  # 64 MiB in one line
        handle.write(b'"}\n' + line("next") + b"\n")
    tracemalloc.start()
    try:
        records = list(read_catalog(catalog, POLICY))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"the reader held {peak} bytes at once (the line is 64 MiB)"
    assert isinstance(records[0][1], BadLine) and "longer than" in str(records[0][1].error)
    assert records[1][0] == 2 and isinstance(records[1][1], CatalogEntry)


def test_csv_records_are_bounded_and_fail_alone(tmp_path: Path) -> None:
    rows = [
        b"\xef\xbb\xbfitem_id,video,image,title,description",
        b"a,s3://m/a.mp4,s3://m/a.png,A,plain",
        b'b,s3://m/b.mp4,s3://m/b.png,"a title over',
        b'two lines",x',
        b"c,s3://m/c.mp4,s3://m/c.png,C\x00,x",
        b"d,s3://m/d.mp4,s3://m/d.png,\xff,x",
        b"e,s3://m/e.mp4,s3://m/e.png,E," + b"x" * MAX_LINE_BYTES,
        b'f,s3://m/f.mp4,s3://m/f.png,"F' + b"\n" * 10 + (b"y" * 8000 + b"\n") * 9 + b'",x',
        b"g,s3://m/g.mp4,s3://m/g.png,G,x,a cell past the header's",
    ]
    catalog = write_lines(tmp_path / "c.csv", rows)
    records = list(read_catalog(catalog, POLICY))
    entries = {r.item_id: n for n, r in records if isinstance(r, CatalogEntry)}
    assert entries["a"] == 2 and entries["b"] == 3 and entries["g"] == 28
    bad = {n: str(r.error) for n, r in records if isinstance(r, BadLine)}
    assert "NUL" in bad[5] and "not UTF-8" in bad[6] and "longer than" in bad[7]
    assert "a record longer than" in bad[8]
    header_broken = write_lines(tmp_path / "h.csv", [b"item_id,vid\xffeo", b"a,b,c"])
    with pytest.raises(CatalogError, match="header"):
        list(read_catalog(header_broken, POLICY))


def test_the_dispatcher_serves_a_hostile_catalog_to_the_end(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis
) -> None:
    ledger = Ledger(redis_client)
    settings = make_settings(tmp_path, redis_server)
    lines = [line("good-1"), *(h for _, h, _ in HOSTILE), line("good-2"), line("good-3")]
    catalog = write_lines(tmp_path / "c.jsonl", lines)
    job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    dispatcher = Dispatcher(ledger, app, settings)
    with Consumer(redis_server.url, tmp_path / "stop"):
        drive(dispatcher, lambda: ledger.job(job.id).state.finished)
    final = ledger.job(job.id)
    assert final.state is JobState.COMPLETED and final.done == 3 and final.failed == len(HOSTILE)
    failures = ledger.failures(job.id)
    assert {f.error for f in failures} == {"BadCatalogLine"}
    assert sorted(int(f.message.split(":")[0].removeprefix("line ")) for f in failures) == list(
        range(2, 2 + len(HOSTILE))
    )


def test_a_job_that_cannot_be_served_fails_with_its_cause_and_the_others_go_on(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis
) -> None:
    ledger = Ledger(redis_client)
    settings = make_settings(tmp_path, redis_server, dispatch_attempts=3)
    broken_catalog = write_catalog(tmp_path / "broken.jsonl", ["b-1", "b-2"])
    broken = submit_catalog_job(
        ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(broken_catalog)), priority=0
    )
    healthy = submit_catalog_job(
        ledger,
        settings,
        JobKind.BACKFILL,
        CatalogRef.parse(str(write_catalog(tmp_path / "ok.jsonl", ["h-1", "h-2"]))),
        priority=1,
    )
    broken_catalog.unlink()  # gone after it was registered: reading it raises, as a bug anywhere in serving would
    dispatcher = Dispatcher(ledger, app, settings)
    dispatcher.tick()
    first = ledger.job(broken.id)
    # one failure is not the end: the job waits and is tried again from its cursor
    assert first.state is JobState.RUNNING and first.feed_errors == 1 and "CatalogError" in first.error
    with Consumer(redis_server.url, tmp_path / "stop"):
        drive(
            dispatcher, lambda: ledger.job(broken.id).state.finished and ledger.job(healthy.id).state.finished
        )
    failed, done = ledger.job(broken.id), ledger.job(healthy.id)
    assert failed.state is JobState.FAILED and failed.feed_errors == 3
    assert failed.error.startswith("CatalogError: catalog ") and "does not exist" in failed.error
    assert done.state is JobState.COMPLETED and done.done == 2
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    shown = subprocess.run(
        [REELGEN, "status", broken.id], env={**env, "REELGEN_REDIS_URL": redis_server.url},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert f"{broken.id}  backfill  failed" in shown.stdout
    assert "the job failed: CatalogError: catalog " in shown.stdout


def test_a_job_served_again_after_a_failure_starts_its_count_over(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis
) -> None:
    ledger = Ledger(redis_client)
    settings = make_settings(tmp_path, redis_server, dispatch_attempts=2)
    catalog = write_catalog(tmp_path / "c.jsonl", ["x-1", "x-2"])
    kept = catalog.read_bytes()
    job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    catalog.unlink()
    dispatcher = Dispatcher(ledger, app, settings)
    dispatcher.tick()
    assert ledger.job(job.id).feed_errors == 1
    catalog.write_bytes(kept)
    with Consumer(redis_server.url, tmp_path / "stop"):
        drive(dispatcher, lambda: ledger.job(job.id).state.finished)
    final = ledger.job(job.id)
    assert final.state is JobState.COMPLETED and final.done == 2
    assert final.feed_errors == 0 and final.error == ""


def test_reelgen_run_reports_hostile_lines_instead_of_dying(tmp_path: Path) -> None:
    catalog = write_lines(tmp_path / "c.jsonl", [h for _, h, _ in HOSTILE])
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    result = subprocess.run(
        [REELGEN, "run", str(catalog), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"),
         "--workers", "1"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert f"0 done, {len(HOSTILE)} failed" in result.stdout
    # each line by its number (under its item id when it names a valid one)
    reported = re.findall(r"^  FAILED \S+: BadCatalogLine: line (\d+): ", result.stdout, re.MULTILINE)
    assert sorted(map(int, reported)) == list(range(1, len(HOSTILE) + 1)), result.stdout


def test_reelgen_run_ends_a_job_it_cannot_read_with_the_cause_and_exit_1(tmp_path: Path) -> None:
    catalog = write_lines(tmp_path / "c.csv", [b"item_id,vid\xffeo,image,title", b"a,v.mp4,i.png,t"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    result = subprocess.run(
        [REELGEN, "run", str(catalog), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"),
         "--workers", "1"],
        env={**env, "REELGEN_DISPATCH_POLL_S": "0.05"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert "0 done, 0 failed" in result.stdout
    assert "  the job failed: CatalogError: the catalog's header (line 1) cannot be read: " in result.stdout


def _stage_messages(client: redis.Redis) -> dict[str, list[tuple[bytes, str]]]:
    """The messages waiting in the broker as stored and their arguments as JSON, by the item they are for."""
    by_item: dict[str, list[tuple[bytes, str]]] = {}
    for key in queue_keys():
        for raw in cast(list[bytes], client.lrange(key, 0, -1)):
            _, args = decode(raw)
            by_item.setdefault(str(args[0]["item_id"]), []).append((raw, json.dumps(args)))
    return by_item


def test_stage_messages_carry_ids_and_their_bytes_do_not_grow_with_the_entry(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path.resolve()
    make_code_video(folder / "v.mp4", seconds=20, fps=5, size=(320, 180), audio=False, keyint=5)
    image = folder / "i.png"
    Image.new("RGB", (64, 64), (200, 60, 60)).save(image)
    settings = load_settings(
        redis_url=redis_server.url, state_dir=str(folder / "state"), out=str(folder / "out"),
        task_retries=0, segment_s=4.0,
    )  # fmt: skip
    configure(app, settings)
    monkeypatch.setattr(tasks, "_context", tasks.WorkerContext.create(settings))
    ledger = Ledger(redis_client)
    small = {"item_id": "item-s", "video": str(folder / "v.mp4"), "image": str(image), "title": "t"}
    # the largest entry a catalog line may carry
    large = {**small, "item_id": "item-l", "title": "T" * 1024, "description": "D" * 16384}
    catalog = write_lines(folder / "c.jsonl", [json.dumps(small).encode(), json.dumps(large).encode()])
    job = submit_catalog_job(ledger, settings, JobKind.RUN, CatalogRef.parse(str(catalog)))
    for _, entry in read_catalog(catalog, POLICY):
        assert isinstance(entry, CatalogEntry)
        assert ledger.admit(job.id, entry.item_id, entry.as_dict())
        tasks.prepare.apply(args=(job.id, entry.item_id, 1))
    assert ledger.failures(job.id) == []
    messages = _stage_messages(redis_client)
    per_item = {item: sum(len(raw) for raw, _ in sent) for item, sent in messages.items()}
    assert len(messages["item-s"]) == len(messages["item-l"]) >= 3  # one per 4-second segment
    # the same bytes whatever the entry holds (a task id and a timestamp may differ by a few characters)
    assert abs(per_item["item-l"] - per_item["item-s"]) <= 16 * len(messages["item-l"]), per_item
    assert all("TTTT" not in args and "DDDD" not in args for _, args in messages["item-l"])
