"""The tuned parameters of a package: its modules' top-level constants, counted.

A parameter is a module-level name in capitals bound to a number or to a tuple of numbers (a threshold, a size,
a share, a light's gains), the figures a design is tuned by; names bound to anything else (a path, a regex, a
type) are not counted. `python -m devtools.parameters workers/analysis/localisation` prints each module's and the
total, the figure the localisation's design is held to.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Parameter:
    module: str
    name: str
    line: int


def _numeric(node: ast.expr) -> bool:
    """A number, a negated number, arithmetic on numbers, or a tuple or comprehension of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) or _numeric(node.right)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        # a table built from numbers: over number ranges, or of numbers
        return _numeric(node.elt) or any(_numeric(g.iter) for g in node.generators)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tuple":
        return len(node.args) == 1 and _numeric(node.args[0])
    return False


def parameters_of(module: str, source: str) -> list[Parameter]:
    """The parameters bound at the top level of a module's source."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id.lstrip("_").isupper() and _numeric(value):
                found.append(Parameter(module, target.id, node.lineno))
    return found


def package_parameters(folder: Path) -> list[Parameter]:
    return [
        parameter
        for path in sorted(folder.glob("*.py"))
        for parameter in parameters_of(path.stem, path.read_text(encoding="utf-8"))
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("package", type=Path, help="a package's folder, e.g. workers/analysis/localisation")
    parser.add_argument("--names", action="store_true", help="list every parameter too")
    args = parser.parse_args(argv)
    found = package_parameters(args.package)
    by_module: dict[str, list[Parameter]] = {}
    for parameter in found:
        by_module.setdefault(parameter.module, []).append(parameter)
    for module, params in by_module.items():
        names = f": {', '.join(p.name for p in params)}" if args.names else ""
        print(f"{module:<12} {len(params):3d}{names}")
    print(f"{'total':<12} {len(found):3d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
