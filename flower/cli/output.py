"""Output helpers: JSON for machines, plain aligned text for people.

rich is imported only by the commands that draw with it (``sessions show``, the
``copy`` progress bar), never at start-up.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import cache
from typing import Any


@cache
def _encoder() -> Any:
    import msgspec

    return msgspec.json.Encoder(order="deterministic")


def print_json(value: Any) -> None:
    """Pretty, valid JSON on stdout (``json.loads`` reads it back)."""
    import msgspec

    text = msgspec.json.format(_encoder().encode(value), indent=2).decode("utf-8")
    sys.stdout.write(text + "\n")


def compact_json(value: Any) -> str:
    """One-line JSON, for values inside a table."""
    return _encoder().encode(value).decode("utf-8")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Columns aligned with spaces, one row a line, so the output stays greppable."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        line = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row))
        sys.stdout.write(line.rstrip() + "\n")


def is_tty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 session``, ``2 sessions`` (``plural`` for the irregular: entry, entries)."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"
