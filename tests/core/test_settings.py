from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.settings import DEFAULT_ASPECTS, load_settings


def test_defaults_fit_the_cpu_budget() -> None:
    settings = load_settings(cpus=8)
    assert settings.aspects == DEFAULT_ASPECTS
    assert settings.worker_count * settings.threads_per_worker <= 8


def test_oversubscribed_budget_is_refused() -> None:
    with pytest.raises(ConfigError, match="oversubscribed"):
        load_settings(cpus=2, workers=2, codec_threads=2)
    assert load_settings(cpus=4, workers=2).threads_per_worker == 2


def test_aspects_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REELGEN_ASPECTS", "9:16, 1:1")
    assert load_settings().aspects == ("9:16", "1:1")
    with pytest.raises(ConfigError):
        load_settings(aspects="9x16")
    with pytest.raises(ConfigError, match="repeat"):
        load_settings(aspects="1:1,1:1")


def test_config_hash_tracks_output_settings_only() -> None:
    base = load_settings().output_config().config_hash
    assert load_settings(out="elsewhere").output_config().config_hash == base
    assert load_settings(crf=23).output_config().config_hash != base
    assert load_settings(aspects="1:1").output_config().config_hash != base


def test_secrets_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REELGEN_REDIS_URL", "redis://:hunter2@redis:6379/0")
    shown = load_settings().masked()
    assert shown["redis_url"] == "**********"
    assert "hunter2" not in repr(shown)


def test_a_workers_wait_for_the_daemon_stays_well_inside_the_soft_time_limit() -> None:
    assert load_settings().daemon_connect_wait_s == 30.0
    short = load_settings(task_time_limit_s=40)  # soft limit 10 s: a 30 s wait would time the item out
    assert short.task_soft_time_limit_s == 10 and short.daemon_connect_wait_s == 2.5
