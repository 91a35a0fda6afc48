"""No secret in any error, and catalog text escaped wherever it is shown.

Settings errors name the variable and the problem, never the value (a Flower password, the Redis URL), on one
line; every `reelgen` command that reads settings answers a bad or unreachable REELGEN_REDIS_URL with that one
line on stderr and exit status 2 (real processes of the installed `reelgen`); the run summary, `reelgen status`,
the logs and the HTML report show control characters and ANSI escapes as text.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from core.errors import ConfigError
from core.settings import load_settings
from core.text import printable
from jobs.intake.catalog_ref import CatalogRef
from jobs.intake.submit import submit_catalog_job
from jobs.ledger import JobKind, JobState, Ledger
from jobs.local.redis_server import EmbeddedRedis
from jobs.local.runner import summarise
from monitoring.logs import escape_handlers
from reelgen.report import write_report
from tests.support.media import make_code_video

REELGEN = str(Path(sys.executable).with_name("reelgen"))
PASSWORD = "hunter2-pw"
REDIS_URL = f"redis://admin:{PASSWORD}@redis.internal.example:6390/3"
# the parts of REDIS_URL that no message may show
URL_PARTS = (PASSWORD, "admin", "redis.internal.example", "6390")
FORGED = "\x1b[2K\rFAKE done\nFAILED nothing: forged"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    return {**env, **extra}


def config_error(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name in [k for k in os.environ if k.startswith("REELGEN_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    # not chained: a traceback of it could not print pydantic's text, which quotes every input
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    message = str(caught.value)
    assert "\n" not in message and "input_value" not in message, message
    return message


@pytest.mark.parametrize(
    "env",
    [
        {"REELGEN_FLOWER__BASIC_AUTH": f"alice:{PASSWORD},bob"},
        {"REELGEN_FLOWER__BASIC_AUTH": f"alice:{PASSWORD},:{PASSWORD}"},
        {"REELGEN_FLOWER": json.dumps({"basic_auth": f"alice:{PASSWORD},bob", "port": "x"})},
        {"REELGEN_FLOWER": '{"basic_auth": "alice:' + PASSWORD + '"'},  # JSON that does not parse
    ],
)
def test_a_malformed_flower_auth_never_shows_its_passwords(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    message = config_error(monkeypatch, **env)
    assert PASSWORD not in message and "alice" not in message, message
    assert "flower" in message.lower()


def test_a_model_level_error_shows_no_part_of_the_redis_url(monkeypatch: pytest.MonkeyPatch) -> None:
    message = config_error(monkeypatch, REELGEN_REDIS_URL=REDIS_URL, REELGEN_CPUS="2", REELGEN_WORKERS="99")
    assert "CPU budget oversubscribed" in message
    assert not [part for part in URL_PARTS if part in message], message


@pytest.mark.parametrize(
    "url",
    [
        f"redis://admin:{PASSWORD}@redis.internal.example:99999/0",
        f"redis://admin:{PASSWORD}@redis.internal.example:port/0",
        f"http://admin:{PASSWORD}@redis.internal.example:6390/0",
        f"redis://admin:{PASSWORD}@[redis.internal.example:6390/0",
    ],
)
def test_a_bad_redis_url_is_refused_without_quoting_it(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    message = config_error(monkeypatch, REELGEN_REDIS_URL=url)
    assert message.startswith("invalid settings: REELGEN_REDIS_URL: not a Redis URL")
    assert not [part for part in (PASSWORD, "admin", "redis.internal.example") if part in message], message


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REELGEN, *args], env=env, capture_output=True, text=True, timeout=120)


def assert_one_line(result: subprocess.CompletedProcess[str], error: str, *hidden: str) -> str:
    assert result.returncode == 2, (result.args, result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"reelgen: {error}: "), (result.args, result.stderr)
    assert not [part for part in hidden if part in result.stderr + result.stdout], (
        result.args,
        result.stderr,
    )
    return lines[0]


def commands(catalog: Path) -> list[list[str]]:
    """Every command that reads the settings (sample-catalog and report read none; gpu-daemon takes its own)."""
    return [
        ["run", str(catalog)],
        ["backfill", str(catalog)],
        ["nightly", "--catalog", str(catalog), "--date", "2024-01-01"],
        ["retry", "--job", "some-job"],
        ["job", "cancel", "some-job"],
        ["status"],
        ["dispatcher", "--once"],
        ["worker"],
        ["beat"],
        ["flower"],
        ["config", "--show"],
        ["probe", "s3://bucket/video.mp4"],
        ["eval-highlights", str(catalog)],
    ]


def test_every_command_answers_a_bad_redis_url_with_one_line_and_exit_2(tmp_path: Path) -> None:
    catalog = tmp_path / "c.jsonl"
    catalog.write_text('{"item_id": "a", "video": "v.mp4", "image": "i.png", "title": "t"}\n')
    env = clean_env(REELGEN_REDIS_URL=f"redis://admin:{PASSWORD}@redis.internal.example:99999/0")
    for args in commands(catalog):
        line = assert_one_line(run_cli(env, *args), "ConfigError", PASSWORD, "redis.internal.example")
        assert "REELGEN_REDIS_URL" in line


def test_a_malformed_flower_auth_is_one_line_without_passwords(tmp_path: Path) -> None:
    env = clean_env(REELGEN_FLOWER__BASIC_AUTH=f"alice:{PASSWORD},bob")
    for args in (["flower"], ["config", "--show"], ["status"]):
        assert_one_line(run_cli(env, *args), "ConfigError", PASSWORD)


def test_an_unreachable_redis_is_one_line_and_exit_2(tmp_path: Path) -> None:
    catalog = tmp_path / "c.jsonl"
    catalog.write_text('{"item_id": "a", "video": "v.mp4", "image": "i.png", "title": "t"}\n')
    # a port nothing listens on; the password must not show in redis-py's message either
    env = clean_env(REELGEN_REDIS_URL=f"redis://admin:{PASSWORD}@127.0.0.1:1/0")
    for args in (
        ["status"],
        ["backfill", str(catalog)],
        ["job", "pause", "some-job"],
        ["dispatcher", "--once"],
    ):
        line = assert_one_line(run_cli(env, *args), "ConnectionError", PASSWORD)
        assert "cannot use the Redis of REELGEN_REDIS_URL" in line


def test_a_wrong_redis_password_is_one_line_and_exit_2(redis_server: EmbeddedRedis) -> None:
    client = redis.Redis.from_url(redis_server.url)
    client.config_set("requirepass", "the-right-one")
    try:
        wrong = redis_server.url.replace("unix://", f"unix://:{PASSWORD}@")
        assert_one_line(
            run_cli(clean_env(REELGEN_REDIS_URL=wrong), "status"), "AuthenticationError", PASSWORD
        )
    finally:
        redis.Redis.from_url(redis_server.url, password="the-right-one").config_set("requirepass", "")


def test_printable_escapes_what_could_rewrite_a_terminal() -> None:
    shown = printable(FORGED + "\u202e\t")
    assert shown.isprintable() and shown == "\\x1b[2K\\rFAKE done\\nFAILED nothing: forged\\u202e\\t"
    assert printable("plain text, ünïcode and 'quotes'") == "plain text, ünïcode and 'quotes'"


def test_the_run_summary_and_status_show_catalog_text_escaped(
    tmp_path: Path, redis_server: EmbeddedRedis, redis_client: redis.Redis
) -> None:
    ledger = Ledger(redis_client)
    settings = load_settings(
        redis_url=redis_server.url, state_dir=str(tmp_path / "s"), out=str(tmp_path / "o")
    )
    catalog = tmp_path / "c.jsonl"
    catalog.write_text("")
    job = submit_catalog_job(ledger, settings, JobKind.BACKFILL, CatalogRef.parse(str(catalog)))
    # an error message that quotes a seller's text, as SourceNotFound quotes a path
    ledger.fail(
        job.id, "line:1", "SourceNotFound", f"/media/{FORGED}.mp4 does not exist", admitted=False, cursor=1
    )
    assert ledger.feed_failed(job.id, f"CatalogError: {FORGED}", 1) == 0
    out = io.StringIO()
    summarise(ledger, ledger.job(job.id), "out", 1.0, None, out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "\x1b" not in out.getvalue() and "\r" not in out.getvalue(), lines
    assert lines[1] == "  the job failed: CatalogError: \\x1b[2K\\rFAKE done\\nFAILED nothing: forged"
    assert lines[2].startswith("  FAILED line:1: SourceNotFound: /media/\\x1b[2K\\rFAKE done\\nFAILED")
    shown = run_cli(clean_env(REELGEN_REDIS_URL=redis_server.url), "status", job.id)
    assert shown.returncode == 0 and "\x1b" not in shown.stdout and "\r" not in shown.stdout, shown
    assert f"{job.id}  backfill  {JobState.FAILED.value}" in shown.stdout
    assert "  the job failed: CatalogError: \\x1b[2K\\rFAKE done\\nFAILED nothing: forged\n" in shown.stdout


def test_a_run_escapes_catalog_text_in_its_summary_and_worker_log(tmp_path: Path) -> None:
    # a percent-encoded path is printable in the catalog and holds ESC and CR once decoded: the worker fails
    # the item naming it, in its log and in the summary
    line = {
        "item_id": "sku-1",
        "video": "v.mp4",
        "image": f"file://{tmp_path}/%1b%5b2K%0dFAKE%20done.png",
        "title": "\x1b[2K\rFAKE done",
    }
    make_code_video(
        tmp_path / "v.mp4", seconds=1.0, size=(320, 180), audio=False
    )  # the video is probed first
    catalog = tmp_path / "c.jsonl"
    catalog.write_text(json.dumps(line) + "\n")
    state = tmp_path / "state"
    result = run_cli(
        clean_env(), "run", str(catalog), "--out", str(tmp_path / "out"), "--state-dir", str(state),
        "--workers", "1",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "  FAILED sku-1: SourceNotFound: " in result.stdout and "\\x1b[2K\\rFAKE done.png" in result.stdout
    assert "\x1b" not in result.stdout and "\r" not in result.stdout, result.stdout
    [log] = state.glob("logs/worker-*.log")
    text = log.read_text()
    assert "item sku-1 failed: SourceNotFound: " in text and "\\x1b[2K\\rFAKE done.png" in text
    assert "\x1b" not in text and "\r" not in text


def test_log_records_and_their_tracebacks_stay_one_line_each() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("tests.escaping")
    logger.propagate = False
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    escape_handlers(logger)
    try:
        logger.warning("item %s failed: %s", "sku-1", FORGED)
        try:
            try:
                raise KeyError("inner")
            except KeyError as inner:
                raise ValueError(FORGED) from inner
        except ValueError:
            logger.exception("unexpected")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "WARNING item sku-1 failed: \\x1b[2K\\rFAKE done\\nFAILED nothing: forged"
    assert lines[-1] == "ValueError: \\x1b[2K\\rFAKE done\\nFAILED nothing: forged"
    # the traceback's own lines stay lines: its frames and how the exceptions are chained
    assert "The above exception was the direct cause of the following exception:" in lines
    assert "KeyError: 'inner'" in lines and sum(line.startswith('  File "') for line in lines) == 2
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()


def test_the_html_report_shows_catalog_text_escaped(tmp_path: Path) -> None:
    manifest = {"item_id": "sku-1", "title": f"<b>{FORGED}</b>", "status": "done", "window": {}}
    page = write_report([manifest], tmp_path / "report").read_text()
    assert "\x1b" not in page and "\r" not in page
    assert "&lt;b&gt;\\x1b[2K\\rFAKE done\\nFAILED nothing: forged&lt;/b&gt;" in page


def test_errors_printed_by_the_cli_are_escaped(tmp_path: Path) -> None:
    missing = tmp_path / "\x1b[2K\rFAKE.jsonl"
    result = run_cli(clean_env(), "run", str(missing))
    line = assert_one_line(result, "CatalogError")
    assert "\x1b" not in line and "\r" not in line and "\\x1b[2K\\rFAKE.jsonl" in line
