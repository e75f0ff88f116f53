"""``flower sessions show --since`` and ``--follow``: a time window, and a live tail.

Following polls the store: transcripts are append-only with their order kept, so the
entries past the count already shown are exactly the new ones. Any backend works,
including one written by another process or another host.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
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


def entry_time(entry: Entry) -> datetime | None:
    """The entry's ``timestamp`` as an aware datetime; ``None`` when absent or unreadable."""
    stamp = entry.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def since(entries: Iterable[Entry], cutoff: datetime) -> Iterator[Entry]:
    """Entries stamped at or after ``cutoff``; unstamped bookkeeping lines are left out."""
    for entry in entries:
        moment = entry_time(entry)
        if moment is not None and moment >= cutoff:
            yield entry


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
    """Print the transcript, then every entry appended to it, until ``until()`` or Ctrl-C.

    Returns the number of entries printed.
    """
    seen = 0
    printed = 0
    try:
        while True:
            fresh: list[Entry] = []
            for index, entry in enumerate(store.iter_entries(key)):
                if index >= seen:
                    fresh.append(entry)
            seen += len(fresh)
            shown = since(fresh, cutoff) if cutoff is not None else fresh
            printed += printer.print(shown)
            if until():
                return printed
            sleep(interval)
    except KeyboardInterrupt:
        return printed
