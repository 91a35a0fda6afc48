"""The `reelgen` command line."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from pathlib import Path

from reelgen import __version__
from reelgen.errors import CatalogError, ConfigError
from reelgen.settings import load_settings

EXIT_USAGE = 2


def _cmd_run(args: argparse.Namespace) -> int:
    from jobs.runner import run_catalog

    settings = load_settings(
        out=args.out, aspects=args.aspects, workers=args.workers, state_dir=args.state_dir
    )
    return run_catalog(settings, Path(args.catalog)).exit_code


def _cmd_sample_catalog(args: argparse.Namespace) -> int:
    from jobs.sample_catalog import write_sample_catalog

    catalog = write_sample_catalog(
        Path(args.dir),
        args.items,
        seed=args.seed,
        duration_s=(args.min_duration, args.max_duration),
        hard_cases=args.hard_cases,
    )
    print(catalog)
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    settings = load_settings()
    shown = settings.masked()
    shown["config_hash"] = settings.output_config().config_hash
    print(json.dumps(shown, indent=2, default=str))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reelgen", description=__doc__)
    parser.add_argument("--version", action="version", version=f"reelgen {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="process a catalog end to end on this machine")
    run.add_argument("catalog", help="catalog file (JSONL or CSV)")
    run.add_argument("--out", help="output folder or s3://bucket/prefix (default: ./out)")
    run.add_argument("--aspects", help="comma-separated aspect ratios, e.g. 1:1,9:16")
    run.add_argument("--workers", type=int, help="Celery worker processes (default: one per CPU)")
    run.add_argument("--state-dir", help="folder for the embedded Redis, cache and logs (default: .reelgen)")
    run.set_defaults(func=_cmd_run)

    sample = commands.add_parser("sample-catalog", help="write synthetic product videos and a catalog")
    sample.add_argument("dir")
    sample.add_argument("--items", type=int, default=4)
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--min-duration", type=float, default=15.0)
    sample.add_argument("--max-duration", type=float, default=30.0)
    sample.add_argument("--hard-cases", action="store_true", help="also write the distorted hard cases")
    sample.set_defaults(func=_cmd_sample_catalog)

    config = commands.add_parser("config", help="show the effective settings")
    config.add_argument("--show", action="store_true", help="print settings with secrets masked (default)")
    config.set_defaults(func=_cmd_config)
    return parser


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # SystemExit unwinds the with-blocks, so workers and the embedded Redis are stopped, not orphaned.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.func(args)
    except (ConfigError, CatalogError) as exc:
        print(f"reelgen: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("reelgen: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
