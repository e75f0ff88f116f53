"""endpoint(), backoff_delay(), the defaults and the prober lookup."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from flower.core.config import ResilienceConfig, load_settings
from flower.core.errors import ConfigError
from flower.core.i18n import language
from flower.core.resilience import (
    RESUME_PROMPT,
    Resilience,
    backoff_delay,
    endpoint,
    format_duration,
    make_prober,
)
from flower_plugins.probes import HttpProber, NoProber, TcpProber


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.anthropic.com", ("api.anthropic.com", 443)),
        ("http://gateway.internal", ("gateway.internal", 80)),
        ("https://gateway.internal:8443/anthropic", ("gateway.internal", 8443)),
        ("http://127.0.0.1:9999", ("127.0.0.1", 9999)),
        ("http://[::1]:8080/", ("::1", 8080)),
        ("  https://api.anthropic.com/  ", ("api.anthropic.com", 443)),
    ],
)
def test_endpoint_from_argument(url: str, expected: tuple[str, int]) -> None:
    assert endpoint(url) == expected


def test_endpoint_follows_anthropic_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert endpoint() == ("api.anthropic.com", 443)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy.local:3128")
    assert endpoint() == ("proxy.local", 3128)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")
    assert endpoint() == ("api.anthropic.com", 443)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("api.anthropic.com", "must start with http:// or https://"),
        ("localhost:8080", "must start with http:// or https://"),
        ("ftp://api.anthropic.com", "must start with http:// or https://"),
        ("https://", "has no host name"),
        ("https://api.anthropic.com:99999", "not a valid URL"),
        ("http://host:port", "not a valid URL"),
    ],
)
def test_malformed_base_url_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, url: str, reason: str, english: None
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    with pytest.raises(ConfigError, match=reason) as info:
        endpoint()
    assert "ANTHROPIC_BASE_URL" in str(info.value)
    assert info.value.exit_code == 2
    with pytest.raises(ConfigError):
        Resilience(prober=NoProber())


def test_backoff_without_jitter_is_the_seed_formula() -> None:
    class Middle(random.Random):
        def uniform(self, a: float, b: float) -> float:
            return (a + b) / 2

    rng = Middle()
    delays = [backoff_delay(n, 4.0, 120.0, rng) for n in range(1, 8)]
    assert delays == [4.0, 8.0, 16.0, 32.0, 64.0, 120.0, 120.0]
    assert backoff_delay(10_000, 4.0, 120.0, rng) == 120.0


def test_backoff_jitter_stays_within_25_percent_and_varies() -> None:
    rng = random.Random(7)
    for attempt, centre in [(1, 4.0), (3, 16.0), (9, 120.0)]:
        samples = [backoff_delay(attempt, 4.0, 120.0, rng) for _ in range(500)]
        assert min(samples) >= centre * 0.75
        assert max(samples) <= centre * 1.25
        assert max(samples) - min(samples) > centre * 0.4  # really jittered


def test_backoff_rejects_attempt_zero() -> None:
    with pytest.raises(ValueError, match="counted from 1"):
        backoff_delay(0, 4.0, 120.0)


def test_defaults_are_the_seeds() -> None:
    conf = Resilience(prober=NoProber(), base_url="https://api.anthropic.com").config
    assert (
        conf.max_attempts,
        conf.base_delay,
        conf.max_delay,
        conf.probe_timeout,
        conf.probe_interval,
        conf.max_offline_wait,
        conf.retry_unknown,
    ) == (6, 4.0, 120.0, 5.0, 15.0, 3600.0, True)
    zh = "上一轮中途被打断了,没有做完。先看看工作台上已经写下的东西,从断的地方接着做,"
    assert Resilience().resume_prompt == zh + "不要从头开始。"
    with language("en"):  # one language per wake: the prompt follows it
        assert Resilience().resume_prompt == RESUME_PROMPT
    assert "interrupted" in RESUME_PROMPT and "do not start over" in RESUME_PROMPT


def test_resume_prompt_carries_no_error_detail() -> None:
    lowered = RESUME_PROMPT.lower()
    for word in ("error", "api", "network", "503", "enotfound", "offline", "connection"):
        assert word not in lowered


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_attempts", 0, "max_attempts must be at least 1"),
        ("probe_interval", 0.0, "probe_interval must be positive"),
        ("base_delay", -1.0, "base_delay must not be negative"),
    ],
)
def test_nonsense_config_is_a_config_error(
    field: str, value: float, message: str, english: None
) -> None:
    conf = ResilienceConfig(**{field: value})
    with pytest.raises(ConfigError, match=message):
        Resilience(conf, prober=NoProber(), base_url="https://api.anthropic.com")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (42, "42s"), (181, "3m01s"), (3600, "1h00m00s"), (3725.4, "1h02m05s")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def _write_config(folder: Path, probe: str, resilience: str = "") -> None:
    (folder / "pyproject.toml").write_text(
        f'[tool.flower.probe]\nstrategy = "{probe}"\n[tool.flower.resilience]\n{resilience}',
        encoding="utf-8",
    )


@pytest.mark.parametrize(
    ("strategy", "cls"), [("tcp", TcpProber), ("http", HttpProber), ("none", NoProber)]
)
def test_from_settings_takes_the_configured_prober(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, strategy: str, cls: type
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    _write_config(in_tmp, strategy, "max_attempts = 3\nbase_delay = 0.5\n")
    settings = load_settings().settings
    resilience = Resilience.from_settings(settings)
    assert isinstance(resilience.prober, cls)
    assert resilience.config.max_attempts == 3
    assert resilience.config.base_delay == 0.5
    assert (resilience.host, resilience.port) == ("api.anthropic.com", 443)


def test_unknown_probe_strategy_lists_the_available_ones(in_tmp: Path) -> None:
    _write_config(in_tmp, "icmp")
    settings = load_settings().settings
    with pytest.raises(ConfigError) as info:
        make_prober(settings)
    message = str(info.value)
    assert "[tool.flower.probe] strategy" in message
    assert "'icmp'" in message
    assert "http, none, tcp" in message
