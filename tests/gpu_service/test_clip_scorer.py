"""The CLIP scorer (`clip` model, scorer "clip") with a tiny randomly initialised CLIP built here.

The model is a transformers CLIPModel (2 layers, width 32, 32×32 images in 8×8 patches) with a byte-level BPE
tokenizer that has no merges, saved with save_pretrained; the same weights are also written in the
OpenAI/open_clip layout to check that path gives the same numbers as transformers does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import torch
from torch import Tensor

from core.digests import directory_digest
from core.errors import ConfigError
from gpu_service import engine, registry
from gpu_service.client import InferenceClient, wait_until_ready
from gpu_service.local import LocalInference
from gpu_service.models.clip_scorer import (
    IMAGE_CENTRE,
    IMAGE_SCALE,
    IMAGE_WEIGHT,
    TEXT_CENTRE,
    TEXT_SCALE,
    TEXT_WEIGHT,
    ClipScorer,
)
from gpu_service.priority import PriorityKey
from gpu_service.registry import LoadedModel
from workers.analysis.scoring import SCORERS, FrameScore, item_text, score_frames, scorer_context, scorer_spec

transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")
KEY = PriorityKey(0.0, 0.0)
FRAME_SHAPE = (48, 64, 3)


def _tiny_clip(folder: Path) -> None:
    from tokenizers import pre_tokenizers
    from transformers import CLIPConfig, CLIPModel, CLIPTokenizer

    # Byte-level symbols, each also as a word end, and the two specials: every text tokenises, one token per
    # byte, with end-of-text the highest id as in CLIP's real vocabulary.
    chars = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = [*chars, *(c + "</w>" for c in chars), "<|startoftext|>", "<|endoftext|>"]
    tokenizer = CLIPTokenizer(vocab={t: i for i, t in enumerate(vocab)}, merges=[])
    config = CLIPConfig(
        text_config={
            "vocab_size": len(vocab),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 77,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=16,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model: Any = CLIPModel(config)
        model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _openai_layout(hf: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """transformers CLIP keys -> OpenAI's (the inverse of transformers' conversion script)."""
    out: dict[str, Tensor] = {
        "visual.conv1.weight": hf["vision_model.embeddings.patch_embedding.weight"],
        "visual.class_embedding": hf["vision_model.embeddings.class_embedding"],
        "visual.positional_embedding": hf["vision_model.embeddings.position_embedding.weight"],
        "visual.proj": hf["visual_projection.weight"].T.contiguous(),
        "token_embedding.weight": hf["text_model.embeddings.token_embedding.weight"],
        "positional_embedding": hf["text_model.embeddings.position_embedding.weight"],
        "text_projection": hf["text_projection.weight"].T.contiguous(),
        "logit_scale": hf["logit_scale"],
    }
    norms = {
        "visual.ln_pre": "vision_model.pre_layrnorm",
        "visual.ln_post": "vision_model.post_layernorm",
        "ln_final": "text_model.final_layer_norm",
    }
    for new, old in norms.items():
        out[f"{new}.weight"], out[f"{new}.bias"] = hf[f"{old}.weight"], hf[f"{old}.bias"]
    for new_prefix, old_prefix in (
        ("visual.transformer", "vision_model.encoder"),
        ("transformer", "text_model.encoder"),
    ):
        for i in range(2):
            new, old = f"{new_prefix}.resblocks.{i}", f"{old_prefix}.layers.{i}"
            for part in ("weight", "bias"):
                out[f"{new}.attn.in_proj_{part}"] = torch.cat(
                    [hf[f"{old}.self_attn.{p}_proj.{part}"] for p in "qkv"]
                )
                for a, b in (
                    ("attn.out_proj", "self_attn.out_proj"),
                    ("ln_1", "layer_norm1"),
                    ("ln_2", "layer_norm2"),
                    ("mlp.c_fc", "mlp.fc1"),
                    ("mlp.c_proj", "mlp.fc2"),
                ):
                    out[f"{new}.{a}.{part}"] = hf[f"{old}.{b}.{part}"]
    return out


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-clip")
    _tiny_clip(folder)
    return folder


@pytest.fixture(scope="module")
def open_clip_dir(clip_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from safetensors.torch import load_file

    folder = tmp_path_factory.mktemp("tiny-open-clip")
    torch.save(
        _openai_layout(load_file(str(clip_dir / "model.safetensors"))), folder / "open_clip_pytorch_model.bin"
    )
    config = {"model_cfg": {"quick_gelu": True, "vision_cfg": {"head_width": 16}, "text_cfg": {"heads": 2}}}
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(clip_dir / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def loaded(clip_dir: Path) -> LoadedModel:
    registry.import_modules()
    return registry.create("clip", CPU, str(clip_dir))


def _images(count: int, seed: int) -> list[npt.NDArray[np.uint8]]:
    rng = np.random.default_rng(seed)
    # Blocky patterns: structure a 32×32 resize keeps, so different images stay different to the model.
    blocks = rng.integers(0, 256, (count, 6, 8, 3), dtype=np.uint8)
    return [np.ascontiguousarray(b.repeat(8, axis=0).repeat(8, axis=1)) for b in blocks]


def _run(
    model: registry.InferenceModel,
    frames: list[npt.NDArray[np.uint8]],
    contexts: list[dict[str, npt.NDArray[Any]]],
    bucket: int,
) -> dict[str, npt.NDArray[np.float32]]:
    """The daemon's own batching path: several requests in one model call."""
    with torch.inference_mode():
        out = engine.forward(
            model,
            [torch.from_numpy(f) for f in frames],
            [{k: torch.from_numpy(v) for k, v in c.items()} for c in contexts],
            bucket,
        )
    return engine.outputs_to_host(out)


