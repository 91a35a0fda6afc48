"""Health checks the Helm chart runs as exec probes: `python -m monitoring.health heartbeat|daemon ...`.

Standard library only: a probe starts a fresh interpreter every few seconds, and importing numpy, torch or
pydantic there would cost more than the check itself.

* heartbeat: `reelgen worker` touches REELGEN_WORKER_HEARTBEAT_FILE every REELGEN_WORKER_HEARTBEAT_S seconds;
  a file older than the limit means the worker is stuck. `celery inspect ping` instead is a broadcast through the
  broker that a busy prefork pool may answer late: it cannot tell a stuck worker from a slow broker.
* daemon: connects to the inference daemon's Unix socket, reads its hello and pings it. The daemon binds the
  socket only after its models are loaded and warmed up, and answers "ready" until it starts stopping, so this is
  ready-after-warm-up by construction.
* http: GETs URLs until each answers 2xx or the wait is over: `helm test`'s check of the release's Services.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

# gpu_service/protocol.py's framing: a 4-byte big-endian length, then a JSON object. Re-stated here rather than
# imported because that package imports pydantic and numpy (see the module docstring); tests run this probe
# against a real daemon, so a change of framing fails them.
_HEADER = struct.Struct("!I")
_MAX_MESSAGE = 1 << 20


def check_heartbeat(path: Path, max_age_s: float, now: float | None = None) -> tuple[bool, str]:
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        return False, f"no heartbeat file {path} (the worker has not started, or writes elsewhere)"
    age = (time.time() if now is None else now) - mtime
    if age > max_age_s:
        return False, f"heartbeat {path} is {age:.0f} s old (limit {max_age_s:.0f} s): the worker is stuck"
    return True, f"heartbeat {age:.1f} s old"


def _recv(sock: socket.socket) -> dict[str, Any]:
    def exact(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            data += chunk
        return data

    (length,) = _HEADER.unpack(exact(_HEADER.size))
    if length > _MAX_MESSAGE:
        raise ConnectionError(f"message of {length} bytes exceeds {_MAX_MESSAGE}")
    message = json.loads(exact(length))
    if not isinstance(message, dict):
        raise ConnectionError("the daemon sent something other than a JSON object")
    return message


def check_daemon(socket_path: Path, timeout_s: float = 5.0) -> tuple[bool, str]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        sock.connect(str(socket_path))
        hello = _recv(sock)
        if hello.get("op") != "hello":
            return False, f"expected the daemon's hello, got {hello.get('op')!r}"
        body = json.dumps({"op": "ping", "id": 1}).encode()
        sock.sendall(_HEADER.pack(len(body)) + body)
        reply = _recv(sock)
    except (OSError, ValueError) as exc:  # ValueError: bad JSON
        return False, f"daemon at {socket_path}: {type(exc).__name__}: {exc}"
    finally:
        sock.close()
    if not reply.get("ok") or reply.get("status") != "ready":
        return (
            False,
            f"daemon at {socket_path} is {reply.get('status', 'unhealthy')!r}: {reply.get('message', '')}",
        )
    return True, f"daemon ready on {reply.get('device')} (queue {reply.get('queue_depth')})"


def check_http(urls: list[str], wait_s: float, timeout_s: float = 5.0) -> tuple[bool, str]:
    """Every URL answers 2xx, trying again for up to `wait_s` (a Service's pods may still be starting)."""
    deadline = time.monotonic() + wait_s
    pending = list(urls)
    problem = ""
    while True:
        for url in list(pending):
            try:
                with urllib.request.urlopen(url, timeout=timeout_s) as response:
                    status = response.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            except (OSError, ValueError) as exc:  # ValueError: not a URL
                problem = f"{url}: {type(exc).__name__}: {exc}"
                continue
            if 200 <= status < 300:
                pending.remove(url)
            else:
                problem = f"{url}: HTTP {status}"
        if not pending:
            return True, f"{len(urls)} URL(s) answered"
        if time.monotonic() >= deadline:
            return False, problem
        time.sleep(1.0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m monitoring.health", description=__doc__)
    checks = parser.add_subparsers(dest="check", required=True)
    beat = checks.add_parser("heartbeat", help="the worker's heartbeat file is fresh")
    beat.add_argument("--file", type=Path, required=True)
    beat.add_argument("--max-age", type=float, default=60.0, help="seconds")
    daemon = checks.add_parser("daemon", help="the inference daemon answers a ping as ready")
    daemon.add_argument("--socket", type=Path, required=True)
    daemon.add_argument("--timeout", type=float, default=5.0, help="seconds")
    http = checks.add_parser("http", help="each URL answers 2xx")
    http.add_argument("--url", action="append", required=True, help="repeatable")
    http.add_argument("--wait", type=float, default=0.0, help="seconds to keep trying")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.check == "heartbeat":
        ok, message = check_heartbeat(args.file, args.max_age)
    elif args.check == "http":
        ok, message = check_http(args.url, args.wait)
    else:
        ok, message = check_daemon(args.socket, args.timeout)
    print(message, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
