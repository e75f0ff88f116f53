"""``flower config``: effective values, their sources, masking, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_flower
from typer.testing import CliRunner

from flower.cli.main import build_app

pytestmark = pytest.mark.usefixtures("english")  # expects flower's English output

runner = CliRunner()
SECRET = "hunter2-very-secret"


def write_pyproject(folder: Path, body: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text(f'[project]\nname = "x"\n\n[tool.flower]\n{body}\n', encoding="utf-8")
    return path


def config_json(*args: str) -> dict:
    result = runner.invoke(build_app(), [*args, "config", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_defaults_and_sources(in_tmp: Path) -> None:
    data = config_json()
    assert data["pyproject"] is None
    assert data["settings"]["run_dir"] == "runs"
    assert data["sources"]["sessions.backend"] == "default"
    assert data["effective"]["sessions_url"] == "sqlite:///runs/sessions.db"


def test_pyproject_env_and_flags_layer_in_order(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyproject = write_pyproject(
        in_tmp, 'run_dir = "from-file"\n[tool.flower.relay]\nthreshold_tokens = 1000'
    )
    monkeypatch.setenv("FLOWER_RESILIENCE_MAX_ATTEMPTS", "9")
    data = config_json("-r", "from-flag")
    assert data["pyproject"] == str(pyproject)
    assert data["settings"]["run_dir"] == "from-flag"
    assert data["sources"]["run_dir"] == "command line"
    assert data["settings"]["relay"]["threshold_tokens"] == 1000
    assert (
        data["sources"]["relay.threshold_tokens"]
        == f"{pyproject} [tool.flower.relay] threshold_tokens"
    )
    assert data["settings"]["resilience"]["max_attempts"] == 9
    assert data["sources"]["resilience.max_attempts"] == "env FLOWER_RESILIENCE_MAX_ATTEMPTS"
    assert data["effective"]["sessions_url"] == "sqlite:///from-flag/sessions.db"


def test_text_output_names_value_and_source(in_tmp: Path) -> None:
    write_pyproject(in_tmp, "[tool.flower.workflow]\nrounds = 5")
    result = runner.invoke(build_app(), ["config"])
    assert result.exit_code == 0
    line = next(x for x in result.stdout.splitlines() if x.startswith("workflow.rounds"))
    assert "= 5" in line
    assert "[tool.flower.workflow] rounds" in line


@pytest.mark.parametrize("where", ["pyproject", "env", "flag"])
def test_password_never_shown(in_tmp: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    url = f"postgresql+psycopg://flower:{SECRET}@db.example:5432/flower"
    args: list[str] = []
    if where == "pyproject":
        write_pyproject(
            in_tmp,
            f'[tool.flower.sessions]\nbackend = "postgres"\nurl = "{url}"\n',
        )
    elif where == "env":
        monkeypatch.setenv("FLOWER_SESSIONS_URL", url)
    else:
        args = ["--sessions-url", url]
    for extra in ([], ["--json"]):
        result = runner.invoke(build_app(), [*args, "config", *extra])
        assert result.exit_code == 0, result.output
        assert SECRET not in result.output
        assert "flower:***@db.example:5432/flower" in result.output


def test_unknown_key_exits_2_naming_file_key_and_expectation(in_tmp: Path) -> None:
    pyproject = write_pyproject(in_tmp, "[tool.flower.sessions]\nbakend = 'sqlite'")
    done = run_flower("config", cwd=in_tmp)
    assert done.returncode == 2
    assert str(pyproject) in done.stderr
    assert "[tool.flower.sessions] bakend" in done.stderr
    assert "unknown key" in done.stderr and "backend" in done.stderr
    assert "Traceback" not in done.stderr


def test_wrong_type_exits_2(in_tmp: Path) -> None:
    write_pyproject(in_tmp, "[tool.flower.workflow]\nrounds = 'three'")
    done = run_flower("config", "--json", cwd=in_tmp)
    assert done.returncode == 2
    assert "[tool.flower.workflow] rounds" in done.stderr
    assert "Expected `int`" in done.stderr
    assert done.stdout == ""


def test_bad_environment_variable_exits_2(in_tmp: Path) -> None:
    done = run_flower("config", cwd=in_tmp, env={"FLOWER_WORKFLOW_ROUNDS": "many"})
    assert done.returncode == 2
    assert "FLOWER_WORKFLOW_ROUNDS" in done.stderr


def test_broken_toml_exits_2(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text("[tool.flower\n", encoding="utf-8")
    done = run_flower("sessions", "list", cwd=in_tmp)
    assert done.returncode == 2
    assert "not valid TOML" in done.stderr


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            "[tool.flower.sessions.options]\nbusy_timeot = 1",
            "[tool.flower.sessions.options] busy_timeot: unknown key (expected one of: "
            "busy_timeout",
        ),
        (
            '[tool.flower.sessions]\nbackend = "sqllite"',
            "[tool.flower.sessions] backend: no session store named 'sqllite' "
            "(did you mean 'sqlite'?)",
        ),
        (
            "[tool.flower.lineage.options]\nfsynk = true",
            "[tool.flower.lineage.options] fsynk: unknown key (expected one of: fsync)",
        ),
    ],
)
def test_a_backend_setting_mistake_names_the_file_in_config_doctor_and_commands(
    in_tmp: Path, body: str, says: str
) -> None:
    pyproject = write_pyproject(in_tmp, body)
    uses_sessions = "lineage" not in body
    for argv in (["config"], ["status"], *([["sessions", "list"]] if uses_sessions else [])):
        done = runner.invoke(build_app(), argv)
        assert done.exit_code == 2, (argv, done.output)
        assert f"flower: error: {pyproject}: {says}" in done.output, (argv, done.output)
    doctor = runner.invoke(build_app(), ["doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert not checks["config"]["ok"] and says in checks["config"]["detail"]
    assert not (in_tmp / "runs").exists()  # a lineage typo is no silent fresh start


def test_a_backend_option_set_by_a_variable_names_the_variable(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWER_SESSIONS_OPTIONS", '{"busy_timeot": 1}')
    done = runner.invoke(build_app(), ["sessions", "list"])
    assert done.exit_code == 2
    assert "busy_timeot: unknown key" in done.output
    assert "(set by env FLOWER_SESSIONS_OPTIONS)" in done.output
    monkeypatch.setenv("FLOWER_PRUNING_KEEP_DENIALS", "-1")
    done = runner.invoke(build_app(), ["config"])
    assert done.exit_code == 2
    assert "environment variable FLOWER_PRUNING_KEEP_DENIALS: Expected `int` >= 0" in done.output


def test_a_scalar_where_an_options_table_belongs_reads_cleanly(in_tmp: Path) -> None:
    pyproject = write_pyproject(in_tmp, "[tool.flower.pruning.options]\ndrop-thinking = 3")
    done = runner.invoke(build_app(), ["config"])
    assert done.exit_code == 2
    assert (
        f"{pyproject}: [tool.flower.pruning] options: an entry: Expected `object`, got `int`"
    ) in done.output


@pytest.mark.usefixtures("english")  # the expected text is flower's English output
def test_a_plugin_backend_named_without_a_url_gets_none_not_the_sqlite_default(
    in_tmp: Path,
) -> None:
    from flower.core.config import default_store_url, load_settings
    from flower.stores.open import open_session_store

    write_pyproject(in_tmp, '[tool.flower.sessions]\nbackend = "postgres"')
    settings = load_settings().settings
    assert default_store_url(settings) is None
    text = runner.invoke(build_app(), ["config"]).stdout
    assert "session store: the 'postgres' session store" in text
    assert config_json()["effective"]["sessions_url"] is None
    from flower.core.errors import ConfigError

    with pytest.raises(ConfigError, match="backend: 'postgres' needs a URL") as info:
        open_session_store(settings=settings)
    assert info.value.key == "sessions.backend"  # exit 2, naming the file
    done = runner.invoke(build_app(), ["--sessions-url", "nothing", "sessions", "list"])
    assert done.exit_code == 2
    assert "'nothing' is not a store URL (scheme://...; known schemes: jsonfs://" in done.output


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("FLOWER_PROBE_STRATEGY", "bogus", "[tool.flower.probe] strategy: no prober named 'bogus'"),
        ("FLOWER_WORKFLOW_ROUNDS", "0", "FLOWER_WORKFLOW_ROUNDS: Expected `int` >= 1"),
        (
            "FLOWER_RESILIENCE_MAX_ATTEMPTS",
            "0",
            "FLOWER_RESILIENCE_MAX_ATTEMPTS: Expected `int` >= 1",
        ),
    ],
)
def test_a_setting_mistake_stops_a_run_before_it_writes_anything(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    for argv in (["config"], ["run", "--yes", "write a script"], ["status"]):
        done = runner.invoke(build_app(), argv)
        assert done.exit_code == 2, (argv, done.output)
        assert says in done.output, (argv, done.output)
    assert list(in_tmp.iterdir()) == []  # no brief, no lineage, no wake counted
    doctor = runner.invoke(build_app(), ["doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert not checks["config"]["ok"] and says in checks["config"]["detail"]


def test_a_lineage_path_without_a_scheme_is_still_a_lineage_url(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWER_LINEAGE_URL", "mylineage.json")
    assert runner.invoke(build_app(), ["status"]).exit_code == 1  # read, and nothing to wake
    assert runner.invoke(build_app(), ["config"]).exit_code == 0


def test_status_names_the_lineage_store_in_use(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "lineage     none in runs/lineage.json" in runner.invoke(build_app(), ["status"]).stdout
    monkeypatch.setenv("FLOWER_LINEAGE_BACKEND", "sqlite")
    text = runner.invoke(build_app(), ["status"]).stdout
    assert "lineage     none in the 'sqlite' lineage store" in text


def _comment(output: str, key: str) -> str:
    line = next(x for x in output.splitlines() if x.startswith(key + " "))
    return line.split("  # ", 1)[1]


def test_unset_document_names_say_what_the_lookup_picks_here(in_tmp: Path) -> None:
    """brief_file/goals_file are unset by default: config names the file a run would use
    in this directory and why, in text and in --json."""
    result = runner.invoke(build_app(), ["config"])
    assert result.exit_code == 0, result.output
    assert _comment(result.stdout, "workflow.brief_file") == "default: brief.md (English)"
    assert _comment(result.stdout, "workflow.goals_file") == "default: goals.md (English)"

    (in_tmp / "需求.md").write_text("## 背景\n", encoding="utf-8")  # a Chinese wake's brief
    result = runner.invoke(build_app(), ["config"])
    assert _comment(result.stdout, "workflow.brief_file") == "found: 需求.md"
    data = config_json()
    assert data["effective"]["brief_file"] == {"file": "需求.md", "how": "found", "not_used": []}
    assert data["effective"]["goals_file"] == {"file": "goals.md", "how": "default", "not_used": []}

    (in_tmp / "brief.md").write_text("## Background\n", encoding="utf-8")
    result = runner.invoke(build_app(), ["config"])
    assert _comment(result.stdout, "workflow.brief_file") == "found: brief.md (需求.md not used)"
    data = config_json()
    assert data["effective"]["brief_file"] == {
        "file": "brief.md",
        "how": "found",
        "not_used": ["需求.md"],
    }
    assert data["settings"]["workflow"]["brief_file"] is None  # the setting itself: unset
    assert data["sources"]["workflow.brief_file"] == "default"


def test_a_configured_document_name_is_shown_with_its_source(in_tmp: Path) -> None:
    pyproject = write_pyproject(in_tmp, '[tool.flower.workflow]\nbrief_file = "docs/BRIEF.md"')
    result = runner.invoke(build_app(), ["config"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("workflow.brief_file"))
    assert line.endswith(f"= docs/BRIEF.md  # {pyproject} [tool.flower.workflow] brief_file")
    brief = config_json()["effective"]["brief_file"]
    assert brief == {"file": "docs/BRIEF.md", "how": "configured", "not_used": []}
