"""The line streamed text has left open: the live output (:mod:`flower.workflow.live`)
sets it while the model's text streams, and a warning or an error printed meanwhile
(:func:`flower.cli.errors.end_open_line`) ends it first, so it starts on a line of its own."""

from __future__ import annotations

from collections.abc import Callable

_open_line: list[Callable[[], None]] = []


def set_open_line(end: Callable[[], None] | None) -> None:
    """``end`` ends the open line of streamed text (None: no line is open)."""
    _open_line[:] = [] if end is None else [end]


def end_open_line() -> None:
    """End the line streamed text left open, if any, before writing to stderr."""
    if _open_line:
        _open_line.pop()()
