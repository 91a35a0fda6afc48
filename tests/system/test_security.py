"""Hostile input, part 3: nothing let in, nothing given away.

Covered here: item ids cannot escape the output prefix; no credential (Redis password, AWS secret, Flower
password, a URL's user info or signature) appears in `reelgen config --show`, `reelgen status`, the run's
output, its logs, manifests or the results index; an allowed private http source that does not answer fails as
SourceUnreachable after retries.

Covered elsewhere, referenced rather than repeated:
- SSRF: tests/storage/test_storage_fetch.py (loopback/private/link-local refused without contact, the same after a
  redirect, DNS rebinding caught at connect, REELGEN_ALLOW_PRIVATE_HTTP lets loopback through, messages lose
  credentials); in a real run: tests/system/test_bad_inputs.py (loopback, 169.254.169.254, 10/8, ftp:// refused).
- Limits on bytes, pixels, duration: tests/system/test_bad_inputs.py (SourceTooLarge, VideoLimitExceeded) and
  tests/storage/test_storage_fetch.py (declared and streamed HTTP length), tests/storage/test_storage_s3.py (S3 length).
- Owner-only daemon socket, shared memory and embedded Redis socket: tests/gpu_service/test_gpu_daemon.py (a bare daemon)
  and tests/system/test_faults.py (the processes of a real `reelgen run`).
- Flower requires auth in the chart, from a Secret: tests/helm/test_helm.py::test_flower_auth_comes_from_a_secret.
- Local files and s3 buckets a catalog may name, cache entries named without the URI's extension:
  tests/storage/test_source_policy.py.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core.errors import BadItemId, StorageError
from jobs.intake.catalog import check_item_id
from storage.manifest import clip_key, manifest_key
from storage.s3 import S3Store
from storage.store import LocalStore
from tests.support.faults import (
    Leaks,
    base_env,
    catalog_line,
    manifests,
    redis_server,
    run_reelgen,
    summary_failures,
    write_image,
    write_video,
)
from tests.support.net import free_port

ESCAPES = [
    "..",
    "../x",
    "a/../../b",
    "/etc/passwd",
    "a/b",
    "a\\b",
    ".",
    ".x",
    "-x",
    "x\x00y",
    "x\ny",
    "ü",
    "",
]


@pytest.mark.parametrize("item_id", ESCAPES)
def test_item_ids_that_could_escape_are_refused(item_id: str) -> None:
    with pytest.raises(BadItemId):
        check_item_id(item_id)


@pytest.mark.parametrize("key", ["../x", "a/../../x", "/abs", "a//b", "./a", "a/.", ""])
def test_stores_refuse_keys_outside_their_root(key: str, tmp_path: Path) -> None:
    local = LocalStore(tmp_path / "out")
    with pytest.raises(StorageError):
        local.put_bytes(key, b"x", "text/plain")
    with pytest.raises(StorageError):
        S3Store("bucket", "prefix", client=object()).uri(key)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("item_id", ["a", "A.b-c_d", "x" * 128, "1..2"])
def test_every_key_of_a_valid_item_stays_under_its_own_folder(item_id: str, tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "out")
    check_item_id(item_id)
    for key in (manifest_key(item_id), clip_key(item_id, "9x16")):
        path = Path(store.uri(key)).resolve()
        assert path.parent == (tmp_path / "out" / item_id).resolve()


REDIS_PASSWORD = "redis-pw-4b1f9e"
AWS_SECRET = "aws-secret-9d27c1"
FLOWER_PASSWORD = "flower-pw-55e0aa"
URL_PASSWORD = "url-pw-c0ffee"
URL_SIGNATURE = "sig-77aa31"
SECRETS = (REDIS_PASSWORD, AWS_SECRET, FLOWER_PASSWORD, URL_PASSWORD, URL_SIGNATURE)


@pytest.fixture
def video_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    folder = tmp_path / "served"
    folder.mkdir()

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], folder
    server.shutdown()
    server.server_close()


def test_no_credential_appears_in_config_status_output_logs_or_manifests(
    tmp_path: Path, video_server: tuple[int, Path]
) -> None:
    port, served = video_server
    write_video(served / "v.mp4", seconds=2.0)
    image = write_image(tmp_path / "main.png")
    signed = f"http://user:{URL_PASSWORD}@127.0.0.1:{port}/v.mp4?X-Amz-Signature={URL_SIGNATURE}"
    dead = f"http://user:{URL_PASSWORD}@127.0.0.1:{free_port()}/x.mp4?X-Amz-Signature={URL_SIGNATURE}"
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text(
        catalog_line("signed", signed, image) + "\n" + catalog_line("dead", dead, image) + "\n"
    )
    with redis_server(tmp_path / "redis", password=REDIS_PASSWORD) as server:
        env = base_env(
            tmp_path,
            REELGEN_REDIS_URL=server.url,
            REELGEN_ALLOW_PRIVATE_HTTP="true",
            REELGEN_TASK_RETRIES="1",
            REELGEN_FLOWER__BASIC_AUTH=f"ops:{FLOWER_PASSWORD}",
            AWS_ACCESS_KEY_ID="AKIATESTTESTTEST",
            AWS_SECRET_ACCESS_KEY=AWS_SECRET,
        )
        leaks = Leaks(env["REELGEN_STATE_DIR"], temp_dirs=[tmp_path / "tmp", tmp_path / "out"])
        shown = run_reelgen(["config", "--show"], env)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["redis_url"] == "**********"
        run = run_reelgen(["run", str(catalog)], env)
        assert run.returncode == 1, run.stdout + run.stderr
        # the private source was allowed, tried, retried and named; the other one was fetched and rendered
        assert summary_failures(run.stdout) == {"dead": "SourceUnreachable"}, run.stdout
        assert "gave up after" in run.stdout
        assert set(manifests(tmp_path / "out")) == {"signed"}
        job_id = run.stdout.split()[1].rstrip(":")
        status = run_reelgen(["status", job_id, "--json"], env)
        listing = run_reelgen(["status"], env)
        assert status.returncode == 0 and listing.returncode == 0, status.stderr + listing.stderr
        assert json.loads(status.stdout)["top_errors"] == [{"error": "SourceUnreachable", "count": 1}]

    texts = {
        "config --show": shown.stdout + shown.stderr,
        "run output": run.stdout + run.stderr,
        "status": status.stdout + status.stderr + listing.stdout + listing.stderr,
    }
    for path in [*(tmp_path / "state" / "logs").rglob("*"), *(tmp_path / "out").rglob("*")]:
        if path.is_file():
            texts[str(path)] = path.read_text(errors="replace")
    assert any("manifest.json" in name for name in texts) and any("worker-" in name for name in texts)
    leaked = {(name, s) for name, text in texts.items() for s in SECRETS if s in text}
    assert not leaked, leaked
    manifest = manifests(tmp_path / "out")["signed"]
    source = manifest["source"]
    assert isinstance(source, dict)
    assert source["uri"] == f"http://127.0.0.1:{port}/v.mp4?..."  # where it came from, without secrets
    leaks.check()
