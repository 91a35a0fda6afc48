"""What not every install needs is an extra: without transformers (the CLIP scorer) and Flower, every module of
the package still imports, and `reelgen flower` says what to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# a child interpreter in which the extras' top-level packages cannot be imported, as on a lean install
_BLOCK = textwrap.dedent(
    """
    import importlib.abc, sys

    class Missing(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"transformers", "flower"}:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Missing())
    """
)


def run_without_extras(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCK + textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_extras_hold_flower_and_the_clip_scorer_and_the_core_does_not() -> None:
    core = " ".join(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "flower" not in core and "transformers" not in core
    assert any(d.startswith("flower") for d in extras["flower"])
    assert any(d.startswith("transformers") for d in extras["clip"])


def test_every_module_imports_without_the_extras() -> None:
    packages = [p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
    result = run_without_extras(
        f"""
        import importlib, pkgutil
        for package in {packages!r}:
            module = importlib.import_module(package)
            for info in pkgutil.walk_packages(module.__path__, package + "."):
                if info.name.endswith("__main__"):
                    continue
                importlib.import_module(info.name)
        print("every module imported", flush=True)
        import transformers  # the blocker works: this must fail
        """
    )
    assert result.stdout == "every module imported\n", result.stderr[-3000:]
    assert "No module named 'transformers'" in result.stderr


def test_flower_without_its_extra_says_what_to_install() -> None:
    result = run_without_extras(
        """
        import os, sys
        os.environ.update(REELGEN_REDIS_URL="redis://127.0.0.1:1/0", REELGEN_FLOWER__ALLOW_UNAUTHENTICATED="1")
        from reelgen.cli import main
        sys.exit(main(["flower"]))
        """
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'reelgen[flower]'" in result.stderr
