"""How flower writes a value for a person to read: in terminal columns, on one line.

A wide character (Chinese) takes two columns (:func:`shown_width`, :func:`pad`); long
text is cut to one line with an ellipsis (:func:`one_line`, or its first line:
:func:`first_line`); token counts read as ``80.2K`` (:func:`human_tokens`), other
counts as words (:func:`n_sessions`, :func:`n_transcripts`, :func:`n_entries`); a path
under the home directory as ``~/proj`` (:func:`short_path`), one in the workspace
relative to it (:func:`relative_path`); a store's time in UTC (:func:`utc_time`);
values as JSON a terminal can always show (:func:`json_text`, :func:`compact_json`).
The CLI, ``flower status``'s words and the demo all use these.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

from flower.core.i18n import ngettext


def shown_width(text: str) -> int:
    """How many terminal columns ``text`` takes: a wide character (Chinese) two."""
    import unicodedata

    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` columns (:func:`shown_width`), on the
    right (left-aligned), or on the left with ``right``."""
    fill = " " * max(0, width - shown_width(text))
    return fill + text if right else text + fill


def one_line(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def first_line(text: str, limit: int = 60) -> str:
    """The first line of ``text`` (stripped), cut to ``limit`` characters with an ellipsis."""
    stripped = text.strip()
    first = stripped.splitlines()[0] if stripped else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def n_sessions(count: int) -> str:
    """``1 session``, ``2 sessions``, in the active language."""
    return ngettext("{count} session", "{count} sessions", count).format(count=count)


def n_transcripts(count: int) -> str:
    """``1 transcript``, ``2 transcripts``, in the active language."""
    return ngettext("{count} transcript", "{count} transcripts", count).format(count=count)


def n_entries(count: int) -> str:
    """``1 entry``, ``2 entries``, in the active language."""
    return ngettext("{count} entry", "{count} entries", count).format(count=count)


def human_tokens(tokens: int) -> str:
    """80_213 -> ``80.2K``; 1_250_000 -> ``1.25M``; under a thousand as is."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}K"
    return f"{tokens / 1_000_000:.2f}M"


def relative_path(path: str | os.PathLike[str], workspace: str | os.PathLike[str]) -> str:
    """``path`` as flower shows a file of the workspace: relative to ``workspace`` when
    inside it, else as it is."""
    target = Path(path)
    return str(target.relative_to(workspace) if target.is_relative_to(workspace) else target)


def utc_time(mtime_ms: float) -> str:
    """A store's time (epoch milliseconds) as tables show it, in UTC:
    ``2026-12-05 05:11:27Z``."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(mtime_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def short_path(path: str | os.PathLike[str], home: str | None = None) -> str:
    """The workspace as a person writes it: ``~/proj`` under the home directory."""
    text = str(Path(path))
    home = home if home is not None else os.path.expanduser("~")
    if home and home != "/" and (text == home or text.startswith(home.rstrip("/") + "/")):
        return "~" + text[len(home.rstrip("/")) :]
    return text


@cache
def _encoder() -> Any:
    import msgspec

    return msgspec.json.Encoder(order="deterministic")


def json_text(value: object) -> str:
    """``value`` as pretty JSON (keys sorted; ``json.loads`` reads it back)."""
    import msgspec

    try:
        return msgspec.json.format(_encoder().encode(value), indent=2).decode("utf-8")
    except UnicodeEncodeError:
        return _escaped_json(value, indent=2)


def compact_json(value: object) -> str:
    """``value`` as one-line JSON (keys sorted), for a table cell or a tool's arguments."""
    try:
        return str(_encoder().encode(value).decode("utf-8"))
    except UnicodeEncodeError:
        return _escaped_json(value, separators=(",", ":"))


def _escaped_json(value: object, **options: Any) -> str:
    """JSON for a value holding a lone surrogate (a stored string cut mid-emoji, which
    UTF-8 cannot carry): the standard library writes it as its ``\\ud83d`` escape."""
    import json

    return (
        json.dumps(value, sort_keys=True, ensure_ascii=False, **options)
        .encode("utf-8", "backslashreplace")
        .decode("utf-8")
    )


__all__ = [
    "compact_json",
    "first_line",
    "human_tokens",
    "json_text",
    "n_entries",
    "n_sessions",
    "n_transcripts",
    "one_line",
    "pad",
    "relative_path",
    "short_path",
    "shown_width",
    "utc_time",
]
