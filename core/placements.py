"""Placements: named publishing targets, each a fixed output size, a safe zone and an upscale limit.

The presets are data (core/placements.toml, beside this module); a user's file of the same form adds presets
or replaces shipped ones by name. A placement is stored whole with a job's output config, so every worker
renders a job to the numbers it was submitted with, and changing a preset changes the config's hash.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import ConfigError

PRESETS_FILE = Path(__file__).with_name("placements.toml")
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")

#: a margin past this share of a side would leave too little of the clip to place anything in
Share = Annotated[float, Field(ge=0.0, le=0.45)]
Side = Annotated[int, Field(ge=16, le=4096, multiple_of=2)]


class SafeZone(BaseModel):
    """The shares of an output's height (top, bottom) and width (left, right) that a platform's overlays cover."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    top: Share = 0.0
    bottom: Share = 0.0
    left: Share = 0.0
    right: Share = 0.0

    def along(self, axis: int) -> tuple[float, float]:
        """The margins at the start and the end of axis 0 (x: left, right) or 1 (y: top, bottom)."""
        return (self.left, self.right) if axis == 0 else (self.top, self.bottom)


class Placement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    about: str = ""
    #: the output's width and height, pixels
    size: tuple[Side, Side]
    safe: SafeZone = SafeZone()
    #: how far a crop may be enlarged to reach size; past it the clip is written smaller, at the limit
    max_upscale: float = Field(default=1.5, ge=1.0, le=4.0)

    @model_validator(mode="after")
    def _check(self) -> Placement:
        if not NAME.match(self.name):
            raise ValueError(f"placement name {self.name!r} is not lower-case letters, digits and '-'")
        return self

    @property
    def aspect(self) -> tuple[int, int]:
        """The output's aspect in lowest terms (1080x1920: 9:16)."""
        g = math.gcd(*self.size)
        return self.size[0] // g, self.size[1] // g


def load_placements(extra: Path | None = None) -> dict[str, Placement]:
    """The shipped presets, then extra's (the same name replaces a shipped preset); ConfigError on a file that
    does not read or a preset that does not validate."""
    presets = _read(PRESETS_FILE)
    if extra is not None:
        presets.update(_read(extra))
    return presets


def _read(path: Path) -> dict[str, Placement]:
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("presets", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"placements file {path} does not read: {exc}") from None
    if not isinstance(table, dict):
        raise ConfigError(f"placements file {path}: [presets] must be a table of presets")
    presets = {}
    for name, fields in table.items():
        try:
            presets[name] = Placement.model_validate({**fields, "name": name})
        except (ValidationError, TypeError) as exc:
            raise ConfigError(f"placements file {path}, preset {name!r}: {_first_problem(exc)}") from None
    return presets


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        problem = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in problem["loc"])
        return f"{where}: {problem['msg']}" if where else problem["msg"]
    return str(exc)
