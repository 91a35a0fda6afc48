"""A one-line description of the machine, printed by benchmarks before their figures (docs/architecture.md, Contracts)."""

from __future__ import annotations

import os
import platform


def machine_lines() -> list[str]:
    model = "unknown CPU"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    lines = [f"machine: {os.cpu_count()} CPUs ({model}), {platform.platform()}"]
    try:
        import torch

        if torch.cuda.is_available():
            lines.append(f"gpu: {torch.cuda.get_device_name(0)}")
        else:
            lines.append("gpu: none (inference on the CPU)")
    except ImportError:
        lines.append("gpu: torch not importable")
    return lines
