"""The one scale the evidence sources' boxes are compared on: the probability that a box is the product.

Each source's raw confidence measures something of its own (features: the share of a full set of agreeing
keypoints; a colour blob or an outline: how well it fills or stands out; a followed box: its origin's, decayed;
the template scorer: its correlation), so no two are comparable as they come. A logistic curve per source,
p = 1 / (1 + exp(−(slope · confidence + intercept))), fitted by bench/calibrate.py on the tuning half of the
quality set (a box most of which lies on the product, against every other box the source gave), maps each onto
the same probability. The curves are data (calibration.json beside this module, with what they were fitted on); a
source with too few boxes to fit takes the curve fitted to all sources together.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

from core.errors import ConfigError

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
#: the curve every source without its own takes
POOLED = "pooled"


@functools.cache
def _curves(path: Path = CALIBRATION_FILE) -> dict[str, tuple[float, float]]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return {name: (float(c["slope"]), float(c["intercept"])) for name, c in data["curves"].items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the localisation's calibration {path} is unreadable: {exc}") from exc


def probability(method: str, confidence: float) -> float:
    """The probability that a box placed by method ("none": no box) with this raw confidence is the product."""
    if method == "none":
        return 0.0
    curves = _curves()
    slope, intercept = curves.get(method, curves[POOLED])
    return 1.0 / (1.0 + math.exp(-(slope * confidence + intercept)))
