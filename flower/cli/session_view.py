"""``flower sessions show --since`` and ``--follow``: a time window, and a live tail.

The window, the tail and ``--since``'s reading are :mod:`flower.stores.tail`'s; this
module prints.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import IO, Any

from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey


class EntryPrinter:
    """Prints entries one batch at a time, flushing so a tail shows them at once."""

    def __init__(self, raw: bool, out: IO[str] | None = None) -> None:
        from flower.cli.output import is_tty

        self.raw = raw
        self.out = out or sys.stdout
        self._console: Any = None
        if not raw and is_tty(self.out):
            from rich.console import Console

            self._console = Console(file=self.out, highlight=False)

    def print(self, entries: Iterable[Entry]) -> int:
        from flower.cli.render import entry_lines
        from flower.core.entries import encode_entry

        count = 0
        for entry in entries:
            count += 1
            if self.raw:
                self.out.write(encode_entry(entry).decode("utf-8") + "\n")
                continue
            for style, label, text in entry_lines(entry):
                body = text.replace("\n", "\n    ")
                if self._console is not None:
                    from rich.text import Text

                    line = Text(label, style=style)
                    if text:
                        line.append(f": {body}")
                    self._console.print(line)
                else:
                    self.out.write(f"{label}: {body}\n" if text else f"{label}\n")
        self.out.flush()
        return count


def follow(
    store: SessionStoreBase,
    key: SessionKey,
    printer: EntryPrinter,
    *,
    cutoff: datetime | None = None,
    interval: float = 1.0,
    until: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Print the transcript, then every entry appended to it
    (:func:`flower.stores.tail.tail`), until ``until()`` or Ctrl-C.

    Returns the number of entries printed.
    """
    from flower.stores.tail import tail

    printed = 0
    try:
        for batch in tail(store, key, cutoff=cutoff, interval=interval, until=until, sleep=sleep):
            printed += printer.print(batch)
    except KeyboardInterrupt:
        pass
    return printed
