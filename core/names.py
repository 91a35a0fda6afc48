"""Names a user may misspell, and the nearest known one: settings' environment variables and catalog fields.

Both are otherwise ignored when unknown (pydantic-settings skips variables it has no field for, the catalog reader
drops fields it does not know), so a typo would change nothing and say nothing.
"""

from __future__ import annotations

import difflib
import functools
import logging
import os
import typing
from collections.abc import Collection, Mapping

from pydantic import BaseModel

from core.text import printable

log = logging.getLogger("core.settings")

PREFIX = "REELGEN_"
#: variables reelgen reads outside its settings: the settings file; the Redis password the Helm chart splices
#: into REELGEN_REDIS_URL; the tests' folder of real media
OTHER_VARIABLES = frozenset({"REELGEN_SETTINGS_FILE", "REELGEN_REDIS_PASSWORD", "REELGEN_REAL_MEDIA_DIR"})
#: variables tests set for their own helpers
TEST_PREFIX = "REELGEN_TEST_"
#: the longest unknown name quoted in a warning (a catalog's field names are a seller's text)
SHOWN_CHARS = 64


def nearest(name: str, known: Collection[str]) -> str | None:
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return found[0] if found else None


def setting_variables(model: type[BaseModel], prefix: str = PREFIX) -> tuple[set[str], set[str]]:
    """The variables a settings model reads (nested models through '__'), and the prefixes under which any name
    is read (a mapping's keys: REELGEN_DAEMON__WEIGHTS__CLIP)."""
    names: set[str] = set()
    open_prefixes: set[str] = set()
    for name, field in model.model_fields.items():
        variable = f"{prefix}{name.upper()}"
        names.add(variable)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            inner, inner_open = setting_variables(annotation, f"{variable}__")
            names |= inner
            open_prefixes |= inner_open
        elif typing.get_origin(annotation) is dict:
            open_prefixes.add(f"{variable}__")
    return names, open_prefixes


def unknown_variables(environ: Mapping[str, str], model: type[BaseModel]) -> list[tuple[str, str | None]]:
    """REELGEN_* variables that no setting reads, each with the nearest known name (or None)."""
    known, open_prefixes = setting_variables(model)
    known |= OTHER_VARIABLES
    unknown = []
    for name in sorted(environ):
        upper = name.upper()  # pydantic-settings reads variable names case-insensitively
        if (
            not upper.startswith(PREFIX)
            or upper in known
            or upper.startswith(TEST_PREFIX)
            or any(upper.startswith(p) and len(upper) > len(p) for p in open_prefixes)
        ):
            continue
        unknown.append((name, nearest(upper, known)))
    return unknown


@functools.cache
def warn_unknown_variables() -> None:
    """Warn, once per process, about REELGEN_* variables in the environment that no setting reads."""
    from core.settings import Settings

    for name, suggestion in unknown_variables(os.environ, Settings):
        log.warning("%s is not a reelgen setting and is ignored%s", shown(name), did_you_mean(suggestion))


def did_you_mean(suggestion: str | None) -> str:
    return f"; did you mean {suggestion}?" if suggestion else ""


def shown(name: str) -> str:
    text = printable(name)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"
