"""Built-in plugin: the optional ``redact`` pruning policy.

Add ``"redact"`` to ``[tool.flower.pruning] policies`` and every common secret shape
(API keys of Anthropic, OpenAI, AWS, GitHub and Slack, bearer tokens, private key
blocks, passwords in URLs; see :mod:`flower_plugins.secret_shapes`) is masked in what
is sent to the model. Like every policy it is a view: the stored transcript keeps
what was written. Thinking blocks are left alone (their signature covers the text),
and so are ids, so the chain stays a valid conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from flower.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from flower.core.config import Settings
    from flower.core.protocols import PruneContext
    from flower.core.records import Entry
    from flower.plugin import RegisterFactory

_UNTOUCHED_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_UNTOUCHED_KEYS = frozenset({"id", "tool_use_id", "type", "signature", "name", "role"})


def _masked(value: object, mask_secrets: Callable[[str], str]) -> object:
    """``value`` with secrets masked in every string; the same object when nothing changed."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, list):
        items = [_masked(v, mask_secrets) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, dict):
        if value.get("type") in _UNTOUCHED_BLOCKS:
            return value
        changed = {
            k: (v if k in _UNTOUCHED_KEYS else _masked(v, mask_secrets)) for k, v in value.items()
        }
        return changed if any(changed[k] is not value[k] for k in value) else value
    return value


class Redact:
    """Mask secret shapes in message content (a copy; the input is never mutated)."""

    name = "redact"

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings

    def prune(self, entries: list[Entry], ctx: PruneContext) -> list[Entry]:
        # the patterns compile on import: not at registration, which every CLI start does
        from flower_plugins.secret_shapes import mask_secrets

        out: list[Entry] = []
        masked = 0
        for entry in entries:
            message = entry.get("message")
            if isinstance(message, dict) and "content" in message:
                content = _masked(message["content"], mask_secrets)
                if content is not message["content"]:
                    entry = {**entry, "message": {**message, "content": content}}
                    masked += 1
            out.append(entry)
        if masked:
            ctx.stats["redact"] = ctx.stats.get("redact", 0) + masked
        return out


@hookimpl
def register_pruning_policies(register: RegisterFactory) -> None:
    register(Redact.name, Redact)


__all__ = ["Redact"]
