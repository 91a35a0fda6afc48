"""The S3 backend of the object-store interface, and the S3 download used by the source fetcher.

Credentials, region and endpoint come from the standard AWS chain (environment, shared config, instance or pod
role; `AWS_ENDPOINT_URL` for S3-compatible stores); this module never reads, logs or stores a secret itself.
Every request is retried by botocore ("standard" mode, bounded attempts); what still fails becomes a named
reelgen error. Uploads and downloads carry SHA-256 checksums that the server (on upload) and botocore (on
download) verify, so a corrupted transfer fails instead of committing bad bytes.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from core.errors import SourceNotFound, SourceTooLarge, SourceTooSlow, SourceUnreachable, StorageError
from storage.keys import check_key

MULTIPART_THRESHOLD = 16 * 2**20
MAX_ATTEMPTS = 5
_CHUNK = 1 << 20
# S3 answers 403 rather than 404 for a missing key when the caller may not list the bucket.
_MISSING_CODES = frozenset({"NoSuchKey", "NotFound", "404", "NoSuchBucket"})
_DENIED_CODES = frozenset({"AccessDenied", "403", "Forbidden"})


def make_client(
    *,
    endpoint_url: str | None = None,
    region: str | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    read_timeout_s: float = 60.0,
) -> Any:
    """An S3 client from the standard AWS chain, with bounded botocore retries.

    A fresh Session per client: boto3's default session is shared module state and not thread-safe to create
    clients from; clients themselves are thread-safe.
    """
    config = Config(
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        connect_timeout=10,
        read_timeout=read_timeout_s,
        request_checksum_calculation="when_supported",
        response_checksum_validation="when_supported",
    )
    session = boto3.session.Session()
    return session.client("s3", endpoint_url=endpoint_url, region_name=region, config=config)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class S3Store:
    """Objects under s3://bucket/prefix/."""

    def __init__(
        self,
        bucket: str,
        prefix: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        client: Any | None = None,
        multipart_threshold: int = MULTIPART_THRESHOLD,
    ) -> None:
        if not bucket or "/" in bucket:
            raise StorageError(f"S3 bucket name {bucket!r} is invalid (use s3://bucket/prefix)")
        if multipart_threshold < 5 * 2**20:
            # S3 rejects parts below 5 MiB (except the last), so a smaller threshold could never complete.
            raise StorageError(f"multipart_threshold {multipart_threshold} is below S3's 5 MiB part minimum")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.root = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._client = client if client is not None else make_client(endpoint_url=endpoint_url, region=region)
        self._transfer = TransferConfig(
            multipart_threshold=multipart_threshold, multipart_chunksize=multipart_threshold
        )

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._key(key)}"

    def put_file(self, key: str, path: Path, content_type: str) -> None:
        extra = {"ContentType": content_type, "ChecksumAlgorithm": "SHA256"}
        try:
            self._client.upload_file(
                str(path), self.bucket, self._key(key), ExtraArgs=extra, Config=self._transfer
            )
        # the transfer manager re-raises ClientError as boto3's S3UploadFailedError
        except (BotoCoreError, ClientError, Boto3Error, OSError) as exc:
            raise StorageError(f"cannot upload {path} to {self.uri(key)}: {exc}") from exc

    def put_bytes(self, key: str, data: bytes, content_type: str) -> None:
        # Sending our own digest makes the server verify the bytes it stored against the bytes we meant.
        digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
        try:
            self._client.put_object(
                Bucket=self.bucket,
                Key=self._key(key),
                Body=data,
                ContentType=content_type,
                ChecksumAlgorithm="SHA256",
                ChecksumSHA256=digest,
            )
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"cannot write {self.uri(key)}: {exc}") from exc

    def get_bytes(self, key: str) -> bytes | None:
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=self._key(key), ChecksumMode="ENABLED")
            body: bytes = response["Body"].read()
        except ClientError as exc:
            if error_code(exc) == "NoSuchKey":
                return None
            raise StorageError(f"cannot read {self.uri(key)}: {exc}") from exc
        except BotoCoreError as exc:
            raise StorageError(f"cannot read {self.uri(key)}: {exc}") from exc
        return body

    def delete(self, key: str) -> None:
        try:
            self._client.delete_object(Bucket=self.bucket, Key=self._key(key))
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"cannot delete {self.uri(key)}: {exc}") from exc

    def copy(self, source: str, key: str) -> None:
        # server-side: the managed copy sends no bytes through this process, in parts above the threshold
        try:
            self._client.copy(
                {"Bucket": self.bucket, "Key": self._key(source)},
                self.bucket,
                self._key(key),
                Config=self._transfer,
            )
        except (BotoCoreError, ClientError, Boto3Error) as exc:
            raise StorageError(f"cannot copy {self.uri(source)} to {self.uri(key)}: {exc}") from exc

    def list(self, prefix: str) -> Iterator[str]:
        base = f"{self.prefix}/" if self.prefix else ""
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=base + prefix):
                for item in page.get("Contents", []):
                    yield str(item["Key"])[len(base) :]
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"cannot list {self.root}/{prefix}: {exc}") from exc


def download_object(
    client: Any, bucket: str, key: str, dest: Path, *, max_bytes: int, deadline_s: float
) -> int:
    """Write s3://bucket/key to dest within deadline_s seconds (else SourceTooSlow); returns the byte count.

    The limit is checked against Content-Length before reading and again while streaming, since the object may
    be replaced between the two. The deadline is checked between chunks: a bucket is not a seller's server, so
    its reads are bounded by botocore's read timeout and nothing watches inside one. ChecksumMode makes botocore verify the object's stored checksum at the end of
    the stream (objects uploaded without one are not verifiable and pass). On failure dest may hold partial
    bytes: callers download into a temporary file (NodeCache's .part) that is discarded on error.
    """
    where = f"s3://{bucket}/{key}"
    deadline = time.monotonic() + deadline_s
    try:
        response = client.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    except ClientError as exc:
        raise _source_error(where, exc) from exc
    except BotoCoreError as exc:
        raise SourceUnreachable(f"{where}: {exc}") from exc
    length = int(response.get("ContentLength", 0))
    body = response["Body"]
    try:
        if length > max_bytes:
            raise SourceTooLarge(
                f"{where} is {length} bytes, over the limit of {max_bytes} (max_source_bytes)"
            )
        return _stream_to(body, dest, where, max_bytes, deadline, deadline_s)
    finally:
        body.close()


def _stream_to(body: Any, dest: Path, where: str, max_bytes: int, deadline: float, deadline_s: float) -> int:
    written = 0
    try:
        with open(dest, "wb") as out:
            for chunk in body.iter_chunks(_CHUNK):
                written += len(chunk)
                if written > max_bytes:
                    raise SourceTooLarge(f"{where} exceeds the limit of {max_bytes} bytes (max_source_bytes)")
                if time.monotonic() > deadline:
                    raise SourceTooSlow(
                        f"{where}: not downloaded within {deadline_s:g} s (download_deadline_s); "
                        f"{written} bytes had arrived"
                    )
                out.write(chunk)
    except (BotoCoreError, ClientError) as exc:
        raise SourceUnreachable(f"{where}: download failed: {exc}") from exc
    return written


def _source_error(where: str, exc: ClientError) -> Exception:
    code = error_code(exc)
    if code in _MISSING_CODES:
        return SourceNotFound(f"{where} does not exist ({code})")
    if code in _DENIED_CODES:
        return SourceNotFound(
            f"{where}: access denied ({code}); check the key and the worker's S3 permissions"
        )
    return SourceUnreachable(f"{where}: {exc}")
