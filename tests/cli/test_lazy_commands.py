"""Built-in commands are loaded only when used: run, or asked for help."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from flower.cli.lazy import LazyCommand
from flower.cli.main import BUILTIN_COMMANDS, CORE_COMMANDS, build_app
from tests.cli.import_probe import imported_modules

runner = CliRunner()
COMMAND_MODULES = sorted({c.target.partition(":")[0] for c in BUILTIN_COMMANDS})


def test_every_builtin_command_module_exists_and_names_are_unique() -> None:
    names = [c.name for c in BUILTIN_COMMANDS]
    assert len(names) == len(set(names))
    assert set(CORE_COMMANDS) <= set(BUILTIN_COMMANDS)


def test_help_lists_every_builtin_in_order(in_tmp: Path) -> None:
    listed = runner.invoke(build_app(), ["--help"]).stdout
    rows = [line.split()[0] for line in listed.splitlines() if line.startswith("  ")]
    builtin = [c.name for c in BUILTIN_COMMANDS]
    assert [name for name in rows if name in builtin] == builtin


def test_a_command_loads_only_its_own_module(in_tmp: Path) -> None:
    modules = imported_modules(["config", "--json"], in_tmp)
    assert [m for m in COMMAND_MODULES if m in modules] == ["flower.cli.config"]


def test_a_commands_own_help_loads_it(in_tmp: Path) -> None:
    done = runner.invoke(build_app(), ["sessions", "--help"])
    assert done.exit_code == 0
    assert "list" in done.stdout and "copy" in done.stdout


def test_a_lazy_command_is_loaded_once() -> None:
    group = typer.main.get_command(build_app())
    ctx = typer.Context(group)  # type: ignore[arg-type]
    first = group.get_command(ctx, "status")  # type: ignore[attr-defined]
    assert first is not None
    assert group.get_command(ctx, "status") is first  # type: ignore[attr-defined]


@pytest.mark.parametrize("shape", ["function", "typer"])
def test_a_lazy_command_may_be_a_function_or_a_typer_group(in_tmp: Path, shape: str) -> None:
    module = types.ModuleType(f"lazy_{shape}")

    def greet(name: str = "world") -> None:
        """Greet someone. More words here."""
        typer.echo(f"hello {name} via {shape}")

    if shape == "function":
        module.target = greet  # type: ignore[attr-defined]
        argv = ["greet", "--name", "flower"]
    else:
        sub = typer.Typer(help="Greet someone. More words here.")
        sub.command("now")(greet)
        sub.command("later")(greet)
        module.target = sub  # type: ignore[attr-defined]
        argv = ["greet", "now", "--name", "flower"]
    sys.modules[module.__name__] = module
    try:
        command = LazyCommand("greet", f"{module.__name__}:target")
        app = build_app(commands=(*CORE_COMMANDS, command))
        done = runner.invoke(app, argv)
        listed = runner.invoke(app, ["--help"]).stdout
    finally:
        del sys.modules[module.__name__]
    assert done.exit_code == 0, done.output
    assert done.stdout == f"hello flower via {shape}\n"
    (row,) = [line for line in listed.splitlines() if line.startswith("  greet ")]
    assert row.split(None, 1)[1] == "Greet someone."


def test_a_command_registered_on_the_app_takes_a_lazy_ones_place(in_tmp: Path) -> None:
    app = build_app()

    @app.command("status")
    def status() -> None:
        typer.echo("the app's own status")

    assert runner.invoke(app, ["status"]).stdout == "the app's own status\n"
