"""The plugin API: everything a session-store, lineage-store, prober or policy author imports.

A plugin module imports from here only; the names below are stable, their homes
inside flower are not. See docs/api.md and the two tutorials (docs/writing-*.md).
``make_prober`` (for a prober plugin's own tests) is imported on first use: it brings
the retry machinery, which registering a plugin never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flower.core.config import ProbeConfig, PruningConfig, Settings, policy_options
from flower.core.entries import check_entry, dedupe_batch, encode_entries
from flower.core.errors import ConfigError, FlowerError, PluginError
from flower.core.hookspecs import CommandState, RegisterBackend, RegisterFactory, hookimpl
from flower.core.i18n import _
from flower.core.plugins import get_registry, reset_registry
from flower.core.protocols import (
    LineageStore,
    MergingLineageStore,
    MismatchLineageStore,
    Prober,
    PruneContext,
    PruningPolicy,
    SessionStore,
    SessionStoreBase,
)
from flower.core.records import (
    Entry,
    LineageMismatch,
    LineageRecord,
    SessionInfo,
    SessionKey,
    check_name,
    check_subpath,
)
from flower.core.transcript import (
    check_conversation,
    content_blocks,
    conversation,
    drop_entries,
    insert_after,
    message_of,
    replace_blocks,
    replace_result_body,
    synthetic_tool_result,
    tool_results,
    tool_uses,
    with_content,
)

if TYPE_CHECKING:
    import typer

    from flower.core.resilience import make_prober


def command_settings(ctx: typer.Context) -> Settings:
    """The settings a command added by ``register_commands`` runs with: those of the
    ``flower`` command line, global options included, loaded and checked once for every
    command by the :class:`CommandState` on its root context. An app of one's own that
    mounts a plugin's commands puts one there (flower's is
    :class:`flower.cli.context.CliState`); without it this is a :class:`PluginError`."""
    state = ctx.find_root().obj
    if not isinstance(state, CommandState):
        raise PluginError(
            _(
                "{command}: a flower plugin's command runs under the flower command line; "
                "an app of your own gives its root context a CommandState "
                "(flower.cli.context.CliState)"
            ).format(command=ctx.command_path)
        )
    return state.settings()


__all__ = [
    "CommandState",
    "ConfigError",
    "Entry",
    "FlowerError",
    "LineageMismatch",
    "LineageRecord",
    "LineageStore",
    "MergingLineageStore",
    "MismatchLineageStore",
    "ProbeConfig",
    "Prober",
    "PruneContext",
    "PruningConfig",
    "PruningPolicy",
    "RegisterBackend",
    "RegisterFactory",
    "SessionInfo",
    "SessionKey",
    "SessionStore",
    "SessionStoreBase",
    "Settings",
    "check_conversation",
    "check_entry",
    "check_name",
    "check_subpath",
    "command_settings",
    "content_blocks",
    "conversation",
    "dedupe_batch",
    "drop_entries",
    "encode_entries",
    "get_registry",
    "hookimpl",
    "insert_after",
    "make_prober",
    "message_of",
    "policy_options",
    "replace_blocks",
    "replace_result_body",
    "reset_registry",
    "synthetic_tool_result",
    "tool_results",
    "tool_uses",
    "with_content",
]


def __getattr__(name: str) -> Any:
    if name == "make_prober":
        from flower.core.resilience import make_prober

        return make_prober
    raise AttributeError(f"module 'flower.plugin' has no attribute {name!r}")
