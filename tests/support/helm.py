"""The Helm chart rendered for tests: its values files and a render with reelgen's required values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

helm = pytest.importorskip("helm_python")

CHART = Path(__file__).resolve().parents[2] / "helm" / "reelgen"

GPU_VALUES: dict[str, Any] = yaml.safe_load((CHART / "values-gpu.yaml").read_text())

CPU_VALUES: dict[str, Any] = yaml.safe_load((CHART / "values-cpu.yaml").read_text())

Obj = dict[str, Any]


def merge(*layers: dict[str, Any]) -> dict[str, Any]:
    """Deep merge like Helm's -f files: later layers win, maps merge, lists replace."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            else:
                out[key] = value
    return out


# What an operator must give (the chart generates no secret, and Redis needs a password unless waived).
REQUIRED: dict[str, Any] = {
    "redis": {"allowUnauthenticated": True},
    "flower": {"auth": {"password": "flower-pw"}},
}


def render(*layers: dict[str, Any], required: dict[str, Any] = REQUIRED) -> list[Obj]:
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(merge(required, *layers), name="rg", namespace="video")
    objects: list[Obj] = []
    for path, text in manifests.items():
        if path.endswith(".yaml"):
            objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def containers(deployment: Obj) -> dict[str, Obj]:
    spec = deployment["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*spec.get("initContainers", []), *spec["containers"]]}


def all_containers(objects: list[Obj]) -> Iterator[tuple[Obj, Obj]]:
    for obj in objects:
        if obj["kind"] == "Deployment":
            for container in containers(obj).values():
                yield obj, container
