"""Flower: refuses to start without auth, and shows real workers and tasks of a real run through its HTTP API
(basic auth) and in a headless Chromium (skipped where /usr/bin/chromium is absent)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from core.errors import ConfigError
from core.flower_settings import FlowerSettings
from core.settings import Settings
from jobs.local.redis_server import EmbeddedRedis
from reelgen.flower import ALLOW_FLAG, flower_argv
from reelgen.sample_catalog import write_sample_catalog
from tests.support.net import free_port

ROOT = Path(__file__).resolve().parents[2]
REELGEN = str(Path(sys.executable).with_name("reelgen"))
CHROMIUM = Path("/usr/bin/chromium")
USER, PASSWORD = "tester", "pw-e2e-123"
BROKER = SecretStr("redis://127.0.0.1:6379/0")
# run_flower as `reelgen flower ARGS` calls it
RUN_FLOWER = (
    "import sys; from reelgen.flower import run_flower; from core.settings import load_settings; "
    "sys.exit(run_flower(load_settings(), sys.argv[1:]))"
)


def test_flower_refuses_to_start_without_auth() -> None:
    settings = Settings(redis_url=BROKER)
    with pytest.raises(ConfigError, match="without authentication"):
        flower_argv(settings, FlowerSettings(), [])
    # the refusal is what `reelgen flower` exits with: 2, a configuration error
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REELGEN_", "FLOWER_"))}
    env["REELGEN_REDIS_URL"] = BROKER.get_secret_value()
    result = subprocess.run(
        [REELGEN, "flower"],  # what the chart runs: no arguments, everything from the environment
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "without authentication" in result.stderr


def test_flower_needs_the_broker() -> None:
    with pytest.raises(ConfigError, match="REELGEN_REDIS_URL"):
        flower_argv(Settings(redis_url=None), FlowerSettings(basic_auth=SecretStr("a:b")), [])


def test_flower_auth_from_settings_or_arguments() -> None:
    settings = Settings(redis_url=BROKER)
    argv = flower_argv(settings, FlowerSettings(basic_auth=SecretStr("ops:pw,viewer:pw2")), [])
    assert "--basic_auth=ops:pw,viewer:pw2" in argv and argv[0] == "flower"
    explicit = flower_argv(settings, FlowerSettings(basic_auth=SecretStr("ops:pw")), ["--basic-auth=x:y"])
    assert not [a for a in explicit if a.startswith("--basic_auth")] and "--basic-auth=x:y" in explicit
    # opting out is explicit, and the flag is ours, not Flower's
    opened = flower_argv(settings, FlowerSettings(), [ALLOW_FLAG, "--port=6000"])
    assert ALLOW_FLAG not in opened and opened[-1] == "--port=6000"
    assert not [a for a in opened if "auth" in a]


def test_flower_settings_nest_in_reelgen_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REELGEN_FLOWER__BASIC_AUTH", "env-user:env-pw")
    monkeypatch.setenv("REELGEN_FLOWER__PORT", "5600")
    nested = Settings(redis_url=BROKER).flower
    assert nested.basic_auth is not None and nested.basic_auth.get_secret_value() == "env-user:env-pw"
    assert nested.port == 5600


@pytest.mark.parametrize("value", ["s3cr3t", ":s3cr3t", "s3cr3t:", "a:s3cr3t,c"])
def test_malformed_credentials_are_refused_without_echoing_them(value: str) -> None:
    with pytest.raises(ValueError, match="user:password") as error:
        FlowerSettings(basic_auth=SecretStr(value))
    assert "s3cr3t" not in str(error.value)


# --- end to end -----------------------------------------------------------------------------------------------


def api(port: int, path: str, password: str = PASSWORD) -> Any:
    token = base64.b64encode(f"{USER}:{password}".encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Basic {token}"}
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        return json.loads(response.read())


def wait_for(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = check()
            if value:
                return value
        except (OSError, urllib.error.URLError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def clean_env(redis_url: str, state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REELGEN_", "FLOWER_"))}
    env.update(REELGEN_REDIS_URL=redis_url, REELGEN_STATE_DIR=str(state))
    return env


@pytest.fixture(scope="module")
def flower_run(
    redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, dict[str, Any], Path]]:
    """Flower watching a real `reelgen run` of a tiny catalog: (port, the run's final API view, work folder)."""
    work = tmp_path_factory.mktemp("flower")
    catalog = write_sample_catalog(work / "catalog", 2, size=(320, 180), duration_s=(4.0, 5.0), fps=10)
    port = free_port()
    env = clean_env(redis_server.url, work / "state")
    log = (work / "flower.log").open("wb")
    flower = subprocess.Popen(
        [sys.executable, "-c", RUN_FLOWER, "--address=127.0.0.1", f"--port={port}", f"--basic-auth={USER}:{PASSWORD}"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(lambda: api(port, "/api/workers") == {}, 60, "Flower to answer")
        run = subprocess.Popen(
            [REELGEN, "run", str(catalog), "--out", str(work / "out"), "--workers", "1",
             "--aspects", "1:1,9:16", "--state-dir", str(work / "state")],
            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        # while the run's worker is up, Flower's inspect-based view (refresh=1) must list it
        live = wait_for(lambda: api(port, "/api/workers?refresh=1"), 180, "the run's worker in /api/workers")
        output, _ = run.communicate(timeout=240)
        assert run.returncode == 0, output
        tasks = wait_for(
            lambda: (
                (t := api(port, "/api/tasks")) and sum(v["state"] == "SUCCESS" for v in t.values()) >= 6 and t
            ),
            60,
            "the run's tasks in /api/tasks",
        )
        yield port, {"live_workers": live, "tasks": tasks}, work
    finally:
        flower.terminate()
        flower.wait(30)
        log.close()


def test_flower_shows_the_runs_workers_and_tasks(flower_run: tuple[int, dict[str, Any], Path]) -> None:
    port, seen, _ = flower_run
    (worker_name, info), *_ = seen["live_workers"].items()
    assert worker_name.startswith(
        "reelgen-"
    )  # jobs/local/worker_pool.py names its workers reelgen-<pid>@host
    assert "reelgen" in {q["name"] for q in info.get("active_queues", [])}
    tasks = seen["tasks"].values()
    names = {t["name"] for t in tasks}
    assert {"reelgen.prepare", "reelgen.render"} <= names
    renders = [t for t in tasks if t["name"] == "reelgen.render" and t["state"] == "SUCCESS"]
    assert len(renders) == 2  # one per item
    assert {t["worker"] for t in tasks} == {worker_name}
    # the events-based status outlives the worker: it is still listed, now offline
    assert api(port, "/api/workers?status=1") == {worker_name: False}


def test_flower_api_needs_the_password(flower_run: tuple[int, dict[str, Any], Path]) -> None:
    port, _, _ = flower_run
    for path in ("/api/workers", "/api/tasks", "/"):
        with pytest.raises(urllib.error.HTTPError) as error:
            api(port, path, password="wrong")
        assert error.value.code == 401
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthcheck", timeout=10) as response:
        assert response.read() == b"OK"  # the probe's endpoint needs no credentials


def chromium(url: str, work: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    profile = work / f"chromium-profile-{time.monotonic_ns()}"
    return subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--window-size=1280,900", "--virtual-time-budget=5000", *mode, url],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install -y chromium)")
def test_flower_dashboard_renders_workers_and_tasks(flower_run: tuple[int, dict[str, Any], Path]) -> None:
    port, seen, work = flower_run
    worker_name = next(iter(seen["live_workers"]))
    base = f"http://{USER}:{PASSWORD}@127.0.0.1:{port}"
    shot = work / "flower-workers.png"
    result = chromium(f"{base}/workers", work, f"--screenshot={shot}")
    assert shot.exists(), result.stderr
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1280, 900)
    workers_dom = chromium(f"{base}/workers", work, "--dump-dom").stdout
    assert worker_name in workers_dom
    tasks_dom = chromium(f"{base}/tasks", work, "--dump-dom").stdout
    assert "reelgen.render" in tasks_dom
    denied = chromium(f"http://127.0.0.1:{port}/workers", work, "--dump-dom").stdout
    assert worker_name not in denied
