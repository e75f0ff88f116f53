from __future__ import annotations

import random
import uuid

from flower.core.ids import Uuid7, uuid7


def test_is_a_version_7_rfc_uuid() -> None:
    value = uuid.UUID(uuid7())
    assert value.version == 7
    assert value.variant == uuid.RFC_4122


def test_embeds_the_time_in_its_first_48_bits() -> None:
    make = Uuid7(now_ms=lambda: 1_764_000_000_123)
    assert uuid.UUID(make()).int >> 80 == 1_764_000_000_123


def test_sorts_in_creation_order_within_a_millisecond_and_when_the_clock_steps_back() -> None:
    ticks = [5_000_000_000_000] * 5000 + [4_999_999_999_000] * 5 + [5_000_000_000_002] * 10
    clock = iter(ticks)
    make = Uuid7(now_ms=lambda: next(clock), random_bits=random.Random(3).getrandbits)
    ids = [make() for _ in ticks]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_distinct_across_many_calls() -> None:
    assert len({uuid7() for _ in range(10_000)}) == 10_000
