"""The ``flower`` console script: the typer app and its entry point.

Kept light on purpose: importing this module loads typer and flower's small CLI
modules only. Stores, plugins, SQLAlchemy, the anthropic SDK and rich are imported
inside the commands that need them.

Optional command modules are attached when present, so their authors only drop a
file in: ``flower.cli.run`` (``run`` and friends) and ``flower.cli.doctor``. Each may
expose ``register(app)``, a ``typer.Typer`` named ``app`` whose commands are added
to the root, or a function named like its command.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from collections.abc import Mapping
from typing import Annotated, Any

import typer

from flower import __version__
from flower.cli import config as config_cmd
from flower.cli import plugins as plugins_cmd
from flower.cli import rewind as rewind_cmd
from flower.cli import sessions as sessions_cmd
from flower.cli.context import CliState, RunDirOption
from flower.cli.group import FlowerGroup

OPTIONAL_MODULES = {
    "flower.cli.run": "run",
    "flower.cli.doctor": "doctor",
    "flower.cli.ui": "ui",
}
HELP = """Long-running Claude agent workflows that never lose their place.

Run `flower COMMAND --help` for the options of a command."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"flower {__version__}")
        raise typer.Exit()


def _root(
    ctx: typer.Context,
    run_dir: RunDirOption = None,
    sessions_url: Annotated[
        str | None,
        typer.Option(
            "--sessions-url",
            metavar="URL",
            help="Session store URL (sqlite:///..., postgresql+psycopg://..., jsonfs:///...).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    ctx.obj = CliState(run_dir=run_dir, sessions_url=sessions_url)


def _attach_optional(app: typer.Typer, module_name: str, command: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return
        raise
    register = getattr(module, "register", None)
    sub_app = getattr(module, "app", None)
    if callable(register):
        register(app)
    elif isinstance(sub_app, typer.Typer):
        app.registered_commands.extend(sub_app.registered_commands)
        app.registered_groups.extend(sub_app.registered_groups)
    elif callable(getattr(module, command, None)):
        app.command(name=command)(getattr(module, command))


def build_app(*, optional_modules: Mapping[str, str] = OPTIONAL_MODULES) -> typer.Typer:
    """A fresh ``flower`` app; tests pass ``optional_modules={}`` for the bare core."""
    app = typer.Typer(
        cls=FlowerGroup,
        name="flower",
        help=HELP,
        rich_markup_mode=None,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    app.add_typer(sessions_cmd.app, name="sessions")
    app.command(name="plugins")(plugins_cmd.plugins)
    app.command(name="config")(config_cmd.config)
    app.command(name="rewind")(rewind_cmd.rewind)
    for module_name, command in optional_modules.items():
        _attach_optional(app, module_name, command)
    return app


def _show_flower_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """flower's own warnings (a plugin skipped, a pruning policy that failed, ...) as one
    ``flower: warning: ...`` line, without Python's file, line and source."""
    if category.__module__.partition(".")[0] in ("flower", "flower_plugins"):
        from flower.cli.errors import warn

        warn(str(message))
        return
    _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


def _log_warnings_as_lines() -> None:
    """flower's log records of WARNING and above as ``flower: warning:`` lines, instead
    of logging's bare last resort (imported here: help rendering never needs it)."""
    import logging

    from flower.cli.errors import warn

    class WarningLines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warn(record.getMessage())

    lines = WarningLines(logging.WARNING)
    for name in ("flower", "flower_plugins"):
        logging.getLogger(name).addHandler(lines)
    logging.getLogger("asyncio").addFilter(_child_watcher_noise)


def _child_watcher_noise(record: Any) -> bool:
    """Drop asyncio's complaints about a tool's child process reaped while the loop
    shuts down after Ctrl-C (the child is killed either way: nothing to act on)."""
    text = str(record.msg)
    return not ("that handles pid" in text or text.startswith("Unknown child process pid"))


def _escape_what_utf8_cannot_carry() -> None:
    """A stored string cut mid-emoji holds a lone surrogate, which no UTF-8 terminal or
    pipe can take: it is printed as its ``\\ud83d`` escape instead of stopping the command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    _escape_what_utf8_cannot_carry()
    warnings.showwarning = _show_flower_warning
    _log_warnings_as_lines()
    command = typer.main.get_command(app)
    command.main(args=argv, prog_name="flower")


app = build_app()

if __name__ == "__main__":
    main()
