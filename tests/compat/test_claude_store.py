"""The Claude Agent SDK's own SessionStore conformance suite, over every built-in backend."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import claude_agent_sdk.testing as conformance
import pytest

from flower.compat.claude import (
    MIN_SDK_VERSION,
    ClaudeSDKMissingError,
    ClaudeSessionStore,
    as_claude_session_store,
    to_flower_key,
    to_sdk_key,
)
from flower.core.config import SessionsConfig, Settings
from flower.core.errors import InvalidKeyError
from flower.core.keys import project_key
from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionKey
from flower.stores.open import open_session_store


def _run_conformance(open_fresh: Callable[[], SessionStoreBase]) -> list[ClaudeSessionStore]:
    made: list[ClaudeSessionStore] = []

    def make_store() -> ClaudeSessionStore:
        wrapper = as_claude_session_store(open_fresh())
        made.append(wrapper)
        return wrapper

    try:
        asyncio.run(conformance.run_session_store_conformance(make_store))
    finally:
        for wrapper in made:
            wrapper.close()
    return made


def test_conformance_sqlite(in_tmp: Path) -> None:
    counter = iter(range(1000))

    def fresh() -> SessionStoreBase:
        return open_session_store(f"sqlite:///{in_tmp}/db{next(counter)}.sqlite")

    made = _run_conformance(fresh)
    assert len(made) >= 14  # one store per contract: the optional ones ran too


def test_conformance_jsonfs(in_tmp: Path) -> None:
    counter = iter(range(1000))

    def fresh() -> SessionStoreBase:
        return open_session_store(f"jsonfs://{in_tmp}/root{next(counter)}")

    assert len(_run_conformance(fresh)) >= 14


@pytest.mark.postgres
def test_conformance_postgres(pg_url: str, in_tmp: Path) -> None:
    settings = Settings(sessions=SessionsConfig(backend="postgres", auto_migrate=True))

    def fresh() -> SessionStoreBase:
        # One private schema for the test; each contract starts from an empty store.
        store = open_session_store(pg_url, settings=settings)
        for project in store.list_projects():
            for info in store.list_sessions(project):
                store.delete(SessionKey(project, info.session_id))
        return store

    assert len(_run_conformance(fresh)) >= 14


def test_optional_methods_are_seen_by_the_sdk(in_tmp: Path) -> None:
    """The SDK probes optional methods by override; summaries are absent on purpose."""
    from claude_agent_sdk.testing.session_store_conformance import _has_optional

    wrapper = as_claude_session_store(open_session_store(f"jsonfs://{in_tmp}/r"))
    try:
        for method in ("list_sessions", "delete", "list_subkeys"):
            assert _has_optional(wrapper, method, frozenset())
        assert not _has_optional(wrapper, "list_session_summaries", frozenset())
    finally:
        wrapper.close()


def test_sdk_reads_a_flower_transcript(in_tmp: Path) -> None:
    """The SDK's own store helpers read what flower wrote, subagents included."""
    from claude_agent_sdk import get_session_messages_from_store, list_sessions_from_store

    store = open_session_store(f"sqlite:///{in_tmp}/s.db")
    # flower and the SDK derive the same project key from a directory.
    key = SessionKey(project_key(in_tmp), "0b6a5f7e-0000-4000-8000-000000000001")
    user = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": key.session_id,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/x",
        "message": {"role": "user", "content": "hello"},
    }
    reply = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": key.session_id,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "cwd": "/x",
        "message": {
            "id": "msg_1",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": "hi"}],
        },
    }
    store.append(key, [user, reply])
    wrapper = as_claude_session_store(store)

    async def read() -> tuple[list, list]:
        listed = await list_sessions_from_store(wrapper, directory=None)
        messages = await get_session_messages_from_store(wrapper, key.session_id)
        return listed, messages

    try:
        listed, messages = asyncio.run(read())
    finally:
        wrapper.close()
    assert [s.session_id for s in listed] == [key.session_id]
    assert [m.uuid for m in messages] == ["u1", "a1"]


def test_keys_convert_both_ways() -> None:
    sdk = {"project_key": "p", "session_id": "s", "subpath": "subagents/agent-1"}
    assert to_sdk_key(to_flower_key(sdk)) == sdk
    assert to_sdk_key(to_flower_key({"project_key": "p", "session_id": "s"})) == {
        "project_key": "p",
        "session_id": "s",
    }
    with pytest.raises(InvalidKeyError):
        to_flower_key({"project_key": "../etc", "session_id": "s"})
    with pytest.raises(InvalidKeyError):
        to_flower_key({"project_key": "p", "session_id": "s", "subpath": "../x"})


@pytest.fixture
def old_sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An SDK from before SessionStore existed: a module without the protocol."""
    stub = types.ModuleType("claude_agent_sdk")
    stub.__version__ = "0.1.50"  # type: ignore[attr-defined]
    stub.types = types.ModuleType("claude_agent_sdk.types")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", stub)
    monkeypatch.setitem(sys.modules, "claude_agent_sdk.types", stub.types)  # type: ignore[attr-defined]
    yield


def test_old_sdk_is_a_clear_error_naming_the_minimum(old_sdk: None, in_tmp: Path) -> None:
    store = open_session_store(f"jsonfs://{in_tmp}/r")
    with pytest.raises(ClaudeSDKMissingError) as caught:
        as_claude_session_store(store)
    message = str(caught.value)
    assert "0.1.50" in message and f">= {MIN_SDK_VERSION}" in message
    assert "SessionStore" in message


def test_missing_sdk_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, in_tmp: Path) -> None:
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)  # makes the import fail
    with pytest.raises(ClaudeSDKMissingError, match=r"pip install 'flower\[claude\]'"):
        as_claude_session_store(open_session_store(f"jsonfs://{in_tmp}/r"))
