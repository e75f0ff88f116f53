"""``flower doctor``'s checks, called from Python (:mod:`flower.runtime.doctor`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower.core.config import LoadedSettings, Settings, load_settings, store_name
from flower.core.errors import ConfigError
from flower.runtime.doctor import check_config, check_pruning, run_checks

pytestmark = pytest.mark.usefixtures("english")


def test_run_checks_names_every_check_and_creates_no_store(in_tmp: Path) -> None:
    checks = run_checks(load_settings)
    assert [c.name for c in checks] == [
        "config",
        "plugins",
        "run dir",
        "store",
        "pruning",
        "endpoint",
        "api key",
        "traces",
    ]
    store = next(c for c in checks if c.name == "store")
    assert store.ok and "does not exist yet" in store.detail
    assert not (in_tmp / "runs").exists()


def test_invalid_settings_skip_the_checks_that_need_them(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text("[tool.flower]\nno_such_key = 1\n", encoding="utf-8")
    checks = {c.name: c for c in run_checks(load_settings)}
    assert not checks["config"].ok and "no_such_key" in checks["config"].detail
    assert checks["store"].detail == "skipped: the configuration is invalid"
    assert "traces" not in checks


def test_a_config_error_names_where_its_key_was_set(in_tmp: Path) -> None:
    pyproject = in_tmp / "pyproject.toml"
    pyproject.write_text('[tool.flower.pruning]\npolicies = ["no-such"]\n', encoding="utf-8")
    loaded = load_settings()
    check = check_pruning(loaded)
    assert not check.ok and check.detail.startswith(f"{pyproject}: ")
    config, _loaded = check_config(lambda: loaded)
    assert config.ok  # the pruning chain is check_pruning's to say


def test_explain_says_the_source_of_a_key_set_outside_the_file() -> None:
    loaded = LoadedSettings(Settings(), sources={"pruning.policies": "FLOWER_PRUNING_POLICIES"})
    error = ConfigError("no policy x", key="pruning.policies")
    assert loaded.explain(error) == "no policy x (set by FLOWER_PRUNING_POLICIES)"
    assert loaded.explain(ConfigError("bad")) == "bad"


def test_store_name_is_the_url_else_the_backend() -> None:
    assert store_name(Settings(), "sqlite:///x.db") == "sqlite:///x.db"
    assert store_name(Settings()).startswith("sqlite:///")
    plugin = Settings(sessions=Settings().sessions.__class__(backend="mine"))
    assert store_name(plugin) == "the 'mine' session store"
