"""Output helpers: JSON for machines, plain aligned text for people.

rich is imported only by the commands that draw with it (``sessions show``, the
``copy`` progress bar), never at start-up.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from flower.core.display import json_text, pad, shown_width


def print_json(value: object) -> None:
    """Pretty, valid JSON on stdout (``json.loads`` reads it back)."""
    sys.stdout.write(json_text(value) + "\n")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Columns aligned with spaces, one row a line, so the output stays greppable."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(shown_width(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        line = "  ".join(pad(cell, widths[i]) for i, cell in enumerate(row))
        sys.stdout.write(line.rstrip() + "\n")


def is_tty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


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
