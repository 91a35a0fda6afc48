"""The inference daemon's server: one process per GPU (or one on the CPU) holding the models once, serving
requests from its Unix socket through the shared-memory slots, batching them, and keeping the books.
gpu_service/daemon.py is its entry point; the model calls are gpu_service/engine.py's, the device set-up
gpu_service/device.py's.

Kept whole: the connection threads and the compute thread share one lock over the slot pool, the scheduler and
the per-connection counts, and every move of a slot (leased, queued, running, kept, released) happens under it
here; split by thread, that invariant would span files.

Threads:
  main      start-up, signals, shutdown
  compute   pinned to `pin_cores` when configured; loads and warms the models, then takes batches from the
            scheduler and runs them. It is the only thread that launches device work, and the other threads
            do little under the GIL (small JSON messages), so workers' load cannot starve it (the seed's
            finding).
  accept    takes connections on the Unix socket
  one per connection   reads control messages, leases slots, queues requests

On CUDA the slot pool is page-locked once at start; each batch's host-to-device copies run on a copy stream
while the previous batch computes, and the models normalise frames on the device.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.daemon_settings import DaemonSettings
from core.errors import ConfigError
from core.private import owner_only_umask, private_dir
from gpu_service import protocol, registry
from gpu_service.device import (
    PinnedView,
    gpu_gauges,
    page_lock,
    page_unlock,
    pin_compute_thread,
    resolve_device,
)
from gpu_service.engine import Engine, Events, outputs_to_host
from gpu_service.metrics import DaemonMetrics
from gpu_service.priority import PriorityKey
from gpu_service.scheduler import Batch, Pending, Scheduler
from gpu_service.shm import PAGE, Grant, Segment, SlotError, SlotPool, SlotState, align, sweep_stale

log = logging.getLogger("gpu_service.daemon")

_SEND_TIMEOUT_S = 10.0
_MAX_SIDE = 16384


class _Connection:
    def __init__(self, cid: int, sock: socket.socket) -> None:
        self.id = cid
        self.sock = sock
        self.alive = True
        self._send_lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> bool:
        if not self.alive:
            return False
        try:
            with self._send_lock:
                protocol.send(self.sock, message)
            return True
        except OSError:
            # A client that does not read its replies is treated as gone; its reader thread then reclaims.
            self.kill()
            return False

    def kill(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


@dataclass
class _Request:
    conn: _Connection
    request_id: int
    slot: int
    model: str
    frames: protocol.ArraySpec
    context: dict[str, protocol.ArraySpec]


@dataclass
class _Work:
    batch: Batch[_Request]
    outputs: dict[str, torch.Tensor]
    launched_at: float
    events: Events | None


Outgoing = list[tuple[_Connection, dict[str, Any]]]


class Daemon:
    def __init__(self, settings: DaemonSettings) -> None:
        self.settings = settings
        self.device = resolve_device(settings.device)
        self._engine = Engine(self.device)
        self.cuda = self.device.type == "cuda"
        self._pad = self.cuda if settings.pad_to_buckets is None else settings.pad_to_buckets
        self.metrics = DaemonMetrics(str(self.device))
        self.metrics.slots_total.set(settings.slots)
        self.slot_stride = align(settings.slot_bytes, PAGE)
        self._lock = threading.Condition(threading.Lock())
        self._sched: Scheduler[_Request] = Scheduler(
            settings.max_batch, settings.max_delay_s, settings.buckets
        )
        self._pool = SlotPool(settings.slots)
        self._segment: Segment | None = None
        self._models: dict[str, registry.LoadedModel] = {}
        self._conns: dict[int, _Connection] = {}
        # Per connection that has sent inference: its requests queued or running. When every such connection has
        # one, nobody can join the head batch, so it goes without waiting out max_delay.
        self._in_flight: dict[int, int] = {}
        self._conn_ids = itertools.count(1)
        self._stopping = threading.Event()
        self._loaded = threading.Event()
        self.crashed = threading.Event()
        self._failure: BaseException | None = None
        self._listener: socket.socket | None = None
        self._compute: threading.Thread | None = None
        self._threads: list[threading.Thread] = []
        self._pinned: PinnedView | None = None
        self.metrics_port: int | None = None
        self.compute_tid: int | None = None
        self.compute_affinity: list[int] = []
        self.torch_threads = 0
        self._stats: dict[str, Any] = {
            "batches": 0,
            "frames": 0,
            "padded_frames": 0,
            "max_batch_frames": 0,
            "busy_s": 0.0,
            # when the models were ready: busy_s over the time since is the device's busy fraction
            "ready_at": None,
            "last_batch_end": None,
            "requests": dict.fromkeys(("ok", "rejected", "failed", "cancelled", "unavailable"), 0),
        }

    # --- start and stop -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Create the pool, load and warm the models, then listen; returns once requests can be served."""
        s = self.settings
        self._refuse_if_served(s.socket_path)
        removed = sweep_stale()
        if removed:
            log.info("removed %d shared-memory segments left by dead daemons", len(removed))
        self._segment = Segment.create(s.slots * self.slot_stride)
        self._compute = threading.Thread(target=self._compute_main, name="gpu-compute", daemon=True)
        self._compute.start()
        self._loaded.wait()
        if self._failure is not None:
            raise self._failure
        if s.metrics_port is not None:
            self.metrics_port = self.metrics.serve(s.metrics_port, s.metrics_host, self._health)
        private_dir(s.socket_path.parent)
        with contextlib.suppress(FileNotFoundError):
            s.socket_path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # bind creates the socket file: owner-only from its first instant (a chmod after bind leaves a window in
        # which another user can connect and keep the connection)
        with owner_only_umask(0o177):
            listener.bind(str(s.socket_path))
        listener.listen(256)
        self._listener = listener
        accept = threading.Thread(target=self._accept_main, name="gpu-accept", daemon=True)
        accept.start()
        self._threads.append(accept)

    def _health(self) -> str | None:
        """/healthz: served only once the models are loaded and warmed up, so ready means able to infer."""
        if self.crashed.is_set():
            return f"the inference daemon failed: {self._failure}"
        if self._stopping.is_set():
            return "the inference daemon is stopping"
        return None

    @staticmethod
    def _refuse_if_served(path: Path) -> None:
        if not path.exists():
            return
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            return  # a stale socket file from a daemon that died; start() replaces it
        finally:
            probe.close()
        raise ConfigError(f"another daemon already serves {path}; stop it or choose another socket_path")

    def stop(self) -> None:
        """Refuse new work, fail waiting requests (DaemonUnavailable), finish the running batch, clean up."""
        self._stopping.set()
        if self._listener is not None:
            # shutdown wakes the accept thread's blocking accept() (close alone would leave it blocked)
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            with contextlib.suppress(FileNotFoundError):
                self.settings.socket_path.unlink()
        with self._lock:
            drained = self._sched.drain()
            outgoing: Outgoing = []
            for req in drained:
                self._done_locked(req.owner)
                self._release_locked(req.payload.slot, outgoing)
                self._count_locked("unavailable")
                outgoing.append(
                    (
                        req.payload.conn,
                        protocol.error_reply(
                            req.payload.request_id,
                            "DaemonUnavailable",
                            "the inference daemon is shutting down; retry",
                        ),
                    )
                )
            self._lock.notify_all()
        self._send(outgoing)
        if self._compute is not None and self._compute is not threading.current_thread():
            self._compute.join(timeout=60)
        with self._lock:
            conns = list(self._conns.values())
        for conn in conns:
            conn.kill()
        for thread in self._threads:
            thread.join(timeout=5)
        if self._segment is not None:
            if self._pinned is not None:
                page_unlock(self._pinned)
                self._pinned = None
            self._segment.unlink()
            self._segment.close()
            self._segment = None

    # --- compute thread -------------------------------------------------------------------------------------

    def _compute_main(self) -> None:
        try:
            self._prepare_compute()
        except BaseException as exc:
            self._failure = exc
            self._loaded.set()
            return
        self._stats["ready_at"] = time.monotonic()
        self._loaded.set()
        try:
            self._serve_batches()
        except BaseException as exc:
            log.exception("the compute loop died; the daemon exits so its supervisor restarts it")
            self._failure = exc
            self.crashed.set()

    def _prepare_compute(self) -> None:
        s = self.settings
        self.torch_threads = pin_compute_thread(s)
        self.compute_tid = threading.get_native_id()
        self.compute_affinity = sorted(os.sched_getaffinity(0))
        self._engine.prepare()
        if self.cuda:
            assert self._segment is not None
            self._pinned = page_lock(self._segment)
            self.metrics.add_gpu_gauges(*gpu_gauges(self.device))
        registry.import_modules(s.model_modules)
        for name in s.models:
            self._models[name] = registry.create(name, self.device, s.weights.get(name))
            log.info("loaded %s on %s (weights %s)", name, self.device, s.weights.get(name, "built in"))
        if s.warmup:
            # Without padding to buckets (the CPU default) batches come in every size and there is no per-shape
            # set-up worth paying ahead (no kernel autotuning, no graphs): one run at the smallest bucket proves
            # the model works without spending seconds of the workers' cores on the rest.
            buckets = [b for b in s.buckets if b <= s.max_batch]
            self._engine.warm_up(self._models, buckets if self._pad else buckets[:1])

    def _serve_batches(self) -> None:
        in_flight: _Work | None = None
        while True:
            batch = self._next_batch(block=in_flight is None)
            if batch is None and in_flight is None:
                return
            work = self._launch(batch) if batch is not None else None
            if in_flight is not None:
                self._finish(in_flight)
            in_flight = work
            if not self.cuda and in_flight is not None:
                # On the CPU the model call already ran inside _launch; nothing can overlap it.
                self._finish(in_flight)
                in_flight = None

    def _next_batch(self, block: bool) -> Batch[_Request] | None:
        with self._lock:
            while not self._stopping.is_set():
                now = time.monotonic()
                batch = self._sched.take(now, force=self._all_sources_waiting_locked())
                if batch is not None:
                    for req in batch.requests:
                        self._pool.move(req.payload.slot, req.owner, SlotState.QUEUED, SlotState.RUNNING)
                    self._update_queue_metrics_locked()
                    self.metrics.queue_wait.observe(max(0.0, now - batch.oldest_arrival))
                    return batch
                if not block:
                    return None
                due = self._sched.ready_at()
                self._lock.wait(None if due is None else max(0.0, due - now))
            return None

    def _launch(self, batch: Batch[_Request]) -> _Work | None:
        started = time.monotonic()
        try:
            assert self._segment is not None
            model = self._models[batch.requests[0].payload.model].module
            frames: list[torch.Tensor] = []
            contexts: list[dict[str, torch.Tensor]] = []
            for req in batch.requests:
                p = req.payload
                base = p.slot * self.slot_stride
                frames.append(self._host_tensor(base, p.frames))
                contexts.append({k: self._host_tensor(base, spec) for k, spec in p.context.items()})
            rows = batch.bucket if self._pad else batch.frames
            outputs, events = self._engine.run(model, frames, contexts, rows)
            return _Work(batch, outputs, started, events)
        except Exception as exc:
            self._fail_batch(batch, exc)
            return None

    def _host_tensor(self, base: int, spec: protocol.ArraySpec) -> torch.Tensor:
        assert self._segment is not None
        return torch.from_numpy(self._segment.array(base + spec.offset, spec.shape, spec.dtype))

    def _finish(self, work: _Work) -> None:
        batch = work.batch
        try:
            host = outputs_to_host(work.outputs, work.events)
        except Exception as exc:
            self._fail_batch(batch, exc)
            return
        if work.events is not None:
            compute_s = work.events[0].elapsed_time(work.events[1]) / 1000.0
        else:
            compute_s = time.monotonic() - work.launched_at
        results: list[tuple[Pending[_Request], dict[str, Any], bool]] = []
        for req, (start, stop) in zip(batch.requests, batch.spans(), strict=True):
            p = req.payload
            try:
                spec = self._write_outputs(p.slot, {k: v[start:stop] for k, v in host.items()})
                results.append((req, {"id": p.request_id, "ok": True, "outputs": spec}, True))
            except ValueError as exc:
                results.append(
                    (req, protocol.error_reply(p.request_id, "InferenceRejected", str(exc)), False)
                )
        outgoing: Outgoing = []
        with self._lock:
            for req, reply, ok in results:
                self._done_locked(req.owner)
                if ok:
                    self._grants_locked(self._pool.finish(req.payload.slot), outgoing)
                    reply["kept"] = self._pool.keep(req.payload.slot)
                else:
                    self._release_locked(req.payload.slot, outgoing)
                self._count_locked("ok" if ok else "rejected")
                outgoing.append((req.payload.conn, reply))
            st = self._stats
            st["batches"] += 1
            st["frames"] += batch.frames
            padding = batch.bucket - batch.frames if self._pad else 0
            st["padded_frames"] += padding
            st["max_batch_frames"] = max(st["max_batch_frames"], batch.frames)
            st["busy_s"] += compute_s
            st["last_batch_end"] = time.monotonic()
            self.metrics.slots_in_use.set(self._pool.in_use)
        self.metrics.batch_frames.observe(batch.frames)
        self.metrics.batch_padding.inc(padding)
        self.metrics.compute.observe(compute_s)
        self.metrics.busy.inc(compute_s)
        self._send(outgoing)

    def _write_outputs(self, slot: int, arrays: Mapping[str, np.ndarray[Any, Any]]) -> dict[str, Any]:
        assert self._segment is not None
        base = slot * self.slot_stride
        spec: dict[str, Any] = {}
        offset = 0
        for name in sorted(arrays):
            arr = np.ascontiguousarray(arrays[name], dtype=np.float32)
            if offset + arr.nbytes > self.settings.slot_bytes:
                raise ValueError(
                    f"the outputs need more than the slot's {self.settings.slot_bytes} bytes; "
                    "send fewer frames per request or raise slot_bytes"
                )
            self._segment.array(base + offset, arr.shape, np.float32)[...] = arr
            spec[name] = {"offset": offset, "shape": list(arr.shape), "dtype": protocol.OUTPUT_DTYPE}
            offset = align(offset + arr.nbytes)
        return spec

    def _fail_batch(self, batch: Batch[_Request], exc: BaseException) -> None:
        model = batch.requests[0].payload.model
        log.error("model %s failed on a batch of %d frames: %r", model, batch.frames, exc, exc_info=exc)
        if self.cuda and isinstance(exc, torch.cuda.OutOfMemoryError):
            torch.cuda.empty_cache()
        outgoing: Outgoing = []
        with self._lock:
            for req in batch.requests:
                self._done_locked(req.owner)
                self._release_locked(req.payload.slot, outgoing)
                self._count_locked("failed")
                message = (
                    f"model {model} failed on a batch of {batch.frames} frames: {type(exc).__name__}: {exc}"
                )
                outgoing.append(
                    (
                        req.payload.conn,
                        protocol.error_reply(req.payload.request_id, "InferenceError", message),
                    )
                )
        self._send(outgoing)

    # --- connections ----------------------------------------------------------------------------------------

    def _accept_main(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:  # stop() shut the listener down
                return
            sock.settimeout(None)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(_SEND_TIMEOUT_S))
            conn = _Connection(next(self._conn_ids), sock)
            with self._lock:
                self._conns[conn.id] = conn
            thread = threading.Thread(
                target=self._connection_main, args=(conn,), name=f"gpu-conn-{conn.id}", daemon=True
            )
            thread.start()
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]

    def _hello(self) -> dict[str, Any]:
        assert self._segment is not None
        s = self.settings
        return {
            "op": "hello",
            "proto": protocol.PROTO,
            "shm": self._segment.name,
            "pool_bytes": self._segment.size,
            "slots": s.slots,
            "slot_bytes": s.slot_bytes,
            "slot_stride": self.slot_stride,
            "max_batch": s.max_batch,
            "models": sorted(self._models),
            "device": str(self.device),
            "pid": os.getpid(),
        }

    def _connection_main(self, conn: _Connection) -> None:
        try:
            conn.send(self._hello())
            while conn.alive and not self._stopping.is_set():
                try:
                    body = protocol.recv_raw(conn.sock)
                except protocol.FramingError as exc:
                    # The stream cannot be resynchronised after a bad length: answer, then hang up.
                    conn.send(protocol.error_reply(None, "InferenceRejected", f"malformed message: {exc}"))
                    with self._lock:
                        self._count_locked("rejected")
                    return
                if body is None:
                    return
                self._handle(conn, body)
        except OSError:
            return
        finally:
            self._drop(conn)

    def _handle(self, conn: _Connection, body: bytes) -> None:
        try:
            msg = protocol.parse_request(body)
        except protocol.ProtocolError as exc:
            with self._lock:
                self._count_locked("rejected")
            conn.send(
                protocol.error_reply(
                    protocol.request_id_of(body), "InferenceRejected", f"malformed message: {exc}"
                )
            )
            return
        if isinstance(msg, protocol.Ping):
            conn.send({"id": msg.id, "ok": True, **self.status()})
        elif isinstance(msg, protocol.Lease):
            with self._lock:
                grant = self._pool.lease(conn.id, msg.id, msg.key)
                self.metrics.slots_in_use.set(self._pool.in_use)
                self.metrics.slot_waiters.set(self._pool.waiting)
            if grant is not None:
                conn.send({"id": msg.id, "ok": True, "slot": grant.slot})
        elif isinstance(msg, protocol.Infer):
            self._submit(conn, msg)
        else:
            outgoing: Outgoing = []
            with self._lock:
                try:
                    self._grants_locked(self._pool.give_back(msg.slot, conn.id), outgoing)
                except SlotError as exc:
                    self._count_locked("rejected")
                    outgoing.append(
                        (conn, protocol.error_reply(None, "InferenceRejected", f"release: {exc}"))
                    )
            self._send(outgoing)

    def _submit(self, conn: _Connection, msg: protocol.Infer) -> None:
        try:
            loaded = self._models.get(msg.model)
            if loaded is None:
                raise registry.RequestError(
                    f"unknown model {msg.model!r}; this daemon serves {sorted(self._models)}"
                )
            self._check_arrays(msg)
            shape = msg.frames.shape
            context = {k: (spec.shape, spec.dtype) for k, spec in msg.context.items()}
            loaded.module.check(shape, context)
            group = (msg.model, loaded.module.group_key(shape, context))
            pending = Pending(
                key=PriorityKey(*msg.key),
                frames=shape[0],
                group=group,
                owner=conn.id,
                arrived_at=time.monotonic(),
                payload=_Request(conn, msg.id, msg.slot, msg.model, msg.frames, dict(msg.context)),
            )
            with self._lock:
                self._pool.move(msg.slot, conn.id, SlotState.LEASED, SlotState.QUEUED)
                self._sched.push(pending)
                self._in_flight[conn.id] = self._in_flight.get(conn.id, 0) + 1
                self._update_queue_metrics_locked()
                self._lock.notify_all()
        except (registry.RequestError, SlotError, ValueError) as exc:
            outgoing: Outgoing = []
            with self._lock:
                self._count_locked("rejected")
                # The error reply hands the slot back, so the client must not release it.
                if (
                    0 <= msg.slot < self._pool.count
                    and self._pool.owner(msg.slot) == conn.id
                    and self._pool.state(msg.slot) == SlotState.LEASED
                ):
                    self._release_locked(msg.slot, outgoing)
            outgoing.append((conn, protocol.error_reply(msg.id, "InferenceRejected", str(exc))))
            self._send(outgoing)

    def _check_arrays(self, msg: protocol.Infer) -> None:
        f = msg.frames
        if f.dtype != protocol.FRAME_DTYPE or len(f.shape) != 4 or f.shape[3] != 3:
            raise registry.RequestError(f"frames must be uint8 N×H×W×3 (RGB), not {f.dtype} {list(f.shape)}")
        n, h, w, _ = f.shape
        if not 1 <= n <= self.settings.max_batch:
            raise registry.RequestError(f"a request carries 1..{self.settings.max_batch} frames, not {n}")
        if not (1 <= h <= _MAX_SIDE and 1 <= w <= _MAX_SIDE):
            raise registry.RequestError(f"frame size {h}×{w} is outside 1..{_MAX_SIDE}")
        for name, spec in {"frames": f, **msg.context}.items():
            if spec.offset + spec.nbytes > self.settings.slot_bytes:
                raise registry.RequestError(
                    f"{name} ({spec.nbytes} bytes at offset {spec.offset}) do not fit the "
                    f"{self.settings.slot_bytes} byte slot"
                )

    def _drop(self, conn: _Connection) -> None:
        """A connection ended (the worker exited or died): take back everything it held."""
        outgoing: Outgoing = []
        with self._lock:
            if self._conns.pop(conn.id, None) is None:
                return
            conn.alive = False
            self._in_flight.pop(conn.id, None)
            cancelled = self._sched.cancel(conn.id)
            for _ in cancelled:
                self._count_locked("cancelled")
            self._grants_locked(self._pool.reclaim(conn.id), outgoing)
            self._update_queue_metrics_locked()
            self._lock.notify_all()
        with contextlib.suppress(OSError):
            conn.sock.close()
        self._send(outgoing)

    # --- helpers (the *_locked ones run under self._lock) ---------------------------------------------------

    def _release_locked(self, slot: int, outgoing: Outgoing) -> None:
        self._grants_locked(self._pool.release(slot), outgoing)

    def _grants_locked(self, grants: list[Grant], outgoing: Outgoing) -> None:
        for g in grants:
            conn = self._conns.get(g.owner)
            if conn is not None:
                outgoing.append((conn, {"id": g.request_id, "ok": True, "slot": g.slot}))
        self.metrics.slots_in_use.set(self._pool.in_use)
        self.metrics.slot_waiters.set(self._pool.waiting)

    def _all_sources_waiting_locked(self) -> bool:
        return bool(self._in_flight) and all(n > 0 for n in self._in_flight.values())

    def _done_locked(self, owner: int) -> None:
        if self._in_flight.get(owner, 0) > 0:
            self._in_flight[owner] -= 1

    def _count_locked(self, outcome: str) -> None:
        self._stats["requests"][outcome] += 1
        self.metrics.requests[outcome].inc()

    def _update_queue_metrics_locked(self) -> None:
        self.metrics.queue_depth.set(len(self._sched))
        self.metrics.queue_frames.set(self._sched.waiting_frames)

    @staticmethod
    def _send(outgoing: Outgoing) -> None:
        # Sent outside the lock, so one slow socket never stalls scheduling.
        for conn, message in outgoing:
            conn.send(message)

    def status(self) -> dict[str, Any]:
        with self._lock:
            stats = json.loads(json.dumps(self._stats))
            pool = {
                "slots": self._pool.count,
                "slots_in_use": self._pool.in_use,
                "slots_peak": self._pool.peak_in_use,
                "slot_waiters": self._pool.waiting,
                "queue_depth": len(self._sched),
            }
        return {
            "status": "stopping" if self._stopping.is_set() else "ready",
            "pid": os.getpid(),
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(self.device) if self.cuda else "cpu",
            "models": {n: {"weights": m.weights, "digest": m.digest} for n, m in self._models.items()},
            "max_batch": self.settings.max_batch,
            "buckets": list(self.settings.buckets),
            "slot_bytes": self.settings.slot_bytes,
            "shm": self._segment.name if self._segment is not None else None,
            "torch_threads": self.torch_threads,
            "compute_tid": self.compute_tid,
            "compute_affinity": self.compute_affinity,
            "metrics_port": self.metrics_port,
            "now": time.monotonic(),
            **pool,
            "stats": stats,
        }


def _timeval(seconds: float) -> bytes:
    return struct.pack("ll", int(seconds), int((seconds % 1) * 1_000_000))
