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


def _problems(root: Path) -> list[str]:
    modules, edges = imports.collect(root, ("low", "high"))
    return imports.problems(modules, edges, LAYERS, ("low", "high"), ())


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
    assert _problems(root) == [
        "upward: low.core:3 imports high.app (low -> high)",
        "upward folder: low imports high (1 imports)",
    ]


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
    assert _problems(root) == [
        "upward: low.b:1 imports high.app (low -> high)",
        "upward folder: low imports high (1 imports)",
    ]


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


def test_a_forbidden_import_of_a_lower_layer_fails(tmp_path: Path) -> None:
    layers = (("low", ("low",)), ("mid", ("mid",)), ("high", ("high",)))
    root = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "mid/__init__.py": "",
            "mid/a.py": "import low\n",
            "high/__init__.py": "",
            "high/b.py": "import low\nimport mid.a\n",
        },
    )
    modules, edges = imports.collect(root, ("low", "mid", "high"))
    folders = ("low", "mid", "high")
    assert imports.problems(modules, edges, layers, folders, ()) == []
    assert imports.problems(modules, edges, layers, folders, (("mid", "low"),)) == [
        "forbidden: mid.a:1 imports low (mid may not know low)"
    ]


def test_folders_import_only_downwards_and_layers_follow_the_folders(tmp_path: Path) -> None:
    # a module layer inside `high` sits below `low` in the layer order: the modules obey the layers, but the
    # folder `low` imports the folder `high`
    layers = (("base", ("high.base",)), ("low", ("low",)), ("high", ("high",)))
    root = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/a.py": "import high.base\n",
            "high/__init__.py": "",
            "high/base.py": "",
        },
    )
    modules, edges = imports.collect(root, ("low", "high"))
    assert imports.problems(modules, edges, layers, ("low", "high"), ()) == [
        "layer order: low (low) lies in a folder below an earlier layer's",
        "upward folder: low imports high (1 imports)",
    ]


def test_a_long_module_needs_a_reason_and_a_very_long_one_is_refused(tmp_path: Path) -> None:
    body = "x = 1\n" * 20
    root = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/plain.py": body,
            "low/kept.py": '"""Kept whole: one state machine."""\n' + body,
            "low/huge.py": '"""Kept whole: too."""\n' + body * 3,
            "low/pending.py": body * 3,
        },
    )
    modules = imports.find_modules(root, ("low",))
    assert imports.size_problems(
        modules, limit=10, ceiling=40, pending={"low.pending": "being replaced"}
    ) == [
        "too long: low.huge has 61 lines (at most 40)",
        "no reason: low.plain has 20 lines and no 'Kept whole:' in its docstring",
    ]
