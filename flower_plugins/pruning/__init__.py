"""Built-in plugin: the pruning policies and the ``flower prune`` command.

Registered exactly like a third-party plugin would be. This module is the entry point
loaded at CLI start-up, so it only registers: the policies (and the transcript helpers
they use) are imported from :mod:`flower_plugins.pruning.policies` when a store first
asks for its pruning chain. The public names below still import from here, on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flower.core.hookspecs import hookimpl

if TYPE_CHECKING:
    import typer

    from flower.core.config import Settings
    from flower.plugin import PruningPolicy, RegisterFactory

_POLICIES = "flower_plugins.pruning.policies"
__all__ = [
    "BUILTIN_POLICIES",
    "POLICY_CLASSES",
    "Denials",
    "Ephemeral",
    "Interrupted",
    "SyntheticErrors",
    "Trim",
    "content_blocks",
    "is_denial",
    "is_synthetic_error",
    "remove_tool_calls",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_POLICIES), name)


POLICY_CLASSES = {
    "synthetic-errors": "SyntheticErrors",
    "denials": "Denials",
    "interrupted": "Interrupted",
    "ephemeral": "Ephemeral",
    "trim": "Trim",
}
"""Each built-in policy's name -> its class in :mod:`flower_plugins.pruning.policies`
(the same as ``BUILTIN_POLICIES`` there: tests/pruning/test_builtin_names.py checks)."""


def _policy(class_name: str) -> Callable[[Settings | None], PruningPolicy]:
    """The factory of one policy: it imports the policies when a store first prunes."""

    def make(settings: Settings | None) -> PruningPolicy:
        policy: PruningPolicy = getattr(importlib.import_module(_POLICIES), class_name)(settings)
        return policy

    return make


@hookimpl
def register_pruning_policies(register: RegisterFactory) -> None:
    for name, class_name in POLICY_CLASSES.items():
        register(name, _policy(class_name))


@hookimpl
def register_commands(app: typer.Typer) -> None:
    from flower.cli.prune import add_prune_command  # the CLI, only when commands are built

    add_prune_command(app)
