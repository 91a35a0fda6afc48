"""Dispatcher throughput and Redis footprint at catalog scale.

The dispatcher alone (stream the catalog, check done-ness, admit and publish in pipelines) runs against an
ack-only consumer in another process that takes each message and settles its item at once, on a fresh embedded
Redis per catalog size so that Redis's own `used_memory_peak` is that run's peak. Then the end-to-end rate
through real Celery worker processes and a no-op pipeline (sources that do not exist: every item goes through
prepare's ledger bookkeeping and fails at once, which is the orchestration cost without media work).

    .venv/bin/python bench/backfill.py            # 100k lines; redis_peak_mb_1m is null
    .venv/bin/python bench/backfill.py --slow     # also 1M lines (a few minutes)

Last line: {"items_per_s", "redis_peak_mb_100k", "redis_peak_mb_1m", ...}. Targets: items_per_s >= 2000 and
the 1M peak no more than 10% above the 100k peak (the in-flight bound, not the catalog, sizes Redis).
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.settings import Settings, load_settings  # noqa: E402
from jobs.broker.celery_app import app, configure  # noqa: E402
from jobs.broker.queues import QUEUE  # noqa: E402
from jobs.dispatch.dispatcher import Dispatcher  # noqa: E402
from jobs.intake.catalog_ref import CatalogRef  # noqa: E402
from jobs.intake.submit import submit_catalog_job  # noqa: E402
from jobs.ledger import JobKind, Ledger  # noqa: E402
from jobs.local.redis_server import EmbeddedRedis  # noqa: E402

MiB = 2**20


def queue_keys(queue: str = QUEUE) -> list[str]:
    """The Redis lists of a queue, highest priority first (kombu: priority 0 is the bare name)."""
    return [queue] + [f"{queue}:{p}" for p in range(1, 10)]


def decode(raw: bytes) -> tuple[str, list[Any]]:
    """(task name, args) of a kombu/Celery protocol-2 message as stored in the Redis list."""
    message = json.loads(raw)
    body = message["body"]
    if message.get("properties", {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    args = json.loads(body)[0]
    return str(message["headers"]["task"]), list(args)


def ack_consume(redis_url: str, stop_file: str, lease_s: float = 3600) -> None:
    """Take every prepare message and settle its item at once (start, then finish), in pipelines."""
    client = redis.Redis.from_url(redis_url)
    ledger = Ledger(client)
    keys = queue_keys()
    while not os.path.exists(stop_file):
        got = 0
        for key in keys:
            # a few messages per pop, as Celery workers take them one by one: a big pop's reply would sit in
            # Redis's output buffer and count in the peak that this benchmark measures for the dispatcher
            raws: Any = client.rpop(key, 32)
            if not raws:
                continue
            got += len(raws)
            with client.pipeline(transaction=False) as pipe:
                for raw in raws:
                    _name, (job_id, item_id, token) = decode(raw)
                    ledger.start(job_id, item_id, lease_s, token)
                    ledger.queue_finish(pipe, job_id, item_id)
                pipe.execute()
            break
        if not got:
            time.sleep(0.002)


def write_catalog(path: Path, lines: int) -> Path:
    with open(path, "w") as handle:
        for k in range(lines):
            handle.write(
                json.dumps(
                    {
                        "item_id": f"sku-{k:08d}",
                        "video": f"/nonexistent/videos/sku-{k:08d}.mp4",
                        "image": f"/nonexistent/images/sku-{k:08d}.jpg",
                        "title": f"product {k}",
                        "version": "1",
                    }
                )
                + "\n"
            )
    return path


def settings_for(work: Path, redis_url: str, **extra: Any) -> Settings:
    extra.setdefault("out", str(work / "out"))
    return load_settings(
        redis_url=redis_url,
        state_dir=str(work / "state"),
        max_in_flight=256,
        max_in_flight_total=256,
        dispatch_page=1000,
        dispatch_poll_s=0.01,
        # the catalog's sources are local files that do not exist (each probe fails at once): a backfill reads
        # local sources only where the operator allows them, and each one then costs the dispatcher a realpath
        allow_local_sources=True,
        local_source_roots="/nonexistent",
        **extra,
    )


def dispatch_only(lines: int, work: Path) -> dict[str, float]:
    catalog = write_catalog(work / f"catalog-{lines}.jsonl", lines)
    with EmbeddedRedis(work / f"redis-{lines}") as server:
        # an output root of its own: an earlier size's results index would mark these ids done
        settings = settings_for(work, server.url, out=str(work / f"out-{lines}"))
        configure(app, settings)
        client = redis.Redis.from_url(server.url)
        ledger = Ledger(client)
        base_mb = int(client.info("memory")["used_memory"]) / MiB
        stop_file = str(work / f"stop-{lines}")
        consumer = multiprocessing.get_context("spawn").Process(
            target=ack_consume, args=(server.url, stop_file), daemon=True
        )
        consumer.start()
        job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
        started = time.perf_counter()
        dispatcher = Dispatcher(ledger, app, settings, only=job.id)
        state = {"finished": False}

        def check() -> None:
            state["finished"] = ledger.job(job.id).state.finished

        dispatcher.serve(stop=lambda: state["finished"], on_tick=check)
        elapsed = time.perf_counter() - started
        Path(stop_file).touch()
        consumer.join(10)
        final = ledger.job(job.id)
        info = client.info("memory")
        assert final.done == lines, f"{final.done} of {lines} done, {final.skipped} skipped"
        client.close()
    return {
        "items_per_s": lines / elapsed,
        "redis_peak_mb": int(info["used_memory_peak"]) / MiB,
        "redis_base_mb": base_mb,
        "seconds": elapsed,
    }


def end_to_end(lines: int, work: Path, workers: int) -> float:
    """Items per second through real Celery worker processes with a no-op pipeline (every probe fails fast)."""
    from jobs.local.runner import worker_env
    from jobs.local.worker_pool import WorkerPool

    catalog = write_catalog(work / f"e2e-{lines}.jsonl", lines)
    with EmbeddedRedis(work / "redis-e2e") as server:
        settings = settings_for(work, server.url, workers=workers, task_retries=0, out=str(work / "out-e2e"))
        configure(app, settings)
        ledger = Ledger(redis.Redis.from_url(server.url))
        env = worker_env(settings, server.url)
        with WorkerPool(concurrency=workers, env=env, log_file=work / "logs" / "worker.log") as pool:
            time.sleep(3)  # the worker's start-up is not part of the rate
            job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
            started = time.perf_counter()
            dispatcher = Dispatcher(ledger, app, settings, only=job.id)
            state = {"finished": False}

            def check() -> None:
                pool.ensure_running()
                state["finished"] = ledger.job(job.id).state.finished

            dispatcher.serve(stop=lambda: state["finished"], on_tick=check)
            elapsed = time.perf_counter() - started
        final = ledger.job(job.id)
        assert final.done + final.failed == lines, final
    return lines / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--slow", action="store_true", help="also run the 1M-line catalog")
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--e2e-items", type=int, default=1000)
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0))
    print(
        f"machine: {cpus} CPUs, {platform.processor() or platform.machine()}, Python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-backfill-") as tmp:
        work = Path(tmp)
        small = dispatch_only(args.lines, work)
        print(
            f"dispatcher, {args.lines} lines: {small['items_per_s']:.0f} items/s in {small['seconds']:.1f} s; "
            f"redis peak {small['redis_peak_mb']:.2f} MB (empty: {small['redis_base_mb']:.2f} MB)"
        )
        large: dict[str, float] | None = None
        if args.slow:
            large = dispatch_only(1_000_000, work)
            print(
                f"dispatcher, 1000000 lines: {large['items_per_s']:.0f} items/s in {large['seconds']:.1f} s; "
                f"redis peak {large['redis_peak_mb']:.2f} MB "
                f"({100 * (large['redis_peak_mb'] / small['redis_peak_mb'] - 1):+.1f}% vs {args.lines})"
            )
        e2e = end_to_end(args.e2e_items, work, workers=max(1, cpus))
        print(f"end to end, real Celery workers ({max(1, cpus)}), no-op pipeline: {e2e:.0f} items/s")
    print(
        json.dumps(
            {
                "items_per_s": round(small["items_per_s"], 1),
                "redis_peak_mb_100k": round(small["redis_peak_mb"], 3),
                "redis_peak_mb_1m": round(large["redis_peak_mb"], 3) if large else None,
                "items_per_s_1m": round(large["items_per_s"], 1) if large else None,
                "e2e_noop_items_per_s": round(e2e, 1),
                "cpus": cpus,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
