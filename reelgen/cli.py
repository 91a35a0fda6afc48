"""The `reelgen` command line: one argparse tree, its commands, and how their failures are printed.

Kept whole: the commands share the parsers, exit codes and one-line error printing, and the whole command line
is read here top to bottom; what each command does lives in jobs/ and the other layers, not here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from core import __version__
from core.errors import CatalogError, ConfigError, ForbiddenSource, JobNotFound, JobStateError
from core.placements import load_placements
from core.settings import Settings, load_settings
from core.text import printable
from monitoring.logging_setup import FORMATS, resolve_format, setup_logging
from reelgen import cli_args

EXIT_USAGE = 2
DELEGATED = ("flower", "gpu-daemon")


def _settings(args: argparse.Namespace, **overrides: Any) -> Settings:
    from core.names import warn_unknown_variables

    # first: importing the runner loads the settings, and a misspelt nested setting fails that load
    warn_unknown_variables()
    from jobs.local.runner import apply_s3_settings

    settings = load_settings(**overrides)
    apply_s3_settings(settings)
    return settings


def _ledger(settings: Settings) -> Any:
    import redis

    from jobs.broker.celery_app import app, configure
    from jobs.intake.preflight import check_redis
    from jobs.ledger import Ledger

    if settings.redis_url is None:
        raise ConfigError(
            "this command needs the shared Redis: set REELGEN_REDIS_URL (only `reelgen run` embeds its own)"
        )
    check_redis(settings.redis_url.get_secret_value())
    configure(app, settings)
    return Ledger(redis.Redis.from_url(settings.redis_url.get_secret_value()))


def _cmd_run(args: argparse.Namespace) -> int:
    settings = _settings(
        args,
        out=args.out,
        aspects=args.aspects,
        placements=args.placements,
        workers=args.workers,
        state_dir=args.state_dir,
    )
    from jobs.intake.catalog_ref import CatalogRef
    from jobs.local.runner import run_catalog

    return run_catalog(settings, CatalogRef.parse(args.catalog)).exit_code


def _cmd_backfill(args: argparse.Namespace) -> int:
    from jobs.intake.catalog_ref import CatalogRef
    from jobs.intake.preflight import check_job
    from jobs.intake.submit import plan_catalog, submit_catalog_job
    from jobs.ledger import JobKind, Reprocess

    settings = _settings(args, out=args.out, aspects=args.aspects, placements=args.placements)
    reprocess = Reprocess(args.reprocess)
    catalog = CatalogRef.parse(args.catalog)
    if args.dry_run:
        counts = plan_catalog(settings, catalog, reprocess)
        print(
            f"dry run: {counts['process']} to process, {counts['skip']} already done, {counts['bad']} bad lines "
            f"({counts['manifest_reads']} manifests read)"
        )
        return 0
    check_job(settings, catalog, JobKind.BACKFILL.value)
    job = submit_catalog_job(
        _ledger(settings),
        settings,
        JobKind.BACKFILL,
        catalog,
        priority=args.priority,
        reprocess=reprocess,
        max_in_flight=args.max_in_flight,
    )
    print(job.id)
    return 0


def _cmd_nightly(args: argparse.Namespace) -> int:
    settings = _settings(args, out=args.out)
    from jobs.intake.catalog_ref import CatalogRef
    from jobs.intake.preflight import check_job
    from jobs.ledger import JobKind
    from jobs.schedule import create_nightly, logical_date

    text = args.catalog or settings.nightly_catalog
    if not text:
        raise ConfigError("no nightly catalog: give --catalog or set REELGEN_NIGHTLY_CATALOG")
    catalog = CatalogRef.parse(text)
    check_job(settings, catalog, JobKind.NIGHTLY.value)
    job, created = create_nightly(_ledger(settings), settings, args.date or logical_date(settings), catalog)
    print(job.id if created else f"{job.id} (already registered for this date)")
    return 0


def _cmd_retry(args: argparse.Namespace) -> int:
    settings = _settings(args, state_dir=args.state_dir)
    from jobs.intake.preflight import check_store
    from jobs.intake.submit import retry_candidates, submit_retry
    from jobs.local.local_state import job_ledger
    from jobs.local.runner import retry_locally

    if settings.redis_url is None and not args.dry_run:
        # a local run's retry runs here, as the run did: nothing else would serve it
        outcome = retry_locally(
            settings, args.job, error=args.error, include_dead=args.include_dead, priority=args.priority
        )
        return outcome.exit_code
    with job_ledger(settings) as (settings, ledger):
        parent = ledger.job(args.job)
        if args.dry_run:
            counts = retry_candidates(ledger, args.job, args.error, args.include_dead)
            print(f"dry run: would retry {sum(counts.values())} item(s) of job {args.job}")
            for error, count in counts.most_common():
                print(f"  {error} x{count}")
            return 0
        check_store(parent.out)
        job = submit_retry(
            ledger,
            settings,
            args.job,
            error=args.error,
            include_dead=args.include_dead,
            priority=args.priority,
        )
    print(job.id)
    return 0


def _cmd_job(args: argparse.Namespace) -> int:
    from jobs.ledger import JobAction
    from jobs.local.local_state import job_ledger

    with job_ledger(_settings(args, state_dir=args.state_dir)) as (_, ledger):
        if args.action == "limit":
            if args.value is None:
                raise ConfigError("job limit needs a number of items in flight, e.g. job limit JOB 8")
            ledger.set_max_in_flight(args.job, args.value)
            print(f"{args.job}: at most {args.value} items in flight")
            return 0
        state = ledger.control(args.job, JobAction(args.action))
    print(f"{args.job}: {state.value}")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    settings = _settings(args, state_dir=args.state_dir)
    from jobs.broker.celery_app import app
    from jobs.local.local_state import job_ledger
    from jobs.status import broker_status, job_status, render, render_broker

    with job_ledger(settings) as (_, ledger):
        jobs = [ledger.job(args.job)] if args.job else ledger.jobs(args.limit)
        statuses = [job_status(ledger, job) for job in jobs]
        broker = broker_status(ledger.redis, app)
    if args.json:
        if args.job:
            print(json.dumps(statuses[0].to_json() | {"broker": broker.to_json()}, indent=1))
        else:
            print(json.dumps([s.to_json() for s in statuses], indent=1))
    else:
        print("\n".join([*(render(s) for s in statuses), render_broker(broker)]) if statuses else "no jobs")
    return 0


def _cmd_dispatcher(args: argparse.Namespace) -> int:
    from jobs.broker.celery_app import app
    from jobs.dispatch.dispatcher import Dispatcher
    from jobs.services import run_dispatcher

    settings = _settings(args)
    if args.once:
        dispatcher = Dispatcher(_ledger(settings), app, settings)
        dispatcher.tick()
        dispatcher.close()
        return 0
    _service_logging()
    return run_dispatcher(settings, _ledger(settings))


def _service_logging() -> None:
    # a service's log is its record of work, not a terminal's: INFO unless the operator asked for DEBUG
    root = logging.getLogger()
    root.setLevel(min(root.level, logging.INFO))


def _cmd_worker(args: argparse.Namespace) -> int:
    from jobs.services import run_worker

    beat = {"worker_heartbeat_s": args.heartbeat_s} if args.heartbeat_s else {}
    settings = _settings(args, workers=args.concurrency, **beat)  # validates the beat against the loss bound
    _ledger(settings)  # checks the Redis setting and configures the app
    heartbeat = Path(args.heartbeat_file) if args.heartbeat_file else settings.worker_heartbeat_file
    argv = [
        "worker", "--pool", "prefork", "--concurrency", str(settings.worker_count),
        "--queues", args.queues or settings.worker_queues, "--loglevel", args.loglevel,
        "--without-gossip", "--without-mingle", "--events",
    ]  # fmt: skip
    if args.hostname:
        argv += ["--hostname", args.hostname]
    return run_worker(settings, argv, heartbeat, settings.worker_heartbeat_s)


def _cmd_beat(args: argparse.Namespace) -> int:
    from jobs.services import run_beat

    settings = _settings(args)
    _ledger(settings)
    schedule = Path(args.schedule_file) if args.schedule_file else settings.state_dir / "celerybeat-schedule"
    schedule.parent.mkdir(parents=True, exist_ok=True)
    return run_beat(settings, ["beat", "--schedule", str(schedule), "--loglevel", args.loglevel])


def _cmd_flower(args: argparse.Namespace) -> int:
    if {"-h", "--help"} & set(args.extra):
        print(args.usage())  # reelgen's own help: Flower's needs a broker before it prints anything
        return 0
    try:
        module = importlib.import_module("reelgen.flower")
    except ModuleNotFoundError as exc:
        if exc.name not in ("reelgen.flower", "monitoring"):
            raise
        print("reelgen: flower: reelgen.flower is not installed in this build", file=sys.stderr)
        return EXIT_USAGE
    run_flower = getattr(module, "run_flower", None)
    if run_flower is None:
        print("reelgen: flower: reelgen.flower has no run_flower(settings, extra_args)", file=sys.stderr)
        return EXIT_USAGE
    code: int = run_flower(_settings(args), list(args.extra))
    return code


def _cmd_gpu_daemon(args: argparse.Namespace) -> int:
    from gpu_service.daemon import main as daemon_main

    return daemon_main(list(args.extra))


def _cmd_sample_catalog(args: argparse.Namespace) -> int:
    from reelgen.sample_catalog import write_sample_catalog

    catalog = write_sample_catalog(
        Path(args.dir),
        args.items,
        seed=args.seed,
        duration_s=(args.min_duration, args.max_duration),
        hard_cases=args.hard_cases,
    )
    print(catalog)
    return 0


def _cmd_eval_highlights(args: argparse.Namespace) -> int:
    from reelgen.evaluation import evaluate, report

    results = list(evaluate(load_settings(), Path(args.catalog)))
    print(report(results, as_json=args.json))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from reelgen.report import REPORT_FOLDER, load_manifests, write_report

    out = Path(args.run)
    manifests = load_manifests(out)
    if not manifests:
        raise ConfigError(f"no manifests under {out} (give the --out folder of a run)")
    page = write_report(
        manifests, Path(args.dest) if args.dest else out / REPORT_FOLDER, title=f"reelgen run {out}", out=out
    )
    print(page)
    return 0


def _cmd_probe(args: argparse.Namespace) -> int:
    from storage.fetch import Fetcher
    from workers.media.probe import probe

    source = str(args.source)
    if "://" in source and not source.lower().startswith("file://"):
        with Fetcher(load_settings()).local_path(source) as path:
            report = probe(path)
        report.file = source
    else:
        path = Path(source.removeprefix("file://"))
        if not path.is_file():
            raise ConfigError(f"{source}: no such file")
        report = probe(path)
    print(json.dumps(report.as_dict(), indent=2) if args.json else "\n".join(report.lines()))
    return 0 if report.decodes else 1


def _cmd_config(args: argparse.Namespace) -> int:
    settings = _settings(args)
    from jobs.broker.celery_app import check_timeouts

    check_timeouts(settings)
    shown = settings.masked()
    shown["config_hash"] = settings.output_config().config_hash
    print(json.dumps(shown, indent=2, default=str))
    return 0


def _output_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--out", help="output folder or s3://bucket/prefix (default: REELGEN_OUT, else ./out)"
    )
    command.add_argument(
        "--aspects", type=cli_args.aspects, help="comma-separated aspect ratios, e.g. 1:1,9:16 (default: six)"
    )
    command.add_argument(
        "--placements",
        type=cli_args.placements,
        help="comma-separated publishing targets, each clip at the target's size and kept inside its safe zone: "
        f"{', '.join(load_placements())}, and any a REELGEN_PLACEMENTS_FILE adds; given alone, they replace the "
        "default aspects",
    )


def _state_dir_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--state-dir",
        help="without REELGEN_REDIS_URL: the --state-dir a local `reelgen run` took, whose ledger to use "
        "(default: REELGEN_STATE_DIR, else .reelgen)",
    )


#: what `reelgen --help` says above the commands: for the people who run reelgen, not for its maintainers
DESCRIPTION = (
    "Turn a product catalog into short clips in several aspect ratios, with a manifest per item. `run` is "
    "self-contained (an embedded Redis and local workers). The catalog commands (backfill, nightly, retry, "
    "job, status) and the long-running services (dispatcher, worker, beat, flower, gpu-daemon: a deployment's "
    "container entrypoints) share one Redis, named by REELGEN_REDIS_URL."
)


def build_parser() -> argparse.ArgumentParser:
    parser = cli_args.OneLineParser(prog="reelgen", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"reelgen {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        help="text, or json: one object per line (default: REELGEN_LOG_FORMAT)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="process a catalog end to end on this machine",
        description="Process a catalog on this machine: an embedded Redis (unless REELGEN_REDIS_URL is set), "
        "local Celery workers and inference daemon, live progress, a summary; exit 0 all done, 1 some failed, "
        "2 usage or configuration error.",
    )
    run.add_argument("catalog", help="catalog (JSONL or CSV): a path, s3://bucket/key or https:// URL")
    _output_flags(run)
    run.add_argument(
        "--workers", type=cli_args.positive_int, help="Celery worker processes (default: one per CPU)"
    )
    run.add_argument("--state-dir", help="folder for the embedded Redis, cache and logs (default: .reelgen)")
    run.set_defaults(func=_cmd_run)

    reprocess = ("missing", "failed", "all")
    backfill = commands.add_parser(
        "backfill", help="register a catalog job and return (a dispatcher feeds it)"
    )
    backfill.add_argument("catalog", help="catalog: a path, s3://bucket/key or https:// URL (JSONL or CSV)")
    _output_flags(backfill)
    backfill.add_argument(
        "--priority", type=cli_args.class_number, help="priority class (0 first); default from the job kind"
    )
    backfill.add_argument(
        "--max-in-flight", type=cli_args.positive_int, help="items in flight for this job (change: job limit)"
    )
    backfill.add_argument(
        "--reprocess", choices=reprocess, default="missing",
        help="missing: items without done outputs (default); failed: only items that failed before; all",
    )  # fmt: skip
    backfill.add_argument(
        "--dry-run", action="store_true", help="count what would be processed; register nothing"
    )
    backfill.set_defaults(func=_cmd_backfill)

    nightly = commands.add_parser(
        "nightly", help="register the nightly job of a logical date now (idempotent)"
    )
    nightly.add_argument(
        "--date",
        type=cli_args.iso_date,
        help="logical date YYYY-MM-DD (default: that of the schedule's last fire)",
    )
    nightly.add_argument("--catalog", help="catalog path or URI (default: REELGEN_NIGHTLY_CATALOG)")
    nightly.add_argument("--out", help="output folder or s3://bucket/prefix (default: REELGEN_OUT)")
    nightly.set_defaults(func=_cmd_nightly)

    retry = commands.add_parser(
        "retry",
        help="re-enqueue a job's failed items as a retry job",
        description="Retry a job's failed items. With REELGEN_REDIS_URL the retry job is registered for the "
        "dispatcher; without it, the failures of the local run in --state-dir are retried here, as `run` does.",
    )
    retry.add_argument("--job", required=True, help="the job whose failures to retry (see reelgen status)")
    retry.add_argument("--error", help="only failures of this error class (e.g. SourceUnreachable)")
    retry.add_argument("--include-dead", action="store_true", help="also dead-lettered items")
    retry.add_argument(
        "--priority",
        type=cli_args.class_number,
        help="priority class (0 first; default: REELGEN_PRIORITY_CLASSES)",
    )
    retry.add_argument("--dry-run", action="store_true", help="count what would be retried; enqueue nothing")
    _state_dir_flag(retry)
    retry.set_defaults(func=_cmd_retry)

    job = commands.add_parser("job", help="control a job: cancel, pause, resume, drain, limit")
    job.add_argument(
        "action",
        choices=("cancel", "pause", "resume", "drain", "limit"),
        help="pause/resume: stop/restart taking new items; drain: finish what is in flight, then end; "
        "cancel: end now; limit: set the items in flight",
    )
    job.add_argument("job", help="the job id (see reelgen status)")
    job.add_argument("value", nargs="?", type=cli_args.positive_int, help="for limit: items in flight")
    _state_dir_flag(job)
    job.set_defaults(func=_cmd_job)

    status = commands.add_parser(
        "status", help="counts, rate, ETA, items per stage, queue, workers and top errors per job"
    )
    status.add_argument("job", nargs="?", help="one job's id (default: the newest jobs)")
    status.add_argument(
        "--json", action="store_true", help="print JSON (with JOB: the broker's queue and workers)"
    )
    status.add_argument(
        "--limit", type=cli_args.positive_int, default=20, help="jobs listed without JOB (newest first)"
    )
    _state_dir_flag(status)
    status.set_defaults(func=_cmd_status)

    dispatcher = commands.add_parser("dispatcher", help="service: feed every running job, reap leases")
    dispatcher.add_argument("--once", action="store_true", help="one pass, then exit")
    dispatcher.set_defaults(func=_cmd_dispatcher)

    worker = commands.add_parser("worker", help="service: a Celery worker for this node")
    worker.add_argument("--queues", help="comma-separated queues (default: REELGEN_WORKER_QUEUES)")
    worker.add_argument(
        "--concurrency",
        type=cli_args.positive_int,
        help="worker processes (default: REELGEN_WORKERS or CPUs)",
    )
    worker.add_argument("--heartbeat-file", help="liveness file (default: REELGEN_WORKER_HEARTBEAT_FILE)")
    worker.add_argument("--heartbeat-s", type=cli_args.positive_float, help="seconds between heartbeats")
    worker.add_argument("--hostname", help="Celery node name, e.g. reelgen@%%h")
    worker.add_argument("--loglevel", default="INFO", help="Celery's log level (default: INFO)")
    worker.set_defaults(func=_cmd_worker)

    beat = commands.add_parser("beat", help="service: Celery beat with the nightly schedule (UTC cron)")
    beat.add_argument("--schedule-file", help="beat's state file (default: STATE_DIR/celerybeat-schedule)")
    beat.add_argument("--loglevel", default="INFO", help="Celery's log level (default: INFO)")
    beat.set_defaults(func=_cmd_beat)

    flower = commands.add_parser(
        "flower",
        help="service: the Flower dashboard (extra args go to Flower)",
        usage="reelgen flower [FLOWER ARGS...]",
        description="Flower on the broker of REELGEN_REDIS_URL, with basic auth from REELGEN_FLOWER__BASIC_AUTH "
        "(user:password); address, port and URL prefix from REELGEN_FLOWER__ADDRESS, __PORT and __URL_PREFIX. "
        "Every other argument goes to Flower unchanged, e.g. `reelgen flower --port=5566`; "
        "--allow-unauthenticated starts it without auth on a trusted network.",
    )
    flower.add_argument("extra", nargs=argparse.REMAINDER, help="arguments for Flower")
    flower.set_defaults(func=_cmd_flower, usage=flower.format_help)

    gpu = commands.add_parser("gpu-daemon", help="service: the inference daemon (args go to the daemon)")
    gpu.add_argument("extra", nargs=argparse.REMAINDER, help="arguments for the daemon (see its --help)")
    gpu.set_defaults(func=_cmd_gpu_daemon)

    sample = commands.add_parser("sample-catalog", help="write synthetic product videos and a catalog")
    sample.add_argument("dir", help="folder to write DIR/catalog.jsonl, its videos and main images into")
    sample.add_argument("--items", type=cli_args.positive_int, default=4, help="products (default: 4)")
    sample.add_argument("--seed", type=int, default=0, help="random seed: the same seed, the same catalog")
    sample.add_argument(
        "--min-duration", type=cli_args.positive_float, default=15.0, help="shortest video, seconds (15)"
    )
    sample.add_argument(
        "--max-duration", type=cli_args.positive_float, default=30.0, help="longest video, seconds (30)"
    )
    sample.add_argument("--hard-cases", action="store_true", help="also write the distorted hard cases")
    sample.set_defaults(func=_cmd_sample_catalog)

    evaluation = commands.add_parser(
        "eval-highlights", help="hit rate of chosen windows against a generated catalog's ground truth"
    )
    evaluation.add_argument("catalog", help="a catalog written by `reelgen sample-catalog`")
    evaluation.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    evaluation.set_defaults(func=_cmd_eval_highlights)

    report = commands.add_parser("report", help="write a static HTML report of a run's output folder")
    report.add_argument("run", help="the run's local output folder (its --out)")
    report.add_argument("--dest", help="folder for the report (default: RUN/_reelgen/report)")
    report.set_defaults(func=_cmd_report)

    probe = commands.add_parser(
        "probe", help="show what reelgen sees in one video: streams, timing, repairs, whether it decodes"
    )
    probe.add_argument("source", help="a video file, file://, s3:// or http(s):// URI")
    probe.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    probe.set_defaults(func=_cmd_probe)

    config = commands.add_parser("config", help="show the effective settings")
    config.add_argument("--show", action="store_true", help="print settings with secrets masked (default)")
    config.set_defaults(func=_cmd_config)
    return parser


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # SystemExit unwinds the with-blocks, so workers and the embedded Redis are stopped, not orphaned.
    raise SystemExit(128 + signum)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """reelgen's arguments; everything after a delegated command (flower, gpu-daemon) is that command's own,
    --help included, and lands in `extra` untouched."""
    parser = build_parser()
    passthrough = next(
        (
            at
            for at, arg in enumerate(argv)
            if not arg.startswith("-") and argv[at - 1 : at] != ["--log-format"]
        ),
        None,
    )
    if passthrough is not None and argv[passthrough] in DELEGATED:
        args = parser.parse_args(argv[: passthrough + 1])
        args.extra = argv[passthrough + 1 :]
        return args
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        log_format = resolve_format(args.log_format)
    except ConfigError as exc:
        print(f"reelgen: {exc}", file=sys.stderr)
        return EXIT_USAGE
    setup_logging(log_format, logging.INFO if args.verbose else logging.WARNING)
    try:
        code: int = args.func(args)
    except (ConfigError, CatalogError, ForbiddenSource, JobNotFound, JobStateError) as exc:
        print(f"reelgen: {type(exc).__name__}: {printable(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("reelgen: interrupted", file=sys.stderr)
        return 130
    except _redis_unreachable() as exc:
        # a Redis that cannot be reached (or refuses the password) is the setting's problem, not a crash of ours;
        # redis-py's message names the host and port, never the password
        print(
            f"reelgen: {type(exc).__name__}: cannot use the Redis of REELGEN_REDIS_URL: {printable(str(exc))}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return code


def _redis_unreachable() -> tuple[type[Exception], ...]:
    # jobs.broker.celery_app.REDIS_UNAVAILABLE, imported only once a command failed: importing that module loads the
    # settings and the Celery app, which most commands never need
    import redis
    from kombu.exceptions import OperationalError

    return (redis.ConnectionError, redis.TimeoutError, OperationalError)


if __name__ == "__main__":
    sys.exit(main())
