"""`reelgen run`: register a job, dispatch its catalog, run local workers, wait, summarise; and the same for a
retry of a local run's failures (`reelgen retry` without a shared Redis).

Exit status (a contract: docs/architecture.md): 0 all items done, 1 some failed, 2 usage or configuration error.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TextIO

import redis
from pydantic import SecretStr

from core.daemon_settings import DaemonSettings
from core.errors import ReelgenError
from core.private import private_dir
from core.processes import terminate
from core.settings import Settings
from core.text import printable
from gpu_service.supervisor import DaemonProcess
from gpu_service.usage import DaemonUsage, read_usage
from jobs.broker.celery_app import app, configure
from jobs.dispatch.dispatcher import Dispatcher
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.preflight import check_job, check_redis, check_store
from jobs.intake.submit import submit_catalog_job, submit_retry
from jobs.ledger import JobKind, JobRecord, JobState, Ledger
from jobs.local.local_state import local_redis
from jobs.local.worker_pool import WorkerPool
from monitoring.progress import ProgressDisplay, Snapshot
from storage.store import ObjectStore, open_store

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: where a local run's summary is kept in its output store, one file per job (the HTML report reads them)
RUNS_PREFIX = "_reelgen/runs/"


def local_daemon_settings(settings: Settings) -> DaemonSettings:
    """The daemon `reelgen run` starts: its socket in the state folder; on the CPU one compute thread unless
    configured, since the workers' decoders and encoders already fill the cores."""
    threads = settings.daemon.torch_threads or 1
    return settings.daemon.model_copy(
        update={
            "socket_path": settings.daemon_socket.resolve(),
            "torch_threads": threads,
            "parent_pid": os.getpid(),
        }
    )


def worker_env(settings: Settings, redis_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        REELGEN_REDIS_URL=redis_url,
        REELGEN_STATE_DIR=str(settings.state_dir.resolve()),
        REELGEN_CPUS=str(settings.cpus),
        REELGEN_WORKERS=str(settings.worker_count),
        REELGEN_CODEC_THREADS=str(settings.threads_per_worker),
        REELGEN_DAEMON__SOCKET_PATH=str(settings.daemon_socket.resolve()),
        REELGEN_PARENT_PID=str(os.getpid()),
        # a run's own choice (bench/e2e.py turns it off), not only the environment's
        REELGEN_SHARE_WORK=str(settings.share_work).lower(),
    )
    return env


def summarise(
    ledger: Ledger,
    job: JobRecord,
    out_uri: str,
    elapsed_s: float,
    inference: DaemonUsage | None,
    stream: TextIO,
) -> None:
    print(
        f"job {job.id}: {job.done} done, {job.failed} failed, {job.skipped} skipped "
        f"in {elapsed_s:.1f} s; outputs in {out_uri}",
        file=stream,
    )
    if job.state is JobState.FAILED:
        print(f"  the job failed: {printable(job.error)}", file=stream)
    if inference is not None:
        print(f"  {inference.describe()}", file=stream)
    for failure in ledger.failures(job.id):
        # messages quote catalog text (ids, URIs): escaped, it cannot rewrite the terminal or forge a line
        print(
            f"  FAILED {printable(failure.item_id)}: {printable(failure.error)}: {printable(failure.message)}",
            file=stream,
        )


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int
    job: JobRecord
    #: {stage: {"cpu": s, "wall": s, "runs": n}} summed over the job's items
    stages: dict[str, dict[str, float]]
    #: what the inference daemon served (None if it did not answer at the end)
    inference: DaemonUsage | None


def run_catalog(settings: Settings, catalog: CatalogRef, *, stream: TextIO = sys.stdout) -> RunOutcome:
    """Check, register and run a catalog job on this machine (a path, s3:// or http(s):// catalog)."""
    apply_s3_settings(settings)
    # no lookahead: the run's own feed reads the catalog at once, and warns above the progress display
    check_job(settings, catalog, JobKind.RUN.value, lookahead=False)
    return run_job(
        settings, lambda ledger: submit_catalog_job(ledger, settings, JobKind.RUN, catalog), stream=stream
    )


def retry_locally(
    settings: Settings,
    parent_id: str,
    *,
    error: str | None,
    include_dead: bool,
    priority: int | None,
    stream: TextIO = sys.stdout,
) -> RunOutcome:
    """Register a retry of a local run's failures and run it here, as `reelgen run` ran the job."""
    apply_s3_settings(settings)

    def register(ledger: Ledger) -> JobRecord:
        check_store(ledger.job(parent_id).out)
        return submit_retry(
            ledger, settings, parent_id, error=error, include_dead=include_dead, priority=priority
        )

    return run_job(settings, register, stream=stream, existing=True)


