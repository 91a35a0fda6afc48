"""The import graph of reelgen's packages, checked against the declared layer order (docs/architecture.md).

`python -m devtools.imports` prints the package-level edges, the import cycles, every import that points up a
layer, and the largest modules; `--check` exits 1 when there is a cycle or an upward import, which is what
tests/devtools/test_layering.py asserts on the real tree. Every import counts: those inside functions and under
`if TYPE_CHECKING` too, since a lazy import is still a dependency the reader must carry.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: the packages the graph covers; tests, bench and docs sit outside it and may import anything
PACKAGES = ("reelgen", "storage", "gpu_service", "monitoring", "workers", "jobs", "devtools")

#: The layers, lowest first: a module may import its own layer and those below, never one above. A module
#: belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("reelgen",)),
    ("services", ("storage", "gpu_service", "monitoring")),
    ("media", ("workers",)),
    ("orchestration", ("jobs", "monitoring.report")),
    ("tasks", ("workers.tasks", "workers.fanin")),
    ("entry points", ("jobs.cli", "jobs.cli_args", "monitoring.flower", "devtools")),
)

#: Modules kept at their old name after a move, for callers outside the packages (tests, benchmarks, queued
#: work): a shim may import only its new home, and no module in the packages may import a shim.
SHIMS: dict[str, str] = {"jobs.sample_catalog": "devtools.sample_catalog"}

#: modules longer than this state at their top why they are not split
LONG_MODULE = 400


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    lines: int


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path, packages: Sequence[str] = PACKAGES) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            name = module_name(root, path)
            modules[name] = Module(name, path, len(path.read_text(encoding="utf-8").splitlines()))
    return modules


def _resolve(name: str, known: Iterable[str]) -> str | None:
    """The longest known module that `name` is or lies inside (`a.b.C` -> `a.b`)."""
    known_set = set(known)
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known_set:
            return candidate
    return None


def imports_of(source: str, text: str, is_package: bool, known: Iterable[str]) -> list[Import]:
    """Every import in `text` (module `source`) that lands in a known module, at any depth of the tree."""
    known_set = set(known)
    found: list[Import] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = source.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name, known_set)
            if target is not None and target != source:
                found.append(Import(source, target, node.lineno))
    # `from m import a, b` is one import of m
    return sorted(set(found), key=lambda i: (i.line, i.target))


def collect(root: Path, packages: Sequence[str] = PACKAGES) -> tuple[dict[str, Module], list[Import]]:
    modules = find_modules(root, packages)
    edges: list[Import] = []
    for module in modules.values():
        text = module.path.read_text(encoding="utf-8")
        edges += imports_of(module.name, text, module.path.name == "__init__.py", modules)
    return modules, edges


def layer_of(module: str, layers: Sequence[tuple[str, tuple[str, ...]]] = LAYERS) -> int:
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    if rank < 0:
        raise ValueError(f"{module} is in no layer: add its package to LAYERS")
    return rank


def upward(
    edges: Iterable[Import],
    layers: Sequence[tuple[str, tuple[str, ...]]] = LAYERS,
    shims: Mapping[str, str] = SHIMS,
) -> list[Import]:
    return [
        e
        for e in edges
        if layer_of(e.target, layers) > layer_of(e.source, layers) and shims.get(e.source) != e.target
    ]


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def module_graph(edges: Iterable[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        graph[edge.source].add(edge.target)
    return graph


def unit_of(module: str, layers: Sequence[tuple[str, tuple[str, ...]]] = LAYERS) -> str:
    """A package split over layers counts once per layer ('monitoring@services'), so that a package's exporters
    and its reports are separate units in the package graph."""
    return f"{module.split('.')[0]}@{layers[layer_of(module, layers)][0]}"


def package_graph(
    edges: Iterable[Import], layers: Sequence[tuple[str, tuple[str, ...]]] = LAYERS
) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for edge in edges:
        pair = (unit_of(edge.source, layers), unit_of(edge.target, layers))
        if pair[0] != pair[1]:
            counts[pair] += 1
    return dict(counts)


def problems(
    modules: Mapping[str, Module],
    edges: Sequence[Import],
    layers: Sequence[tuple[str, tuple[str, ...]]] = LAYERS,
    shims: Mapping[str, str] = SHIMS,
) -> list[str]:
    """What breaks the layering, one line each: upward imports, imports of shims, module cycles, package
    cycles. A shim's own import of its new home is none of these."""
    lines = [
        f"upward: {e.source}:{e.line} imports {e.target} "
        f"({layers[layer_of(e.source, layers)][0]} -> {layers[layer_of(e.target, layers)][0]})"
        for e in upward(edges, layers, shims)
    ]
    lines += [
        f"shim: {e.source}:{e.line} imports {e.target}, moved to {shims[e.target]}"
        for e in edges
        if e.target in shims
    ]
    edges = [e for e in edges if e.source not in shims]
    lines += [f"module cycle: {' <-> '.join(c)}" for c in cycles(module_graph(edges))]
    units: dict[str, set[str]] = defaultdict(set)
    for source, target in package_graph(edges, layers):
        units[source].add(target)
    lines += [f"package cycle: {' <-> '.join(c)}" for c in cycles(units)]
    return lines


def unexplained_long_modules(modules: Mapping[str, Module], limit: int = LONG_MODULE) -> list[Module]:
    """Modules over `limit` lines whose docstring does not say why they are kept whole ("Kept whole: ...")."""
    long = (m for m in modules.values() if m.lines > limit)
    unexplained = [
        m for m in long if "Kept whole:" not in (ast.get_docstring(ast.parse(m.path.read_text())) or "")
    ]
    return sorted(unexplained, key=lambda m: -m.lines)


def report(root: Path, top: int = 12) -> tuple[str, int]:
    modules, edges = collect(root)
    out = ["layers, lowest first:"]
    out += [f"  {i} {name}: {', '.join(prefixes)}" for i, (name, prefixes) in enumerate(LAYERS)]
    out.append("package edges (imports):")
    out += [f"  {s} -> {t} ({n})" for (s, t), n in sorted(package_graph(edges).items())]
    found = problems(modules, edges)
    n_up = sum(line.startswith("upward") for line in found)
    n_shim = sum(line.startswith("shim") for line in found)
    out.append(f"cycles: {len(found) - n_up - n_shim}, upward imports: {n_up}, imports of shims: {n_shim}")
    out.append(f"shims: {', '.join(f'{old} -> {new}' for old, new in SHIMS.items()) or 'none'}")
    out += [f"  {line}" for line in found]
    out.append("largest modules:")
    by_size = sorted(modules.values(), key=lambda m: -m.lines)[:top]
    out += [f"  {m.lines:5d} {m.name}" for m in by_size]
    unexplained = unexplained_long_modules(modules)
    out.append(f"over {LONG_MODULE} lines without 'Kept whole:' at their top: {len(unexplained)}")
    out += [f"  {m.lines:5d} {m.name}" for m in unexplained]
    return "\n".join(out), len(found)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.imports", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--top", type=int, default=12, help="how many of the largest modules to list")
    parser.add_argument("--check", action="store_true", help="exit 1 on any cycle or upward import")
    args = parser.parse_args(argv)
    text, count = report(args.root, args.top)
    print(text)
    return 1 if args.check and count else 0


if __name__ == "__main__":
    sys.exit(main())
