"""``flower sessions show --since`` and ``--follow``: a time window, and a live tail.

The window and the tail are :mod:`flower.stores.tail`'s; this module reads ``--since``
and prints.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from flower.core.errors import FlowerError
from flower.core.i18n import _
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])\Z")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class BadSinceError(FlowerError):
    """A ``--since`` value that is neither a duration nor an ISO time."""

    exit_code = 2


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``10m``, ``2h``, ``1.5d`` (before ``now``) or an ISO 8601 time (UTC if naive)."""
    now = now or datetime.now(UTC)
    value = text.strip()
    match = _DURATION.match(value.lower())
    if match:
        amount, unit = float(match.group(1)), match.group(2)
        return now - timedelta(**{_UNITS[unit]: amount})
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadSinceError(
            _(
                "{option} {value}: expected a duration like 30s, 10m, 2h, 1d, 1w or an ISO "
                "time like 2026-01-31T09:00:00Z"
            ).format(option="--since", value=repr(text))
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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
