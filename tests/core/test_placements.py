"""Placement presets: the shipped data, a user's file beside it, and the settings that pick them."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.placements import load_placements
from core.settings import load_settings

#: what the large platforms publish (core/placements.toml): the output size and aspect of each preset
SIZES = {
    "vertical": ((1080, 1920), (9, 16)),
    "reels": ((1080, 1920), (9, 16)),
    "stories": ((1080, 1920), (9, 16)),
    "tiktok": ((1080, 1920), (9, 16)),
    "feed-4x5": ((1080, 1350), (4, 5)),
    "square": ((1080, 1080), (1, 1)),
    "landscape": ((1920, 1080), (16, 9)),
    "pin": ((1000, 1500), (2, 3)),
}


def test_every_preset_has_its_platforms_size_a_safe_zone_and_an_upscale_limit() -> None:
    presets = load_placements()
    assert {name: (p.size, p.aspect) for name, p in presets.items()} == SIZES
    for preset in presets.values():
        zone = preset.safe
        assert zone.top + zone.bottom < 0.6 and zone.left + zone.right < 0.3, preset.name
        assert 1.0 <= preset.max_upscale < 2.0, preset.name  # never a 2x blow-up
        assert preset.about
    # Meta's Reels: the top 14 %, the bottom 35 % and 6 % at either side; the vertical preset holds every
    # vertical feed's margins, so each is at least its
    reels, vertical = presets["reels"].safe, presets["vertical"].safe
    assert (reels.top, reels.bottom, reels.left, reels.right) == (0.14, 0.35, 0.06, 0.06)
    for name in ("reels", "stories", "tiktok"):
        other = presets[name].safe
        assert all(
            getattr(vertical, side) >= getattr(other, side) for side in ("top", "bottom", "left", "right")
        )


def test_a_users_file_adds_presets_and_replaces_shipped_ones(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        "[presets.shop-banner]\nsize = [1200, 600]\nsafe = { left = 0.2 }\nmax_upscale = 1.25\n"
        "[presets.square]\nsize = [720, 720]\n"
    )
    presets = load_placements(path)
    assert presets["shop-banner"].aspect == (2, 1) and presets["shop-banner"].safe.left == 0.2
    assert presets["square"].size == (720, 720) and presets["square"].safe.top == 0.0
    assert presets["vertical"].size == (1080, 1920)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[presets.x]\nsize = [1080, 1919]\n", "size"),  # odd: yuv420p needs even sides
        ("[presets.x]\nsize = [1080, 1920]\nsafe = { top = 0.5 }\n", "safe.top"),
        ("[presets.x]\nsize = [1080, 1920]\nmax_upscale = 0.5\n", "max_upscale"),
        ("[presets.x]\nsize = [1080, 1920]\nsafe = { middle = 0.1 }\n", "safe.middle"),
        ("[presets.Big]\nsize = [1080, 1920]\n", "lower-case"),
        ("[presets.x\n", "does not read"),
    ],
)
def test_a_bad_preset_is_a_config_error_naming_it(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=problem):
        load_placements(path)


def test_placements_alone_replace_the_default_aspects_and_enter_the_config_hash(tmp_path: Path) -> None:
    settings = load_settings(placements="vertical,landscape")
    assert settings.aspects == ()
    config = settings.output_config()
    assert [p.name for p in config.placements] == ["vertical", "landscape"]
    both = load_settings(placements="vertical", aspects="1:1")
    assert both.aspects == ("1:1",) and both.output_config().aspects == ("1:1",)
    # another safe zone for the same name renders other clips: another hash
    path = tmp_path / "mine.toml"
    path.write_text("[presets.vertical]\nsize = [1080, 1920]\nsafe = { bottom = 0.1 }\n")
    changed = load_settings(placements="vertical,landscape", placements_file=path).output_config()
    assert changed.config_hash != config.config_hash
    # the job's stored config reads back with its placements whole
    assert type(config).model_validate(config.model_dump()).placements == config.placements


def test_unknown_or_repeated_placements_are_refused_with_the_known_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown placement.*instagram.*known: feed-4x5"):
        load_settings(placements="instagram")
    with pytest.raises(ConfigError, match="placements repeat"):
        load_settings(placements="square,square")
    with pytest.raises(ConfigError, match="at least one aspect or placement"):
        load_settings(aspects=())
