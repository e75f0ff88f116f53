"""Commands known by name and summary until they run (click's lazily loaded subcommands).

``flower --help`` lists every command but runs none: a :class:`LazyCommand` holds the
command's name, the one sentence the listing shows, and where its code lives. The module
is imported and typer builds the command (reading its annotated parameters) only when
the command is invoked or its own ``--help`` is asked. The summary is the first sentence
of the command's own help; ``tests/cli/test_lazy_commands.py`` checks the two agree.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

import typer
from typer.core import TyperCommand


class LazyCommand(NamedTuple):
    """A root command or group, loaded on first use.

    A NamedTuple rather than a msgspec Struct: ``flower --help`` reads these before
    anything else and must not pay for importing msgspec.
    """

    name: str
    target: str
    """``module:attribute``: a command function, or a ``typer.Typer`` for a group."""
    summary: str
    """What ``flower --help`` shows: the first sentence of the command's own help."""

    def load(self) -> Any:
        """The click command (or group) typer builds from the target."""
        module_name, _, attribute = self.target.partition(":")
        found = getattr(importlib.import_module(module_name), attribute)
        holder = typer.Typer(rich_markup_mode=None, add_completion=False)
        if isinstance(found, typer.Typer):
            holder.add_typer(found, name=self.name)
        else:
            holder.command(name=self.name)(found)
        return typer.main.get_group(holder).commands[self.name]

    def listed(self) -> Any:
        """A stand-in with only the summary, for the listing (click shortens it)."""
        return TyperCommand(name=self.name, help=self.summary)


__all__ = ["LazyCommand"]
