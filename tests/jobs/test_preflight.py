"""Fail fast: a job whose output store refuses writes, whose catalog cannot be read or whose Redis does not answer
is refused before it starts, with exit 2 and one line, in seconds, leaving nothing running. Real processes, a
real S3 protocol server (moto) and a real closed port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from jobs.intake.preflight import check_store
from storage.s3 import make_client
from tests.support.net import free_port

REELGEN = str(Path(sys.executable).with_name("reelgen"))
#: generous for a loaded machine: what is measured is "seconds, not a loop"
BOUND_S = 30.0
MARK = "RG_PREFLIGHT_TEST"


@pytest.fixture(scope="module")
def endpoint(s3_endpoint: str) -> str:
    return s3_endpoint


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.jsonl"
    path.write_text(json.dumps({"item_id": "a", "video": "v.mp4", "image": "i.png", "title": "t"}) + "\n")
    return path


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REELGEN_", "AWS_"))}
    env |= {
        # no credentials from anywhere: not the environment, not a shared file, not an instance role
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
        "REELGEN_STATE_DIR": str(tmp_path / "state"),
    }
    return env | extra


def marked_processes(mark: str) -> list[int]:
    """Processes alive whose environment carries the mark: whatever a command started, daemonised or not."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if f"{MARK}={mark}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def refused(env: dict[str, str], *args: str) -> str:
    """Run a command that must be refused: exit 2 within the bound, one line on stderr, nothing left running;
    returns that line."""
    mark = uuid.uuid4().hex
    started = time.monotonic()
    result = subprocess.run(
        [REELGEN, *args], env=env | {MARK: mark}, capture_output=True, text=True, timeout=120,
        start_new_session=True,
    )  # fmt: skip
    took = time.monotonic() - started
    assert result.returncode == 2, (args, result.returncode, result.stdout, result.stderr)
    assert took < BOUND_S, (args, took)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, (args, result.stderr)
    assert not marked_processes(mark), args
    return lines[0]


def test_s3_output_without_credentials_is_refused_at_once(
    tmp_path: Path, endpoint: str, catalog: Path
) -> None:
    env = env_for(tmp_path, REELGEN_S3_ENDPOINT_URL=endpoint)
    for args in (
        ["run", str(catalog), "--out", "s3://clips/run"],
        ["backfill", str(catalog), "--out", "s3://clips/run"],
        ["nightly", "--catalog", str(catalog), "--out", "s3://clips/run", "--date", "2026-01-02"],
    ):
        line = refused(env, *args)
        assert line.startswith("reelgen: ConfigError: the output store s3://clips/run does not take writes")
        assert "Unable to locate credentials" in line, line


def test_a_missing_bucket_is_refused_at_once(tmp_path: Path, endpoint: str, catalog: Path) -> None:
    env = env_for(
        tmp_path,
        REELGEN_S3_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
    )
    line = refused(env, "run", str(catalog), "--out", "s3://no-such-bucket/run")
    assert "s3://no-such-bucket/run does not take writes" in line and "NoSuchBucket" in line, line


def test_a_writable_bucket_passes_and_keeps_no_probe(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env_for(
        tmp_path, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing"
    ).items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    client = make_client()
    client.create_bucket(Bucket="clips")
    check_store("s3://clips/run")
    assert client.list_objects_v2(Bucket="clips").get("KeyCount") == 0  # the probe object was deleted


def test_an_s3_catalog_that_cannot_be_read_is_refused_at_once(tmp_path: Path, endpoint: str) -> None:
    env = env_for(tmp_path, REELGEN_S3_ENDPOINT_URL=endpoint)
    line = refused(env, "backfill", "s3://catalogs/products.jsonl", "--out", str(tmp_path / "out"))
    assert line.startswith("reelgen: CatalogError: catalog s3://catalogs/products.jsonl cannot be read"), line


def test_an_unwritable_output_folder_is_refused_at_once(tmp_path: Path, catalog: Path) -> None:
    # root may write anywhere a mode forbids: a file where the folder should be stops everyone
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    for args in (
        ["run", str(catalog), "--out", str(blocker / "out")],
        ["backfill", str(catalog), "--out", str(blocker / "out")],
    ):
        line = refused(env_for(tmp_path), *args)
        assert f"the output store {blocker / 'out'} does not take writes" in line, line


def test_a_catalog_that_is_not_there_is_refused_at_once(tmp_path: Path) -> None:
    line = refused(env_for(tmp_path), "run", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "out"))
    assert line == f"reelgen: CatalogError: catalog {tmp_path / 'nope.jsonl'} does not exist or is not a file"


def test_a_redis_that_does_not_answer_is_refused_at_once(tmp_path: Path, catalog: Path) -> None:
    env = env_for(tmp_path, REELGEN_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    out = str(tmp_path / "out")
    for args in (
        ["run", str(catalog), "--out", out],
        ["backfill", str(catalog), "--out", out],
        ["nightly", "--catalog", str(catalog), "--out", out, "--date", "2026-01-02"],
        ["status"],
        ["retry", "--job", "x"],
    ):
        line = refused(env, *args)
        assert line.startswith("reelgen: ConnectionError: cannot use the Redis of REELGEN_REDIS_URL"), line
    assert not (tmp_path / "state" / "logs").exists()  # no worker or daemon was started