def test_frame_equal_to_the_main_image_outscores_unrelated_frames(clip_dir: Path) -> None:
    inference = LocalInference(weights={"clip": str(clip_dir)})
    product, *others = _images(4, seed=1)
    frames = np.stack([others[0], product, others[1], others[2]])
    out = inference.infer("clip", frames, KEY, scorer_context(SCORERS["clip"], product, ""))
    assert out["match"].shape == (4,) and out["quality"].shape == (4,) and out["box"].shape == (4, 4)
    assert np.all((out["match"] > 0) & (out["match"] < 1))
    assert np.all((out["quality"] >= 0) & (out["quality"] <= 1))
    assert np.isnan(out["box"]).all() and np.isnan(out["text_similarity"]).all()
    assert out["image_similarity"][1] == pytest.approx(1.0, abs=1e-5)
    # Random weights squeeze every image into a narrow cone (cosines ~0.99), but only the product frame is at 1.
    assert out["image_similarity"][[0, 2, 3]].max() < 0.9999
    assert out["match"][1] > out["match"][[0, 2, 3]].max()


def test_match_combines_image_and_text_similarity(clip_dir: Path) -> None:
    inference = LocalInference(weights={"clip": str(clip_dir)})
    product, *others = _images(4, seed=1)
    frames = np.stack([others[0], product, others[1], others[2]])
    out = inference.infer("clip", frames, KEY, scorer_context(SCORERS["clip"], product, "red running shoe"))
    image, text = out["image_similarity"], out["text_similarity"]
    assert np.isfinite(text).all() and np.all(np.abs(text) <= 1.0)
    z = IMAGE_WEIGHT * (image - IMAGE_CENTRE) / IMAGE_SCALE + TEXT_WEIGHT * (text - TEXT_CENTRE) / TEXT_SCALE
    want = 1.0 / (1.0 + np.exp(-z / (IMAGE_WEIGHT + TEXT_WEIGHT)))
    np.testing.assert_allclose(out["match"], want, rtol=1e-5)


def test_each_request_in_a_batch_is_scored_against_its_own_image_and_text(loaded: LoadedModel) -> None:
    model = loaded.module
    a, b = _images(2, seed=2)
    frames = [np.stack([a, b]), np.stack([a, b])]
    contexts = [
        {"image": a, "text": np.frombuffer(b"alpha", np.uint8).copy()},
        {"image": b},
    ]
    out = _run(model, frames, contexts, bucket=8)
    assert out["match"].shape == (4,)
    sim = out["image_similarity"]
    assert sim[0] == pytest.approx(1.0, abs=1e-5) and sim[3] == pytest.approx(1.0, abs=1e-5)
    assert sim[1] < 0.9999 and sim[2] < 0.9999
    # the second request sent no text: no text term, and its match is the image term alone
    assert np.isfinite(out["text_similarity"][:2]).all() and np.isnan(out["text_similarity"][2:]).all()
    assert out["match"][3] > out["match"][2]


def test_text_changes_the_match_and_embeddings_are_cached(loaded: LoadedModel) -> None:
    model = loaded.module
    assert isinstance(model, ClipScorer)
    frame, image = _images(2, seed=3)
    frames = [np.stack([frame])]

    def score(text: bytes) -> float:
        ctx = {"image": image, "text": np.frombuffer(text, np.uint8).copy()}
        return float(_run(model, frames, [ctx], bucket=1)["text_similarity"][0])

    first = score(b"blue kettle")
    cached = len(model._cache)
    assert score(b"blue kettle") == first and len(model._cache) == cached
    assert score("红色 running shoes".encode()) != first
    assert len(model._cache) == cached + 1


def test_open_clip_checkpoint_gives_the_transformers_numbers(
    loaded: LoadedModel, open_clip_dir: Path
) -> None:
    other = registry.create("clip", CPU, str(open_clip_dir))
    a, b, c = _images(3, seed=4)
    frames = [np.stack([a, b, c])]
    ctx = [{"image": a, "text": np.frombuffer(b"a red shoe on a white floor", np.uint8).copy()}]
    want, got = _run(loaded.module, frames, ctx, 4), _run(other.module, frames, ctx, 4)
    for name in ("image_similarity", "text_similarity", "match", "quality"):
        np.testing.assert_allclose(got[name], want[name], atol=1e-4, err_msg=name)
    # the text similarity is not trivially equal (both towers contribute)
    assert abs(float(want["text_similarity"][1]) - float(want["text_similarity"][2])) > 1e-6


