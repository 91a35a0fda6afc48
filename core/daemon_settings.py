"""Settings of the inference daemon and its clients.

A plain pydantic model (not BaseSettings): reelgen's Settings nests it as the field `daemon`, so the
environment reaches it as `REELGEN_DAEMON__MAX_BATCH=...` and the daemon process receives the validated
whole as JSON.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MiB = 2**20

_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
# sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL.
_MAX_SOCKET_PATH = 107


class DaemonSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    socket_path: Path = Path(".reelgen/gpu-daemon.sock")
    device: str = Field(
        default="auto", description="auto | cpu | cuda | cuda:N; auto picks cuda:0 when present"
    )
    slots: int = Field(
        default=16, ge=1, le=4096, description="shared-memory slots; one request holds one slot"
    )
    slot_bytes: int = Field(default=16 * MiB, ge=MiB, le=4096 * MiB)
    max_batch: int = Field(default=32, ge=1, le=4096, description="most frames one model call sees")
    max_delay_ms: float = Field(
        default=5.0, ge=0, le=10_000, description="longest a request waits for company"
    )
    buckets: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    pad_to_buckets: bool | None = Field(
        default=None,
        description="pad batches up to a bucket; None: on CUDA only, where compiled graphs per bucket pay for "
        "the padding (on the CPU padded rows are pure extra work)",
    )
    models: tuple[str, ...] = ("template_match", "text_detect", "text_read", "saliency", "faces")
    model_modules: tuple[str, ...] = Field(
        default=(), description="extra modules imported before loading, so their @register calls run"
    )
    weights: dict[str, str] = Field(
        default_factory=dict, description="model name -> local path or file:// URI"
    )
    torch_threads: int = Field(
        default=0, ge=0, description="intra-op threads; 0: len(pin_cores) or torch's default"
    )
    pin_cores: tuple[int, ...] | None = None
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    request_timeout_s: float = Field(default=300.0, gt=0, description="client: longest wait for any reply")
    max_in_flight: int = Field(default=4, ge=1, le=64, description="client: requests one call keeps queued")
    connect_wait_s: float = Field(
        default=30.0,
        ge=0,
        description="client: how long a new connection waits for a daemon that is still starting (or being "
        "restarted) before its task fails over to a retry",
    )
    warmup: bool = True
    parent_pid: int | None = Field(
        default=None, ge=1, description="set by `reelgen run`: the daemon stops when that process ends"
    )

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str) -> str:
        if not _DEVICE.match(value):
            raise ValueError(f"device {value!r} must be auto, cpu, cuda or cuda:N")
        return value

    @field_validator("socket_path")
    @classmethod
    def _check_socket(cls, value: Path) -> Path:
        if len(str(value).encode()) > _MAX_SOCKET_PATH:
            raise ValueError(
                f"socket_path {value} is longer than {_MAX_SOCKET_PATH} bytes (a Unix socket limit)"
            )
        return value

    @field_validator("buckets")
    @classmethod
    def _check_buckets(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or any(b < 1 for b in value) or list(value) != sorted(set(value)):
            raise ValueError(f"buckets {value} must be positive, strictly increasing and non-empty")
        return value

    @field_validator("models")
    @classmethod
    def _check_models(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value or len(set(value)) != len(value):
            raise ValueError(f"models {value} must name at least one model, each once")
        return value

    @field_validator("pin_cores")
    @classmethod
    def _check_cores(cls, value: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if value is not None and (not value or any(c < 0 for c in value) or len(set(value)) != len(value)):
            raise ValueError(f"pin_cores {value} must be distinct non-negative core numbers")
        return value

    @model_validator(mode="after")
    def _check_weights(self) -> DaemonSettings:
        unknown = sorted(set(self.weights) - set(self.models))
        if unknown:
            raise ValueError(f"weights given for models that are not loaded: {unknown}")
        return self

    @property
    def max_delay_s(self) -> float:
        return self.max_delay_ms / 1000.0

    @property
    def pool_bytes(self) -> int:
        return self.slots * self.slot_bytes
