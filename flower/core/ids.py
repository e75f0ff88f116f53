"""Entry ids that sort by time: UUID version 7 (RFC 9562).

flower's own entries get time-ordered uuids, so a store's unique ``(session, uuid)``
index grows at its end: each commit touches the index page it touched last time
instead of a random one. Any reader still sees an ordinary UUID string; entries from
elsewhere (Claude Code writes random version 4 uuids) are stored just the same.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections.abc import Callable

_COUNTER_MAX = 0xFFF


class Uuid7:
    """Makes version 7 UUIDs: 48 bits of Unix milliseconds, a counter, random bits.

    Ids from one generator stay in creation order, even within one millisecond (a
    12-bit counter, seeded at random each new millisecond) and if the clock steps back.
    """

    def __init__(
        self,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        random_bits: Callable[[int], int] = secrets.randbits,
    ) -> None:
        self._now_ms = now_ms
        self._random_bits = random_bits
        self._lock = threading.Lock()
        self._last_ms = 0
        self._counter = 0

    def __call__(self) -> str:
        with self._lock:
            ms = self._now_ms()
            if ms > self._last_ms:
                self._last_ms = ms
                self._counter = self._random_bits(11)  # room to count up in this ms
            else:
                self._counter += 1
                if self._counter > _COUNTER_MAX:  # 4,096 ids in one ms: borrow the next
                    self._last_ms += 1
                    self._counter = self._random_bits(11)
            ms, counter = self._last_ms, self._counter
        value = (ms & (2**48 - 1)) << 80 | 0x7 << 76 | counter << 64
        value |= 0b10 << 62 | self._random_bits(62)
        return str(uuid.UUID(int=value))


uuid7 = Uuid7()
"""The process-wide generator: ``uuid7()`` returns a new id."""
