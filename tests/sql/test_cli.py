"""``flower db upgrade|current`` through the sql plugin's own register_commands hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import flower_plugins.sql as sql_plugin
from flower.cli.context import CliState
from flower.core.errors import ConfigError, FlowerError, PluginError
from flower_plugins.sql.schema import HEAD_REVISION

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("english")  # the English output; tests/i18n has both


def app() -> typer.Typer:
    """An app of one's own mounting the plugin's commands, with flower's command state."""
    root = typer.Typer()

    @root.callback()
    def main(ctx: typer.Context) -> None:
        """A stand-in for the flower CLI."""
        ctx.obj = CliState()

    sql_plugin.register_commands(root)
    return root


def invoke(*args: str) -> tuple[int, str, BaseException | None]:
    result = runner.invoke(app(), list(args))
    return result.exit_code, result.output, result.exception


def test_current_then_upgrade_then_current_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    code, out, _ = invoke("db", "current", "--url", url, "--json")
    assert code == 0
    assert json.loads(out) == {
        "url": url,
        "current": None,
        "head": HEAD_REVISION,
        "status": "empty",
    }
    code, out, _ = invoke("db", "upgrade", "--url", url)
    assert code == 0 and f"upgraded empty -> {HEAD_REVISION}" in out
    code, out, _ = invoke("db", "upgrade", "--url", url)
    assert code == 0 and "already at" in out
    code, out, _ = invoke("db", "current", "--url", url)
    assert code == 0 and f"{HEAD_REVISION} (up to date" in out


def test_upgrade_defaults_to_the_configured_sessions_url(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.sessions]\nurl = "sqlite:///data/flower.db"\n', encoding="utf-8"
    )
    code, out, exc = invoke("db", "upgrade")  # flower creates no folder but runs/
    assert code != 0 and isinstance(exc, ConfigError) and not (in_tmp / "data").exists()
    assert str(in_tmp / "data") in str(exc)
    (in_tmp / "data").mkdir()
    code, out, exc = invoke("db", "upgrade")
    assert code == 0, (out, exc)
    assert (in_tmp / "data" / "flower.db").is_file()


def test_postgres_upgrade_and_current_hide_the_password(pg_url: str) -> None:
    code, out, exc = invoke("db", "upgrade", "--url", pg_url)
    assert code == 0, (out, exc)
    code, out, _ = invoke("db", "current", "--url", pg_url, "--json")
    assert json.loads(out)["status"] == "up to date"
    secret_url = "postgresql+psycopg://u:hunter2@127.0.0.1:1/db"
    code, out, exc = invoke("db", "current", "--url", secret_url)
    assert code != 0 and isinstance(exc, FlowerError)
    assert "hunter2" not in str(exc) and "127.0.0.1:1" in str(exc)


def test_a_non_sql_backend_is_a_clear_error(in_tmp: Path) -> None:
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.sessions]\nbackend = "jsonfs"\n', encoding="utf-8"
    )
    code, _, exc = invoke("db", "current")
    assert isinstance(exc, FlowerError) and "has no SQL schema" in str(exc)
    assert code != 0


def test_current_on_a_missing_sqlite_file_reports_empty_and_creates_nothing(
    tmp_path: Path,
) -> None:
    database = tmp_path / "runs" / "sessions.db"
    code, out, exc = invoke("db", "current", "--url", f"sqlite:///{database}", "--json")
    assert code == 0, (out, exc)
    assert json.loads(out)["status"] == "empty"
    assert not database.exists() and not database.parent.exists()


def test_the_global_sessions_url_option_picks_the_database(in_tmp: Path) -> None:
    from flower.cli.main import build_app

    (in_tmp / "pyproject.toml").write_text("[tool.flower]\n", encoding="utf-8")
    target = in_tmp / "other.db"
    done = runner.invoke(build_app(), ["--sessions-url", f"sqlite:///{target}", "db", "upgrade"])
    assert done.exit_code == 0, done.output
    assert target.is_file() and f"upgraded empty -> {HEAD_REVISION}" in done.output
    assert not (in_tmp / "runs").exists()  # the default database was left alone
    done = runner.invoke(
        build_app(), ["--sessions-url", f"sqlite:///{target}", "db", "current", "--json"]
    )
    assert done.exit_code == 0 and json.loads(done.stdout)["status"] == "up to date"


def test_an_app_without_a_command_state_is_told_what_to_give_its_commands(
    in_tmp: Path,
) -> None:
    """Without the state flower's command line keeps, a plugin's command that reads the
    settings stops with what to do, and touches nothing."""
    (in_tmp / "pyproject.toml").write_text(
        '[tool.flower.sessions]\nurl = "sqlite:///data/flower.db"\n', encoding="utf-8"
    )
    root = typer.Typer()

    @root.callback()
    def main() -> None:
        """An app that forgot the state."""

    sql_plugin.register_commands(root)
    done = runner.invoke(root, ["db", "upgrade"])
    assert done.exit_code != 0 and isinstance(done.exception, PluginError)
    assert "db upgrade" in str(done.exception) and "CommandState" in str(done.exception)
    assert list(in_tmp.iterdir()) == [in_tmp / "pyproject.toml"]
