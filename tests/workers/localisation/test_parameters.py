"""The localisation's tuned figures: all in one module, and each read by the design."""

from __future__ import annotations

import re
from pathlib import Path

import workers.analysis.localisation as localisation
from devtools.parameters import package_parameters

PACKAGE = Path(localisation.__file__).parent


def test_every_parameter_of_the_localisation_is_in_its_parameters_module() -> None:
    elsewhere = [f"{p.module}.{p.name}" for p in package_parameters(PACKAGE) if p.module != "parameters"]
    assert elsewhere == []


def test_every_parameter_is_read_by_some_other_module_of_the_package() -> None:
    code = "\n".join(
        path.read_text(encoding="utf-8") for path in PACKAGE.glob("*.py") if path.stem != "parameters"
    )
    unread = [p.name for p in package_parameters(PACKAGE) if not re.search(rf"\b{p.name}\b", code)]
    assert unread == []
