"""The calibrated scale the evidence sources' boxes are compared on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ConfigError
from workers.analysis.localisation import calibration
from workers.analysis.localisation.calibration import CALIBRATION_FILE, POOLED, probability


def test_the_shipped_calibration_has_a_pooled_curve_and_says_what_it_was_fitted_on() -> None:
    data = json.loads(CALIBRATION_FILE.read_text())
    assert "tuning half" in data["fitted_on"]
    assert POOLED in data["curves"]
    for curve in data["curves"].values():
        assert curve["boxes"] >= curve["on_product"] > 0


def test_a_probability_rises_with_its_sources_confidence_and_no_box_has_none() -> None:
    for method in json.loads(CALIBRATION_FILE.read_text())["curves"]:
        low, high = probability(method, 0.0), probability(method, 1.0)
        assert 0.0 <= low <= high <= 1.0
    assert probability("none", 1.0) == 0.0


def test_a_source_without_a_curve_of_its_own_takes_the_pooled_one() -> None:
    assert "a-new-source" not in json.loads(CALIBRATION_FILE.read_text())["curves"]
    assert probability("a-new-source", 0.4) == probability(POOLED, 0.4)


def test_an_unreadable_calibration_is_a_named_config_error(tmp_path: Path) -> None:
    broken = tmp_path / "calibration.json"
    broken.write_text('{"curves": {"pooled": {"slope": 1.0}}}')
    with pytest.raises(ConfigError, match="calibration"):
        calibration._curves(broken)
