"""The import-graph check itself: it sees imports at any depth, and it fails on an upward import or a cycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools import imports

LAYERS = (("low", ("low",)), ("high", ("high",)))


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _problems(root: Path, shims: dict[str, str] | None = None) -> list[str]:
    modules, edges = imports.collect(root, ("low", "high"))
    return imports.problems(modules, edges, LAYERS, shims or {})


def test_downward_imports_pass(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/core.py": "VALUE = 1\n",
            "high/__init__.py": "",
            "high/app.py": "from low.core import VALUE\nfrom low import core\n",
        },
    )
    assert _problems(root) == []


def test_an_upward_import_inside_a_function_fails(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/core.py": "def lazy() -> None:\n    if True:\n        from high.app import run  # noqa\n",
            "high/__init__.py": "",
            "high/app.py": "def run() -> None: ...\n",
        },
    )
    assert _problems(root) == ["upward: low.core:3 imports high.app (low -> high)"]


def test_a_relative_upward_import_under_type_checking_fails(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n",
            "low/b.py": "import high.app\n",
            "high/__init__.py": "",
            "high/app.py": "",
        },
    )
    assert _problems(root) == ["upward: low.b:1 imports high.app (low -> high)"]


def test_a_cycle_within_a_layer_fails(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/a.py": "from low.b import B\nA = 1\n",
            "low/b.py": "def f() -> int:\n    from low.a import A\n    return A\nB = 2\n",
        },
    )
    assert _problems(root) == ["module cycle: low.a <-> low.b"]


def test_a_module_in_no_layer_is_an_error() -> None:
    with pytest.raises(ValueError, match="in no layer"):
        imports.layer_of("elsewhere.a", LAYERS)


def test_a_shim_may_import_its_new_home_and_nothing_may_import_the_shim(tmp_path: Path) -> None:
    files = {
        "low/__init__.py": "",
        "low/old.py": "from high.new import thing as thing\n",
        "high/__init__.py": "",
        "high/new.py": "thing = 1\n",
    }
    root = _tree(tmp_path, files)
    shims = {"low.old": "high.new"}
    assert _problems(root, shims) == []
    assert _problems(root) == ["upward: low.old:1 imports high.new (low -> high)"]
    _tree(tmp_path, {"high/user.py": "from low.old import thing\n"})
    assert _problems(root, shims) == ["shim: high.user:1 imports low.old, moved to high.new"]
