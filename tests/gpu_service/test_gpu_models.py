"""The model registry and the built-in models, run in-process on the CPU.

It also registers `slow_probe`, which daemons in test_gpu_daemon.py load through `--model-modules`: a model whose
every batch takes a known time, so tests can hold requests in the queue on purpose.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor

from core.digests import file_digest
from core.errors import ConfigError
from gpu_service import engine, registry
from gpu_service.models.basic import Probe
from gpu_service.registry import InferenceModel, Span, register

SLOW_BATCH_S = 0.25


class SlowProbe(Probe):
    def forward(self, batch: Tensor, spans: Sequence[Span]) -> dict[str, Tensor]:
        time.sleep(SLOW_BATCH_S)
        return super().forward(batch, spans)


@register("slow_probe")
def _slow_probe() -> InferenceModel:
    return SlowProbe()


CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def clip() -> registry.LoadedModel:
    registry.import_modules()
    return registry.create("clip_vit_b16_image", CPU)


def run(
    model: InferenceModel, frames: list[np.ndarray], contexts: list[dict[str, np.ndarray]], bucket: int
) -> dict[str, np.ndarray]:
    with torch.inference_mode():
        out = engine.forward(
            model,
            [torch.from_numpy(f) for f in frames],
            [{k: torch.from_numpy(v) for k, v in c.items()} for c in contexts],
            bucket,
        )
    return engine.outputs_to_host(out)


def test_clip_encoder_is_vit_b16_sized_and_deterministic(clip: registry.LoadedModel) -> None:
    params = sum(p.numel() for p in clip.module.parameters())
    assert 86_000_000 < params < 86_400_000  # CLIP ViT-B/16's visual tower: 86.2 M
    again = registry.create("clip_vit_b16_image", CPU)
    assert torch.equal(clip.module.state_dict()["visual.proj"], again.module.state_dict()["visual.proj"])


def test_clip_scores_frames_against_each_requests_own_image(clip: registry.LoadedModel) -> None:
    rng = np.random.default_rng(1)
    frames = [
        rng.integers(0, 256, (1, 90, 160, 3), dtype=np.uint8),
        rng.integers(0, 256, (2, 90, 160, 3), dtype=np.uint8),
    ]
    images = [rng.integers(0, 256, (50, 40, 3), dtype=np.uint8) for _ in frames]
    out = run(clip.module, frames, [{"image": im} for im in images], bucket=4)
    assert out["embedding"].shape == (3, 512) and out["score"].shape == (3,)
    np.testing.assert_allclose(np.linalg.norm(out["embedding"], axis=1), 1.0, rtol=1e-4)
    image_emb = run(clip.module, [im[None] for im in images], [{}, {}], bucket=2)["embedding"]
    expected = np.concatenate([out["embedding"][:1] @ image_emb[0], out["embedding"][1:] @ image_emb[1]])
    np.testing.assert_allclose(out["score"], expected, atol=1e-4)
    # Padding and batching change nothing: the second request alone gives the same embeddings.
    alone = run(clip.module, frames[1:], [{"image": images[1]}], bucket=2)
    np.testing.assert_allclose(alone["embedding"], out["embedding"][1:], atol=1e-4)


def test_weights_load_from_a_path_including_openai_style_keys(
    tmp_path: Path, clip: registry.LoadedModel
) -> None:
    state = {k: v + 1 if k == "visual.proj" else v for k, v in clip.module.state_dict().items()}
    state["transformer.text_only"] = torch.zeros(1)  # a whole CLIP checkpoint also holds the text tower
    path = tmp_path / "clip.pt"
    torch.save(state, path)
    loaded = registry.create("clip_vit_b16_image", CPU, f"file://{path}")
    assert torch.equal(loaded.module.state_dict()["visual.proj"], state["visual.proj"])
    assert not torch.equal(loaded.module.state_dict()["visual.proj"], clip.module.state_dict()["visual.proj"])
    assert loaded.digest == file_digest(path) and len(loaded.digest) == 64
    torch.save({"nope": torch.zeros(1)}, tmp_path / "bad.pt")
    with pytest.raises(ConfigError, match="do not fit"):
        registry.create("clip_vit_b16_image", CPU, str(tmp_path / "bad.pt"))
    with pytest.raises(ConfigError, match="not found"):
        registry.create("clip_vit_b16_image", CPU, str(tmp_path / "missing.pt"))
    with pytest.raises(ConfigError, match="local path"):
        registry.create("clip_vit_b16_image", CPU, "s3://bucket/clip.pt")


def test_unknown_model_and_module_are_configuration_errors() -> None:
    with pytest.raises(ConfigError, match="unknown model"):
        registry.create("no_such_model", CPU)
    with pytest.raises(ConfigError, match="cannot be imported"):
        registry.import_modules(["no_such_module_here"])
    with pytest.raises(ValueError, match="twice"):
        register("slow_probe")(lambda: SlowProbe())


def test_echo_stats_batches_requests_with_contexts_and_padding() -> None:
    registry.import_modules()
    model = registry.create("echo_stats", CPU).module
    rng = np.random.default_rng(2)
    frames = [rng.integers(0, 256, (n, 6, 5, 3), dtype=np.uint8) for n in (1, 3, 2)]
    images = [rng.integers(0, 256, (4, 4, 3), dtype=np.uint8) for _ in frames]
    out = run(model, frames, [{"image": im} for im in images], bucket=8)
    means = np.concatenate([f.reshape(len(f), -1, 3).mean(1) / 255 for f in frames])
    np.testing.assert_allclose(out["mean"], means, atol=1e-6)
    diffs = np.concatenate(
        [
            f.reshape(len(f), -1, 3).mean(1) / 255 - im.reshape(-1, 3).mean(0) / 255
            for f, im in zip(frames, images, strict=True)
        ]
    )
    np.testing.assert_allclose(out["image_mean_diff"], diffs, atol=1e-6)


def test_model_checks_name_the_problem() -> None:
    registry.import_modules()
    model = registry.create("echo_stats", CPU).module
    with pytest.raises(registry.RequestError, match="unknown context"):
        model.check((1, 4, 4, 3), {"mask": ((4, 4), "uint8")})
    with pytest.raises(registry.RequestError, match="3 dimensions"):
        model.check((1, 4, 4, 3), {"image": ((4, 4), "uint8")})
