"""The ``flower`` console script: the typer app and its entry point.

Importing this module loads typer and flower's small CLI modules only. Each built-in
command is a :class:`~flower.cli.lazy.LazyCommand` of :data:`BUILTIN_COMMANDS`: its
module is imported, and typer builds it, when it runs or help is asked (click's lazily
loaded subcommands). Stores, SQLAlchemy, the anthropic SDK and rich are imported inside
the commands that need them.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

if TYPE_CHECKING:
    import logging

from flower import __version__
from flower.cli.context import CliState, RunDirOption
from flower.cli.group import FlowerGroup
from flower.cli.lazy import LazyCommand
from flower.core.i18n import N_

ENGINE_COMMANDS = (
    LazyCommand("run", "flower.cli.run:run"),
    LazyCommand("once", "flower.cli.run:once"),
    LazyCommand("status", "flower.cli.run:status"),
    LazyCommand("demo", "flower.cli.run:demo"),
    LazyCommand("adopt", "flower.cli.adopt:adopt"),
)
"""The commands that run the workflow or read its state."""
BUILTIN_COMMANDS = (
    *ENGINE_COMMANDS,
    LazyCommand("rewind", "flower.cli.rewind:rewind"),
    LazyCommand("sessions", "flower.cli.sessions:app"),
    LazyCommand("prune", "flower.cli.prune:prune"),
    LazyCommand("config", "flower.cli.config:config"),
    LazyCommand("plugins", "flower.cli.plugins:plugins"),
    LazyCommand("doctor", "flower.cli.doctor:doctor"),
    LazyCommand("fleet", "flower.cli.fleet:app"),
    LazyCommand("ui", "flower.cli.ui:ui"),
)
"""Every built-in command, in the order ``flower --help`` lists them (plugins' follow)."""
CORE_COMMANDS = tuple(c for c in BUILTIN_COMMANDS if c not in ENGINE_COMMANDS)
"""The bare core (tests): every built-in but the workflow's commands."""
HELP = N_("""Long-running Claude agent workflows that never lose their place.

Run `flower COMMAND --help` for the options of a command.""")


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
            help=N_("Session store URL (sqlite:///..., postgresql+psycopg://..., jsonfs:///...)."),
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help=N_("Show the version.")),
    ] = False,
) -> None:
    ctx.obj = CliState(run_dir=run_dir, sessions_url=sessions_url)
    _log_warnings_as_lines()  # a command runs (--help and --version end before this)


def build_app(*, commands: Sequence[LazyCommand] = BUILTIN_COMMANDS) -> typer.Typer:
    """A fresh ``flower`` app; tests pass ``commands=CORE_COMMANDS`` for the bare core."""

    class RootGroup(FlowerGroup):
        lazy_commands = tuple(commands)

    app = typer.Typer(
        cls=RootGroup,
        name="flower",
        help=HELP,
        rich_markup_mode=None,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    return app


def _show_flower_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """flower's own warnings (a plugin skipped, a pruning policy that failed, ...) as one
    ``flower: warning: ...`` line, without Python's file, line and source."""
    from flower.cli.errors import warn
    from flower.core.open_line import end_open_line

    if category.__module__.partition(".")[0] in ("flower", "flower_plugins"):
        warn(str(message))
        return
    end_open_line()  # streamed text left its line open: the warning starts a new one
    _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


WARNING_LINES = "flower-warning-lines"
"""The name of the logging handler that writes flower's warnings as lines."""


def _log_warnings_as_lines() -> None:
    """flower's log records of WARNING and above as ``flower: warning:`` lines, instead
    of logging's bare last resort. Installed once per process, by the first command
    that runs: ``--help`` and ``--version`` never import logging."""
    import logging

    from flower.cli.errors import warn

    if any(h.get_name() == WARNING_LINES for h in logging.getLogger("flower").handlers):
        return

    class WarningLines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warn(record.getMessage())

    lines = WarningLines(logging.WARNING)
    lines.set_name(WARNING_LINES)
    for name in ("flower", "flower_plugins"):
        logging.getLogger(name).addHandler(lines)
    logging.getLogger("asyncio").addFilter(_child_watcher_noise)


def _child_watcher_noise(record: logging.LogRecord) -> bool:
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
    command = typer.main.get_command(app)
    command.main(args=argv, prog_name="flower")


app = build_app()

if __name__ == "__main__":
    main()
