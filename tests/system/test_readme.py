"""The README as a user's guide: short, and every command it shows works as written: each `reelgen` line parses
(its command, flags and values exist), each command's --help answers, each make target and helm value exists, the
catalog example is a valid catalog and every link reaches a file and heading that exist. (`make demo` runs the
set-up commands themselves.)"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import yaml

from core.settings import SourcePolicy
from jobs.intake.catalog import BadLine, read_catalog
from reelgen.cli import parse_args

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REELGEN = str(Path(sys.executable).with_name("reelgen"))
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(), re.S | re.M)


def shell_commands() -> Iterator[list[str]]:
    """Each command line of the README's shell examples as words, continuations joined, comments and leading
    VAR=value assignments dropped."""
    for block in blocks("sh"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words and ASSIGNMENT.match(words[0]):
                words.pop(0)
            if words:
                yield words


def test_the_readme_is_a_guide_of_about_200_lines() -> None:
    assert len(README.read_text().splitlines()) <= 200


def test_every_reelgen_command_in_the_readme_parses_and_its_help_answers() -> None:
    commands = [words[1:] for words in shell_commands() if words[0] == "reelgen"]
    assert len(commands) >= 15
    used = set()
    for args in commands:
        parsed = parse_args(args)  # exits (failing the test) on an unknown command, flag or a wrong value
        used.add(parsed.command)
    assert {"run", "report", "status", "retry", "job", "backfill", "nightly", "flower", "probe"} <= used
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGEN_")}
    for command in sorted(used):
        result = subprocess.run(
            [REELGEN, command, "--help"], env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, (command, result.stderr)


def test_make_targets_and_helm_values_in_the_readme_exist() -> None:
    makefile = (ROOT / "Makefile").read_text()
    values = yaml.safe_load((ROOT / "helm" / "reelgen" / "values.yaml").read_text())
    seen = set()
    for words in shell_commands():
        seen.add(words[0])
        if words[0] == "make":
            assert re.search(rf"^{re.escape(words[1])}:", makefile, re.M), words
        if words[0] == "helm":
            assert (ROOT / words[2]).is_dir(), words
            for flag, value in itertools.pairwise(words):
                if flag == "-f":
                    assert (ROOT / value).is_file(), value
                if flag == "--set":
                    node = values
                    for key in value.split("=", 1)[0].split("."):
                        assert isinstance(node, dict) and key in node, value
                        node = node[key]
    assert {"make", "reelgen", "helm"} <= seen


def test_the_catalog_example_is_a_valid_catalog(tmp_path: Path) -> None:
    [example] = blocks("json")
    lines = [json.loads(line) for line in example.splitlines()]
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text(example)
    entries = [record for _, record in read_catalog(catalog, SourcePolicy(allow_local=True))]
    assert len(entries) == len(lines) >= 2
    assert not [e for e in entries if isinstance(e, BadLine)], entries


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", markdown, re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_link_in_the_readme_reaches_a_file_and_heading() -> None:
    links = re.findall(r"\]\(([^)]+)\)", README.read_text())
    assert links
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:
            assert anchor in _anchors(target.read_text()), link
