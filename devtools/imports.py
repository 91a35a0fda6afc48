"""The import graph of reelgen's folders and modules, checked against the declared layers (docs/architecture.md).

`python -m devtools.imports` prints the folder-level edges, the import cycles, every import that points up a
layer or crosses a forbidden line, and the largest modules; `--check` exits 1 on any of these, which is what
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

#: The top-level folders, lowest first. Each is one layer: it imports only itself and the folders before it.
#: Tests, bench and docs sit outside the graph; they may import any folder, but no test module.
FOLDERS = ("core", "monitoring", "storage", "gpu_service", "jobs", "workers", "reelgen", "devtools")

#: The module layers, lowest first: the folders' order, refined inside `jobs/` and `workers/` (each sub-package
#: imports only those before it). A module belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("core",)),
    ("observability", ("monitoring",)),
    ("storage", ("storage",)),
    ("inference", ("gpu_service",)),
    ("ledger", ("jobs.ledger",)),
    ("broker", ("jobs.broker",)),
    ("intake", ("jobs.intake",)),
    ("dispatch", ("jobs.dispatch",)),
    ("local runs", ("jobs.local",)),
    ("orchestration", ("jobs",)),
    ("geometry", ("workers", "workers.geometry")),
    ("media", ("workers.media",)),
    ("analysis", ("workers.analysis",)),
    ("text", ("workers.text",)),
    ("framing", ("workers.framing",)),
    ("pipeline", ("workers.pipeline", "workers.stage_state")),
    ("tasks", ("workers.tasks", "workers.fanin")),
    ("entry points", ("reelgen",)),
    ("developer tools", ("devtools",)),
)

#: The layers of `jobs/`, lowest first: the ledger, the broker, job intake, dispatching, local runs, and the
#: services and status at its root.
JOBS_LAYERS = ("ledger", "broker", "intake", "dispatch", "local runs", "orchestration")
#: Lower layers that a layer may still not import: the media stages and their pipeline stay plain functions,
#: free of Celery and the ledger, which only the tasks wrap them in.
FORBIDDEN: tuple[tuple[str, str], ...] = tuple(
    (stage, jobs)
    for stage in ("geometry", "media", "analysis", "text", "framing", "pipeline")
    for jobs in JOBS_LAYERS
)

#: modules longer than this state at their top why they are not split ("Kept whole: ...")
LONG_MODULE = 400
#: no module is longer than this, whatever its reason, but those named here with why
TOO_LONG = 700
TOO_LONG_PENDING: Mapping[str, str] = {}


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


def find_modules(root: Path, packages: Sequence[str] = FOLDERS) -> dict[str, Module]:
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


def collect(root: Path, packages: Sequence[str] = FOLDERS) -> tuple[dict[str, Module], list[Import]]:
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


def folder_of(module: str) -> str:
    return module.split(".")[0]


def upward(edges: Iterable[Import], layers: Sequence[tuple[str, tuple[str, ...]]] = LAYERS) -> list[Import]:
    return [e for e in edges if layer_of(e.target, layers) > layer_of(e.source, layers)]


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


def folder_graph(edges: Iterable[Import]) -> dict[tuple[str, str], int]:
    """How many imports go from each top-level folder to each other one."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for edge in edges:
        pair = (folder_of(edge.source), folder_of(edge.target))
        if pair[0] != pair[1]:
            counts[pair] += 1
    return dict(counts)


def misordered_layers(
    layers: Sequence[tuple[str, tuple[str, ...]]] = LAYERS, folders: Sequence[str] = FOLDERS
) -> list[str]:
    """Layers whose modules are not in the folder order: a layer refines the folders, so walking the layers
    upwards never steps back to a lower folder."""
    wrong, highest = [], 0
    for name, prefixes in layers:
        for prefix in prefixes:
            rank = folders.index(folder_of(prefix))
            if rank < highest:
                wrong.append(f"layer order: {name} ({prefix}) lies in a folder below an earlier layer's")
            highest = max(highest, rank)
    return wrong


