"""The worker side: stage frames in the daemon's shared memory and ask for inference over its Unix socket.

Safe to construct anywhere, including a Celery `worker_process_init` hook: nothing connects until the first
call, the module never imports torch, and a forked child never reuses its parent's connection (it reconnects).
"""

from __future__ import annotations

import itertools
import math
import os
import socket
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from core.errors import DaemonUnavailable, InferenceError, InferenceRejected
from gpu_service import protocol
from gpu_service.priority import PriorityKey
from gpu_service.shm import Segment, align

__all__ = ["InferenceClient", "PriorityKey"]

_ERRORS: dict[str, type[InferenceError]] = {
    "InferenceRejected": InferenceRejected,
    "DaemonUnavailable": DaemonUnavailable,
    "InferenceError": InferenceError,
}

_clients: weakref.WeakSet[InferenceClient] = weakref.WeakSet()
_CONNECT_POLL_S = 0.05


def _after_fork_in_child() -> None:
    for client in list(_clients):
        client._forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


@dataclass
class _Chunk:
    start: int
    stop: int
    request_id: int = -1
    slot: int = -1
    outputs: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)


class _Connection:
    def __init__(self, sock: socket.socket, hello: dict[str, Any]) -> None:
        self.sock = sock
        self.hello = hello
        self.segment = Segment.attach(str(hello["shm"]), int(hello["pool_bytes"]))
        self.slot_bytes = int(hello["slot_bytes"])
        self.slot_stride = int(hello["slot_stride"])
        self.max_batch = int(hello["max_batch"])
        self.ids = itertools.count(1)
        # Slots the daemon let this connection keep after a request, for its next ones.
        self.kept: list[int] = []

    def close(self) -> None:
        self.sock.close()
        self.segment.close()


