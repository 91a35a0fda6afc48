"""The localisation's tuned figures: all in one module, and each read by the design."""

from __future__ import annotations

import ast
from pathlib import Path

import workers.analysis.localisation as localisation
from devtools.parameters import package_parameters

PACKAGE = Path(localisation.__file__).parent


def test_every_parameter_of_the_localisation_is_in_its_parameters_module() -> None:
    elsewhere = [f"{p.module}.{p.name}" for p in package_parameters(PACKAGE) if p.module != "parameters"]
    assert elsewhere == []


def test_every_parameter_is_read_by_some_other_module_of_the_package() -> None:
    # names the code reads, not names its comments and docstrings mention
    read = {
        node.id
        for path in PACKAGE.glob("*.py")
        if path.stem != "parameters"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Name)
    }
    unread = [p.name for p in package_parameters(PACKAGE) if p.name not in read]
    assert unread == []
