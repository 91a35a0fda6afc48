"""The inference daemon's entry point (`python -m gpu_service`, `reelgen gpu-daemon`): its flags parsed into
DaemonSettings, then served until SIGTERM/SIGINT.

The daemon itself is gpu_service/server.py (sockets, slots, bookkeeping), over gpu_service/engine.py (the model
calls) and gpu_service/device.py (device set-up).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from pydantic import ValidationError

from core.daemon_settings import DaemonSettings, MiB
from core.errors import ConfigError
from core.processes import exit_with_parent
from gpu_service.server import Daemon
from monitoring.logging_setup import FORMATS, resolve_format, setup_logging

log = logging.getLogger("gpu_service.daemon")
# Start-up and stop are announced whatever --log-level says: supervisors and operators wait for "ready".
announce = logging.getLogger("gpu_service.daemon.lifecycle")
announce.setLevel(logging.INFO)


def parse_cores(text: str) -> tuple[int, ...]:
    """'2-3,6' -> (2, 3, 6)."""
    cores: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cores.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(cores)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gpu_service", description="reelgen's inference daemon")
    p.add_argument("--settings-json", help="a DaemonSettings as JSON; the flags below override its fields")
    p.add_argument("--socket", type=Path, help="Unix socket path")
    p.add_argument("--device", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--models", help="comma-separated registry names")
    p.add_argument("--model-modules", help="comma-separated modules to import for their @register calls")
    p.add_argument(
        "--weights", action="append", metavar="MODEL=PATH", help="weights of one model (repeatable)"
    )
    p.add_argument("--max-batch", type=int)
    p.add_argument("--max-delay-ms", type=float)
    p.add_argument("--buckets", help="comma-separated batch sizes, increasing")
    p.add_argument("--slots", type=int)
    p.add_argument("--slot-mb", type=float, help="slot size in MiB")
    p.add_argument("--threads", type=int, help="torch intra-op threads")
    p.add_argument("--pin-cores", help="cores for the compute thread, e.g. 2-3")
    p.add_argument("--metrics-port", type=int)
    p.add_argument("--no-warmup", action="store_true")
    p.add_argument("--log-level", default="INFO")
    p.add_argument(
        "--log-format", choices=FORMATS, help="text or json (default: REELGEN_LOG_FORMAT, else text)"
    )
    return p


def settings_from_args(args: argparse.Namespace) -> DaemonSettings:
    base: dict[str, Any] = json.loads(args.settings_json) if args.settings_json else {}

    def csv(text: str) -> tuple[str, ...]:
        return tuple(x.strip() for x in text.split(",") if x.strip())

    overrides: dict[str, Any] = {
        "socket_path": args.socket,
        "device": args.device,
        "models": csv(args.models) if args.models else None,
        "model_modules": csv(args.model_modules) if args.model_modules else None,
        "max_batch": args.max_batch,
        "max_delay_ms": args.max_delay_ms,
        "buckets": tuple(int(b) for b in csv(args.buckets)) if args.buckets else None,
        "slots": args.slots,
        "slot_bytes": int(args.slot_mb * MiB) if args.slot_mb else None,
        "torch_threads": args.threads,
        "pin_cores": parse_cores(args.pin_cores) if args.pin_cores else None,
        "metrics_port": args.metrics_port,
        "warmup": False if args.no_warmup else None,
    }
    if args.weights:
        pairs = [w.split("=", 1) for w in args.weights]
        if any(len(p) != 2 for p in pairs):
            raise ValueError("--weights takes MODEL=PATH")
        overrides["weights"] = dict(pairs)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return DaemonSettings.model_validate(base)


def serve(settings: DaemonSettings) -> int:
    """Run a daemon until SIGTERM/SIGINT; 0 after a clean stop, 1 if it failed, 2 on a configuration error."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        if settings.parent_pid is not None:
            exit_with_parent(settings.parent_pid)
    try:
        daemon = Daemon(settings)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    try:
        daemon.start()
    except ConfigError as exc:
        log.error("%s", exc)
        daemon.stop()
        return 2
    except Exception:
        log.exception("the inference daemon failed to start")
        daemon.stop()
        return 1
    # Everything loaded so far (torch, the models) lives as long as the daemon: in the permanent generation,
    # no collection walks it again, including the full one at exit, which took ~0.5 s of every stop.
    gc.freeze()
    announce.info(
        "reelgen gpu daemon ready: socket=%s device=%s models=%s slots=%dx%d threads=%d metrics_port=%s",
        settings.socket_path,
        daemon.device,
        ",".join(settings.models),
        settings.slots,
        settings.slot_bytes,
        daemon.torch_threads,
        daemon.metrics_port,
    )
    while not stop.wait(0.5):
        if daemon.crashed.is_set():
            break
    daemon.stop()
    announce.info("reelgen gpu daemon stopped")
    return 1 if daemon.crashed.is_set() else 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        setup_logging(resolve_format(args.log_format), args.log_level.upper())
        settings = settings_from_args(args)
    except (ValidationError, ValueError, ConfigError) as exc:
        print(f"gpu daemon: invalid settings: {exc}", file=sys.stderr)
        return 2
    return serve(settings)
