"""A flower pruning policy: drop thinking blocks older than the newest N assistant turns."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from flower.plugin import (
    PruneContext,
    RegisterFactory,
    drop_entries,
    hookimpl,
    message_of,
    policy_options,
    replace_blocks,
)


class Options(msgspec.Struct, forbid_unknown_fields=True):
    """``[tool.flower.pruning.options.drop-thinking]``"""

    keep_turns: Annotated[int, msgspec.Meta(ge=0)] = 2


class DropOldThinking:
    name = "drop-thinking"

    def __init__(self, settings: Any) -> None:
        # a wrong type, a negative count or a misspelt key is a config error naming it
        self.keep_turns = policy_options(settings, self.name, Options).keep_turns

    def prune(self, entries: list[dict], ctx: PruneContext) -> list[dict]:
        # Walk from the newest entry back, counting assistant turns (one per message.id).
        turns: set[str] = set()
        out: list[dict] = []
        emptied: list[str] = []
        for entry in reversed(entries):
            if entry.get("type") == "assistant":
                turns.add(message_of(entry).get("id") or entry["uuid"])
                if len(turns) > self.keep_turns:
                    new = replace_blocks(entry, _without_thinking)
                    if new is None:  # a streamed entry that held only the thinking block
                        emptied.append(entry["uuid"])
                    else:
                        entry = new
            out.append(entry)
        out.reverse()
        return drop_entries(out, emptied)


def _without_thinking(block: dict) -> dict | None:
    if block.get("type") in ("thinking", "redacted_thinking"):
        return None
    return block


@hookimpl
def register_pruning_policies(register: RegisterFactory) -> None:
    register("drop-thinking", DropOldThinking)
