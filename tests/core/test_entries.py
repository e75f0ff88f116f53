from __future__ import annotations

import datetime as dt
import enum

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower.core.entries import check_entry, decode_entry, dedupe_batch, encode_entries
from flower.core.errors import InvalidEntryError

# the expected text below is flower's English output (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("english")


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


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "user", "v": float("nan")},
        {"type": "user", "deep": [{"x": float("-inf")}]},
        {"type": "user", "deep": {"k": [1, (2, 3)]}},
        {"type": "user", "deep": [{"k": {7: "int key"}}]},
        {"type": "user", "deep": {"b": [b"bytes"]}},
    ],
)
def test_the_append_path_rejects_what_json_would_change_at_any_depth(bad: dict) -> None:
    with pytest.raises(InvalidEntryError):
        encode_entries([bad])


class Level(enum.IntEnum):
    LOW = 1


class Tag(str):
    pass


# JSON values with the things a round trip changes (tuples, NaN, infinities,
# non-string keys) and subclasses whose values survive it (IntEnum, str subclass).
_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | st.text(max_size=5)
    | st.just(Level.LOW)
    | st.builds(Tag, st.text(max_size=3))
)
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
        | st.dictionaries(st.text(max_size=3) | st.integers(0, 3), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(_values)
def test_an_accepted_entry_always_loads_back_equal(value: object) -> None:
    entry = {"type": "user", "v": value}
    try:
        (raw,) = encode_entries([entry])
    except InvalidEntryError:
        return
    assert decode_entry(raw) == entry


@pytest.mark.parametrize(
    ("batch", "kind"),
    [({"type": "user"}, "dict"), ((e for e in [{"type": "user"}]), "generator"), ("user", "str")],
)
def test_a_batch_that_is_not_a_list_is_refused_as_such(batch: object, kind: str) -> None:
    with pytest.raises(InvalidEntryError) as caught:
        encode_entries(batch)  # type: ignore[arg-type]
    assert str(caught.value) == f"entries must be a list of dicts, not a {kind}"
