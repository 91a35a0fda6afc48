"""A command line that helps: help for every command with nothing configured, help text on every option, one
readable line for a wrong value, and a warning (once, with the nearest name) for a misspelt setting or field."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.names import unknown_variables
from core.settings import Settings, SourcePolicy
from jobs.intake.catalog import MAX_FIELD_WARNINGS, UnknownFields, read_catalog
from reelgen.cli import build_parser

REELGEN = str(Path(sys.executable).with_name("reelgen"))


def bare_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_shows_its_help_with_nothing_configured(tmp_path: Path) -> None:
    for name in subcommands():
        result = subprocess.run(
            [REELGEN, name, "--help"],
            cwd=tmp_path,
            env=bare_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, (name, result.stderr)
        assert "usage:" in result.stdout.lower(), (name, result.stdout)
    flower = subprocess.run(
        [REELGEN, "flower", "--help"],
        cwd=tmp_path,
        env=bare_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = " ".join(flower.stdout.split())
    assert "REELGEN_FLOWER__BASIC_AUTH" in text and "Every other argument goes to Flower unchanged" in text


def test_every_option_has_help_text() -> None:
    missing = [
        f"{name} {action.dest}"
        for name, parser in subcommands().items()
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert not missing


#: what a maintainer's note looks like: a reason for the code's shape, or a path into the source tree
MAINTAINER_NOTES = re.compile(
    r"Kept whole|lives in|\b\w+/\w+\.py\b|\b(jobs|workers|core|gpu_service|storage|monitoring|devtools)/"
)


def test_help_speaks_to_users_not_to_maintainers() -> None:
    parsers = {"reelgen": build_parser(), **subcommands()}
    notes = {
        name: [m.group(0) for m in MAINTAINER_NOTES.finditer(p.format_help())] for name, p in parsers.items()
    }
    assert {name: found for name, found in notes.items() if found} == {}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["run", "c.jsonl", "--workers", "0"],
            "reelgen run: argument --workers: must be a whole number of at least 1",
        ),
        (
            ["run", "c.jsonl", "--workers", "two"],
            "reelgen run: argument --workers: must be a whole number, not 'two'",
        ),
        (
            ["run", "c.jsonl", "--aspects", "9x16"],
            "reelgen run: argument --aspects: aspect '9x16' is not of the form",
        ),
        (
            ["run", "c.jsonl", "--placements", ","],
            "reelgen run: argument --placements: name at least one placement",
        ),
        (
            ["backfill", "c.jsonl", "--max-in-flight", "-3"],
            "reelgen backfill: argument --max-in-flight: must be",
        ),
        (
            ["nightly", "--date", "2026-13-01"],
            "reelgen nightly: argument --date: must be a date as YYYY-MM-DD",
        ),
        (
            ["job", "limit", "some-job", "0"],
            "reelgen job: argument value: must be a whole number of at least 1",
        ),
        (
            ["status", "--limit", "0"],
            "reelgen status: argument --limit: must be a whole number of at least 1",
        ),
        (["run"], "reelgen run: the following arguments are required: catalog"),
        (["nosuch"], "reelgen: argument COMMAND: invalid choice: 'nosuch'"),
    ],
)
def test_a_wrong_value_is_one_readable_line(tmp_path: Path, args: list[str], expected: str) -> None:
    result = subprocess.run(
        [REELGEN, *args], cwd=tmp_path, env=bare_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected) and lines[0].endswith("--help)"), result.stderr


@pytest.mark.parametrize(
    ("catalog", "expected"),
    [
        ("ftp://example.com/c.jsonl", "reelgen: ForbiddenSource: 'ftp://example.com/c.jsonl': scheme 'ftp'"),
        ("s3:///c.jsonl", "reelgen: ForbiddenSource: 's3:///c.jsonl': an s3 URI needs a bucket"),
        ("absent.jsonl", "reelgen: CatalogError: catalog "),
    ],
)
def test_a_catalog_reference_that_cannot_be_used_is_one_line_and_exit_2(
    tmp_path: Path, catalog: str, expected: str
) -> None:
    result = subprocess.run(
        [REELGEN, "run", catalog, "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        env=bare_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), result.stderr


def test_unknown_settings_are_warned_about_once_with_the_nearest_name(tmp_path: Path) -> None:
    env = bare_env() | {
        "REELGEN_WORKER": "2",
        "REELGEN_MAX_INFLIGHT": "8",
        "REELGEN_FLOWER__PORT": "5556",
    }
    result = subprocess.run(
        [REELGEN, "config", "--show"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "is not a reelgen setting" in line]
    assert len(warnings) == 2, result.stderr
    assert warnings[0].endswith(
        "REELGEN_MAX_INFLIGHT is not a reelgen setting and is ignored; did you mean REELGEN_MAX_IN_FLIGHT?"
    )
    assert warnings[1].endswith(
        "REELGEN_WORKER is not a reelgen setting and is ignored; did you mean REELGEN_WORKERS?"
    )
    shown = json.loads(result.stdout)
    assert shown["workers"] is None and shown["max_in_flight"] == 64  # ignored indeed
    # a nested model refuses a name it does not know: the warning still says what was meant
    env = bare_env() | {"REELGEN_DAEMON__MODLES": "x"}
    refused = subprocess.run(
        [REELGEN, "config", "--show"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[0].endswith("did you mean REELGEN_DAEMON__MODELS?"), refused.stderr


def test_known_names_and_mapping_keys_are_not_warned_about() -> None:
    env = {
        "REELGEN_WORKERS": "2",
        "reelgen_cpus": "2",  # read case-insensitively
        "REELGEN_FLOWER__PORT": "1",
        "REELGEN_PRIORITY_CLASSES__NIGHTLY": "0",
        "REELGEN_SETTINGS_FILE": "x",
        "REELGEN_TEST_BROKER": "memory://",
        "PATH": "/bin",
        "REELGEN_REDIS_URI": "x",
    }
    assert unknown_variables(env, Settings) == [("REELGEN_REDIS_URI", "REELGEN_REDIS_URL")]


def test_unknown_catalog_fields_are_warned_about_once_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = tmp_path / "catalog.jsonl"
    line = {"item_id": "a", "video": "v.mp4", "image": "i.png", "title": "t", "titel": "x", "descripton": "y"}
    odd = {f"extra{k}": 1 for k in range(2 * MAX_FIELD_WARNINGS)}
    lines = [line | {"item_id": f"a{k}"} for k in range(3)] + [line | odd | {"item_id": "b"}]
    catalog.write_text("".join(json.dumps(x) + "\n" for x in lines))
    UnknownFields._warned.pop(str(catalog), None)
    with caplog.at_level(logging.WARNING, logger="jobs.intake.catalog"):
        assert len(list(read_catalog(catalog, SourcePolicy(allow_local=True)))) == 4
        list(read_catalog(catalog, SourcePolicy(allow_local=True)))  # read again: no second warning
    messages = [r.getMessage() for r in caplog.records]
    assert (
        messages[0]
        == f"catalog {catalog}: field 'titel' is not a catalog field and is ignored; did you mean 'title'?"
    )
    assert messages[1].endswith(
        "field 'descripton' is not a catalog field and is ignored; did you mean 'description'?"
    )
    assert messages[2].endswith("field 'extra0' is not a catalog field and is ignored")
    # a catalog with a new field on every line does not flood the log
    assert len(messages) == MAX_FIELD_WARNINGS + 1 and messages[-1].endswith(
        "further unknown fields are not listed"
    )
