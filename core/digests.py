"""Digests of model weights, without torch: a job's config_hash covers its scorer's weights (other weights, other
output; docs/architecture.md), so the settings compute it, and the daemon's models check their files with it."""

from __future__ import annotations

import hashlib
from pathlib import Path

# what a weights folder's identity is made of: weights, configs and tokenizer files
DIGESTED_SUFFIXES = frozenset({".json", ".txt", ".safetensors", ".bin", ".pt", ".pth", ".model"})


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def directory_digest(folder: Path) -> str:
    """sha256 over (name, sha256) of the folder's top-level weight, config and tokenizer files."""
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith(".") and path.suffix in DIGESTED_SUFFIXES:
            digest.update(f"{path.name}\0{file_digest(path)}\n".encode())
    return digest.hexdigest()


def weights_digest(path: Path) -> str:
    return directory_digest(path) if path.is_dir() else file_digest(path)
