"""Bytes a stage message holds in Redis per item, for a catalog entry of a given size.

One item (a long, tiny local video, so that its sampling is cut into many segments) is admitted into a job on a
fresh embedded Redis and its prepare task runs in this process, with no worker to take what it publishes: the
sample_segment messages it sends stay in the broker's lists and are measured there, byte for byte. The item is
admitted straight into the ledger, past the catalog reader, so that an entry the reader would refuse (the 2 MB
description of a hostile line) can be measured too.

    .venv/bin/python bench/stage_messages.py --description-bytes 2000000

Last line: {"messages", "message_bytes", "bytes_per_message", "entry_bytes"}: the messages one item left in the
broker, their bytes there in all and on average, and the bytes of its catalog entry as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.backfill import queue_keys  # noqa: E402
from core.settings import load_settings  # noqa: E402
from jobs.broker.celery_app import app, configure  # noqa: E402
from jobs.intake.catalog_ref import CatalogRef  # noqa: E402
from jobs.intake.submit import submit_catalog_job  # noqa: E402
from jobs.ledger import JobKind, Ledger  # noqa: E402
from jobs.local.redis_server import EmbeddedRedis  # noqa: E402
from workers import tasks  # noqa: E402


def write_video(path: Path, seconds: int, fps: int = 5, size: int = 64) -> None:
    """A small H.264 video with a keyframe every second: every segment boundary finds one."""
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.options = {"g": str(fps), "keyint_min": str(fps)}
        for k in range(seconds * fps):
            picture = np.full((size, size, 3), (k * 7) % 256, np.uint8)
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts, frame.time_base = k, Fraction(1, fps)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def write_image(path: Path) -> None:
    with av.open(str(path), "w", format="image2", options={"update": "1"}) as container:
        stream = container.add_stream("png", rate=1)
        stream.width = stream.height = 64
        stream.pix_fmt = "rgb24"
        container.mux(
            stream.encode(av.VideoFrame.from_ndarray(np.zeros((64, 64, 3), np.uint8), format="rgb24"))
        )
        container.mux(stream.encode(None))


def measure(folder: Path, description_bytes: int, seconds: int) -> dict[str, int]:
    video, image = folder / "v.mp4", folder / "i.png"
    write_video(video, seconds)
    write_image(image)
    entry = {
        "item_id": "sku-1",
        "video": str(video),
        "image": str(image),
        "title": "a product",
        "description": "d" * description_bytes,
        "version": "",
    }
    catalog = folder / "c.jsonl"
    catalog.write_text(json.dumps(entry) + "\n")
    with EmbeddedRedis(folder / "redis") as server:
        settings = load_settings(
            redis_url=server.url, state_dir=str(folder / "state"), out=str(folder / "out"), task_retries=0
        )
        configure(app, settings)
        tasks._context = tasks.WorkerContext.create(settings)
        client = redis.Redis.from_url(server.url)
        ledger = Ledger(client)
        job = submit_catalog_job(ledger, settings, JobKind.RUN, CatalogRef.parse(str(catalog)))
        ledger.admit(job.id, "sku-1", entry)
        tasks.prepare.apply(args=(job.id, "sku-1", 1))
        messages = [raw for key in queue_keys() for raw in client.lrange(key, 0, -1)]
        failures = ledger.failures(job.id)
        if failures:
            raise SystemExit(f"prepare failed: {failures[0].error}: {failures[0].message}")
    total = sum(len(raw) for raw in messages)
    return {
        "messages": len(messages),
        "message_bytes": total,
        "bytes_per_message": total // max(1, len(messages)),
        "entry_bytes": len(json.dumps(entry)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--description-bytes", type=int, default=0)
    parser.add_argument("--seconds", type=int, default=300, help="video length (10 s a segment)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(measure(Path(folder), args.description_bytes, args.seconds)))


if __name__ == "__main__":
    main()
