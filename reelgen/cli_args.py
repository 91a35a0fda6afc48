"""Argument parsing for the `reelgen` command line: a parser that answers a wrong argument in one line, and the
types that check values as they are read, so `--workers 0` is named as the flag the user typed."""

from __future__ import annotations

import argparse
import datetime
from typing import NoReturn

from core.errors import ConfigError
from core.settings import parse_aspect


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr: what is wrong, and where the help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text}")
    return value


def class_number(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more (0 is served first), not {text}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def aspects(text: str) -> str:
    """Comma-separated A:B ratios, checked here and passed on as typed."""
    for part in text.split(","):
        try:
            parse_aspect(part)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def placements(text: str) -> str:
    """Comma-separated placement names, checked against the presets (and REELGEN_PLACEMENTS_FILE's) when the
    settings load; passed on as typed."""
    if not [part for part in text.split(",") if part.strip()]:
        raise argparse.ArgumentTypeError("name at least one placement")
    return text


def iso_date(text: str) -> str:
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a date as YYYY-MM-DD, not {text!r}") from None


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
