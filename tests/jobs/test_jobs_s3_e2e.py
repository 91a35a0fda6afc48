"""`reelgen run` with s3:// sources and an s3:// output, against a real S3 protocol server (moto) on 127.0.0.1:
clips, manifest and the results index land in the bucket, and a rerun skips the item from that index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from reelgen.sample_catalog import write_sample_catalog
from storage.s3 import make_client

REELGEN = str(Path(sys.executable).with_name("reelgen"))


@pytest.fixture(scope="module")
def endpoint(s3_endpoint: str) -> str:
    return s3_endpoint


def test_run_reads_and_writes_s3(endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REELGEN_", "AWS_"))}
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"),
        REELGEN_S3_ENDPOINT_URL=endpoint,
        REELGEN_S3_REGION="us-east-1",
    )
    client = make_client(endpoint_url=endpoint, region="us-east-1")
    bucket = f"reelgen-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=bucket)

    folder = tmp_path / "catalog"
    local = write_sample_catalog(folder, 1, seed=9, size=(320, 180), duration_s=(4.0, 5.0), fps=10)
    entry = json.loads(local.read_text().splitlines()[0])
    for field in ("video", "image"):
        key = f"sources/{Path(entry[field]).name}"
        client.upload_file(str(folder / entry[field]), bucket, key)
        entry[field] = f"s3://{bucket}/{key}"
    catalog = tmp_path / "s3-catalog.jsonl"
    catalog.write_text(json.dumps(entry) + "\n")
    out = f"s3://{bucket}/runs/one"

    def run() -> subprocess.CompletedProcess[str]:
        command = [REELGEN, "run", str(catalog), "--out", out, "--aspects", "1:1", "--workers", "2",
                   "--state-dir", str(tmp_path / "state")]  # fmt: skip
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)

    first = run()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "1 done, 0 failed" in first.stdout
    item = entry["item_id"]
    manifest = json.loads(
        client.get_object(Bucket=bucket, Key=f"runs/one/{item}/manifest.json")["Body"].read()
    )
    assert manifest["status"] == "done" and manifest["source"]["uri"].startswith("s3://")
    assert manifest["outputs"][0]["uri"] == f"{out}/{item}/1x1.mp4"
    assert client.head_object(Bucket=bucket, Key=f"runs/one/{item}/1x1.mp4")["ContentLength"] > 1000
    keys = [
        o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix="runs/one/_reelgen/index/")["Contents"]
    ]
    index = json.loads(client.get_object(Bucket=bucket, Key=keys[0])["Body"].read().splitlines()[0])
    assert index["item_id"] == item and index["status"] == "done" and index["manifest"].startswith(out)

    again = run()
    assert again.returncode == 0 and "0 done, 0 failed, 1 skipped" in again.stdout, (
        again.stdout + again.stderr
    )
