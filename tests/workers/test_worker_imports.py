"""What a worker process loads: the models run in the inference daemon, so a worker imports neither torch nor
onnxruntime (each worker process would pay about a second and 180 MiB for torch alone)."""

from __future__ import annotations

import subprocess
import sys


def test_a_worker_imports_neither_torch_nor_onnxruntime() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, workers.tasks; print(sorted({'torch', 'onnxruntime'} & set(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"
