"""The parameter count: module-level numeric constants, the figures a design is tuned by."""

from __future__ import annotations

from pathlib import Path

from devtools.parameters import main, package_parameters, parameters_of

SOURCE = """
import re
from typing import Final

Box = tuple[float, float, float, float]
#: counted: numbers, negated and computed, tuples of them, and tables built from them
MIN_INLIERS = 8
FLOOR: Final = -0.5
SIDE = 2 * 128
SKIN_CR = (133, 173)
LIGHTS = tuple((warm, 1 / warm) for warm in (0.9, 1.1))
SHARES = tuple(0.15 * 1.25**k for k in range(12))
_PRIVATE_SCALE = 0.25
#: not counted: text, patterns, flags, types, lower-case names, and names bound inside functions
NAME = "features"
PATTERN = re.compile("[a-z]+")
ENABLED = True
scale = 2.0


def f() -> None:
    INNER = 3
"""


def test_numbers_and_tables_of_numbers_count_and_nothing_else_does() -> None:
    names = [p.name for p in parameters_of("m", SOURCE)]
    assert names == ["MIN_INLIERS", "FLOOR", "SIDE", "SKIN_CR", "LIGHTS", "SHARES", "_PRIVATE_SCALE"]


def test_a_package_is_counted_module_by_module(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("X = 1\nY = (1, 2)\n")
    (tmp_path / "b.py").write_text('Z = 0.5\nLABEL = "z"\n')
    assert [(p.module, p.name) for p in package_parameters(tmp_path)] == [("a", "X"), ("a", "Y"), ("b", "Z")]
    assert main([str(tmp_path)]) == 0
