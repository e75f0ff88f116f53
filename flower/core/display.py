"""How flower writes a value for a person to read: in terminal columns, on one line.

A wide character (Chinese) takes two columns (:func:`shown_width`, :func:`pad`); long
text is cut to one line with an ellipsis (:func:`one_line`); token counts read as
``80.2K`` (:func:`human_tokens`); a path under the home directory as ``~/proj``
(:func:`short_path`). The CLI, ``flower status``'s words and the demo all use these.
"""

from __future__ import annotations

import os
from pathlib import Path


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


def human_tokens(tokens: int) -> str:
    """80_213 -> ``80.2K``; 1_250_000 -> ``1.25M``; under a thousand as is."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}K"
    return f"{tokens / 1_000_000:.2f}M"


def short_path(path: str | os.PathLike[str], home: str | None = None) -> str:
    """The workspace as a person writes it: ``~/proj`` under the home directory."""
    text = str(Path(path))
    home = home if home is not None else os.path.expanduser("~")
    if home and home != "/" and (text == home or text.startswith(home.rstrip("/") + "/")):
        return "~" + text[len(home.rstrip("/")) :]
    return text


__all__ = ["human_tokens", "one_line", "pad", "short_path", "shown_width"]
