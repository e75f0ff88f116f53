from __future__ import annotations

from pathlib import Path

import pytest

from flower.core.config import effective_items, load_settings
from flower.core.errors import ConfigError

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_follow_the_seed(tmp_path: Path) -> None:
    s = load_settings(tmp_path, environ={}).settings
    assert s.run_dir == "runs"
    assert s.sessions.backend == "sqlite"
    assert s.sessions_url() == "sqlite:///runs/sessions.db"
    assert s.lineage.backend == "json"
    assert s.pruning.policies == ["synthetic-errors", "denials", "interrupted", "ephemeral"]
    assert s.pruning.keep_denials == 1
    r = s.resilience
    assert (r.max_attempts, r.base_delay, r.max_delay) == (6, 4.0, 120.0)
    assert (r.probe_timeout, r.probe_interval, r.max_offline_wait) == (5.0, 15.0, 3600.0)
    assert r.retry_unknown is True
    assert s.probe.strategy == "tcp"


def test_nearest_pyproject_with_the_table_wins(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.flower]\nrun_dir = "outer"\n')
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    write(tmp_path / "a" / "pyproject.toml", "[project]\nname = 'x'\n")  # no [tool.flower]
    loaded = load_settings(inner, environ={})
    assert loaded.settings.run_dir == "outer"
    assert loaded.pyproject == tmp_path / "pyproject.toml"


def test_env_overrides_pyproject_and_flags_override_env(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.flower.resilience]\nmax_attempts = 3\n")
    env = {"FLOWER_RESILIENCE_MAX_ATTEMPTS": "4", "FLOWER_RUN_DIR": "envruns"}
    loaded = load_settings(tmp_path, environ=env)
    assert loaded.settings.resilience.max_attempts == 4
    assert loaded.sources["resilience.max_attempts"] == "env FLOWER_RESILIENCE_MAX_ATTEMPTS"
    loaded = load_settings(
        tmp_path, environ=env, overrides={"run_dir": "cli", "sessions.url": None}
    )
    assert loaded.settings.run_dir == "cli"
    assert loaded.sources["run_dir"] == "command line"
    assert loaded.settings.sessions.url is None


def test_list_from_env(tmp_path: Path) -> None:
    env = {"FLOWER_PRUNING_POLICIES": "denials, interrupted"}
    assert load_settings(tmp_path, environ=env).settings.pruning.policies == [
        "denials",
        "interrupted",
    ]


def test_unknown_key_names_file_table_key_and_the_known_keys(tmp_path: Path) -> None:
    py = write(tmp_path / "pyproject.toml", "[tool.flower.sessions]\nbackennd = 'sqlite'\n")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, environ={})
    msg = str(info.value)
    assert str(py) in msg
    assert "[tool.flower.sessions] backennd" in msg
    assert "backend" in msg
    assert info.value.exit_code == 2


def test_wrong_type_names_the_expected_type(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.flower.resilience]\nmax_attempts = 'six'\n")
    with pytest.raises(ConfigError, match=r"\[tool.flower.resilience\] max_attempts.*int"):
        load_settings(tmp_path, environ={})


def test_bad_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="FLOWER_RESILIENCE_BASE_DELAY"):
        load_settings(tmp_path, environ={"FLOWER_RESILIENCE_BASE_DELAY": "soon"})


def test_broken_toml_is_a_config_error(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.flower\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(tmp_path, environ={})


def test_effective_items_report_sources(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.flower.probe]\nstrategy = 'none'\n")
    rows = {k: (v, src) for k, v, src in effective_items(load_settings(tmp_path, environ={}))}
    assert rows["probe.strategy"][0] == "none"
    assert "pyproject.toml [tool.flower.probe] strategy" in rows["probe.strategy"][1]
    assert rows["probe.timeout"] == (5.0, "default")


def test_a_configured_url_picks_its_backend_by_scheme(tmp_path: Path) -> None:
    from flower.stores.open import open_session_store

    (tmp_path / "t").mkdir()
    write(
        tmp_path / "pyproject.toml",
        f'[tool.flower.sessions]\nurl = "jsonfs://{tmp_path / "t"}"\n',
    )
    store = open_session_store(settings=load_settings(tmp_path, environ={}).settings)
    try:
        assert type(store).__module__.startswith("flower_plugins.jsonfs")
    finally:
        store.close()


def test_the_brief_and_goals_names_are_unset_by_default_and_never_empty(tmp_path: Path) -> None:
    """Unset, the run's language names the files (flower.workflow.documents); a name set
    is used as is, and an empty one is an error rather than the workspace itself."""
    workflow = load_settings(tmp_path, environ={}).settings.workflow
    assert (workflow.brief_file, workflow.goals_file) == (None, None)
    env = {"FLOWER_WORKFLOW_BRIEF_FILE": "spec.md"}
    assert load_settings(tmp_path, environ=env).settings.workflow.brief_file == "spec.md"
    write(tmp_path / "pyproject.toml", '[tool.flower.workflow]\ngoals_file = ""\n')
    with pytest.raises(ConfigError, match=r"\[tool.flower.workflow\] goals_file.*length >= 1"):
        load_settings(tmp_path, environ={})