class InferenceClient:
    """One connection to the daemon per process; calls from several threads take turns."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        timeout_s: float = 300.0,
        max_in_flight: int = 4,
        connect_wait_s: float = 0.0,
    ) -> None:
        self.socket_path = Path(socket_path)
        self.timeout_s = timeout_s
        self.max_in_flight = max(1, max_in_flight)
        self.connect_wait_s = connect_wait_s
        self._lock = threading.Lock()
        self._conn: _Connection | None = None
        self._pid = os.getpid()
        _clients.add(self)

    # --- public ---------------------------------------------------------------------------------------------

    def ping(self) -> dict[str, Any]:
        """The daemon's status (models, device, queue, counters); DaemonUnavailable if it is not there."""
        with self._lock:
            conn = self._connect()
            rid = next(conn.ids)
            reply = self._call(conn, {"op": "ping", "id": rid}, rid)
            return reply

    def infer(
        self,
        model: str,
        frames: npt.NDArray[np.uint8],
        key: PriorityKey,
        context: Mapping[str, npt.NDArray[Any]] | None = None,
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Run `model` on uint8 N×H×W×3 RGB frames; returns float32 arrays whose first dimension is N.

        Batches larger than a slot or than the daemon's max_batch are sent as several requests (kept in flight
        together, so they batch with each other) and their outputs joined again.
        """
        frames = self._check_frames(frames)
        ctx = {k: self._check_context(k, v) for k, v in (context or {}).items()}
        with self._lock:
            conn = self._connect()
            try:
                return self._infer(conn, model, frames, key, ctx)
            except (OSError, ConnectionError, protocol.ProtocolError) as exc:
                self._disconnect()
                raise DaemonUnavailable(
                    f"the inference daemon at {self.socket_path} went away mid-request ({exc}); retry"
                ) from exc
            except DaemonUnavailable:
                self._disconnect()
                raise

    def close(self) -> None:
        with self._lock:
            self._disconnect()

    def __enter__(self) -> InferenceClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- connection -----------------------------------------------------------------------------------------

    def _forget_after_fork(self) -> None:
        # The child must not talk on the parent's socket; closing its copy leaves the parent's intact.
        self._lock = threading.Lock()
        if self._conn is not None:
            self._conn.sock.close()
            self._conn.segment.close()
        self._conn = None
        self._pid = os.getpid()

    def _connect(self) -> _Connection:
        if self._pid != os.getpid():
            self._forget_after_fork()
        if self._conn is not None:
            return self._conn
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout_s)
        try:
            self._reach(sock)
            hello = protocol.recv(sock)
            if hello is None or hello.get("op") != "hello" or hello.get("proto") != protocol.PROTO:
                raise ConnectionError(f"unexpected greeting {hello!r}")
            self._conn = _Connection(sock, hello)
        except (OSError, ConnectionError, protocol.ProtocolError, ValueError, KeyError) as exc:
            sock.close()
            raise DaemonUnavailable(
                f"no inference daemon answers at {self.socket_path} ({exc}); start it with "
                f"`python -m gpu_service --socket {self.socket_path}` or `reelgen run`"
            ) from exc
        return self._conn

    def _reach(self, sock: socket.socket) -> None:
        """Connect, waiting up to connect_wait_s while no daemon listens yet: a worker that starts before the
        daemon has loaded its models (or while it is restarted) waits for it instead of failing its task."""
        deadline = time.monotonic() + self.connect_wait_s
        while True:
            try:
                sock.connect(str(self.socket_path))
                return
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() >= deadline:
                    raise
                time.sleep(_CONNECT_POLL_S)

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _read(self, conn: _Connection) -> dict[str, Any]:
        try:
            message = protocol.recv(conn.sock)
        except TimeoutError as exc:
            raise DaemonUnavailable(f"the inference daemon sent nothing for {self.timeout_s:.0f} s") from exc
        if message is None:
            raise DaemonUnavailable("the inference daemon closed the connection (it stopped or died); retry")
        return message

    def _call(self, conn: _Connection, message: dict[str, Any], rid: int) -> dict[str, Any]:
        try:
            protocol.send(conn.sock, message)
            reply = self._read(conn)
        except (OSError, ConnectionError, protocol.ProtocolError) as exc:
            self._disconnect()
            raise DaemonUnavailable(f"the inference daemon at {self.socket_path} went away ({exc})") from exc
        except DaemonUnavailable:
            self._disconnect()
            raise
        if reply.get("id") != rid:
            self._disconnect()
            raise DaemonUnavailable(f"out-of-sequence reply {reply!r}")
        self._raise_error(reply)
        return reply

    @staticmethod
    def _raise_error(reply: Mapping[str, Any]) -> None:
        if not reply.get("ok"):
            cls = _ERRORS.get(str(reply.get("error")), InferenceError)
            raise cls(str(reply.get("message", "the daemon refused the request")))

    # --- inference ------------------------------------------------------------------------------------------

    @staticmethod
    def _check_frames(frames: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
        if (
            not isinstance(frames, np.ndarray)
            or frames.dtype != np.uint8
            or frames.ndim != 4
            or frames.shape[3] != 3
        ):
            got = (
                f"{frames.dtype} {frames.shape}" if isinstance(frames, np.ndarray) else type(frames).__name__
            )
            raise InferenceRejected(f"frames must be a uint8 numpy array N×H×W×3 (RGB), not {got}")
        if frames.shape[0] == 0:
            raise InferenceRejected("frames must hold at least one frame")
        return frames

    @staticmethod
    def _check_context(name: str, value: npt.NDArray[Any]) -> npt.NDArray[Any]:
        if not isinstance(value, np.ndarray) or value.dtype.name not in protocol.CONTEXT_DTYPES:
            raise InferenceRejected(
                f"context {name!r} must be a numpy array of {' or '.join(protocol.CONTEXT_DTYPES)}"
            )
        return value

    def _infer(
        self,
        conn: _Connection,
        model: str,
        frames: npt.NDArray[np.uint8],
        key: PriorityKey,
        context: Mapping[str, npt.NDArray[Any]],
    ) -> dict[str, npt.NDArray[np.float32]]:
        ctx_layout: dict[str, int] = {}
        offset = 0
        for name, arr in context.items():
            ctx_layout[name] = offset
            offset = align(offset + arr.nbytes)
        frame_offset = offset
        frame_bytes = math.prod(frames.shape[1:])
        per_chunk = min(conn.max_batch, (conn.slot_bytes - frame_offset) // frame_bytes)
        if per_chunk < 1:
            raise InferenceRejected(
                f"one {frames.shape[1]}×{frames.shape[2]} frame plus its context needs "
                f"{frame_offset + frame_bytes} bytes, more than the daemon's {conn.slot_bytes} byte slots; "
                "raise slot_bytes"
            )
        n = frames.shape[0]
        chunks = [_Chunk(s, min(n, s + per_chunk)) for s in range(0, n, per_chunk)]
        key_list = [key.job_submitted_at, key.item_first_request_at]
        by_id: dict[int, _Chunk] = {}
        pending: set[int] = set()
        error: InferenceError | None = None
        next_chunk = 0
        while next_chunk < len(chunks) or pending:
            if error is None and next_chunk < len(chunks) and len(pending) < self.max_in_flight:
                chunk = chunks[next_chunk]
                next_chunk += 1
                chunk.request_id = next(conn.ids)
                by_id[chunk.request_id] = chunk
                pending.add(chunk.request_id)
                if conn.kept:
                    chunk.slot = conn.kept.pop()
                    self._stage(conn, chunk, model, frames, frame_offset, key_list, context, ctx_layout)
                else:
                    protocol.send(conn.sock, {"op": "lease", "id": chunk.request_id, "key": key_list})
                continue
            if error is not None and not pending:
                break
            reply = self._read(conn)
            rid = reply.get("id")
            if rid not in pending:
                raise DaemonUnavailable(f"unexpected reply {reply!r}")
            chunk = by_id[rid]
            if not reply.get("ok"):
                pending.discard(rid)
                if error is None:
                    cls = _ERRORS.get(str(reply.get("error")), InferenceError)
                    error = cls(str(reply.get("message")))
            elif chunk.slot < 0:
                chunk.slot = int(reply["slot"])
                if error is not None:
                    protocol.send(conn.sock, {"op": "release", "slot": chunk.slot})
                    pending.discard(rid)
                    continue
                self._stage(conn, chunk, model, frames, frame_offset, key_list, context, ctx_layout)
            else:
                self._collect(conn, chunk, reply["outputs"])
                pending.discard(rid)
                if reply.get("kept"):
                    # the next chunk, or this worker's next call, is staged straight into it
                    conn.kept.append(chunk.slot)
                else:
                    protocol.send(conn.sock, {"op": "release", "slot": chunk.slot})
        # One kept slot saves the next call its lease round trip; more would sit idle between calls.
        while len(conn.kept) > 1:
            protocol.send(conn.sock, {"op": "release", "slot": conn.kept.pop()})
        if error is not None:
            raise error
        names = chunks[0].outputs.keys()
        return {
            k: np.concatenate([c.outputs[k] for c in chunks]) if len(chunks) > 1 else chunks[0].outputs[k]
            for k in names
        }

    def _stage(
        self,
        conn: _Connection,
        chunk: _Chunk,
        model: str,
        frames: npt.NDArray[np.uint8],
        frame_offset: int,
        key_list: list[float],
        context: Mapping[str, npt.NDArray[Any]],
        ctx_layout: Mapping[str, int],
    ) -> None:
        base = chunk.slot * conn.slot_stride
        part = frames[chunk.start : chunk.stop]
        # The one unavoidable copy: the worker's frames into the slot the daemon reads in place.
        np.copyto(conn.segment.array(base + frame_offset, part.shape, np.uint8), part, casting="no")
        ctx_specs: dict[str, Any] = {}
        for name, arr in context.items():
            np.copyto(conn.segment.array(base + ctx_layout[name], arr.shape, arr.dtype), arr, casting="no")
            ctx_specs[name] = {"offset": ctx_layout[name], "shape": list(arr.shape), "dtype": arr.dtype.name}
        protocol.send(
            conn.sock,
            {
                "op": "infer",
                "id": chunk.request_id,
                "slot": chunk.slot,
                "model": model,
                "key": key_list,
                "frames": {"offset": frame_offset, "shape": list(part.shape), "dtype": "uint8"},
                "context": ctx_specs,
            },
        )

    @staticmethod
    def _collect(conn: _Connection, chunk: _Chunk, outputs: Mapping[str, Any]) -> None:
        base = chunk.slot * conn.slot_stride
        n = chunk.stop - chunk.start
        for name, spec in outputs.items():
            shape = tuple(int(d) for d in spec["shape"])
            if spec["dtype"] != protocol.OUTPUT_DTYPE or not shape or shape[0] != n:
                raise protocol.ProtocolError(f"output {name!r} has shape {shape} for {n} frames")
            view = conn.segment.array(base + int(spec["offset"]), shape, np.float32)
            chunk.outputs[name] = np.array(view, dtype=np.float32, copy=True)


def ping_or_none(socket_path: str | os.PathLike[str], timeout_s: float = 10.0) -> dict[str, Any] | None:
    """The status of the daemon at `socket_path`, or None when none answers there (yet, or any more)."""
    try:
        with InferenceClient(socket_path, timeout_s=timeout_s) as client:
            return client.ping()
    except DaemonUnavailable:
        return None


def wait_until_ready(socket_path: str | os.PathLike[str], timeout_s: float = 120.0) -> dict[str, Any]:
    """Poll until a daemon answers at `socket_path`; returns its status. For benchmarks and tests."""
    deadline = time.monotonic() + timeout_s
    while (status := ping_or_none(socket_path)) is None:
        if time.monotonic() > deadline:
            raise DaemonUnavailable(f"no inference daemon answered at {socket_path} within {timeout_s:.0f} s")
        time.sleep(_CONNECT_POLL_S)
    return status
