"""A span of time as a person types it: a number and a unit, ``30s``, ``10m``, ``2h``,
``1.5d``, ``2w`` (``flower sessions show --since 10m``, ``flower sessions gc
--older-than 30d``).

::

    from flower.core.durations import duration_seconds

    assert duration_seconds("2h") == 7200
    assert duration_seconds("soon") is None
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
"""The units, by the seconds they stand for."""


def duration_seconds(text: str) -> float | None:
    """The seconds ``text`` stands for; ``None`` when it is no duration (the caller says
    what it expected, naming its own option). Case and surrounding spaces do not matter."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        return None
    return float(match[1]) * UNIT_SECONDS[match[2]]


__all__ = ["UNIT_SECONDS", "duration_seconds"]
