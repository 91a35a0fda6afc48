"""The house stays built: no import in reelgen's folders points up a layer, crosses a forbidden line or closes a
cycle, no module is long without a reason, and neither the product nor the benchmarks import the tests
(the layers: devtools/imports.py and docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

from devtools import imports

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_in_the_graph() -> None:
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - {"tests", "bench", "docs"}
    assert packages == set(imports.FOLDERS)


def test_no_upward_import_and_no_cycle() -> None:
    modules, edges = imports.collect(ROOT)
    assert len(modules) > 50 and len(edges) > 100  # it read the tree
    assert imports.problems(modules, edges) == []


def test_no_module_is_long_without_a_reason() -> None:
    modules, _ = imports.collect(ROOT)
    assert imports.size_problems(modules) == []


def test_neither_the_product_nor_the_benchmarks_import_the_tests() -> None:
    tests = {imports.module_name(ROOT, path) for path in (ROOT / "tests").rglob("*.py")}
    # not the benchmarks' own data (bench/.data holds unpacked revisions of the whole tree, tests included)
    sources = [
        path
        for folder in (*imports.FOLDERS, "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
    ]
    wrong = []
    for path in sources:
        name = imports.module_name(ROOT, path)
        for edge in imports.imports_of(name, path.read_text(), path.name == "__init__.py", tests):
            wrong.append(f"{edge.source}:{edge.line} imports {edge.target}")
    assert len(sources) > 100 and wrong == []


def test_the_command_line_check_passes_on_the_tree() -> None:
    assert imports.main(["--check", "--root", str(ROOT)]) == 0


#: Helpers outside tests/support/ that tests may import: the real-media list (the Makefile's fetch and the
#: localiser's tests name it there).
TEST_HELPERS = ("devtools.real_media",)


def test_tests_import_helpers_never_other_test_modules() -> None:
    tests = ROOT / "tests"
    known = {imports.module_name(ROOT, path) for path in tests.rglob("*.py")}
    wrong = []
    for path in sorted(tests.rglob("*.py")):
        name = imports.module_name(ROOT, path)
        if name.startswith("tests.support") or name in TEST_HELPERS:
            continue
        for edge in imports.imports_of(name, path.read_text(), path.name == "__init__.py", known):
            if not (edge.target.startswith("tests.support") or edge.target in TEST_HELPERS):
                wrong.append(f"{edge.source}:{edge.line} imports {edge.target}")
    assert wrong == []
