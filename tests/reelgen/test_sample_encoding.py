"""The sample writer's encoding: the same pictures always give the same file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# A moving, textured picture (so that x264's lookahead has motion to propagate) written by write_mp4 in a process
# of its own; MALLOC_PERTURB_ decides what fresh heap memory holds there.
WRITER = """
import sys
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

from reelgen.sample_catalog.render import write_mp4

rng = np.random.default_rng(5)
texture = np.asarray(cv2.GaussianBlur(rng.integers(0, 256, (400, 560, 3), dtype=np.uint8), (0, 0), 2), np.uint8)


def render(k: int) -> tuple[np.ndarray, None]:
    x, y = 40 + round(30 * np.sin(k / 9)), 30 + k % 50
    return np.ascontiguousarray(texture[y : y + 240, x : x + 320]), None


write_mp4(
    Path(sys.argv[1]), (320, 240), Fraction(25), 120, render, np.zeros((2, 4800), np.float32),
    options={"preset": "veryfast", "crf": "20"}, one_thread=True,
)
"""


def write_in_a_process(out: Path, perturb: int) -> bytes:
    env = {**os.environ, "MALLOC_PERTURB_": str(perturb)}
    subprocess.run([sys.executable, "-c", WRITER, str(out)], env=env, check=True, timeout=120)
    return out.read_bytes()


def test_the_same_pictures_encode_to_the_same_bytes_whatever_the_heap_held(tmp_path: Path) -> None:
    # x264's macroblock tree reads heap memory it never wrote: with it on, this file's bytes change with
    # MALLOC_PERTURB_, and a regenerated quality set would show different frames to a before and an after
    first = write_in_a_process(tmp_path / "a.mp4", 1)
    second = write_in_a_process(tmp_path / "b.mp4", 200)
    assert first == second
