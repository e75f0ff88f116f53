"""Prices per million tokens, as data, and the cost of one response's usage.

The table covers current Claude models by id; ``[tool.flower.engine.prices]`` adds or
overrides entries. A model that is in neither costs ``None``: flower never guesses.
Cache writes are priced at the 5-minute rate (the only cache flower asks for).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flower.core.config import Price

# model id -> (input, output, cache write, cache read), US dollars per million tokens
PRICE_TABLE: dict[str, tuple[float, float, float, float]] = {
    "claude-opus-4-6": (5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-5": (5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-1": (15.0, 75.0, 18.75, 1.50),
    "claude-opus-4-0": (15.0, 75.0, 18.75, 1.50),
    "claude-opus-4": (15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4-6": (3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4-5": (3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4-0": (3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4": (3.0, 15.0, 3.75, 0.30),
    "claude-3-7-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4-5": (1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": (0.80, 4.0, 1.0, 0.08),
    "claude-3-haiku": (0.25, 1.25, 0.30, 0.03),
}

_DATED = re.compile(r"-(\d{8}|latest)$")
_PER_TOKEN = 1_000_000


def builtin_prices() -> dict[str, Price]:
    return {
        model: Price(input=i, output=o, cache_write=w, cache_read=r)
        for model, (i, o, w, r) in PRICE_TABLE.items()
    }


def price_table(overrides: Mapping[str, Price] | None = None) -> dict[str, Price]:
    """The built-in table with ``overrides`` (from settings) laid over it."""
    table = builtin_prices()
    table.update(overrides or {})
    return table


def price_for(model: str | None, table: Mapping[str, Price]) -> Price | None:
    """The price of ``model``: exact id first, then without a ``-YYYYMMDD``/``-latest`` tail."""
    if not model:
        return None
    if model in table:
        return table[model]
    base = _DATED.sub("", model)
    return table.get(base)


def _tokens(usage: Mapping[str, Any], name: str) -> int:
    value = usage.get(name)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def cost_of(usage: Mapping[str, Any], price: Price | None) -> float | None:
    """Dollars for one response's ``usage``; ``None`` when the price is unknown."""
    if price is None:
        return None
    write = price.cache_write if price.cache_write is not None else price.input * 1.25
    read = price.cache_read if price.cache_read is not None else price.input * 0.1
    dollars = (
        _tokens(usage, "input_tokens") * price.input
        + _tokens(usage, "output_tokens") * price.output
        + _tokens(usage, "cache_creation_input_tokens") * write
        + _tokens(usage, "cache_read_input_tokens") * read
    )
    return dollars / _PER_TOKEN
