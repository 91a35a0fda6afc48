"""A dispatcher driven by hand, with a consumer that takes its messages as workers would."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.backfill import ack_consume
from core.settings import Settings, load_settings
from jobs.broker.celery_app import app, configure
from jobs.dispatch.dispatcher import Dispatcher
from jobs.local.redis_server import EmbeddedRedis


def write_catalog(path: Path, ids: list[str], version: str = "1", extra_lines: tuple[str, ...] = ()) -> Path:
    # sources where a backfill's come from (no job here fetches them: the consumer only acks)
    lines = [
        json.dumps(
            {
                "item_id": i,
                "video": f"s3://media/{i}.mp4",
                "image": f"s3://media/{i}.jpg",
                "title": i,
                "version": version,
            }
        )
        for i in ids
    ]
    path.write_text("\n".join([*lines, *extra_lines]) + "\n")
    return path


def make_settings(tmp_path: Path, server: EmbeddedRedis, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "redis_url": server.url,
        "state_dir": str(tmp_path / "state"),
        "out": str(tmp_path / "out"),
        "dispatch_poll_s": 0.01,
        "reaper_interval_s": 3600,
        "index_flush_s": 0.05,
        "max_in_flight": 5,
    }
    values.update(extra)
    settings = load_settings(**values)
    configure(app, settings)
    return settings


class Consumer:
    """The ack-only consumer in a thread: takes every prepare message and settles its item."""

    def __init__(self, url: str, stop_file: Path) -> None:
        self.stop_file = stop_file
        self.thread = threading.Thread(target=ack_consume, args=(url, str(stop_file)), daemon=True)

    def __enter__(self) -> Consumer:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop_file.touch()
        self.thread.join(5)


def drive(dispatcher: Dispatcher, until: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not until():
        assert time.monotonic() < deadline, "timed out"
        if not dispatcher.tick():
            time.sleep(0.01)
