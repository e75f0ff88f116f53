"""Forks cross between flower and the Claude Agent SDK: each reads the other's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import claude_agent_sdk
import pytest

from flower.compat.claude import as_claude_session_store
from flower.core.fork import fork, forked_from
from flower.core.keys import project_key
from flower.core.protocols import SessionStoreBase
from flower.core.records import SessionKey
from flower.core.transcript import active_chain, to_messages
from flower.runtime.persist import TranscriptWriter
from flower.stores.open import open_session_store

SOURCE = "7a0c4f2e-0000-4000-8000-00000000a001"


def _reply(n: int, content: list[dict[str, object]]) -> dict[str, object]:
    return {
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10 * n, "output_tokens": 5},
    }


def _flower_session(store: SessionStoreBase, workspace: Path) -> tuple[SessionKey, list[str]]:
    """A transcript as flower's engine writes it: prompt, tool call, result, reply, prompt..."""
    key = SessionKey(project_key(workspace), SOURCE)
    writer = TranscriptWriter(store, key, str(workspace))
    uuids = [writer.user_prompt("write the notes")["uuid"]]
    call = {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"file_path": "n"}}
    asked = writer.assistant(_reply(1, [call]), "req_1")
    uuids.append(asked["uuid"])
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    uuids.append(writer.tool_results(asked["uuid"], [result], [{"type": "create"}])["uuid"])
    uuids.append(writer.assistant(_reply(2, [{"type": "text", "text": "done"}]), "req_2")["uuid"])
    uuids.append(writer.user_prompt("now the summary")["uuid"])
    uuids.append(writer.assistant(_reply(3, [{"type": "text", "text": "here"}]), "req_3")["uuid"])
    return key, uuids


@pytest.fixture
def store(in_tmp: Path) -> SessionStoreBase:
    opened = open_session_store(f"sqlite:///{in_tmp}/sessions.db")
    yield opened
    opened.close()


def test_a_flower_fork_loads_in_the_sdk(store: SessionStoreBase, in_tmp: Path) -> None:
    key, uuids = _flower_session(store, in_tmp)
    target = fork(store, key, uuids[3])  # after the first reply, before the second prompt
    wrapper = as_claude_session_store(store)

    async def read() -> list[object]:
        return await claude_agent_sdk.get_session_messages_from_store(
            wrapper, target.session_id, directory=str(in_tmp)
        )

    messages = asyncio.run(read())
    wrapper._worker.shutdown(wait=True)
    assert [m.type for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [m.session_id for m in messages] == [target.session_id] * 4
    assert messages[0].message["content"] == "write the notes"
    assert messages[-1].message["content"][0]["text"] == "done"
    assert not {m.uuid for m in messages} & set(uuids)


def test_an_sdk_fork_loads_in_flower(store: SessionStoreBase, in_tmp: Path) -> None:
    key, uuids = _flower_session(store, in_tmp)
    wrapper = as_claude_session_store(store)

    async def sdk_fork() -> str:
        result = await claude_agent_sdk.fork_session_via_store(
            wrapper, SOURCE, directory=str(in_tmp), up_to_message_id=uuids[3]
        )
        return result.session_id

    forked_id = asyncio.run(sdk_fork())
    wrapper._worker.shutdown(wait=True)
    entries = store.load(SessionKey(key.project_key, forked_id))
    assert entries is not None
    assert forked_from(entries) is not None
    assert forked_from(entries).session_id == SOURCE  # type: ignore[union-attr]
    source_messages = to_messages(active_chain(store.load(key) or [], uuids[3]))
    assert to_messages(active_chain(entries)) == source_messages
    # and flower forks the SDK's fork again, back to its first prompt's reply
    again = fork(store, SessionKey(key.project_key, forked_id), entries[1]["uuid"])
    chain = active_chain(store.load(again) or [])
    assert [e["forkedFrom"]["sessionId"] for e in chain] == [forked_id, forked_id]
    assert to_messages(chain) == source_messages[:2]


def test_flower_and_the_sdk_write_the_same_shape(store: SessionStoreBase, in_tmp: Path) -> None:
    """Field for field, a flower fork is what the SDK's own fork writes (bar fresh ids)."""
    key, _uuids = _flower_session(store, in_tmp)
    wrapper = as_claude_session_store(store)

    async def sdk_fork() -> str:
        result = await claude_agent_sdk.fork_session_via_store(
            wrapper, SOURCE, directory=str(in_tmp)
        )
        return result.session_id

    sdk_id = asyncio.run(sdk_fork())
    wrapper._worker.shutdown(wait=True)
    ours = store.load(fork(store, key)) or []
    theirs = store.load(SessionKey(key.project_key, sdk_id)) or []
    assert [sorted(e) for e in ours] == [sorted(e) for e in theirs]
    volatile = ("uuid", "parentUuid", "sessionId", "timestamp", "logicalParentUuid")

    def stable(entries: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in e.items() if k not in volatile} for e in entries]

    assert stable(ours) == stable(theirs)