def test_without_weights_the_clip_model_says_how_to_set_them(tmp_path: Path) -> None:
    registry.import_modules()
    with pytest.raises(ConfigError, match=r"REELGEN_DAEMON__WEIGHTS=.*clip"):
        registry.create("clip", CPU)
    with pytest.raises(ConfigError, match="no transformers CLIP"):
        registry.create("clip", CPU, str(tmp_path))
    with pytest.raises(ConfigError, match="not found"):
        registry.create("clip", CPU, str(tmp_path / "absent"))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "clip"}))
    with pytest.raises(ConfigError, match=r"tokenizer|CLIPModel"):
        registry.create("clip", CPU, str(tmp_path))


def test_scorer_choice_and_text_context() -> None:
    assert scorer_spec("template").model == "template_match" and scorer_spec("clip").model == "clip"
    with pytest.raises(ConfigError, match="unknown scorer"):
        scorer_spec("dino")
    image = np.zeros((8, 8, 3), np.uint8)
    assert set(scorer_context(SCORERS["template"], image, "title")) == {"image"}
    assert set(scorer_context(SCORERS["clip"], image, "")) == {"image"}
    text = scorer_context(SCORERS["clip"], image, item_text("Shoe", "  "))["text"]
    assert text.dtype == np.uint8 and bytes(text) == b"Shoe"
    assert item_text("Shoe", "Red, size 42") == "Shoe\nRed, size 42"
    long = scorer_context(SCORERS["clip"], image, "é" * 5000)["text"]
    assert len(long) <= 2048 and bytes(long).decode("utf-8") == "é" * (len(long) // 2)


def test_a_non_finite_box_becomes_none() -> None:
    class Fake:
        def infer(
            self,
            model: str,
            frames: npt.NDArray[np.uint8],
            key: PriorityKey,
            context: Mapping[str, npt.NDArray[Any]] | None = None,
        ) -> dict[str, npt.NDArray[np.float32]]:
            assert model == "clip" and context is not None and set(context) == {"image", "text"}
            n = len(frames)
            return {
                "match": np.full(n, 0.9, np.float32),
                "quality": np.full(n, 0.5, np.float32),
                "box": np.full((n, 4), np.nan, np.float32),
            }

    frames = [(0.0, np.zeros(FRAME_SHAPE, np.uint8))]
    scores = score_frames(
        Fake(), frames, np.zeros((8, 8, 3), np.uint8), KEY, (640, 480), scorer="clip", text="x"
    )
    assert scores == [FrameScore(0.0, pytest.approx(0.9), 0.5, None)]  # type: ignore[arg-type]


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    # pytest's tmp_path can exceed the 107-byte limit of a Unix socket path.
    path = Path(tempfile.mkdtemp(prefix="rg-clip-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _daemon(sock: Path, settings: dict[str, Any]) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "gpu_service", "--settings-json", json.dumps(settings), "--threads", "2"]
    log = (sock.parent / "daemon.log").open("ab")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)


def test_daemon_serves_the_clip_scorer(clip_dir: Path, loaded: LoadedModel, sock_dir: Path) -> None:
    sock = sock_dir / "d.sock"
    settings = {
        "socket_path": str(sock),
        "device": "cpu",
        "models": ["clip"],
        "weights": {"clip": f"file://{clip_dir}"},
        "buckets": [1, 4],
        "max_batch": 4,
    }
    proc = _daemon(sock, settings)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline, (sock_dir / "daemon.log").read_text()
            time.sleep(0.1)
        status = wait_until_ready(sock, timeout_s=30)
        assert status["models"]["clip"]["digest"] == directory_digest(clip_dir)
        product, other = _images(2, seed=5)
        frames = [(0.5 * i, f) for i, f in enumerate([other, product, other, product, other])]
        with InferenceClient(sock) as client:
            scores = score_frames(
                client, frames, product, KEY, (640, 480), scorer="clip", text=item_text("Shoe", "red")
            )
        assert [s.t for s in scores] == [0.0, 0.5, 1.0, 1.5, 2.0]
        assert all(s.box is None and 0 < s.match < 1 and 0 <= s.quality <= 1 for s in scores)
        # the daemon, batching and splitting over buckets 1 and 4, gives the in-process numbers
        context = scorer_context(SCORERS["clip"], product, item_text("Shoe", "red"))
        want = _run(loaded.module, [np.stack([f for _, f in frames])], [context], bucket=5)
        np.testing.assert_allclose([s.match for s in scores], want["match"], atol=1e-5)
        np.testing.assert_allclose([s.quality for s in scores], want["quality"], atol=1e-5)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_daemon_without_clip_weights_exits_with_a_configuration_error(sock_dir: Path) -> None:
    sock = sock_dir / "d.sock"
    proc = _daemon(sock, {"socket_path": str(sock), "device": "cpu", "models": ["clip"]})
    assert proc.wait(60) == 2
    assert "REELGEN_DAEMON__WEIGHTS" in (sock_dir / "daemon.log").read_text()
