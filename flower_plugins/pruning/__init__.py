"""Built-in plugin: the pruning policies of :mod:`flower_plugins.pruning.policies`,
registered exactly like a third-party plugin's would be. ``flower prune``, which shows
what every configured policy does, is the command line's own (:mod:`flower.cli.prune`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower.core.hookspecs import hookimpl
from flower_plugins.pruning.policies import BUILTIN_POLICIES

if TYPE_CHECKING:
    from flower.plugin import RegisterFactory


@hookimpl
def register_pruning_policies(register: RegisterFactory) -> None:
    for name, policy in BUILTIN_POLICIES.items():
        register(name, policy)
