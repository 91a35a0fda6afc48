"""The service subcommands' plumbing through the `reelgen` entry point: delegation, usage errors, timeouts,
the beat schedule and its logical dates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.settings import load_settings
from jobs.broker.cron import beat_schedule, last_fire, parse_cron
from jobs.local.redis_server import EmbeddedRedis
from reelgen.cli import main

REELGEN = str(Path(sys.executable).with_name("reelgen"))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    env.update(extra)
    return env


def _cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REELGEN, *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_shared_redis_commands_need_a_redis_url_or_a_local_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("REELGEN_REDIS_URL", raising=False)
    assert main(["dispatcher", "--once"]) == 2
    assert "REELGEN_REDIS_URL" in capsys.readouterr().err
    # the commands about jobs work on a local run's state folder instead, but only on one a run has used
    empty = tmp_path / "no-run-here"
    for args in (["status"], ["retry", "--job", "x"], ["job", "pause", "x"]):
        assert main([*args, "--state-dir", str(empty)]) == 2, args
        err = capsys.readouterr().err
        assert f"no local run in {empty}" in err and "REELGEN_REDIS_URL" in err
    assert not empty.exists()  # a mistyped folder is named, not created


def test_inconsistent_timeouts_are_refused_at_start() -> None:
    result = _cli(
        _env(REELGEN_TASK_TIME_LIMIT_S="1800", REELGEN_VISIBILITY_TIMEOUT_S="600"), "config", "--show"
    )
    assert result.returncode == 2 and "visibility_timeout_s" in result.stderr
    result = _cli(_env(REELGEN_TASK_TIME_LIMIT_S="1800", REELGEN_LEASE_S="900"), "config", "--show")
    assert result.returncode == 2 and "lease_s" in result.stderr
    shown = _cli(_env(REELGEN_REDIS_URL="redis://:hunter2@localhost:1/0"), "config", "--show")
    assert shown.returncode == 0 and "hunter2" not in shown.stdout and '"lease_s": 3600' in shown.stdout


def test_gpu_daemon_and_flower_delegate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon_help = _cli(_env(), "gpu-daemon", "--help")
    assert daemon_help.returncode == 0 and "--settings-json" in daemon_help.stdout
    monkeypatch.setitem(sys.modules, "reelgen.flower", None)  # as if the module were not built
    assert main(["flower", "--port", "5555"]) == 2
    assert "reelgen.flower" in capsys.readouterr().err


def test_beat_runs_the_nightly_schedule_and_stops_cleanly(
    tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    env = _env(REELGEN_REDIS_URL=redis_server.url, REELGEN_STATE_DIR=str(tmp_path / "state"))
    refused = _cli(env, "beat")
    assert refused.returncode == 2 and "REELGEN_NIGHTLY_CATALOG" in refused.stderr
    env.update(REELGEN_NIGHTLY_CATALOG=str(tmp_path / "c.jsonl"), REELGEN_NIGHTLY_CRON="30 3 * * *")
    beat = subprocess.Popen([REELGEN, "beat"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (tmp_path / "state" / "celerybeat-schedule").exists() and time.monotonic() < deadline:
        assert beat.poll() is None, beat.stderr.read() if beat.stderr else ""
        time.sleep(0.2)
    assert beat.poll() is None
    beat.send_signal(signal.SIGTERM)
    assert beat.wait(20) == 0


def test_logical_dates_name_the_last_fire_in_utc() -> None:
    cron = parse_cron("0 2 * * *")
    assert last_fire(cron, datetime(2026, 11, 21, 2, 0, 3, tzinfo=UTC)) == datetime(
        2026, 11, 21, 2, 0, tzinfo=UTC
    )
    # a late or second fire after midnight still names the previous night's date
    assert last_fire(cron, datetime(2026, 11, 22, 0, 5, tzinfo=UTC)).date().isoformat() == "2026-11-21"
    with pytest.raises(ConfigError):
        parse_cron("0 2 * *")
    schedule = beat_schedule(load_settings(nightly_catalog="c.jsonl", nightly_cron="15 1 * * 1"))
    assert schedule["nightly"]["task"] == "reelgen.nightly"
    assert beat_schedule(load_settings()) == {}
