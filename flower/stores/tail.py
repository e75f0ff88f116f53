"""A session's entries from a moment on, and a live tail of what is appended to it.

Tailing polls the store: transcripts are append-only with their order kept, so the
entries past the count already seen are exactly the new ones. Any backend works,
including one written by another process or another host::

    from flower import SessionKey, open_session_store
    from flower.stores.tail import tail

    with open_session_store() as store:
        for batch in tail(store, SessionKey("-home-me-proj", "71a21bd9-...")):
            for entry in batch:
                print(entry["type"])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta

from flower.core.durations import duration_seconds
from flower.core.errors import UsageError
from flower.core.i18n import _
from flower.core.protocols import SessionStoreBase
from flower.core.records import Entry, SessionKey


class BadSinceError(UsageError):
    """A ``--since`` value that is neither a duration nor an ISO time (exit code 2)."""


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """The moment ``text`` names: ``10m``, ``2h``, ``1.5d`` before ``now``
    (:func:`flower.core.durations.duration_seconds`), or an ISO 8601 time (UTC if naive)."""
    now = now or datetime.now(UTC)
    seconds = duration_seconds(text)
    if seconds is not None:
        return now - timedelta(seconds=seconds)
    value = text.strip()
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


def tail(
    store: SessionStoreBase,
    key: SessionKey,
    *,
    cutoff: datetime | None = None,
    interval: float = 1.0,
    until: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[list[Entry]]:
    """The transcript of ``key`` (from ``cutoff`` on, when given), then every batch
    appended to it, polled each ``interval`` seconds, until ``until()`` says stop (a
    batch may be empty)."""
    seen = 0
    while True:
        fresh: list[Entry] = []
        for index, entry in enumerate(store.iter_entries(key)):
            if index >= seen:
                fresh.append(entry)
        seen += len(fresh)
        yield list(since(fresh, cutoff)) if cutoff is not None else fresh
        if until():
            return
        sleep(interval)


__all__ = ["BadSinceError", "entry_time", "parse_since", "since", "tail"]
