"""Start-up stays light: heavy libraries are imported by the commands that need them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flower.core.errors import PluginError
from flower.core.plugins import Registration
from tests.cli.import_probe import imported_modules, typer_own_modules

# What flower itself imports only inside the commands that need them. What typer loads
# on its own is typer's cost, not flower's: rich with typer < 0.17 on ``import typer``,
# pydantic with typer >= 0.28 when it coerces a parameter value.
HEAVY = ("anthropic", "sqlalchemy", "rich", "alembic", "psycopg", "flower.stores.open")
# What registering the built-in plugins must not import (a plugin's implementation
# and its libraries load when a store or a prober is opened).
NOT_AT_REGISTRATION = (
    "http.client",
    "ssl",
    "cryptography",
    "flower_plugins.secret_shapes",
    "flower_plugins.jsonfs.factory",
    "flower_plugins.jsonfs.sessions",
    "flower_plugins.sql.options",
    "flower_plugins.sql.factory",
)


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (a package counts with its submodules) were imported."""
    return [n for n in names if n in modules or any(m.startswith(n + ".") for m in modules)]


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["config"], ["sessions", "--help"]])
def test_no_heavy_imports(args: list[str], in_tmp: Path) -> None:
    assert loaded(imported_modules(args, in_tmp) - typer_own_modules(), HEAVY) == []


def test_help_loads_every_plugin_but_none_of_their_implementations(in_tmp: Path) -> None:
    modules = imported_modules(["--help"], in_tmp)
    assert {"flower_plugins.sql", "flower_plugins.jsonfs", "flower_plugins.probes"} <= modules
    assert loaded(modules, NOT_AT_REGISTRATION) == []


def test_help_still_lists_plugin_commands(in_tmp: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flower.cli.main", "--help"],
        cwd=in_tmp,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    commands = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")}
    assert {"db", "prune", "plugins", "status"} <= commands


def test_the_console_entry_module_runs_as_python_m(in_tmp: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flower.cli.main", "--version"],
        cwd=in_tmp,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("flower "), done.stderr


def test_importing_the_entry_module_loads_no_plugin(in_tmp: Path) -> None:
    modules = imported_modules(["--version"], in_tmp)
    assert "flower.core.plugins" not in modules and "pluggy" not in modules


def test_options_registered_by_name_resolve_on_use_and_fail_clearly(english: None) -> None:
    lazy = Registration("session_stores", "x", dict, "plug", options_ref="pathlib:PurePath")
    assert lazy.options is __import__("pathlib").PurePath
    broken = Registration("session_stores", "x", dict, "plug", options_ref="no_such_mod:Opt")
    with pytest.raises(PluginError, match=r"plugin 'plug'.*no_such_mod:Opt"):
        _ = broken.options
