"""Checks made before a job is registered: the catalog can be read, the output store takes a write, Redis answers.

A job registered against a store that refuses every write, or a catalog that is not there, would only fail later,
in a dispatcher's retries, far from the person who typed the command. Each check raises a ConfigError or
CatalogError whose one line says what is wrong and where to fix it; the CLI prints it and exits 2. The checks are
bounded in time: a store or Redis that does not answer fails them in seconds, not after a client's long retries.
"""

from __future__ import annotations

import uuid
from itertools import islice

import redis

from core.errors import CatalogError, ConfigError, ReelgenError
from core.settings import Settings, SourcePolicy
from core.text import printable
from jobs.intake.catalog import read_catalog
from jobs.intake.catalog_ref import CatalogRef
from storage.s3 import S3Store, make_client
from storage.store import ObjectStore, open_store, process_tag
from storage.uri import Scheme, parse_uri

#: catalog records read ahead to warn about unknown fields before the job starts
LOOKAHEAD_RECORDS = 100
#: seconds a check waits for one answer from Redis or S3, and the attempts it makes at S3 or an HTTP server
ANSWER_S = 5.0
ATTEMPTS = 2


def check_catalog(catalog: CatalogRef, policy: SourcePolicy) -> None:
    """A local catalog's first records are read (its file was checked when the reference was parsed), which warns
    about unknown fields now, to the person submitting it. A remote one is checked by check_remote_catalog."""
    if catalog.path is not None:
        for _ in islice(read_catalog(catalog.path, policy), LOOKAHEAD_RECORDS):
            pass


def check_remote_catalog(settings: Settings, catalog: CatalogRef) -> None:
    """An s3:// catalog's object must exist and be readable with this machine's credentials; an http(s) one
    is downloaded once (no request short of a download is answered alike by every server)."""
    uri = catalog.uri
    if uri.scheme is Scheme.FILE:
        return
    if uri.scheme is Scheme.S3:
        from botocore.exceptions import BotoCoreError, ClientError

        client = make_client(max_attempts=ATTEMPTS, read_timeout_s=ANSWER_S)
        try:
            client.head_object(Bucket=uri.authority, Key=uri.path)
        except (BotoCoreError, ClientError) as exc:
            raise CatalogError(
                f"catalog {printable(uri.raw)} cannot be read: {printable(str(exc))}"
            ) from None
        return
    from storage.fetch import Fetcher

    try:
        # into the node cache, where the feed that reads it on this machine finds it again
        with Fetcher(settings, max_attempts=ATTEMPTS).local_path(uri.raw):
            pass
    except ReelgenError as exc:
        raise CatalogError(f"catalog {printable(uri.raw)} cannot be read: {printable(str(exc))}") from None


def check_store(out: str) -> None:
    """The output store must take a probe object, written and deleted again; ConfigError if either fails.

    S3 is asked with few attempts and short timeouts (credentials, bucket, permissions and endpoint are all
    proven by the put); a local folder must be creatable and writable.
    """
    try:
        store = _probe_client_store(out)
        key = f"_reelgen/preflight-{process_tag()}-{uuid.uuid4().hex[:8]}"
        store.put_bytes(key, b"reelgen preflight\n", "text/plain")
        store.delete(key)
    except ReelgenError as exc:
        raise ConfigError(
            f"the output store {printable(out)} does not take writes: {printable(str(exc))}"
        ) from None


def _probe_client_store(out: str) -> ObjectStore:
    uri = parse_uri(out)
    if uri.scheme is Scheme.S3:
        client = make_client(max_attempts=ATTEMPTS, read_timeout_s=ANSWER_S)
        return S3Store(uri.authority, uri.path, client=client)
    return open_store(uri)


def check_redis(url: str) -> None:
    """Redis must answer a PING within a few seconds (and accept the password, if any); redis-py's error says
    why not (the CLI prints it in one line, naming the setting)."""
    client = redis.Redis.from_url(url, socket_connect_timeout=ANSWER_S, socket_timeout=ANSWER_S)
    try:
        client.ping()
    finally:
        client.close()


def check_job(settings: Settings, catalog: CatalogRef, kind: str, *, lookahead: bool = True) -> None:
    """Everything a catalog job needs before it is registered, cheapest first; Redis is checked by the caller,
    which may still have to start it (an embedded one). lookahead: read a local catalog's first records."""
    if lookahead:
        check_catalog(catalog, settings.source_policy(kind))
    check_remote_catalog(settings, catalog)
    check_store(settings.output_config().out)
