"""The SQL session store's behaviour, identical on SQLite and PostgreSQL."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa

from flower.core.errors import InvalidEntryError, InvalidKeyError
from flower.core.records import SessionInfo, SessionKey
from flower_plugins.sql.engine import open_database
from flower_plugins.sql.schema import entries as entries_table
from flower_plugins.sql.store import SqlSessionStore
from tests.sql.conftest import Clock

KEY = SessionKey("proj-a", "sess-1")


def user(n: int, **extra: object) -> dict:
    return {
        "type": "user",
        "uuid": f"u-{n}",
        "message": {"role": "user", "content": f"hi {n}"},
        **extra,
    }


def assistant(n: int, usage: dict | None = None) -> dict:
    message: dict = {
        "id": f"msg_{n}",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
    }
    if usage is not None:
        message["usage"] = usage
    return {"type": "assistant", "uuid": f"a-{n}", "message": message}


def stored_rows(store: SqlSessionStore) -> int:
    with store.database.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(entries_table)).scalar_one()


def test_load_returns_what_was_appended_in_order(store: SqlSessionStore) -> None:
    batch = [
        user(1),
        assistant(1),
        {"type": "file-history-snapshot", "snapshot": {"a": [1, 2.5, None]}},
    ]
    store.append(KEY, batch)
    store.append(KEY, [user(2)])
    assert store.load(KEY) == [*batch, user(2)]
    assert list(store.iter_entries(KEY)) == [*batch, user(2)]


def test_unknown_key_loads_none_and_streams_nothing(store: SqlSessionStore) -> None:
    assert store.load(KEY) is None
    assert list(store.iter_entries(KEY)) == []
    assert store.exists(KEY) is False
    assert store.last_usage(KEY) is None


def test_empty_append_is_a_no_op(store: SqlSessionStore) -> None:
    store.append(KEY, [])
    assert store.load(KEY) is None
    assert store.list_sessions(KEY.project_key) == []


def test_a_repeated_uuid_is_ignored_but_entries_without_uuid_always_append(
    store: SqlSessionStore,
) -> None:
    snapshot = {"type": "file-history-snapshot", "snapshot": {}}
    store.append(KEY, [user(1), snapshot])
    store.append(KEY, [user(1), snapshot])  # the SDK retrying the batch
    store.append(KEY, [user(2), user(2)])  # a duplicate inside one batch
    assert store.load(KEY) == [user(1), snapshot, snapshot, user(2)]


def test_a_retry_from_another_store_instance_adds_nothing(
    store: SqlSessionStore, db_url: str
) -> None:
    other = SqlSessionStore(open_database(db_url))
    try:
        store.append(KEY, [user(1), user(2)])
        other.append(KEY, [user(1), user(2), user(3)])
        assert store.load(KEY) == [user(1), user(2), user(3)]
    finally:
        other.close()


def test_same_uuid_in_different_sessions_is_kept_in_each(store: SqlSessionStore) -> None:
    other = SessionKey("proj-a", "sess-2")
    store.append(KEY, [user(1)])
    store.append(other, [user(1)])
    store.append(KEY.child("subagents/agent-1"), [user(1)])
    assert store.load(other) == [user(1)]
    assert store.load(KEY.child("subagents/agent-1")) == [user(1)]


def test_an_invalid_entry_rejects_the_whole_batch_before_writing(store: SqlSessionStore) -> None:
    store.append(KEY, [user(1)])
    for bad in (
        [user(2), {"no": "type"}],
        [user(2), {"type": "user", "x": math.nan}],
        [user(2), {"type": "user", "x": (1, 2)}],
        [user(2), {"type": "user", "x": {1: "int key"}}],
        [user(2), {"type": "user", "uuid": 7}],
        [user(2), "not a dict"],
    ):
        with pytest.raises(InvalidEntryError):
            store.append(KEY, bad)  # type: ignore[arg-type]
    assert store.load(KEY) == [user(1)]
    assert stored_rows(store) == 1


def test_forged_keys_never_reach_the_database(store: SqlSessionStore) -> None:
    import msgspec

    key = SessionKey("proj-a", "x")
    msgspec.structs.force_setattr(key, "session_id", "../../etc")
    with pytest.raises(InvalidKeyError):
        store.append(key, [user(1)])
    with pytest.raises(InvalidKeyError):
        store.list_sessions("")
    assert stored_rows(store) == 0


def test_unicode_and_large_entries_round_trip(store: SqlSessionStore) -> None:
    cjk = SessionKey("proj-a", "会话-一")
    big = user(1, blob="汉字🌸" * 300_000)  # about 3.6 MB of UTF-8
    store.append(cjk, [big, user(2, text="需求已确认 \u0000 nul")])
    assert store.load(cjk) == [big, user(2, text="需求已确认 \u0000 nul")]


def test_list_sessions_has_main_transcripts_only_with_mtime(
    store: SqlSessionStore, clock: Clock
) -> None:
    store.append(SessionKey("proj-a", "old"), [user(1)])
    clock.advance(10)
    store.append(SessionKey("proj-a", "new"), [user(1)])
    store.append(SessionKey("proj-a", "new", "subagents/a1"), [user(2)])
    store.append(SessionKey("proj-b", "elsewhere"), [user(1)])
    t0 = 1_800_000_000_000
    assert store.list_sessions("proj-a") == [
        SessionInfo("new", t0 + 10_000),
        SessionInfo("old", t0),
    ]
    clock.advance(5)
    store.append(SessionKey("proj-a", "old"), [user(3)])
    assert store.list_sessions("proj-a")[0] == SessionInfo("old", t0 + 15_000)
    assert store.list_sessions("proj-c") == []
    assert store.list_projects() == ["proj-a", "proj-b"]


def test_a_fully_duplicated_retry_does_not_touch_mtime_or_usage(
    store: SqlSessionStore, clock: Clock
) -> None:
    store.append(KEY, [assistant(1, {"input_tokens": 10})])
    store.append(KEY, [assistant(2, {"input_tokens": 20})])
    clock.advance(60)
    store.append(KEY, [assistant(1, {"input_tokens": 10})])  # a late retry of batch 1
    assert store.last_usage(KEY) == {"input_tokens": 20}
    assert store.list_sessions(KEY.project_key)[0].mtime_ms == 1_800_000_000_000


def test_last_usage_is_the_last_assistant_usage(store: SqlSessionStore) -> None:
    store.append(KEY, [user(1), assistant(1, {"input_tokens": 5, "output_tokens": 1})])
    store.append(KEY, [assistant(2), user(3)])  # no usage in this batch: keep the last one
    assert store.last_usage(KEY) == {"input_tokens": 5, "output_tokens": 1}
    store.append(KEY, [assistant(4, {"input_tokens": 9}), assistant(5, {"input_tokens": 11})])
    assert store.last_usage(KEY) == {"input_tokens": 11}
    assert store.last_usage(KEY.child("subagents/x")) is None


def test_delete_main_key_cascades_to_subkeys(store: SqlSessionStore) -> None:
    sub_a, sub_b = KEY.child("subagents/a"), KEY.child("subagents/b")
    sibling = SessionKey("proj-a", "sess-2")
    for key in (KEY, sub_a, sub_b, sibling):
        store.append(key, [user(1)])
    assert store.list_subkeys(KEY) == ["subagents/a", "subagents/b"]
    store.delete(sub_a)
    assert store.list_subkeys(KEY) == ["subagents/b"]
    store.delete(KEY)
    assert store.load(KEY) is None and store.load(sub_b) is None
    assert store.list_subkeys(KEY) == []
    assert store.load(sibling) == [user(1)]
    assert stored_rows(store) == 1
    store.delete(SessionKey("proj-a", "never-existed"))  # no error


def test_append_after_another_process_deleted_the_session(
    store: SqlSessionStore, db_url: str
) -> None:
    store.append(KEY, [user(1)])  # caches the session's row id
    other = SqlSessionStore(open_database(db_url))
    try:
        other.delete(KEY)
        other.append(SessionKey("proj-a", "unrelated"), [user(9)])
    finally:
        other.close()
    store.append(KEY, [user(2)])
    assert store.load(KEY) == [user(2)]
    assert store.load(SessionKey("proj-a", "unrelated")) == [user(9)]


def test_exists_and_find_session(store: SqlSessionStore, clock: Clock) -> None:
    store.append(KEY.child("subagents/a"), [user(1)])
    assert store.exists(KEY) is False
    assert store.find_session("sess-1") is None
    store.append(KEY, [user(1)])
    clock.advance(1)
    store.append(SessionKey("proj-b", "sess-1"), [user(1)])
    assert store.exists(KEY) is True
    assert store.find_session("sess-1") == SessionKey("proj-b", "sess-1")  # the newest
    assert store.find_session("nope") is None


def test_close_releases_the_database(db_url: str) -> None:
    store = SqlSessionStore(open_database(db_url))
    store.append(KEY, [user(1)])
    store.close()
    reopened = SqlSessionStore(open_database(db_url))
    try:
        assert reopened.load(KEY) == [user(1)]
    finally:
        reopened.close()
