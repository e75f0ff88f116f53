"""Output helpers: JSON for machines, plain aligned text for people.

rich is imported only by the commands that draw with it (``sessions show``, the
``copy`` progress bar), never at start-up.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from functools import cache
from typing import Any, TextIO

from flower.core.display import pad, shown_width
from flower.core.i18n import ngettext


@cache
def _encoder() -> Any:
    import msgspec

    return msgspec.json.Encoder(order="deterministic")


def print_json(value: Any) -> None:
    """Pretty, valid JSON on stdout (``json.loads`` reads it back)."""
    import msgspec

    try:
        text = msgspec.json.format(_encoder().encode(value), indent=2).decode("utf-8")
    except UnicodeEncodeError:
        text = _escaped_json(value, indent=2)
    sys.stdout.write(text + "\n")


def compact_json(value: Any) -> str:
    """One-line JSON, for values inside a table."""
    try:
        return _encoder().encode(value).decode("utf-8")
    except UnicodeEncodeError:
        return _escaped_json(value, separators=(",", ":"))


def _escaped_json(value: Any, **options: Any) -> str:
    """JSON for a value holding a lone surrogate (a stored string cut mid-emoji, which
    UTF-8 cannot carry): the standard library writes it as its ``\\ud83d`` escape."""
    import json

    return (
        json.dumps(value, sort_keys=True, ensure_ascii=False, **options)
        .encode("utf-8", "backslashreplace")
        .decode("utf-8")
    )


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Columns aligned with spaces, one row a line, so the output stays greppable."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(shown_width(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        line = "  ".join(pad(cell, widths[i]) for i, cell in enumerate(row))
        sys.stdout.write(line.rstrip() + "\n")


def is_tty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def n_sessions(count: int) -> str:
    """``1 session``, ``2 sessions``, in the active language."""
    return ngettext("{count} session", "{count} sessions", count).format(count=count)


def n_transcripts(count: int) -> str:
    return ngettext("{count} transcript", "{count} transcripts", count).format(count=count)


def n_entries(count: int) -> str:
    return ngettext("{count} entry", "{count} entries", count).format(count=count)


class OutputMayClose(io.TextIOBase):
    """Output a reader may stop reading (``flower ... | head``): from then on it is
    dropped, and the work goes on to its end; what was done is in the transcript, the
    manifest and lineage, not in this output."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._reader_left()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_left()

    def isatty(self) -> bool:
        return is_tty(self._stream)

    def fileno(self) -> int:
        return self._stream.fileno()

    def _reader_left(self) -> None:
        self.closed_by_reader = True
        try:  # so the interpreter's last flush of this stream finds nothing to complain of
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass


def iso_time(mtime_ms: int) -> str:
    """A store's modification time (epoch milliseconds) as tables show it, in UTC."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(mtime_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
