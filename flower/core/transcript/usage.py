"""The context size of one round, from its ``usage``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def context_tokens(usage: Mapping[str, Any] | None) -> int:
    """The context size of one round: input + cache creation + cache read tokens."""
    if not usage:
        return 0
    total = 0
    for field in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = usage.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            total += int(value)
    return total
