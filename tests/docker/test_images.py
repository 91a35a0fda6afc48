"""The container images against the chart and the CLI: no Docker engine runs here, so the Dockerfiles are read
and every command the chart runs is parsed by the parser that will receive it."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.daemon_settings import DaemonSettings
from gpu_service import daemon as gpu_daemon
from monitoring import health
from reelgen import cli
from tests.support.helm import CHART, GPU_VALUES, all_containers, render

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"


@dataclass
class Stage:
    """The final stage of a Dockerfile: what a container of the image starts as."""

    base: str
    user: str = ""
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    copies: list[str] = field(default_factory=list)  # sources copied from the build context, all stages


def read_dockerfile(path: Path) -> Stage:
    text = path.read_text().replace("\\\n", " ")
    stage: Stage | None = None
    copies: list[str] = []
    args: dict[str, str] = {}  # ARGs before the first FROM, with their defaults: what FROM lines may name
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            stage = Stage(base=re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], rest.split()[0]))
        elif stage is None:
            if instruction == "ARG":
                name, _, default = rest.partition("=")
                args[name.strip()] = default.strip()
        elif instruction == "USER":
            stage.user = rest.strip()
        elif instruction in ("ENTRYPOINT", "CMD"):
            value = json.loads(
                rest
            )  # exec form only: a shell form would make the shell PID 1 and eat SIGTERM
            assert isinstance(value, list), f"{path.name}: {instruction} must be in exec (JSON) form"
            setattr(stage, instruction.lower(), value)
        elif instruction == "COPY" and "--from=" not in rest:
            copies.extend(shlex.split(rest)[:-1])
    assert stage is not None, f"{path.name} has no FROM"
    stage.copies = copies
    return stage


CPU_IMAGE = read_dockerfile(DOCKER / "cpu.Dockerfile")
GPU_IMAGE = read_dockerfile(DOCKER / "gpu.Dockerfile")


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def chart_containers() -> list[tuple[str, dict[str, Any]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    for values in ({}, GPU_VALUES):
        for deployment, container in all_containers(render(values)):
            seen.append((f"{deployment['metadata']['name']}/{container['name']}", container))
    return seen


@pytest.mark.parametrize("image", [CPU_IMAGE, GPU_IMAGE], ids=["cpu", "gpu"])
def test_images_run_reelgen_as_the_charts_non_root_user(image: Stage) -> None:
    values = render()
    uid = next(d for d, _ in all_containers(values))["spec"]["template"]["spec"]["securityContext"][
        "runAsUser"
    ]
    user = image.user.split(":")[0]
    # numeric, so the kubelet can verify runAsNonRoot without reading /etc/passwd
    assert user.isdigit() and int(user) != 0
    assert int(user) == uid
    assert image.entrypoint == ["reelgen"]
    assert image.base.startswith("python:")


@pytest.mark.parametrize("image", [CPU_IMAGE, GPU_IMAGE], ids=["cpu", "gpu"])
def test_images_copy_every_package_the_project_ships(image: Stage) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert packages <= set(image.copies)
    assert "pyproject.toml" in image.copies


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_images_install_the_lock_with_hashes_on_a_pinned_base(name: str) -> None:
    dockerfile = (DOCKER / f"{name}.Dockerfile").read_text().replace("\\\n", " ")
    image = read_dockerfile(DOCKER / f"{name}.Dockerfile")
    # a patch release (a digest may be added at build time), never a floating tag like 3.11 or latest
    assert re.fullmatch(r"python:3\.\d+\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", image.base), image.base
    installs = [line for line in dockerfile.splitlines() if "pip install" in line]
    assert any("--require-hashes --no-deps -r requirements.lock" in line for line in installs)
    for line in installs:
        # every other install names one exact version, or is the package itself without resolving anything
        assert "==" in line or "--no-deps --no-build-isolation ." in line or "-r requirements.lock" in line, (
            line
        )
    assert "requirements.lock" in image.copies
    assert "rapidocr" not in dockerfile  # the text detector's model ships in the package
    assert {"text_detect", "saliency", "faces"} <= set(DaemonSettings().models)


def test_make_installs_the_dev_lock_which_agrees_with_the_image_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes --no-deps -r $(DEV_LOCK)" in makefile and "pip check" in makefile

    def pins(path: Path) -> dict[str, str]:
        """{name: version} of a lock, each requirement with at least one sha256 hash."""
        found: dict[str, str] = {}
        for block in re.split(r"\n(?=[a-z0-9])", path.read_text()):
            match = re.match(r"([a-z0-9._-]+)==(\S+)", block)
            if match:
                assert "--hash=sha256:" in block, block
                found[match.group(1)] = match.group(2)
        assert found
        return found

    runtime, dev = pins(ROOT / "requirements.lock"), pins(ROOT / "requirements-dev.lock")
    # what the images run is what the tests ran
    assert {name: dev.get(name) for name in runtime} == runtime
    assert "torch" not in runtime  # installed first, as the CPU or the CUDA build
    assert "transformers" not in runtime and "transformers" in dev  # an extra, not in the images by default


def test_default_commands_are_cli_subcommands() -> None:
    commands = subcommands(cli.build_parser())
    assert CPU_IMAGE.cmd == ["worker"] and GPU_IMAGE.cmd == ["gpu-daemon"]
    missing = sorted({CPU_IMAGE.cmd[0], GPU_IMAGE.cmd[0]} - commands.keys())
    assert not missing, f"reelgen has no subcommand {missing} (reelgen/cli.py)"


def test_every_chart_container_runs_a_reelgen_subcommand_of_its_image() -> None:
    cpu_repo = yaml_value("image", "repository")
    gpu_repo = yaml_value("gpuImage", "repository")
    commands = subcommands(cli.build_parser())
    missing: set[str] = set()
    for where, container in chart_containers():
        assert "command" not in container, f"{where}: the image's ENTRYPOINT (reelgen) must stay"
        args = container["args"]
        repo = container["image"].rsplit(":", 1)[0]
        cuda = args[0] == "gpu-daemon" and args[args.index("--device") + 1] != "cpu"
        # only a daemon on a CUDA device needs the CUDA image; on the CPU it runs from the CPU image
        assert repo == (gpu_repo if cuda else cpu_repo), where
        if args[0] not in commands:
            missing.add(args[0])
            continue
        try:
            parsed = cli.parse_args(args)
        except SystemExit:
            pytest.fail(f"{where}: `reelgen {shlex.join(args)}` does not parse (reelgen/cli.py)")
        if args[0] == "gpu-daemon":
            # `reelgen gpu-daemon ARGS` must hand ARGS untouched to gpu_service.daemon:main
            assert parsed.extra == args[1:], where
            settings = gpu_daemon.settings_from_args(gpu_daemon.build_parser().parse_args(parsed.extra))
            assert settings.metrics_host == "0.0.0.0"  # scraped from outside the pod
    assert not missing, f"the chart runs reelgen subcommands that reelgen/cli.py lacks: {sorted(missing)}"


def test_probe_commands_parse_with_the_health_module() -> None:
    probes = 0
    for where, container in chart_containers():
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            command = container.get(kind, {}).get("exec", {}).get("command")
            if command is None:
                continue
            assert command[:3] == ["python", "-m", "monitoring.health"], where
            health.build_parser().parse_args(command[3:])
            probes += 1
    assert probes >= 5


def yaml_value(*keys: str) -> Any:
    import yaml

    node: Any = yaml.safe_load((CHART / "values.yaml").read_text())
    for key in keys:
        node = node[key]
    return node