def problems(
    modules: Mapping[str, Module],
    edges: Sequence[Import],
    layers: Sequence[tuple[str, tuple[str, ...]]] = LAYERS,
    folders: Sequence[str] = FOLDERS,
    forbidden: Sequence[tuple[str, str]] = FORBIDDEN,
) -> list[str]:
    """What breaks the layering, one line each: upward imports between modules and between folders, forbidden
    imports, module cycles, folder cycles."""
    names = [name for name, _ in layers]
    lines = misordered_layers(layers, folders)
    lines += [
        f"upward: {e.source}:{e.line} imports {e.target} "
        f"({names[layer_of(e.source, layers)]} -> {names[layer_of(e.target, layers)]})"
        for e in upward(edges, layers)
    ]
    banned = set(forbidden)
    lines += [
        f"forbidden: {e.source}:{e.line} imports {e.target} "
        f"({names[layer_of(e.source, layers)]} may not know {names[layer_of(e.target, layers)]})"
        for e in edges
        if (names[layer_of(e.source, layers)], names[layer_of(e.target, layers)]) in banned
    ]
    graph = folder_graph(edges)
    lines += [
        f"upward folder: {source} imports {target} ({count} imports)"
        for (source, target), count in sorted(graph.items())
        if folders.index(target) > folders.index(source)
    ]
    lines += [f"module cycle: {' <-> '.join(c)}" for c in cycles(module_graph(edges))]
    units: dict[str, set[str]] = defaultdict(set)
    for source, target in graph:
        units[source].add(target)
    lines += [f"folder cycle: {' <-> '.join(c)}" for c in cycles(units)]
    return lines


def reason(module: Module) -> str:
    """The line of the module's docstring that says why it is kept whole, from "Kept whole:" on, or ""."""
    doc = ast.get_docstring(ast.parse(module.path.read_text(encoding="utf-8"))) or ""
    for line in doc.splitlines():
        if "Kept whole:" in line:
            return line[line.index("Kept whole:") :]
    return ""


def size_problems(
    modules: Mapping[str, Module],
    limit: int = LONG_MODULE,
    ceiling: int = TOO_LONG,
    pending: Mapping[str, str] = TOO_LONG_PENDING,
) -> list[str]:
    """Modules over `limit` lines whose docstring does not say why they are kept whole, and modules over
    `ceiling` lines; a module `pending` names (with what replaces it) is neither."""
    lines = []
    for m in sorted(modules.values(), key=lambda m: -m.lines):
        if m.name in pending:
            continue
        if m.lines > ceiling:
            lines.append(f"too long: {m.name} has {m.lines} lines (at most {ceiling})")
        elif m.lines > limit and not reason(m):
            lines.append(f"no reason: {m.name} has {m.lines} lines and no 'Kept whole:' in its docstring")
    return lines


def report(root: Path, top: int = 12) -> tuple[str, int]:
    modules, edges = collect(root)
    out = ["folders, lowest first: " + " < ".join(FOLDERS), "layers, lowest first:"]
    out += [f"  {i} {name}: {', '.join(prefixes)}" for i, (name, prefixes) in enumerate(LAYERS)]
    out.append("folder edges (imports):")
    out += [f"  {s} -> {t} ({n})" for (s, t), n in sorted(folder_graph(edges).items())]
    found = problems(modules, edges)
    n_cycles = sum("cycle" in line for line in found)
    out.append(f"cycles: {n_cycles}, upward or forbidden imports: {len(found) - n_cycles}")
    out += [f"  {line}" for line in found]
    out.append(f"modules over {LONG_MODULE} lines, with their reasons:")
    long = sorted((m for m in modules.values() if m.lines > LONG_MODULE), key=lambda m: -m.lines)
    out += [f"  {m.lines:5d} {m.name}: {reason(m) or TOO_LONG_PENDING.get(m.name, '(none)')}" for m in long]
    sizes = size_problems(modules)
    out += [f"  {line}" for line in sizes]
    out.append("largest modules:")
    out += [f"  {m.lines:5d} {m.name}" for m in sorted(modules.values(), key=lambda m: -m.lines)[:top]]
    return "\n".join(out), len(found) + len(sizes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.imports", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--top", type=int, default=12, help="how many of the largest modules to list")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on any cycle, upward or forbidden import, or unexplained long module",
    )
    args = parser.parse_args(argv)
    text, count = report(args.root, args.top)
    print(text)
    return 1 if args.check and count else 0


if __name__ == "__main__":
    sys.exit(main())
