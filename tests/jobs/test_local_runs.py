"""A local run as a user sees it: `reelgen run` in a real terminal (tmux) with its live display, inspected by
`reelgen status` while it runs; and a finished run's state folder inspected, steered and retried."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.local.redis_server import serving
from reelgen.sample_catalog import write_sample_catalog
from storage.s3 import make_client

REELGEN = str(Path(sys.executable).with_name("reelgen"))
TMUX = shutil.which("tmux")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    return env | extra


def cli(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REELGEN, *args], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=timeout
    )


def with_broken_item(path: Path) -> Path:
    """The catalog with an item whose video is missing, and a misspelt field on that line."""
    first = json.loads(path.read_text().splitlines()[0])
    broken = first | {"item_id": "broken", "video": "videos/missing.mp4", "titel": "typo"}
    with open(path, "a") as handle:
        handle.write(json.dumps(broken) + "\n")
    return path


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short products and a broken item."""
    folder = tmp_path_factory.mktemp("catalog")
    return with_broken_item(
        write_sample_catalog(folder, 2, seed=5, size=(640, 360), duration_s=(6.0, 7.0), fps=25)
    )


@pytest.fixture(scope="module")
def long_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two longer products and a broken item: each stage lasts long enough on any machine for the live display,
    redrawn four times a second from a ledger read every half second, to show it."""
    folder = tmp_path_factory.mktemp("long-catalog")
    return with_broken_item(
        write_sample_catalog(folder, 2, seed=5, size=(1280, 720), duration_s=(40.0, 44.0), fps=30)
    )


class Tmux:
    """A tmux server of our own (its own socket), one window of a given size."""

    def __init__(self, cwd: Path) -> None:
        self.socket = f"reelgen-test-{uuid.uuid4().hex[:8]}"
        self.cwd = cwd

    def __call__(self, *args: str) -> str:
        assert TMUX is not None
        result = subprocess.run(
            [TMUX, "-L", self.socket, *args], env=clean_env(TERM="xterm-256color"), cwd=self.cwd,
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        return result.stdout

    def screen(self) -> list[str]:
        return self("capture-pane", "-p", "-t", "rg").rstrip("\n").splitlines()


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if TMUX is None:
        pytest.skip("tmux is not installed (apt-get install -y tmux)")
    session = Tmux(tmp_path)
    session("new-session", "-d", "-s", "rg", "-x", "160", "-y", "45", "bash --norc --noprofile")
    try:
        yield session
    finally:
        session("send-keys", "-t", "rg", "C-c", "")
        time.sleep(1)
        session("kill-server")


def test_reelgen_run_in_a_terminal_draws_live_progress_and_can_be_inspected(
    tmux: Tmux, long_catalog: Path, tmp_path: Path
) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    command = f"{REELGEN} run {long_catalog} --out {out} --state-dir {state} --aspects 1:1 --workers 2; echo RUN-EXIT=$?"
    tmux("send-keys", "-t", "rg", command, "Enter")
    screens: list[list[str]] = []
    inspected: subprocess.CompletedProcess[str] | None = None
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        screen = tmux.screen()
        screens.append(screen)
        if any(line.startswith("RUN-EXIT=") for line in screen):
            break
        if inspected is None and any(
            re.search(r"^in flight .*(prepare|sample|select|render) \d", line) for line in screen
        ):
            # while it runs, status reads the same ledger through the run's own Redis (and leaves it running)
            inspected = cli(tmp_path, "status", "--state-dir", str(state))
        time.sleep(0.25)
    final = screens[-1]
    assert any(line == "RUN-EXIT=1" for line in final), "\n".join(final)

    ended = [any(line.startswith("RUN-EXIT=") for line in s) for s in screens]
    live = [s for s, over in zip(screens, ended, strict=True) if not over and any("settled:" in x for x in s)]
    assert live, "\n".join(final)
    for screen in live:
        # drawn in place: one display on the screen at any time, the bar beside the counts, two lines below
        rows = [at for at, line in enumerate(screen) if "settled:" in line]
        assert len(rows) == 1, "\n".join(screen)
        assert re.match(r"^[━╸╺ ]+ \d+/3 settled: ", screen[rows[0]]), screen[rows[0]]
        assert screen[rows[0] + 1].startswith("in flight") and screen[rows[0] + 2].startswith("elapsed ")
    elapsed = set(re.findall(r"^elapsed (\S+);", "\n".join(line for s in live for line in s), re.M))
    assert len(elapsed) >= 3  # the clock moves between snapshots
    stages = " ".join(line for s in live for line in s if line.startswith("in flight"))
    assert re.search(r"\((queued|prepare|sample|select|render) \d", stages) and re.search(
        r"(sample|select|render) \d", stages
    ), stages
    # the catalog's misspelt field is warned about above the display, which stays whole below it
    warned = [s for s in live if any("'titel' is not a catalog field" in line for line in s)]
    assert warned, "\n".join(live[-1])
    for screen in warned:
        # logged while the display ran (the run's own feed read the catalog), printed above it
        warning = next(at for at, line in enumerate(screen) if "'titel'" in line)
        started = next(at for at, line in enumerate(screen) if re.match(r"job \S+: .* -> ", line))
        assert started < warning < next(at for at, line in enumerate(screen) if "settled:" in line)
    assert any("did you mean 'title'?" in line for s in warned for line in s)

    # the display's last state stays on screen, the summary below it
    text = "\n".join(final)
    assert "3/3 settled: 2 done, 1 failed, 0 skipped" in text
    assert re.search(r"job \S+: 2 done, 1 failed, 0 skipped in [\d.]+ s", text)
    assert "FAILED broken: SourceNotFound" in text

    assert inspected is not None and inspected.returncode == 0, inspected.stderr if inspected else screens
    assert " run  running " in inspected.stdout and "in flight: " in inspected.stdout
    assert re.search(
        r"broker: \d+ message\(s\) waiting.*1 worker node\(s\) alive, 2 process\(es\)", inspected.stdout
    )
    assert not serving(state)  # the run stopped its Redis as it ended; status had left it running


def test_a_finished_local_run_can_be_inspected_steered_and_retried(catalog: Path, tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    run = cli(tmp_path, "run", str(catalog), "--out", str(out), "--state-dir", str(state), "--aspects", "1:1")
    assert run.returncode == 1, run.stdout + run.stderr
    [job] = re.findall(r"^job (\S+): .* -> ", run.stdout, re.M)
    # off a terminal, the progress is plain periodic lines ending with the final state
    progress = [line for line in run.stderr.splitlines() if "settled:" in line]
    assert progress and progress[-1].startswith("3/3 settled: 2 done, 1 failed, 0 skipped;"), run.stderr
    assert "\x1b" not in run.stderr
    assert not serving(state)

    status = cli(tmp_path, "status", "--state-dir", str(state))
    assert status.returncode == 0, status.stderr
    assert f"{job}  run  completed" in status.stdout and "errors: SourceNotFound x1" in status.stdout
    assert "broker: 0 message(s) waiting; no worker answered" in status.stdout
    detail = json.loads(cli(tmp_path, "status", job, "--json", "--state-dir", str(state)).stdout)
    assert (detail["done"], detail["failed"], detail["broker"]["workers"]) == (2, 1, {})
    assert not serving(state)  # status started the run's Redis on its saved ledger, and stopped it

    paused = cli(tmp_path, "job", "pause", job, "--state-dir", str(state))
    assert paused.returncode == 2 and f"cannot pause job {job}: it is completed" in paused.stderr

    dry = cli(tmp_path, "retry", "--job", job, "--dry-run", "--state-dir", str(state))
    assert dry.returncode == 0 and "would retry 1 item(s)" in dry.stdout and "SourceNotFound x1" in dry.stdout
    # the retry runs here as the run did: the video is still missing, so it fails again, named
    retried = cli(tmp_path, "retry", "--job", job, "--state-dir", str(state))
    assert retried.returncode == 1, retried.stdout + retried.stderr
    assert re.search(r"job \S+: 0 done, 1 failed, 0 skipped", retried.stdout), retried.stdout
    assert "FAILED broken: SourceNotFound" in retried.stdout
    after = cli(tmp_path, "status", "--state-dir", str(state)).stdout
    assert "  retry  completed" in after and f"{job}  run  completed" in after
    assert not serving(state)


@pytest.fixture
def http_folder(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder served over HTTP on 127.0.0.1."""
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_run_reads_catalogs_from_s3_and_http_as_backfill_does(
    tmp_path: Path, s3_endpoint: str, http_folder: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, base = http_folder
    credentials = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    credentials |= {"AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    for name, value in credentials.items():
        monkeypatch.setenv(name, value)
    client = make_client(endpoint_url=s3_endpoint)
    client.create_bucket(Bucket="catalogs")
    line = {"item_id": "sku-1", "video": f"{base}/missing.mp4", "image": f"{base}/missing.png", "title": "t"}
    client.put_object(Bucket="catalogs", Key="products.jsonl", Body=json.dumps(line).encode() + b"\n")
    (folder / "products.jsonl").write_text(json.dumps(line | {"item_id": "sku-2"}) + "\n")
    env = clean_env(REELGEN_S3_ENDPOINT_URL=s3_endpoint, REELGEN_ALLOW_PRIVATE_HTTP="true")
    for catalog, item in (("s3://catalogs/products.jsonl", "sku-1"), (f"{base}/products.jsonl", "sku-2")):
        result = subprocess.run(
            [REELGEN, "run", catalog, "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        # the catalog was read (its one item was tried and failed, named); a refused URI would exit 2
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"{catalog} -> " in result.stdout
        assert f"FAILED {item}: SourceNotFound" in result.stdout, result.stdout
