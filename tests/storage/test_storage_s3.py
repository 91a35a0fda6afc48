"""S3Store and the S3 source download against a real S3 protocol server (moto) on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest

from core.errors import SourceNotFound, SourceTooLarge, SourceTooSlow, StorageError
from storage.s3 import S3Store, download_object, make_client
from storage.store import open_store

MiB = 2**20


@pytest.fixture(scope="module")
def endpoint(s3_endpoint: str) -> str:
    return s3_endpoint


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # keep any real ~/.aws configuration out of the tests
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


@pytest.fixture
def client(endpoint: str) -> Any:
    return make_client(endpoint_url=endpoint)


@pytest.fixture
def bucket(client: Any) -> str:
    name = f"reelgen-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return name


def _sha256_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_put_get_list_delete_round_trip(client: Any, bucket: str) -> None:
    store = S3Store(bucket, "/runs/one/", client=client)
    assert store.root == f"s3://{bucket}/runs/one"
    assert store.uri("item-1/9x16.mp4") == f"s3://{bucket}/runs/one/item-1/9x16.mp4"

    store.put_bytes("item-1/manifest.json", b'{"ok": true}', "application/json")
    store.put_bytes("item-2/manifest.json", b"{}", "application/json")
    client.put_object(Bucket=bucket, Key="runs/other/item-1/manifest.json", Body=b"not ours")

    assert store.get_bytes("item-1/manifest.json") == b'{"ok": true}'
    assert sorted(store.list("")) == ["item-1/manifest.json", "item-2/manifest.json"]
    assert list(store.list("item-2/")) == ["item-2/manifest.json"]
    head = client.head_object(Bucket=bucket, Key="runs/one/item-1/manifest.json")
    assert head["ContentType"] == "application/json"

    store.delete("item-1/manifest.json")
    store.delete("item-1/manifest.json")  # deleting a missing object is not an error
    assert store.get_bytes("item-1/manifest.json") is None
    assert list(store.list("")) == ["item-2/manifest.json"]


def test_store_without_prefix_uses_bucket_root(client: Any, bucket: str) -> None:
    store = S3Store(bucket, "", client=client)
    store.put_bytes("a/b.txt", b"x", "text/plain")
    assert store.root == f"s3://{bucket}"
    assert store.uri("a/b.txt") == f"s3://{bucket}/a/b.txt"
    assert client.get_object(Bucket=bucket, Key="a/b.txt")["Body"].read() == b"x"


def test_put_bytes_stores_sha256_checksum(client: Any, bucket: str) -> None:
    store = S3Store(bucket, "p", client=client)
    data = os.urandom(1000)
    store.put_bytes("k.bin", data, "application/octet-stream")
    head = client.head_object(Bucket=bucket, Key="p/k.bin", ChecksumMode="ENABLED")
    assert head["ChecksumSHA256"] == _sha256_b64(data)


def test_large_file_goes_up_in_parts_with_checksums(client: Any, bucket: str, tmp_path: Path) -> None:
    store = S3Store(bucket, "p", client=client, multipart_threshold=5 * MiB)
    data = os.urandom(11 * MiB)
    source = tmp_path / "clip.mp4"
    source.write_bytes(data)

    store.put_file("item/9x16.mp4", source, "video/mp4")

    head = client.head_object(Bucket=bucket, Key="p/item/9x16.mp4", ChecksumMode="ENABLED")
    assert head["ETag"].strip('"').endswith("-3")  # 5 + 5 + 1 MiB parts
    assert head["ChecksumSHA256"]
    assert head["ContentType"] == "video/mp4"
    assert store.get_bytes("item/9x16.mp4") == data


def test_small_file_goes_up_in_one_request(client: Any, bucket: str, tmp_path: Path) -> None:
    store = S3Store(bucket, "p", client=client, multipart_threshold=5 * MiB)
    source = tmp_path / "small.mp4"
    source.write_bytes(b"0123456789")
    store.put_file("s.mp4", source, "video/mp4")
    head = client.head_object(Bucket=bucket, Key="p/s.mp4", ChecksumMode="ENABLED")
    assert "-" not in head["ETag"]
    assert head["ChecksumSHA256"] == _sha256_b64(b"0123456789")


def test_copy_is_server_side_and_whole_in_parts_too(client: Any, bucket: str, tmp_path: Path) -> None:
    store = S3Store(bucket, "p", client=client, multipart_threshold=5 * MiB)
    small, large = os.urandom(1000), os.urandom(11 * MiB)
    store.put_bytes("a/9x16.jpg", small, "image/jpeg")
    (tmp_path / "big.mp4").write_bytes(large)
    store.put_file("a/9x16.mp4", tmp_path / "big.mp4", "video/mp4")
    store.copy("a/9x16.jpg", "b/9x16.jpg")
    store.copy("a/9x16.mp4", "b/9x16.mp4")
    assert store.get_bytes("b/9x16.jpg") == small and store.get_bytes("b/9x16.mp4") == large
    # the source stays; a missing one is a storage error, named with both places
    assert store.get_bytes("a/9x16.mp4") == large
    with pytest.raises(StorageError, match=r"cannot copy .*a/missing\.mp4 to .*b/missing\.mp4"):
        store.copy("a/missing.mp4", "b/missing.mp4")


def test_threshold_below_s3_part_minimum_is_refused(client: Any, bucket: str) -> None:
    with pytest.raises(StorageError, match="5 MiB"):
        S3Store(bucket, "p", client=client, multipart_threshold=MiB)


def test_missing_bucket_is_a_storage_error(client: Any, tmp_path: Path) -> None:
    store = S3Store("reelgen-no-such-bucket", "p", client=client)
    with pytest.raises(StorageError, match="reelgen-no-such-bucket"):
        store.put_bytes("k", b"x", "text/plain")
    source = tmp_path / "clip.mp4"
    source.write_bytes(b"clip")
    with pytest.raises(StorageError, match="cannot upload"):
        store.put_file("k.mp4", source, "video/mp4")
    with pytest.raises(StorageError, match="cannot upload"):
        store.put_file("k.mp4", tmp_path / "missing.mp4", "video/mp4")
    with pytest.raises(StorageError):
        store.get_bytes("k")
    with pytest.raises(StorageError):
        list(store.list(""))


def test_unreachable_endpoint_is_a_storage_error_after_retries(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # the socket is closed: nothing listens on the port, so every attempt is refused at once
    client = make_client(endpoint_url=f"http://127.0.0.1:{port}", max_attempts=2)
    store = S3Store("reelgen-any", "p", client=client)
    with pytest.raises(StorageError, match="cannot write"):
        store.put_bytes("k", b"x", "text/plain")


def test_unclean_keys_are_refused(client: Any, bucket: str) -> None:
    store = S3Store(bucket, "p", client=client)
    for key in ("../escape", "/abs", "a//b", ""):
        with pytest.raises(StorageError):
            store.put_bytes(key, b"x", "text/plain")


def test_open_store_uses_endpoint_from_environment(
    endpoint: str, bucket: str, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    store = open_store(f"s3://{bucket}/out")
    assert isinstance(store, S3Store)
    store.put_bytes("item/manifest.json", b"{}", "application/json")
    assert client.get_object(Bucket=bucket, Key="out/item/manifest.json")["Body"].read() == b"{}"


def test_download_object_writes_the_bytes(client: Any, bucket: str, tmp_path: Path) -> None:
    data = os.urandom(3 * MiB + 17)
    client.put_object(Bucket=bucket, Key="videos/a.mp4", Body=data, ChecksumAlgorithm="SHA256")
    dest = tmp_path / "a.mp4"
    assert download_object(client, bucket, "videos/a.mp4", dest, max_bytes=len(data), deadline_s=60) == len(
        data
    )
    assert dest.read_bytes() == data


def test_download_object_enforces_the_byte_limit(client: Any, bucket: str, tmp_path: Path) -> None:
    client.put_object(Bucket=bucket, Key="big.mp4", Body=b"x" * 1001)
    with pytest.raises(SourceTooLarge, match="1001 bytes"):
        download_object(client, bucket, "big.mp4", tmp_path / "big.mp4", max_bytes=1000, deadline_s=60)


def test_download_object_past_its_deadline_is_too_slow(client: Any, bucket: str, tmp_path: Path) -> None:
    # three chunks: the deadline is checked after each, so a download it has run out on stops after the first
    client.put_object(Bucket=bucket, Key="slow.mp4", Body=b"x" * (3 * MiB))
    with pytest.raises(SourceTooSlow, match="download_deadline_s"):
        download_object(client, bucket, "slow.mp4", tmp_path / "slow.mp4", max_bytes=4 * MiB, deadline_s=1e-6)
    assert (tmp_path / "slow.mp4").stat().st_size < MiB + 1


def test_download_object_missing_key_or_bucket(client: Any, bucket: str, tmp_path: Path) -> None:
    with pytest.raises(SourceNotFound, match="does not exist"):
        download_object(client, bucket, "nope.mp4", tmp_path / "x", max_bytes=10, deadline_s=60)
    with pytest.raises(SourceNotFound):
        download_object(
            client, "reelgen-no-such-bucket", "a.mp4", tmp_path / "x", max_bytes=10, deadline_s=60
        )
