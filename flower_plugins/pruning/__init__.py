"""Built-in plugin: the pruning policies of :mod:`flower_plugins.pruning.policies` and
the ``flower prune`` command, registered exactly like a third-party plugin would be."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower.core.hookspecs import hookimpl
from flower_plugins.pruning.policies import BUILTIN_POLICIES

if TYPE_CHECKING:
    import typer

    from flower.plugin import RegisterFactory


@hookimpl
def register_pruning_policies(register: RegisterFactory) -> None:
    for name, policy in BUILTIN_POLICIES.items():
        register(name, policy)


@hookimpl
def register_commands(app: typer.Typer) -> None:
    from flower.cli.prune import add_prune_command  # the CLI, only when commands are built

    add_prune_command(app)