def run_job(
    settings: Settings,
    register: Callable[[Ledger], JobRecord],
    *,
    stream: TextIO = sys.stdout,
    existing: bool = False,
) -> RunOutcome:
    """Register a job, feed it with the one dispatcher (in process), run local workers, wait, summarise.

    Without a shared Redis, the ledger is the state folder's (existing: only one a run has kept there)."""
    started = time.monotonic()
    with ExitStack() as stack:
        if settings.redis_url is None:
            redis_url = stack.enter_context(local_redis(settings.state_dir, existing=existing))
            settings = settings.model_copy(update={"redis_url": SecretStr(redis_url)})
        else:
            redis_url = settings.redis_url.get_secret_value()
            check_redis(redis_url)
        # logs, the daemon's socket and the default node cache live here too, whichever Redis is used
        private_dir(settings.state_dir)
        settings = own_daemon_socket(settings)
        configure(app, settings)
        ledger = Ledger(redis.Redis.from_url(redis_url))
        job = register(ledger)
        store = open_store(job.out)
        aspects = ", ".join(job.config.get("aspects") or [])
        print(f"job {job.id}: {printable(job.catalog)} -> {store.root} ({aspects})", file=stream)
        daemon = DaemonProcess(
            local_daemon_settings(settings), settings.state_dir / "logs" / f"daemon-{job.id}.log"
        )
        # The daemon loads its models while the workers start and take their first tasks (fetching, probing,
        # decoding): their inference client waits for the daemon's socket, and every tick follows the start.
        daemon.launch()
        stack.callback(daemon.stop)
        pool = stack.enter_context(
            WorkerPool(
                concurrency=settings.worker_count,
                env=worker_env(settings, redis_url),
                log_file=settings.state_dir / "logs" / f"worker-{job.id}.log",
            )
        )
        display = stack.enter_context(ProgressDisplay())
        dispatcher = Dispatcher(ledger, app, settings, only=job.id)
        current = job

        def tick() -> None:
            nonlocal current
            daemon.ensure_running()
            pool.ensure_running()
            current = ledger.job(job.id)
            display.update(
                Snapshot(
                    done=current.done, failed=current.failed, skipped=current.skipped, total=current.total,
                    stages=ledger.in_flight_by_stage(job.id), state=current.state.value,
                )
            )  # fmt: skip

        dispatcher.serve(stop=lambda: current.state.finished, on_tick=tick)
        display.close()  # the summary prints below the display's last state
        inference = read_usage(settings.daemon_socket)
        # the job is over and nothing runs: workers and daemon shut down side by side (after a failure the
        # stack stops them in turn instead, the daemon outliving the workers while they finish their tasks)
        terminate(pool.detach(), daemon.detach(), timeout_s=30.0)
        final = ledger.job(job.id)
        elapsed = time.monotonic() - started
        summarise(ledger, final, store.root, elapsed, inference, stream)
        stages = ledger.stage_totals(job.id)
        keep_summary(store, final, ledger.error_counts(job.id), stages, elapsed, inference)
    ok = final.failed == 0 and final.state is not JobState.FAILED
    return RunOutcome(EXIT_OK if ok else EXIT_FAILED, final, stages, inference)


def own_daemon_socket(settings: Settings) -> Settings:
    """A socket of this process's own for the daemon it starts, unless one was configured: another run or retry
    on the same state folder may be serving its daemon at the same time."""
    if settings.daemon.socket_path.is_absolute():
        return settings
    socket = (settings.state_dir / f"gpu-daemon-{os.getpid()}.sock").resolve()
    return settings.model_copy(update={"daemon": settings.daemon.model_copy(update={"socket_path": socket})})


def keep_summary(
    store: ObjectStore,
    job: JobRecord,
    errors: dict[str, int],
    stages: dict[str, dict[str, float]],
    elapsed_s: float,
    inference: DaemonUsage | None,
) -> None:
    """The run's summary beside its outputs (`_reelgen/runs/<job>.json`), for the report; a store that refuses
    it costs the report its summary, not the run its result."""
    summary = {
        "job_id": job.id,
        "kind": job.kind.value,
        "state": job.state.value,
        "catalog": job.catalog,
        "total": job.total,
        "done": job.done,
        "failed": job.failed,
        "skipped": job.skipped,
        "elapsed_s": round(elapsed_s, 3),
        "errors": errors,
        "stages": stages,
        "inference": inference.describe() if inference is not None else None,
        "error": job.error,
    }
    try:
        store.put_bytes(
            f"{RUNS_PREFIX}{job.id}.json", json.dumps(summary, indent=1).encode(), "application/json"
        )
    except ReelgenError as exc:
        log.warning("the run's summary was not kept: %s", exc)


def apply_s3_settings(settings: Settings) -> None:
    """Hand the configured S3 endpoint and region to boto3's standard chain, for this process and its workers.

    storage/ builds its clients from that chain (AWS_ENDPOINT_URL_S3 is boto3's service-specific endpoint
    variable), so every store and fetcher, in the run and in the workers it starts, reaches the same S3.
    """
    if settings.s3_endpoint_url:
        os.environ["AWS_ENDPOINT_URL_S3"] = settings.s3_endpoint_url
    if settings.s3_region:
        os.environ["AWS_DEFAULT_REGION"] = settings.s3_region
