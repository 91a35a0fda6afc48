"""Log lines as a collector reads them: one JSON object per line, naming the job and item they are about."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.errors import ConfigError
from monitoring import logging_setup
from monitoring.logging_setup import log_context, prepare_handler, resolve_format

REELGEN = str(Path(sys.executable).with_name("reelgen"))


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    prepare_handler(handler, "json")
    logger = logging.getLogger("tests.logging_setup")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_each_record_is_one_json_object_naming_its_job_and_item(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = captured
    logger.info("outside any item")
    with log_context(job_id="job-1"):
        logger.warning("serving it failed: %s", "Bad\nline\x1b[2K")
        with log_context(item_id="sku-9"):
            try:
                raise ValueError("broken\nsource")
            except ValueError:
                logger.exception("item failed")
        logger.info("after the item", extra={"item_id": "explicit"})
    first, failed, item, after = lines(stream)
    assert "job_id" not in first and first["message"] == "outside any item"
    assert first["level"] == "INFO" and first["logger"] == "tests.logging_setup" and "time" in first
    assert failed["job_id"] == "job-1" and "item_id" not in failed
    # a newline or escape sequence from a catalog stays inside its field, escaped
    assert failed["message"] == "serving it failed: Bad\\nline\\x1b[2K"
    assert item["job_id"] == "job-1" and item["item_id"] == "sku-9"
    assert "ValueError: broken" in str(item["exc_info"])  # the traceback inside the one line
    assert after["item_id"] == "explicit"


def test_the_format_comes_from_the_flag_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logging_setup.ENV_VAR, raising=False)
    assert resolve_format(None) == "text"
    monkeypatch.setenv(logging_setup.ENV_VAR, "JSON")
    assert resolve_format(None) == "json"
    assert resolve_format("text") == "text"
    monkeypatch.setenv(logging_setup.ENV_VAR, "yaml")
    with pytest.raises(ConfigError, match="REELGEN_LOG_FORMAT"):
        resolve_format(None)


def test_reelgen_run_logs_json_naming_the_job_and_item(tmp_path: Path) -> None:
    catalog = tmp_path / "c.jsonl"
    missing = tmp_path / "missing.mp4"
    line = {"item_id": "sku-1", "video": str(missing), "image": str(tmp_path / "x.jpg"), "title": "t"}
    catalog.write_text(json.dumps(line) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    state = tmp_path / "state"
    result = subprocess.run(
        [REELGEN, "--log-format", "json", "-v", "run", str(catalog), "--out", str(tmp_path / "out"),
         "--state-dir", str(state)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # the item fails: its video is missing
    records = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert any(r["logger"] == "jobs.dispatch.dispatcher" and r.get("job_id") for r in records), result.stderr
    (worker_log,) = (state / "logs").glob("worker-*.log")
    worker = [json.loads(line) for line in worker_log.read_text().splitlines() if line.strip()]
    failed = [r for r in worker if r.get("item_id") == "sku-1" and r["level"] == "WARNING"]
    assert failed and failed[0]["job_id"] and "SourceNotFound" in failed[0]["message"]
