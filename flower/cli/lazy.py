"""Commands known by name until they run (click's lazily loaded subcommands).

A :class:`LazyCommand` holds a command's name and where its code lives. The module is
imported and typer builds the command (reading its annotated parameters) only when the
command is invoked or help is asked: ``flower --help`` builds every command to show its
first sentence, as click's documented ``LazyGroup`` does; ``flower config`` builds one.

Help texts are English msgids (marked with ``N_``) and are translated when a command is
built, by :func:`translate_help`: by then the CLI has settled the language, whatever
language was active when the command's module was imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import typer

from flower.core.i18n import _

F = TypeVar("F", bound=Callable[..., Any])


class LazyCommand(NamedTuple):
    """A root command or group, loaded on first use."""

    name: str
    target: str
    """``module:attribute``: a command function, or a ``typer.Typer`` for a group."""

    def load(self) -> Any:
        """The click command (or group) typer builds from the target."""
        module_name, _, attribute = self.target.partition(":")
        found = getattr(importlib.import_module(module_name), attribute)
        holder = typer.Typer(rich_markup_mode=None, add_completion=False)
        if isinstance(found, typer.Typer):
            holder.add_typer(found, name=self.name)
        else:
            holder.command(name=self.name)(found)
        return translate_help(typer.main.get_group(holder).commands[self.name])


# Any: typer 0.2x vendors its own click, so the class of a command differs by typer version
def translate_help(command: Any) -> Any:
    """``command`` with its help, its parameters' help and (a group) its subcommands'
    in the active language; a text the catalogs do not know stays as it is."""
    for holder in (command, *command.params):
        for attribute in ("help", "short_help", "epilog"):
            text = getattr(holder, attribute, None)
            if text:
                setattr(holder, attribute, _(text))
    for sub in getattr(command, "commands", {}).values():
        translate_help(sub)
    return command


def command_help(text: str) -> Callable[[F], F]:
    """Give a command function its ``--help`` text (what its docstring would be): an
    English msgid marked with ``N_``, so the catalogs have it (a docstring is not
    extracted), translated when the command is built."""

    def give(function: F) -> F:
        function.__doc__ = text
        return function

    return give


__all__ = ["LazyCommand", "command_help", "translate_help"]
