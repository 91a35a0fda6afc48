"""The inference daemon: one process per GPU (or one on the CPU) holding the models once.

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

import argparse
import contextlib
import gc
import itertools
import json
import logging
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import torch
from pydantic import ValidationError

from gpu_service import protocol, registry
from gpu_service.metrics import DaemonMetrics
from gpu_service.priority import PriorityKey
from gpu_service.scheduler import Batch, Pending, Scheduler
from gpu_service.shm import PAGE, Grant, Segment, SlotError, SlotPool, SlotState, align, sweep_stale
from monitoring.logging_setup import FORMATS, resolve_format, setup_logging
from reelgen.daemon_settings import DaemonSettings, MiB
from reelgen.errors import ConfigError
from reelgen.private import owner_only_umask, private_dir
from reelgen.processes import exit_with_parent

log = logging.getLogger("gpu_service.daemon")
# Start-up and stop are announced whatever --log-level says: supervisors and operators wait for "ready".
announce = logging.getLogger("gpu_service.daemon.lifecycle")
announce.setLevel(logging.INFO)

_SEND_TIMEOUT_S = 10.0
_MAX_SIDE = 16384


def resolve_device(spec: str) -> torch.device:
    if spec == "auto":
        return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    device = torch.device(spec)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {spec!r} was asked for but CUDA is not available; use auto or cpu")
        index = device.index or 0
        if index >= torch.cuda.device_count():
            raise ConfigError(f"device {spec!r}: only {torch.cuda.device_count()} CUDA devices exist")
        return torch.device("cuda", index)
    return device


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
    events: tuple[torch.cuda.Event, torch.cuda.Event] | None


Outgoing = list[tuple[_Connection, dict[str, Any]]]


class Daemon:
    def __init__(self, settings: DaemonSettings) -> None:
        self.settings = settings
        self.device = resolve_device(settings.device)
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
        self._copy_stream: torch.cuda.Stream | None = None
        self._compute_stream: torch.cuda.Stream | None = None
        self._pinned: np.ndarray[Any, np.dtype[np.uint8]] | None = None
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
                torch.cuda.cudart().cudaHostUnregister(  # type: ignore[no-untyped-call]
                    self._pinned.ctypes.data
                )
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
        if s.pin_cores is not None:
            # On Linux this pins the calling thread only; torch's intra-op threads, created later by this
            # thread, inherit the mask.
            os.sched_setaffinity(0, s.pin_cores)
        threads = s.torch_threads or (len(s.pin_cores) if s.pin_cores else 0)
        if threads:
            torch.set_num_threads(threads)
        self.torch_threads = torch.get_num_threads()
        self.compute_tid = threading.get_native_id()
        self.compute_affinity = sorted(os.sched_getaffinity(0))
        if self.cuda:
            self._prepare_cuda()
        registry.import_modules(s.model_modules)
        for name in s.models:
            self._models[name] = registry.create(name, self.device, s.weights.get(name))
            log.info("loaded %s on %s (weights %s)", name, self.device, s.weights.get(name, "built in"))
        if s.warmup:
            self._warm_up()

    def _prepare_cuda(self) -> None:
        torch.cuda.set_device(self.device)
        self._copy_stream = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
        self._compute_stream = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
        assert self._segment is not None
        view = np.frombuffer(self._segment.mm, dtype=np.uint8)
        # Page-locking the whole pool once lets every host-to-device copy be an asynchronous DMA.
        err = torch.cuda.cudart().cudaHostRegister(  # type: ignore[no-untyped-call]
            view.ctypes.data, self._segment.size, 0
        )
        if int(err) != 0:
            raise ConfigError(
                f"page-locking the {self._segment.size} byte slot pool failed (CUDA error {err})"
            )
        self._pinned = view
        device = self.device

        def utilization() -> float:
            try:
                return float(torch.cuda.utilization(device)) / 100.0
            except Exception:  # NVML missing (nvidia-ml-py not installed) or not permitted
                return float("nan")

        self.metrics.add_gpu_gauges(
            utilization,
            lambda: float(torch.cuda.memory_reserved(device)),
            lambda: float(torch.cuda.get_device_properties(device).total_memory),
        )

    def _warm_up(self) -> None:
        """Run each model at each bucket size before reporting ready, so first requests pay no set-up cost.

        Without padding to buckets (the CPU default) batches come in every size and there is no per-shape
        set-up worth paying ahead (no kernel autotuning, no graphs): one run at the smallest bucket proves the
        model works without spending seconds of the workers' cores on the rest."""
        buckets = [b for b in self.settings.buckets if b <= self.settings.max_batch]
        if not self._pad:
            buckets = buckets[:1]
        for loaded in self._models.values():
            model = loaded.module
            h, w, c = model.warmup_frame_shape
            for bucket in buckets:
                frames = torch.zeros((bucket, h, w, c), dtype=torch.uint8)
                work = self._run(model, [frames], [model.warmup_context(self.device)], bucket)
                self._outputs_to_host(work[0])
            log.info("warmed up %s at buckets %s", loaded.name, buckets)

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
            outputs, events = self._run(model, frames, contexts, rows)
            return _Work(batch, outputs, started, events)
        except Exception as exc:
            self._fail_batch(batch, exc)
            return None

    def _host_tensor(self, base: int, spec: protocol.ArraySpec) -> torch.Tensor:
        assert self._segment is not None
        return torch.from_numpy(self._segment.array(base + spec.offset, spec.shape, spec.dtype))

    def _run(
        self,
        model: registry.InferenceModel,
        frames: Sequence[torch.Tensor],
        contexts: Sequence[Mapping[str, torch.Tensor]],
        bucket: int,
    ) -> tuple[dict[str, torch.Tensor], tuple[torch.cuda.Event, torch.cuda.Event] | None]:
        with torch.inference_mode():
            if not self.cuda:
                return self._forward(model, frames, contexts, bucket), None
            assert self._copy_stream is not None and self._compute_stream is not None
            with torch.cuda.stream(self._copy_stream):
                dev_frames = [f.to(self.device, non_blocking=True) for f in frames]
                dev_contexts = [
                    {k: v.to(self.device, non_blocking=True) for k, v in c.items()} for c in contexts
                ]
            self._compute_stream.wait_stream(self._copy_stream)
            for t in [*dev_frames, *(v for c in dev_contexts for v in c.values())]:
                # Allocated on the copy stream, used on the compute one: keep the allocator from reusing them.
                t.record_stream(self._compute_stream)
            begin = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            with torch.cuda.stream(self._compute_stream):
                begin.record()
                outputs = self._forward(model, dev_frames, dev_contexts, bucket)
                end.record()
            return outputs, (begin, end)

    @staticmethod
    def _forward(
        model: registry.InferenceModel,
        frames: Sequence[torch.Tensor],
        contexts: Sequence[Mapping[str, torch.Tensor]],
        bucket: int,
    ) -> dict[str, torch.Tensor]:
        rows = [model.preprocess(f) for f in frames]
        spans: list[registry.Span] = []
        start = 0
        for r, ctx in zip(rows, contexts, strict=True):
            spans.append(registry.Span(start, start + r.shape[0], model.prepare_context(ctx)))
            start += r.shape[0]
        tail = rows[0].shape[1:]
        if any(r.shape[1:] != tail for r in rows):
            raise RuntimeError(
                f"{type(model).__name__}.preprocess gave rows of different shapes; "
                "its group_key must separate them"
            )
        if len(rows) == 1 and start == bucket:
            batch = rows[0]
        else:
            batch = rows[0].new_zeros((max(bucket, start), *tail))
            for r, span in zip(rows, spans, strict=True):
                batch[span.start : span.stop] = r
        outputs = model(batch, spans)
        for name, value in outputs.items():
            if value.shape[0] != batch.shape[0]:
                raise RuntimeError(
                    f"output {name!r} has {value.shape[0]} rows for a batch of {batch.shape[0]}"
                )
        return {name: value[:start] for name, value in outputs.items()}

    @staticmethod
    def _outputs_to_host(
        outputs: Mapping[str, torch.Tensor],
    ) -> dict[str, np.ndarray[Any, np.dtype[np.float32]]]:
        # Copies: on the CPU an output could otherwise still view a slot that is about to be overwritten.
        return {
            k: np.array(v.detach().to("cpu", torch.float32).numpy(), copy=True) for k, v in outputs.items()
        }

    def _finish(self, work: _Work) -> None:
        batch = work.batch
        try:
            host = self._outputs_to_host(work.outputs)
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


# --- command line -------------------------------------------------------------------------------------------


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
