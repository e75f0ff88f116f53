from __future__ import annotations

import datetime as dt

import pytest

from flower.core.entries import check_entry, decode_entry, dedupe_batch, encode_entries
from flower.core.errors import InvalidEntryError


def test_round_trip_is_deep_equal() -> None:
    entry = {
        "type": "assistant",
        "uuid": "u1",
        "message": {"content": [{"type": "text", "text": "你好"}], "usage": {"input_tokens": 3}},
        "n": 1.5,
        "flag": None,
    }
    (raw,) = encode_entries([entry])
    assert decode_entry(raw) == entry


@pytest.mark.parametrize(
    "bad",
    [
        "not a dict",
        {"uuid": "x"},
        {"type": 3},
        {"type": "user", "when": dt.datetime(2026, 1, 1)},
        {"type": "user", "v": {1, 2}},
        {"type": "user", "v": (1, 2)},
        {"type": "user", "v": b"bytes"},
        {"type": "user", "v": float("nan")},
        {"type": "user", "v": {1: "int key"}},
        {"type": "user", "uuid": 5},
    ],
)
def test_non_json_safe_entries_are_rejected(bad: object) -> None:
    with pytest.raises(InvalidEntryError):
        check_entry(bad)


def test_a_bad_entry_rejects_the_whole_batch_before_encoding() -> None:
    with pytest.raises(InvalidEntryError, match="entry 1"):
        encode_entries([{"type": "user"}, {"type": "user", "v": object()}])


def test_dedupe_batch_keeps_first_and_entries_without_uuid() -> None:
    batch = [{"type": "a", "uuid": "1"}, {"type": "b"}, {"type": "c", "uuid": "1"}, {"type": "d"}]
    assert [e["type"] for e in dedupe_batch(batch)] == ["a", "b", "d"]
