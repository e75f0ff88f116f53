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
from flower.core.errors import ConfigError, FlowerError
from flower.core.hookspecs import CommandState, RegisterBackend, RegisterFactory, hookimpl
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
    ``flower`` command line, global options included (its :class:`CommandState`); in
    an app of one's own, the loaded settings, checked as every flower command checks
    them (:func:`flower.stores.resolve.check_settings`)."""
    state = ctx.find_root().obj
    if isinstance(state, CommandState):
        return state.settings()
    from flower.core.config import load_settings
    from flower.stores.resolve import check_settings

    settings = load_settings().settings
    check_settings(settings)
    return settings


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
