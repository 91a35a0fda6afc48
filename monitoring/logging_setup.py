"""How every reelgen process writes its log: plain lines for a terminal, or one JSON object per line for a log
collector (`--log-format json`, REELGEN_LOG_FORMAT=json).

JSON comes from python-json-logger's formatter on the standard `logging` handlers. Celery, kombu, boto3 and our
own modules all log through `logging`, so one formatter on the root handler (and on the handler Celery gives
its task logger) turns every line into JSON without touching a call site. structlog would have meant a second
logging API beside the one those libraries use, bridged back into `logging` anyway.

The job and item a line is about come from `log_context`, a context variable set where work on an item or job
begins (a Celery task, the dispatcher serving one job); a filter copies them onto each record as `job_id` and
`item_id`, so lines logged deep inside a stage carry them without each call passing them along.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal, TextIO

from pythonjsonlogger.json import JsonFormatter

from core.errors import ConfigError
from core.text import printable
from monitoring.logs import PrintableRecords

LogFormat = Literal["text", "json"]
FORMATS: tuple[LogFormat, ...] = ("text", "json")
ENV_VAR = "REELGEN_LOG_FORMAT"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_context: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("reelgen_log_context", default=())


@contextlib.contextmanager
def log_context(**ids: str | None) -> Iterator[None]:
    """Within the block, every record logged by this thread or task names these ids (None: leave unset)."""
    merged = dict(_context.get()) | {k: v for k, v in ids.items() if v is not None}
    token = _context.set(tuple(merged.items()))
    try:
        yield
    finally:
        _context.reset(token)


class ContextIds(logging.Filter):
    """Copies the current log context's ids onto a record (an id given in `extra=` wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _context.get():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


def json_formatter() -> logging.Formatter:
    return JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger", "process": "pid"},
        datefmt="%Y-%m-%dT%H:%M:%S%z",
        # a title in another script stays readable; json.dumps still escapes every control character, so no
        # text from a catalog can end a line early or forge another record
        json_ensure_ascii=False,
    )


def formatter(log_format: LogFormat) -> logging.Formatter:
    return json_formatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def resolve_format(given: str | None) -> LogFormat:
    """The format asked for by a flag, else by REELGEN_LOG_FORMAT, else text; ConfigError for anything else."""
    value = (given or os.environ.get(ENV_VAR) or "text").strip().lower()
    for known in FORMATS:
        if value == known:
            return known
    raise ConfigError(f"{ENV_VAR} / --log-format must be one of {', '.join(FORMATS)}")


def prepare_handler(handler: logging.Handler, log_format: LogFormat) -> None:
    """Give a handler the format and the filters every reelgen handler has (once)."""
    handler.setFormatter(formatter(log_format))
    # escaped in JSON too: a log viewer that shows a field's text must not be driven by an ANSI sequence in it
    for kind in (PrintableRecords, ContextIds):
        if not any(isinstance(f, kind) for f in handler.filters):
            handler.addFilter(kind())


def signal_safe_line(logger: str, level: str) -> Callable[..., None]:
    """A `print` for signal handlers, in JSON: logging takes locks a signal handler must not wait on, which is
    why Celery prints its shutdown notices itself; this writes them as log records instead."""

    def say(message: str, stream: TextIO | None = None) -> None:
        record = {
            "time": datetime.now(UTC).astimezone().strftime("%Y-%m-%dT%H:%M:%S%z"),
            "level": level,
            "logger": logger,
            "pid": os.getpid(),
            "message": printable(message),
        }
        out = stream or sys.stderr
        with contextlib.suppress(Exception):  # a closed stream must not break the shutdown it reports
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()

    return say


def setup_logging(log_format: LogFormat, level: int | str) -> None:
    """The root logger writes to stderr in `log_format`; children inherit the choice through the environment."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    prepare_handler(handler, log_format)
    root.addHandler(handler)
    root.setLevel(level)
    # Python's warnings (Celery's, a library's deprecations) through the same handler, not raw to stderr
    logging.captureWarnings(True)
    # processes this one starts (Celery workers, the inference daemon) read the same choice
    os.environ[ENV_VAR] = log_format
