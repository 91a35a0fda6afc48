"""Registering jobs: a catalog job (run, backfill, nightly) or a retry of another job's failures.

Registering only writes the job to the ledger and returns; a dispatcher picks it up.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from core.errors import CatalogError, ConfigError
from core.settings import Settings, SourcePolicy
from core.text import printable
from jobs.intake.catalog_ref import CatalogRef
from jobs.ledger import JobKind, JobRecord, Ledger, Reprocess
from storage.store import open_store

#: the job record's field holding its SourcePolicy (JSON)
SOURCES_FIELD = "sources"


def count_lines(catalog: Path) -> int:
    """Records in a local catalog (a streaming pass: the total that status uses for progress and ETA)."""
    from jobs.intake.catalog import physical_lines

    with open(catalog, "rb") as handle:
        lines = sum(1 for _, line in physical_lines(handle) if line is None or line.strip())
    return max(0, lines - 1) if catalog.suffix.lower() == ".csv" else lines


def priority_for(settings: Settings, kind: JobKind, override: int | None) -> int:
    if override is not None:
        return override
    return settings.priority_classes.get(kind.value, 1)


def source_policy(job: JobRecord, settings: Settings) -> SourcePolicy:
    """The source policy a catalog job was registered with; a job registered before jobs kept one gets its
    kind's policy under the current settings."""
    kept = job.extra.get(SOURCES_FIELD)
    return SourcePolicy.model_validate_json(kept) if kept else settings.source_policy(job.kind.value)


def submit_catalog_job(
    ledger: Ledger,
    settings: Settings,
    kind: JobKind,
    catalog: CatalogRef,
    *,
    priority: int | None = None,
    reprocess: Reprocess = Reprocess.MISSING,
    max_in_flight: int | None = None,
    extra: dict[str, str] | None = None,
    job_id: str | None = None,
) -> JobRecord:
    total = None if catalog.path is None else count_lines(catalog.path)
    config = settings.output_config()
    store = open_store(config.out)
    return ledger.create_job(
        kind=kind,
        catalog=str(catalog),
        out=store.root,
        config_hash=config.config_hash,
        config=config.model_copy(update={"out": store.root}).model_dump(mode="json"),
        priority=priority_for(settings, kind, priority),
        reprocess=reprocess,
        max_in_flight=max_in_flight or settings.max_in_flight,
        total=total,
        extra={**(extra or {}), SOURCES_FIELD: settings.source_policy(kind.value).model_dump_json()},
        job_id=job_id,
    )


def retry_candidates(ledger: Ledger, parent_id: str, error: str | None, include_dead: bool) -> Counter[str]:
    """Error class -> count of the parent's failures a retry would take (items with a catalog entry)."""
    counts: Counter[str] = Counter()
    for failure in ledger.iter_failures(parent_id):
        if (
            failure.entry
            and (error is None or failure.error == error)
            and (include_dead or not failure.dead or error)
        ):
            counts[failure.error] += 1
    return counts


def submit_retry(
    ledger: Ledger,
    settings: Settings,
    parent_id: str,
    *,
    error: str | None = None,
    include_dead: bool = False,
    priority: int | None = None,
) -> JobRecord:
    parent = ledger.job(parent_id)
    total = sum(retry_candidates(ledger, parent_id, error, include_dead).values())
    if total == 0:
        raise ConfigError(
            f"job {parent_id} has no failed items{' of class ' + error if error else ''} to retry"
        )
    extra = {"parent": parent_id, "error_filter": error or "", "include_dead": "1" if include_dead else "0"}
    return ledger.create_job(
        kind=JobKind.RETRY,
        catalog=f"retry:{parent_id}",
        out=parent.out,
        config_hash=parent.config_hash,
        config=parent.config,
        priority=priority_for(settings, JobKind.RETRY, priority),
        reprocess=Reprocess.ALL,
        max_in_flight=parent.max_in_flight,
        total=total,
        extra=extra,
    )


def plan_catalog(
    settings: Settings, catalog: CatalogRef, reprocess: Reprocess, page: int = 1000
) -> Counter[str]:
    """What a catalog job would do, without registering it: counts of process / skip / bad (a dry run)."""
    from core.catalog_entry import CatalogEntry
    from jobs.intake.catalog import BadLine, read_catalog
    from jobs.intake.fingerprints import FingerprintSet, fingerprint
    from jobs.intake.results_index import DoneCheck

    if catalog.path is None:
        raise CatalogError(f"a dry run reads a local catalog; {printable(str(catalog))} is not one")
    check = DoneCheck(
        open_store(settings.output_config().out), settings.output_config().config_hash, reprocess
    )
    seen = FingerprintSet()
    counts: Counter[str] = Counter()
    batch: list[CatalogEntry] = []

    def settle() -> None:
        for done in check.skip(batch):
            counts["skip" if done else "process"] += 1
        batch.clear()

    # the dry run of `reelgen backfill`: lines its policy refuses count as bad
    for _line_no, record in read_catalog(catalog.path, settings.source_policy(JobKind.BACKFILL.value)):
        if isinstance(record, BadLine) or fingerprint(record.item_id) in seen:
            counts["bad"] += 1
            continue
        seen.add(fingerprint(record.item_id))
        batch.append(record)
        if len(batch) >= page:
            settle()
    settle()
    counts["manifest_reads"] = check.manifest_reads
    return counts
